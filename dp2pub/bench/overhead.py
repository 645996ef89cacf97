"""The framework's own cost, each figure a ratio to a floor or reference measured in the same run.

Absolute times on a shared machine mean little, so every case times what dp2pub does against
the least that doing it with its building blocks (Hydra, MLflow) costs, or against a reference
(another mechanism, an existing store), both measured in this run. Every command runs as a user
would run it: a fresh process (``CI=1``, ``MPLBACKEND=Agg``) in a temporary directory, logging
to an explicit ``tracking.uri=sqlite:///<tmp>/mlflow.db``; each timed command runs ``--repeats``
times and the table gives the median (the JSON keeps every time, the min and the median).

Cases (``--cases a,b,...``; all by default):

- ``startup``: ``dp2pub --help`` and a refused argument (exit 2) / composing the config with
  Hydra in a bare ``python -c``; target <= 1.5.
- ``job``: one small job from the command line / a bare process that composes the config and
  logs one MLflow run of 20 params and 20 metrics to the same existing store; target <= 1.5.
- ``sweep``: the marginal cost of one more job of a sweep, (wall(N) - wall(N0)) / (N - N0) /
  a compose and a bare MLflow run in one warm process; target <= 1.0. And joblib (2 workers):
  basic's marginal over joblib's (the throughput ratio); target >= 1.6.
- ``aggregates``: the documented billion-user sweep (``mechanism.simulate=aggregates``) / the sum of its jobs' ``time_total_s``;
  target <= 3.
- ``ldp_marginals``: an ``ldp_marginals`` job / a ``privbayes`` job on the same data, in this
  process; target <= 2.
- ``store``: opening a new SQLite store / opening an existing one, and a new store made by
  MLflow's migrations / one copied from dp2pub's template (inside fresh processes, imports
  excluded); no target.

The results are printed as a table and written to ``outputs/bench/overhead.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dp2pub.bench import sweep
from dp2pub.bench.oracles import machine
from dp2pub.bench.pages import print_rendering
from dp2pub.bench.timing import Result, summary, timings, warmed
from dp2pub.config import config_dir
from dp2pub.job import run_job

#: Shared by the floors run in a fresh ``python -c``: its arguments are the config dir, and
#: for the MLflow floors the store's URI and the experiment.
PRELUDE = """
import sys, time
from hydra import compose, initialize_config_dir

def bare_run(mlflow):
    with mlflow.start_run():
        mlflow.log_params({f"param_{i}": i for i in range(20)})
        mlflow.log_metrics({f"metric_{i}": i / 7 for i in range(20)})
"""
#: Hydra's cost alone: composing dp2pub's config once.
COMPOSE = (
    PRELUDE
    + """
with initialize_config_dir(config_dir=sys.argv[1], version_base="1.3"):
    compose("config", overrides=["epsilon=1"])
"""
)
#: Any Hydra app's cost: a ``@hydra.main`` app on dp2pub's config (its plugins and callbacks
#: as configured) that exits as soon as it is called. ``hydra.main`` composes the config twice
#: for a run (once to read ``hydra.mode``, once for the job), and lists every config group's
#: options for ``--help``. The resolver dp2pub's help template uses is a stub.
BARE_APP = """
import sys
import hydra
from omegaconf import OmegaConf

OmegaConf.register_new_resolver("dp2pub_added_options", lambda: "")  # what dp2pub's help template asks

@hydra.main(config_path=sys.argv.pop(1), config_name="config", version_base="1.3")
def app(cfg):
    raise SystemExit(2)

app()
"""
#: A bare job: compose, then one MLflow run on an existing store.
BARE_JOB = (
    COMPOSE
    + """
import mlflow
mlflow.set_tracking_uri(sys.argv[2])
mlflow.set_experiment(sys.argv[3])
bare_run(mlflow)
"""
)
#: A warm process's seconds per (compose with a new override + bare run), after one untimed.
WARM_LOOP = (
    PRELUDE
    + """
