"""Shared fixtures: a throw-away MLflow store and composed configs."""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"

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


#: The metrics every default job reports (the metric contract of docs/design.md; mse_theory
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
    args: list[str], cwd: Path, env: dict | None = None, capped: bool = False, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """Run ``python -m dp2pub ARGS`` in ``cwd`` and capture its output; ``capped`` runs it
    under an address-space limit (:func:`cap_memory`); ``prefix`` is a command wrapping it."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "dp2pub", *args],
        preexec_fn=cap_memory if capped else None,
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def runs_in(uri: str, experiment: str) -> list:
    """Every run of ``experiment`` in the store ``uri`` (none if the experiment does not exist)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id], max_results=5000)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """``mlflow server`` with a SQLite backend on 127.0.0.1, stopped when the test ends."""
    port = free_port()
    exe = Path(sys.executable).parent / "mlflow"
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [
            str(exe),
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'server.db'}",
            "--artifacts-destination",
            str(tmp_path / "server-artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=tmp_path,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start: {(tmp_path / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def ray_arguments(folder: Path) -> tuple[list[str], dict[str, str]]:
    """Command-line arguments and environment of a sweep on a local Ray instance of 2 CPUs
    whose node address is 127.0.0.1, with its session files in ``folder`` (Ray's socket paths
    must stay under 108 characters: a short folder in /tmp) and a token for Ray's
    authentication in the environment, so that Ray writes none into the home directory."""
    args = [
        "hydra/launcher=ray",
        "hydra.launcher.ray.init.num_cpus=2",
        "+hydra.launcher.ray.init._node_ip_address=127.0.0.1",
        f"+hydra.launcher.ray.init._temp_dir={folder}",
    ]
    return args, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


@pytest.fixture
def ray_launcher():
    """:func:`ray_arguments` for one test, its session folder removed afterwards."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'dp2pub[ray]'")
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    yield ray_arguments(folder)
    shutil.rmtree(folder, ignore_errors=True)
