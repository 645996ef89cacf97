"""Shared fixtures: a throw-away MLflow store and composed configs."""

from __future__ import annotations

import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import mlflow
import pytest
from _pytest.doctest import DoctestModule
from hydra import compose, initialize_config_dir

from dp2pub.services import MlflowServer, Postgres, local_ray, missing_postgres, postgres_bin
from dp2pub.testing import memory

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"

#: Whether the session runs under CI (read once here: the autouse fixture below unsets CI for
#: every test). Under CI a test that needs PostgreSQL fails instead of skipping without it.
UNDER_CI = bool(os.environ.get("CI"))

# The tests read the data packaged with dp2pub; a developer's own DP2PUB_DATA_DIR would
# silently replace it (the tests of that variable set it themselves).
os.environ.pop("DP2PUB_DATA_DIR", None)


@pytest.fixture(autouse=True)
def fresh_environment(monkeypatch):
    """Every test starts as a fresh process on a person's machine would: MLflow's global tracking
    URI unset and no MLFLOW_TRACKING_URI (``run_tracked`` sets the global URI, and MLflow copies
    it into the environment), and no CI variable (a CI service sets one, and the CLI then drops
    the progress lines some tests read; a test wanting it sets it). All is restored afterwards."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")  # records the variable as it was, for the teardown
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(mlflow.tracking._tracking_service.utils, "_tracking_uri", None)


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory) -> Iterator[Path]:
    """dp2pub's cache directory (the migrated template new SQLite stores are copied from, see
    :func:`dp2pub.store_template.create_from_template`) in a folder of the session, for the tests and
    the processes they start, not the user's ~/.cache/dp2pub: one migration per session. A
    DP2PUB_CACHE_DIR set by the developer or CI (a cache kept between runs) is kept."""
    given = os.environ.get("DP2PUB_CACHE_DIR", "").strip()
    if given:
        yield Path(given)
        return
    folder = tmp_path_factory.mktemp("dp2pub-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DP2PUB_CACHE_DIR", str(folder))
        yield folder


@functools.cache
def calibrate() -> float:
    """Seconds a fresh interpreter takes to import the command line and MLflow on this machine,
    measured once per test process: the unit of the few time limits the tests keep (a multiple
    of it, never a fixed number of seconds, so that a loaded machine does not fail them)."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "import dp2pub.cli, mlflow"], check=True)
    return time.monotonic() - start


@pytest.fixture(scope="session")
def calibration() -> float:
    """:func:`calibrate`."""
    return calibrate()


@pytest.fixture(scope="module")
def settled_heap() -> Iterator[None]:
    """The heap set aside for the module (:func:`dp2pub.testing.memory.settled_heap`): the
    garbage collection before each traced measurement scans what the module allocated, not
    the whole heap of a worker late in the suite (a second a collection)."""
    with memory.settled_heap():
        yield


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> str:
    """A SQLite tracking store shared by the tests of one session."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def compose_config(overrides: list[str]):
    """The config the CLI would compose for ``overrides`` (without running it)."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


#: Address space a capped CLI may map: a normal job maps about 3 GiB (Python, numpy,
#: scikit-learn, MLflow and their thread pools' reservations), so 6 GiB runs every job of the
#: tests and fails, instead of allocating, any job whose size check let too much through.
MEMORY_CAP_BYTES = 6 * 2**30


def cap_memory() -> None:
    """Limit the calling (child) process's address space to MEMORY_CAP_BYTES."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


#: The metrics every default job reports (the metric contract, docs/explanation/metric-contract.md; mse_theory
#: only with estimator=unbiased, whose closed form it is).
CONTRACT = (
    "tvd_1way",
    "tvd_2way",
    "mse_freq",
    "mse_count",
    "epsilon_spent",
    "n_records",
    "n_attributes",
    "time_perturb_s",
    "time_estimate_s",
    "time_total_s",
)


def cli_env(extra: dict | None = None) -> dict:
    """The environment of a CLI under test: Hydra's errors in one line, the store named on the
    command line only (never a developer's MLFLOW_TRACKING_URI)."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", **(extra or {})}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def start_cli(args: list[str], cwd: Path, env: dict | None = None, **popen: object) -> subprocess.Popen:
    """Start ``python -m dp2pub ARGS`` in ``cwd`` without waiting (CI=1: no progress lines;
    ``env`` adds variables); its stderr is piped as text unless ``popen`` says otherwise."""
    options: dict = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True, **popen}
    environment = cli_env({"CI": "1", **(env or {})})
    return subprocess.Popen([sys.executable, "-m", "dp2pub", *args], cwd=cwd, env=environment, **options)