import json, mlflow
mlflow.set_tracking_uri(sys.argv[2])
mlflow.set_experiment(sys.argv[3])
seconds = []
with initialize_config_dir(config_dir=sys.argv[1], version_base="1.3"):
    for i in range(int(sys.argv[4]) + 1):
        start = time.perf_counter()
        compose("config", overrides=[f"seed={i}"])
        bare_run(mlflow)
        seconds.append(time.perf_counter() - start)
print(json.dumps(seconds[1:]))
"""
)
#: Seconds of open_store alone, imports excluded (MLflow's too: open_store imports it on first use).
OPEN_STORE = """
import sys, time
import mlflow
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
from dp2pub.store import open_store
start = time.perf_counter()
open_store(sys.argv[1])
print(time.perf_counter() - start)
"""
#: Where the site's figures come from (``--out docs/bench/overhead.json``; ``make docs`` renders them).
DOCS_JSON = "docs/bench/overhead.json"
#: Repetitions of the warm floor of ``sweep``.
WARM_LOOPS = 20
#: The billion-user sweep of ``mechanism.simulate=aggregates``; its study sweeps 5 epsilons x 10 seeds per mechanism.
AGGREGATES = ["experiment=fo_variance", "dataset.n=1000000000", "mechanism.simulate=aggregates"]
MECHANISMS = ["grr", "sue", "oue", "rappor"]
EPSILONS = ["0.5", "1", "2", "4", "8"]
STUDY_JOBS = len(MECHANISMS) * len(EPSILONS) * 10


@dataclass
class Bench:
    """A run's temporary directory, sizes and the way it runs commands."""

    folder: Path
    repeats: int
    jobs: int
    small_jobs: int
    aggregate_jobs: int
    ldp_dataset: str
    ldp_repeats: int
    conf: str = field(init=False)

    def __post_init__(self) -> None:
        self.conf = str(config_dir())

    def store(self) -> str:
        """The URI of the run's store ``<tmp>/mlflow.db``, created (untimed) on first use; every
        case logs to its own experiments of it."""
        uri = f"sqlite:///{self.folder / 'mlflow.db'}"
        if not (self.folder / "mlflow.db").exists():
            self.python(OPEN_STORE, uri)
        return uri

    def run(self, command: list[str], expect: int = 0, env: dict[str, str] | None = None) -> str:
        """Run ``command`` as a user would (with ``env`` added to the environment); its stdout
        (RuntimeError on another exit code)."""
        env = {**os.environ, "CI": "1", "MPLBACKEND": "Agg", **(env or {})}
        env.pop("MLFLOW_TRACKING_URI", None)
        done = subprocess.run(command, cwd=self.folder, env=env, capture_output=True, text=True)
        if done.returncode != expect:
            raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}, not {expect}: {done.stderr[-2000:]}")
        return done.stdout

    def python(self, code: str, *args: str, env: dict[str, str] | None = None) -> str:
        return self.run([sys.executable, "-c", code, *args], env=env)

    def timed(self, command: Callable[[int], list[str]], expect: int = 0) -> list[float]:
        """Wall seconds of ``--repeats`` runs of ``command(repeat)``."""
        index = itertools.count()
        return timings(lambda: self.run(command(next(index)), expect), self.repeats)


def dp2pub() -> list[str]:
    """The installed console script (``python -m dp2pub`` without one)."""
    script = Path(sys.executable).with_name("dp2pub")
    return [str(script)] if script.exists() else [sys.executable, "-m", "dp2pub"]


def row(name: str, measured: Result, floor: Result, target: tuple[str, float] | None) -> Result:
    """A row of the table: medians, their ratio and whether it meets the target."""
    ratio = measured["median_s"] / floor["median_s"]
    met = None if target is None else (ratio <= target[1] if target[0] == "<=" else ratio >= target[1])
    shown = None if target is None else f"{target[0]} {target[1]:g}"
    return {
        "case": name,
        "measured_s": measured["median_s"],
        "floor_s": floor["median_s"],
        "ratio": ratio,
        "target": shown,
        "met": met,
        "measured": measured,
        "floor": floor,
    }


