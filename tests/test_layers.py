"""The package's modules import downward only: every import of a dp2pub module goes to a
lower layer (or within one package), no two modules import each other even indirectly, and
no dp2pub import hides inside a function. The layers are drawn in docs/design.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dp2pub"

#: Bottom to top; a unit is a top-level module or subpackage of dp2pub.
LAYERS: list[set[str]] = [
    {"validation"},
    {"data", "seeding", "audit", "plugins"},
    {"mechanisms"},
    {"structure", "anonymity", "learn", "synthesis"},
    {"publish"},
    {"metrics"},
    {"settings", "registry"},
    {"limits"},
    {"job"},
    {"config", "hydra_errors", "interrupts", "store", "environment", "resume", "services", "testing"},
    {"tracking"},
    {"sweep"},
    {"figures"},
    {"cli", "server", "bench", "__init__"},
    {"__main__"},
]
LAYER = {unit: index for index, units in enumerate(LAYERS) for unit in units}


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


def test_no_dp2pub_import_hides_in_a_function():
    known = modules()
    hidden = []
    for name, path in known.items():
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