def run_cli(
    args: list[str],
    cwd: Path,
    env: dict | None = None,
    capped: bool = False,
    prefix: tuple[str, ...] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """Run ``python -m dp2pub ARGS`` in ``cwd`` and capture its output; ``capped`` runs it
    under an address-space limit (:func:`cap_memory`); ``prefix`` is a command wrapping it;
    subprocess.TimeoutExpired after ``timeout`` seconds. The command runs in a process forked
    from one that imported it already (tests/warm_cli.py), or as a new program when its
    interpreter must start otherwise (a ``prefix``, start-up variables of its own)."""
    from tests import warm_cli  # imports the command line, the job and MLflow's store: not at collection

    environment = cli_env(env)
    if not prefix and not warm_cli.needs_new_interpreter(environment):
        return warm_cli.run(args, cwd, environment, MEMORY_CAP_BYTES if capped else None, timeout)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "dp2pub", *args],
        preexec_fn=cap_memory if capped else None,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rendered_block(
    folder: Path, capsys: pytest.CaptureFixture[str], bench: Callable[[list[str]], object], results: dict
) -> str:
    """A benchmark's ``--render`` run on ``results`` (written as JSON in ``folder``): the block
    it prints, which its page of the site shows."""
    (folder / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    bench(["--render", str(folder / "results.json")])
    return capsys.readouterr().out.strip("\n")


def runs_in(uri: str, experiment: str) -> list:
    """Every run of ``experiment`` in the store ``uri`` (none if the experiment does not exist)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id], max_results=5000)


def require_postgres() -> None:
    """Skip the calling test or fixture when PostgreSQL's server programs are missing, or fail
    it under CI (which must run every PostgreSQL test, never skip one silently)."""
    if postgres_bin() is None:
        if UNDER_CI:
            pytest.fail(f"{missing_postgres()}; CI runs the PostgreSQL tests", pytrace=False)
        pytest.skip(missing_postgres())


def reachable_tempdir() -> Path:
    """A new directory in the system's temporary directory that every user can enter (mode
    711), for PostgreSQL clusters: run as root, the server runs as the user ``postgres``, which
    cannot enter pytest's tmp_path (under a mode-700 directory). The caller removes it."""
    directory = Path(tempfile.mkdtemp(prefix="dp2pub-pg-"))
    directory.chmod(0o711)
    return directory


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster (fsync off) on 127.0.0.1, shared by the session."""
    require_postgres()
    directory = reachable_tempdir()
    try:
        with Postgres(directory / "cluster", fsync=False) as cluster:
            yield cluster
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def pg_mlflow_server(postgres, tmp_path) -> Iterator[MlflowServer]:
    """``mlflow server`` (one worker) on a fresh database of the session's PostgreSQL cluster,
    on 127.0.0.1, stopped when the test ends. A test may ``kill()`` and ``start()`` it again."""
    database = f"mlflow_{uuid.uuid4().hex[:12]}"
    postgres.create_database(database)
    artifacts, log = tmp_path / "server-artifacts", tmp_path / "server.log"
    with MlflowServer(postgres.uri(database), artifacts, workers=1, log=log) as server:
        yield server


@pytest.fixture
def mlflow_server(tmp_path) -> Iterator[str]:
    """The URI of an ``mlflow server`` (one worker) with a SQLite backend on 127.0.0.1,
    stopped when the test ends."""
    store = f"sqlite:///{tmp_path / 'server.db'}"
    with MlflowServer(store, tmp_path / "server-artifacts", workers=1, log=tmp_path / "server.log") as server:
        yield server.uri


@pytest.fixture
def ray_launcher() -> Iterator[tuple[list[str], dict[str, str]]]:
    """:func:`dp2pub.services.local_ray`'s arguments for one test, on 2 CPUs, its session
    folder (short, in /tmp: Ray's socket paths must stay under 108 characters) removed afterwards."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'dp2pub[ray]'")
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    yield local_ray(folder, num_cpus=2)
    shutil.rmtree(folder, ignore_errors=True)


#: Fixtures of services that take a whole machine's worth of start-up (a PostgreSQL cluster per
#: worker, a Ray cluster per test): their tests run in one xdist worker (make test: -n auto
#: --dist loadgroup), one after the other, while the other workers take the rest.
SERVICE_FIXTURES = {"postgres", "pg_mlflow_server", "ray_launcher", "ray_folder"}


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Iterator[list[pytest.Collector]]:
    """The suite's own files are collected as tests, not as doctest modules: ``--doctest-modules``
    (pyproject's addopts) is for dp2pub's docstrings, and would import every helper module here
    at collection (tests/warm_cli.py imports the command line and MLflow's store)."""
    collected = yield
    return [collector for collector in collected if not isinstance(collector, DoctestModule)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests that start :data:`SERVICE_FIXTURES`, or Ray by their name or parameter
    (``[ray]``: a fixture asked for at run time, ``ray start`` and ``ray stop``, which act on
    every Ray of the machine), in one xdist group."""
    for item in items:
        named_ray = re.search(r"(^|[^a-z])ray([^a-z]|$)", item.nodeid.lower()) is not None
        if named_ray or SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("services"))
