"""Jobs per minute of a sweep of small jobs on each launcher and tracking store, and where a
job's time goes.

Each case runs ``dp2pub -m`` with ``--jobs`` small default jobs (GRR on ``--n`` synthetic
records, one seed each) as a user would (a fresh process, ``CI=1``), on Hydra's basic launcher
(one process), joblib (2 workers) or a local Ray instance (2 CPUs), logging to a SQLite file or
to an MLflow server on a PostgreSQL database (a throwaway cluster from the system's binaries,
when they are installed). From the wall time of the command and the timestamps of the runs it
logged, every job's share of the wall time (``slot``: wall x workers / jobs) is split into

- ``work``: the job itself (``time_total_s``: data, perturbation, estimates, metrics);
- ``tracking``: the rest of its MLflow run (creating it, parameters, metrics, dataset input,
  artifacts, ending it: the run's duration minus ``work``);
- ``between``: the rest of the job's time outside its run (composing the job's config, Hydra's
  job setup, opening the store, reaping stale runs, a worker's first imports);
- ``startup``: from the command's start to the first run (the launching process's imports, the
  sweep's parent run, starting the workers or Ray), and ``teardown``: from the last run's end
  to the command's exit (closing the parent, the summary, stopping workers), both per job.

``overhead`` = slot - work, and each launcher's wall time (the same jobs) over joblib's on the
same store: its time per job relative to joblib's. Results are printed as a table and written to
``outputs/bench/sweep.json`` with the date, the machine and its load; the site's table is
rendered from the committed ``docs/bench/sweep.json`` when the site is built (``--out
docs/bench/sweep.json``, then ``make docs``; ``--render docs/bench/sweep.json`` prints it and
runs nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from mlflow.tracking import MlflowClient

from dp2pub.bench.oracles import machine
from dp2pub.bench.pages import print_rendering
from dp2pub.services import MlflowServer, Postgres, local_ray, postgres_bin

#: Where the site's figures come from (``--out docs/bench/sweep.json``; ``make docs`` renders them).
DOCS_JSON = "docs/bench/sweep.json"

#: Launcher arguments and the number of workers that share the wall time.
LAUNCHERS = {
    "basic": (["hydra/launcher=basic"], 1),
    "joblib": (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], 2),
    "ray": ([], 2),  # local_ray()'s arguments
}
PARTS = ("work", "tracking", "between", "startup", "teardown")


def run_sweep(launcher: str, uri: str, folder: Path, jobs: int, n: int) -> dict[str, float]:
    """Run one sweep and break its wall time down (see the module docstring)."""
    args, workers = LAUNCHERS[launcher]
    env = {**os.environ, "CI": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    if launcher == "ray":
        args, extra = local_ray(folder / "ray", num_cpus=workers)
        env.update(extra)
    experiment = f"bench-{launcher}"
    command = [sys.executable, "-m", "dp2pub", "-m", f"seed=range(0,{jobs})", f"dataset.n={n}", *args]
    command += [f"tracking.uri={uri}", f"tracking.experiment={experiment}", f"paths.outputs={folder / 'out'}"]
    began = time.time()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.time() - began
    if done.returncode != 0:
        raise RuntimeError(f"{launcher} on {uri} failed: {done.stderr[-2000:]}")
    return breakdown(uri, experiment, began, wall, workers, jobs)


def breakdown(uri: str, experiment: str, began: float, wall: float, workers: int, jobs: int) -> dict[str, float]:
    """Per-job seconds of each part, the slot, the overhead and jobs per minute."""
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs = [r for r in client.search_runs([found.experiment_id], max_results=5000) if r.info.end_time]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    if len(children) != jobs or any(r.info.status != "FINISHED" for r in children):
        raise RuntimeError(f"{experiment}: {len(children)} runs of {jobs} jobs, not all FINISHED")
    durations = [(r.info.end_time - r.info.start_time) / 1000 for r in children]
    work = sum(r.data.metrics["time_total_s"] for r in children) / jobs
    first = min(r.info.start_time for r in children) / 1000
    last = max(r.info.end_time for r in children) / 1000
    slot = wall * workers / jobs
    parts = {
        "work": work,
        "tracking": sum(durations) / jobs - work,
        "startup": (first - began) * workers / jobs,
        "teardown": (began + wall - last) * workers / jobs,
    }
    parts["between"] = slot - sum(parts.values())
    return {**parts, "slot": slot, "overhead": slot - work, "jobs_per_min": 60 * jobs / wall, "wall": wall}


@contextlib.contextmanager
def store_uri(store: str, folder: Path) -> Iterator[str | None]:
    """The URI of a store to measure: a SQLite file, or an MLflow server on a fresh PostgreSQL
    cluster, running only while its cases run (None, with a line, without PostgreSQL)."""
    if store == "sqlite":
        yield f"sqlite:///{folder / 'mlflow.db'}"
        return
    if postgres_bin() is None:
        print("server: skipped, PostgreSQL is not installed (apt-get install postgresql)")
        yield None
        return
    cluster = Path(tempfile.mkdtemp(prefix="dp2pub-pg-"))
    cluster.chmod(0o711)  # run as root, PostgreSQL runs as the user postgres
    try:
        with Postgres(cluster / "data", fsync=False) as postgres:
            postgres.create_database("bench")
            with MlflowServer(postgres.uri("bench"), folder / "artifacts", log=folder / "server.log") as server:
                yield server.uri
    finally:
        shutil.rmtree(cluster, ignore_errors=True)


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """The results as a Markdown table, a row per store and launcher."""
    head = ["store", "launcher", "jobs/min", "slot s", *[f"{p} s" for p in PARTS], "overhead s", "x joblib"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for store, by_launcher in results.items():
        reference = by_launcher.get("joblib", {}).get("wall")
        for launcher, r in by_launcher.items():
            ratio = f"{r['wall'] / reference:.2f}" if reference else "-"
            cells = [store, launcher, f"{r['jobs_per_min']:.0f}", f"{r['slot']:.2f}"]
            cells += [f"{r[p]:.2f}" for p in PARTS] + [f"{r['overhead']:.2f}", ratio]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(written: dict) -> str:
    """The site's block (docs/reference/benchmarks/): where and when the figures were measured, and their table."""
    host = written["machine"]
    load = f"{host['load_before'][0]:.1f} before, {host['load_after'][0]:.1f} after"
    return "\n".join(
        [
            f"Measured {written['date']} by `python -m dp2pub.bench sweep` on {host['cpus']} cores "
            f"({host['processor']}, {host['platform']}, Python {host['python']}; 1-minute load average {load}): "
            f"{written['jobs']} jobs of GRR on {written['n']} synthetic records, seconds per job.",
            "",
            table(written["results"]),
        ]
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench sweep", description=__doc__)
    parser.add_argument("--jobs", type=int, default=64)
    parser.add_argument("--n", type=int, default=1000, help="records per job")
    parser.add_argument("--launchers", nargs="+", default=list(LAUNCHERS), choices=list(LAUNCHERS))
    parser.add_argument("--stores", nargs="+", default=["sqlite", "server"], choices=["sqlite", "server"])
    parser.add_argument("--out", default="outputs/bench/sweep.json")
    parser.add_argument(
        "--render",
        metavar="JSON",
        help=f"run nothing: print the block that JSON (e.g. {DOCS_JSON}) gives the site's page",
    )
    args = parser.parse_args(argv)
    if args.render:
        return print_rendering(args.render, render)["results"]

    date, host = datetime.now(timezone.utc).isoformat(timespec="seconds"), {**machine(), "load_before": os.getloadavg()}
    folder = Path(tempfile.mkdtemp(prefix="dp2pub-bench-"))
    results: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for store in args.stores:
            with store_uri(store, folder) as uri:
                for launcher in args.launchers:
                    if uri is None:
                        break
                    case = folder / f"{store}-{launcher}"
                    case.mkdir()
                    results.setdefault(store, {})[launcher] = run_sweep(launcher, uri, case, args.jobs, args.n)
                    print(f"{store} {launcher}: {results[store][launcher]['wall']:.1f} s", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    written = {"date": date, "machine": {**host, "load_after": os.getloadavg()}, "jobs": args.jobs, "n": args.n}
    written["results"] = results
    print(f"\n{render(written)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(written, indent=2) + "\n")
    return results