def startup(bench: Bench) -> list[Result]:
    """``dp2pub --help`` and a refused argument (``epsilon=abc``, exit 2, on an existing store),
    each over the issue's floor, a bare ``python -c`` that imports Hydra and composes dp2pub's
    config once (target <= 1.5), and over a bare ``@hydra.main`` app on the same config doing the
    same (:data:`BARE_APP`: what leaving nothing of dp2pub but its config would cost; no target)."""
    floor = summary(bench.timed(lambda _: [sys.executable, "-c", COMPOSE, bench.conf]), 1)
    app = [sys.executable, "-c", BARE_APP, bench.conf]
    app_help = summary(bench.timed(lambda _: [*app, "--help"]), 1)
    app_run = summary(bench.timed(lambda _: [*app, "epsilon=abc"], expect=2), 1)
    uri = f"tracking.uri={bench.store()}"
    helped = summary(bench.timed(lambda _: [*dp2pub(), "--help"]), 1)
    refused = summary(bench.timed(lambda _: [*dp2pub(), "epsilon=abc", uri], expect=2), 1)
    return [
        row("startup --help", helped, floor, ("<=", 1.5)),
        row("startup refused", refused, floor, ("<=", 1.5)),
        row("startup --help / Hydra app", helped, app_help, None),
        row("startup refused / Hydra app", refused, app_run, None),
    ]


def job(bench: Bench) -> list[Result]:
    """One job from the command line (GRR on 100 synthetic records, which have no target: no
    model is trained) over the floor: a fresh process that imports Hydra and MLflow, composes
    the config and logs one run of 20 params and 20 metrics, both to the same existing store.
    Target <= 1.5."""
    uri = bench.store()
    floor = summary(bench.timed(lambda _: [sys.executable, "-c", BARE_JOB, bench.conf, uri, "bench"]), 1)
    command = [*dp2pub(), "dataset.n=100", f"tracking.uri={uri}", "tracking.experiment=bench"]
    return [row("job", summary(bench.timed(lambda _: command), 1), floor, ("<=", 1.5))]


def sweep_walls(bench: Bench, launcher: str, jobs: int, uri: str) -> list[float]:
    """Wall seconds of ``dp2pub -m seed=range(0,jobs)`` on ``launcher``, each repeat logging to
    its own experiment of the existing store ``uri``."""

    def command(repeat: int) -> list[str]:
        experiment = f"tracking.experiment=sweep-{launcher}-{jobs}-{repeat}"
        return [
            *dp2pub(),
            "-m",
            f"seed=range(0,{jobs})",
            "dataset.n=100",
            *sweep.LAUNCHERS[launcher][0],
            f"tracking.uri={uri}",
            experiment,
        ]

    return bench.timed(command)


def marginal(bench: Bench, launcher: str, uri: str) -> Result:
    """The seconds of one more job: (wall(N) - wall(N0)) / (N - N0), of the medians and of the
    fastest runs (which may be negative on a noisy machine with few jobs)."""
    big, small = sweep_walls(bench, launcher, bench.jobs, uri), sweep_walls(bench, launcher, bench.small_jobs, uri)
    more = bench.jobs - bench.small_jobs
    per_job = summary(big, bench.jobs)
    by = {
        "median_s": (per_job["median_s"] - summary(small, 1)["median_s"]) / more,
        "min_s": (min(big) - min(small)) / more,
    }
    return {**by, "walls": {bench.jobs: big, bench.small_jobs: small}, "jobs_per_s_median": per_job["per_s_median"]}


