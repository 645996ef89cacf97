"""A non-editable install carries everything: the wheel holds every module, config and data
file, builds without warnings, stays small, and runs real data from another directory."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dp2pub.data.files import SHA256
from tests.conftest import ROOT, runs_in
from tests.installed_example import SOURCE, copy_tree

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

MAX_WHEEL_BYTES = 4 * 2**20


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built offline from a copy of the sources, and the build's output."""
    tree = copy_tree(ROOT, SOURCE, tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-v",
            "-w",
            str(out),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = out.glob("dp2pub-*.whl")
    return built, done.stdout + done.stderr


def expected_members() -> set[str]:
    """Every file the wheel must hold, by its path inside the wheel."""
    package = ROOT / "dp2pub"
    members = {str(p.relative_to(ROOT)) for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    plugins = ROOT / "hydra_plugins"  # dp2pub's Ray launcher and sweeper, where Hydra looks for them
    members |= {str(p.relative_to(ROOT)) for p in plugins.glob("dp2pub_*/*.py")}
    members |= {str(p.relative_to(ROOT)) for p in (package / "data" / "hierarchies").rglob("*.csv")}
    members |= {f"dp2pub/data/packaged/{name}.gz" for name in SHA256}
    members.add("dp2pub/data/packaged/privbayes/LICENSE-PrivMRF.txt")
    members |= {"dp2pub/conf/" + str(p.relative_to(ROOT / "conf")) for p in (ROOT / "conf").rglob("*.yaml")}
    return members


def test_the_wheel_holds_every_module_config_and_data_file(wheel):
    path, _ = wheel
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    missing = expected_members() - names
    assert not missing, sorted(missing)
    licenses = {n.split(".dist-info/licenses/", 1)[1] for n in names if ".dist-info/licenses/" in n}
    assert {"LICENSE", "NOTICE", "dp2pub/data/packaged/privbayes/LICENSE-PrivMRF.txt"} <= licenses
    assert "License-Expression: MIT" in metadata
    assert path.stat().st_size < MAX_WHEEL_BYTES, f"{path.stat().st_size / 2**20:.2f} MB"


def test_the_build_does_not_warn(wheel):
    _, output = wheel
    warnings = [
        line for line in output.splitlines() if "Warning" in line and ("setuptools" in line or "BuildBackend" in line)
    ]
    assert not warnings, warnings[:5]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed (without its dependencies, which this venv has) into a folder."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel[0])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return target


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m dp2pub ARGS`` importing dp2pub from ``site`` only (not from the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(site), "HYDRA_FULL_ERROR": "0"}
    for name in ("MLFLOW_TRACKING_URI", "DP2PUB_DATA_DIR"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "dp2pub", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_an_installed_dp2pub_runs_real_data_from_any_directory(installed, tmp_path):
    info = run_installed(installed, tmp_path, "--info", "searchpath")
    assert info.returncode == 0, info.stderr
    assert f"file://{installed / 'dp2pub' / 'conf'}" in info.stdout
    assert str(ROOT / "conf") not in info.stdout
    done = run_installed(
        installed,
        tmp_path,
        "dataset=adult",
        "mechanism=pram",
        "metrics.max_subsets=5",
        f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pram on adult" in done.stdout and "n_records" in done.stdout


@pytest.mark.parametrize("study", sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml")))
def test_an_installed_dp2pub_composes_every_study(installed, tmp_path, study):
    done = run_installed(installed, tmp_path, f"experiment={study}", "--cfg", "hydra", "-p", "hydra.sweeper.params")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "epsilon" in done.stdout or "mechanism.k" in done.stdout


def test_a_damaged_install_fails_the_run_and_says_to_reinstall(installed, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(installed, site)
    damaged = site / "dp2pub" / "data" / "packaged" / "car.data.gz"
    damaged.write_bytes(gzip.compress(gzip.decompress(damaged.read_bytes()).replace(b"vhigh", b"vlow!", 1)))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_installed(site, tmp_path, "dataset=car", f"tracking.uri={uri}", "tracking.experiment=broken")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("dp2pub: error:")]
    assert f"{damaged}: SHA-256 " in line and SHA256["car.data"] in line and "reinstall" in line
    (run,) = runs_in(uri, "broken")
    assert run.info.status == "FAILED" and "reinstall" in run.data.tags["error"]
