"""The package's modules import downward only: every import of a dp2pub module goes to a
lower layer (or within one package), no two modules import each other even indirectly, and
no dp2pub import hides inside a function except in the shell Hydra calls (:data:`SHELL`).
Libraries that take a second to import wait, inside the functions that use them, only where
:data:`DEFERRED` says, so that the command line and a job import only what they use (checked
in fresh interpreters). The layers are drawn in docs/explanation/architecture.md."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dp2pub"

#: Bottom to top; a unit is a top-level module or subpackage of dp2pub.
LAYERS: list[set[str]] = [
    {"validation", "lazy", "units", "faults", "migration", "digest", "products"},
    {"data", "seeding", "audit", "plugins"},
    {"mechanisms", "store_template"},
    {"structure", "anonymity", "learn", "synthesis"},
    {"publish"},
    {"metrics"},
    {"settings", "registry"},
    {"limits"},
    {"job"},
    {"config", "hydra_errors", "interrupts", "store", "environment", "resume", "services", "testing"},
    {"artifacts"},
    {"tracking"},
    {"figures"},
    {"sweep"},
    {"cli", "server", "bench", "__init__"},
    {"__main__"},
]
LAYER = {unit: index for index, units in enumerate(LAYERS) for unit in units}
#: Modules that may import dp2pub modules inside functions (still downward, which the layer
#: test sees): the command line, which checks a job's keys before it imports the job, MLflow
#: and the store, and the sweep's callback, which Hydra instantiates for every command.
SHELL = {"dp2pub.cli", "dp2pub.sweep"}
#: Where a third-party import may wait inside a function, by module, and why.
DEFERRED: dict[str, set[str]] = {
    # scikit-learn (1-2 s with scipy) only when a job trains a classifier or splits a table
    "dp2pub.learn.models": {"sklearn"},
    "dp2pub.learn.split": {"sklearn"},
    "dp2pub.learn.utility": {"sklearn"},
    # every oracle job imports the RAPPOR module; only RAPPOR's estimate needs scipy, scikit-learn
    "dp2pub.mechanisms.rappor": {"scipy", "sklearn"},
    # MLflow (1-2 s) only when a multirun opens its parent run
    "dp2pub.sweep": {"mlflow"},
    # MLflow only when a store is opened, its migration machinery only when one is created
    "dp2pub.store": {"mlflow", "alembic"},
    "dp2pub.store_template": {"mlflow", "alembic", "sqlalchemy"},
    # optional reference libraries of the benchmarks (extra bench), and pytest for the suite
    "dp2pub.bench.references": {"pure_ldp", "multi_freq_ldpy", "xxhash"},
    "dp2pub.bench.structure": {"DataSynthesizer"},
    "dp2pub.testing.suite": {"pytest"},
    "dp2pub.testing.verdicts": {"pytest"},
}
#: Libraries that a command or job must not import unless it uses them.
HEAVY = ("sklearn", "scipy", "mlflow", "ray", "psycopg", "matplotlib", "mbi", "jax")


def modules() -> dict[str, Path]:
    """Dotted name of every module of the package -> its file."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("dp2pub", *path.relative_to(PACKAGE).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported dp2pub module, line) of every import in ``path``, including those nested in
    functions or ``if TYPE_CHECKING`` blocks (a type-only cycle is still a cycle)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # "from pkg import sub" depends on pkg.sub only when sub is a module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {target for target, _ in imports(name, path, known)} for name, path in known.items()}


def test_every_unit_has_a_layer():
    assert {unit(m) for m in modules()} <= set(LAYER), sorted({unit(m) for m in modules()} - set(LAYER))


def test_imports_go_down_the_layers():
    known = modules()
    upward = [
        f"{name}:{line} imports {target}"
        for name, path in known.items()
        for target, line in imports(name, path, known)
        if unit(target) != unit(name) and LAYER[unit(target)] >= LAYER[unit(name)]
    ]
    assert upward == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_two_modules_import_each_other():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def nested_imports(path: Path) -> list[tuple[str, int]]:
    """(top-level package, line) of every import inside a function of ``path`` (a relative
    import counts as dp2pub)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found += [(alias.name.partition(".")[0], inner.lineno) for alias in inner.names]
                elif isinstance(inner, ast.ImportFrom):
                    top = "dp2pub" if inner.level else (inner.module or "").partition(".")[0]
                    found.append((top, inner.lineno))
    return found


def test_a_deferred_import_is_one_the_layers_allow():
    stray = [
        f"{name}:{line} imports {top}"
        for name, path in modules().items()
        for top, line in nested_imports(path)
        if top not in DEFERRED.get(name, set()) and not (top == "dp2pub" and name in SHELL)
    ]
    assert stray == []


def loaded_after(code: str) -> set[str]:
    """The :data:`HEAVY` libraries imported by running ``code`` in a fresh interpreter."""
    probe = f"import sys\n{code}\nprint(' '.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_library_and_the_command_line_start_without_heavy_libraries():
    assert loaded_after("import dp2pub") == set()
    assert loaded_after("import dp2pub.cli") == set()
    assert loaded_after("from dp2pub import GRR, OUEPublisher, make_synthetic, tvd") == set()


def test_a_job_imports_what_it_uses():
    job = "from dp2pub import run_job\nrun_job({{'epsilon': 1.0, 'seed': 0, 'dataset': {dataset}, 'mechanism': {{'name': '{mechanism}'}}, 'metrics': {{'models': {models}}}}})"
    synthetic = "{'name': 'synthetic', 'n': 200, 'd': 3, 'k_min': 2, 'k_max': 4}"
    assert loaded_after(job.format(dataset=synthetic, mechanism="grr", models=[])) == set()
    assert "sklearn" in loaded_after(job.format(dataset="{'name': 'car'}", mechanism="grr", models=["nb"]))
    assert loaded_after(job.format(dataset=synthetic, mechanism="rappor", models=[])) == set()  # OLS: no Lasso


def test_no_dp2pub_import_hides_in_a_function():
    known = modules()
    hidden = []
    for name, path in known.items():
        if name in SHELL:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                hidden += [
                    f"{name}:{inner.lineno}"
                    for inner in ast.walk(node)
                    if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith("dp2pub"))
                ]
    assert hidden == []


@pytest.mark.parametrize("layer", range(len(LAYERS)))
def test_a_layer_is_not_empty(layer):
    units = {unit(m) for m in modules()}
    assert LAYERS[layer] <= units