def sweep_case(bench: Bench) -> list[Result]:
    """The marginal cost of one more job of a sweep on the basic launcher over the floor: a
    compose with a new override and a bare MLflow run (20 params, 20 metrics), per repetition
    of a loop in one warm process. Target <= 1.0. Then joblib (2 workers): basic's marginal
    (measured) over joblib's (reference), its throughput ratio; target >= 1.6."""
    uri = bench.store()
    loop = json.loads(bench.python(WARM_LOOP, bench.conf, uri, "floor", str(WARM_LOOPS)))
    basic, joblib = marginal(bench, "basic", uri), marginal(bench, "joblib", uri)
    rows = [
        row("sweep marginal", basic, summary(loop, 1), ("<=", 1.0)),
        row("sweep joblib speed-up", basic, joblib, (">=", 1.6)),
    ]
    rows[1]["throughput_ratio_whole_sweep"] = joblib["jobs_per_s_median"] / basic["jobs_per_s_median"]
    return rows


def aggregate_grid(jobs: int) -> tuple[list[str], int]:
    """Overrides cutting the study's grid to about ``jobs`` jobs (none for the whole study),
    and the number of jobs they make."""
    if jobs >= STUDY_JOBS:
        return [], STUDY_JOBS
    per = max(1, round(jobs / len(MECHANISMS)))
    epsilons = EPSILONS[: min(len(EPSILONS), per)]
    seeds = max(1, per // len(epsilons))
    return [f"epsilon={','.join(epsilons)}", f"seed=range(0,{seeds})"], len(MECHANISMS) * len(epsilons) * seeds


def aggregates(bench: Bench) -> list[Result]:
    """The billion-user sweep of ``mechanism.simulate=aggregates`` (``experiment=fo_variance dataset.n=1000000000
    mechanism.simulate=aggregates mechanism=grr,sue,oue,rappor``, 200 jobs; ``--aggregate-jobs``
    cuts its epsilons and seeds) over the sum of its jobs' work (``time_total_s`` read back from
    the store), on an existing store. Target <= 3."""
    uri, (grid, jobs) = bench.store(), aggregate_grid(bench.aggregate_jobs)
    command = [*dp2pub(), "-m", *AGGREGATES, f"mechanism={','.join(MECHANISMS)}", *grid, f"tracking.uri={uri}"]
    walls, works = [], []
    for repeat in range(bench.repeats):
        began = time.time()
        bench.run([*command, f"tracking.experiment=aggregates-{repeat}"])
        walls.append(time.time() - began)
        works.append(sweep.breakdown(uri, f"aggregates-{repeat}", began, walls[-1], 1, jobs)["work"] * jobs)
    return [{**row("aggregates", summary(walls, jobs), summary(works, jobs), ("<=", 3.0)), "jobs": jobs}]


def ldp_marginals(bench: Bench) -> list[Result]:
    """An ``ldp_marginals`` job over a ``privbayes`` job on ``--ldp-dataset`` (acs), in this
    process with :func:`dp2pub.run_job` after one untimed run of each. Target <= 2."""

    def work(mechanism: str) -> Callable[[], object]:
        metrics = {"models": [], "ways": [1, 2]}
        cfg = {
            "epsilon": 1.0,
            "seed": 0,
            "dataset": {"name": bench.ldp_dataset},
            "mechanism": {"name": mechanism},
            "metrics": metrics,
        }
        return lambda: run_job(cfg)

    timed = {m: warmed(work(m), bench.ldp_repeats, work(m), 1) for m in ("ldp_marginals", "privbayes")}
    return [row(f"ldp_marginals ({bench.ldp_dataset})", timed["ldp_marginals"], timed["privbayes"], ("<=", 2.0))]


def store(bench: Bench) -> list[Result]:
    """``dp2pub.store.open_store`` on a new SQLite store (measured) and on an existing one
    (reference), and on a new one made by MLflow's own migrations (``DP2PUB_STORE_TEMPLATE=0``)
    over one copied from the template, each timed inside a fresh process (imports excluded).
    No target."""
    existing = bench.store()

    def opened(name: str, env: dict[str, str] | None = None) -> list[float]:
        return [
            float(bench.python(OPEN_STORE, f"sqlite:///{bench.folder}/{name}-{i}.db", env=env))
            for i in range(bench.repeats)
        ]

    new, migrated = opened("new"), opened("migrated", {"DP2PUB_STORE_TEMPLATE": "0"})
    old = [float(bench.python(OPEN_STORE, existing)) for _ in range(bench.repeats)]
    return [
        row("store new/existing", summary(new, 1), summary(old, 1), None),
        row("store migrated/copied", summary(migrated, 1), summary(new, 1), None),
    ]


CASES: dict[str, Callable[[Bench], list[Result]]] = {
    "startup": startup,
    "job": job,
    "sweep": sweep_case,
    "aggregates": aggregates,
    "ldp_marginals": ldp_marginals,
    "store": store,
}


def table(rows: list[Result]) -> str:
    """The rows as a Markdown table."""
    head = ["case", "measured (s)", "floor/reference (s)", "ratio", "target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "no")
        cells = [
            r["case"],
            f"{r['measured_s']:.4g}",
            f"{r['floor_s']:.4g}",
            f"{r['ratio']:.2f}",
            r["target"] or "-",
            met,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(results: Result) -> str:
    """The site's block (docs/reference/benchmarks/): where and when the figures were measured, and their table."""
    options, host = results["options"], results["machine"]
    load = f"{host['load_before'][0]:.1f} before, {host.get('load_after', [float('nan')])[0]:.1f} after"
    rows = [r for name in results["cases"] for r in results["cases"][name]]
    return "\n".join(
        [
            f"Measured {results['date']} by `python -m dp2pub.bench overhead` on {host['cpus']} cores "
            f"({host['processor']}, {host['platform']}, Python {host['python']}; 1-minute load average {load}): "
            f"medians of {options.get('repeats') or 5} runs, sweeps of {options['jobs']} and {options['small_jobs']} "
            "jobs. Ratio = measured / floor, both timed in the same run.",
            "",
            table(rows),
        ]
    )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench overhead", description=__doc__)
    parser.add_argument(
        "--repeats", type=int, default=None, help="runs of each timed command (default 5; 3 for ldp_marginals)"
    )
    parser.add_argument("--jobs", type=int, default=200, help="jobs N of the long sweeps of the sweep case")
    parser.add_argument("--small-jobs", type=int, default=20, help="jobs N0 of the short sweeps of the sweep case")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {','.join(CASES)}")
    parser.add_argument(
        "--aggregate-jobs", type=int, default=STUDY_JOBS, help="about this many jobs of the aggregates sweep"
    )
    parser.add_argument("--ldp-dataset", default="acs", help="dataset of the ldp_marginals case")
    parser.add_argument("--out", default="outputs/bench/overhead.json")
    parser.add_argument(
        "--render",
        metavar="JSON",
        help=f"run nothing: print the block that JSON (e.g. {DOCS_JSON}) gives the site's page",
    )
    return parser


def main(argv: list[str] | None = None) -> Result:
    args = parser().parse_args(argv)
    if args.render:
        return print_rendering(args.render, render)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if unknown := [c for c in cases if c not in CASES]:
        raise SystemExit(f"unknown cases {unknown}; choose among {','.join(CASES)}")
    if not 0 < args.small_jobs < args.jobs:
        raise SystemExit("--small-jobs must be > 0 and < --jobs")
    results: Result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "options": vars(args)}
    results["machine"] = {**machine(), "load_before": os.getloadavg()}
    folder = Path(tempfile.mkdtemp(prefix="dp2pub-overhead-"))
    bench = Bench(
        folder, args.repeats or 5, args.jobs, args.small_jobs, args.aggregate_jobs, args.ldp_dataset, args.repeats or 3
    )
    results["cases"] = {}
    try:
        for name in cases:
            began = time.perf_counter()
            results["cases"][name] = CASES[name](bench)
            print(f"{name}: {time.perf_counter() - began:.0f} s", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    results["machine"]["load_after"] = os.getloadavg()
    rows = [r for name in cases for r in results["cases"][name]]
    print(f"\nmedian of {bench.repeats} runs ({bench.ldp_repeats} for ldp_marginals); ratio = measured / floor\n")
    print(table(rows))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return results
