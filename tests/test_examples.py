"""The example plugin as a researcher installs it: dp2pub's wheel and the plugin's, not
editable, in a throwaway venv, run from a folder outside the clone
(:mod:`tests.installed_example`). The venv is built offline: its dependencies are those of
the test environment, seen through a folder of links that leaves out dp2pub itself (so
``import dp2pub`` finds the installed wheel, never the clone)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.installed_example import PLUGIN, ROOT, SOURCE, check_installed_example, copy_tree

#: Builds wheels and runs the command line end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python*/site-packages")
    return found


def offline_venv(folder: Path) -> Path:
    """A venv holding dp2pub's and the plugin's wheels, built and installed without the
    package index; returns its ``bin``."""
    wheels = folder / "wheels"
    sources = copy_tree(ROOT, SOURCE, folder / "dp2pub"), copy_tree(PLUGIN.parent, (PLUGIN.name,), folder) / PLUGIN.name
    for source in sources:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, source],
            check=True,
            capture_output=True,
        )
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    links = folder / "deps"
    links.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("dp2pub", "__editable__", "_dp2pub")) and entry.suffix != ".pth":
            (links / entry.name).symlink_to(entry)
    (site_packages(venv) / "test-environment.pth").write_text(f"{links}\n")
    installed = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", *wheels.glob("*.whl")],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    return venv / "bin"


def test_the_installed_example_plugin_runs_its_study_figure_conformance_and_reruns(tmp_path):
    bin_dir = offline_venv(tmp_path)
    where = subprocess.run(
        [bin_dir / "python", "-c", "import dp2pub, kss_plugin; print(dp2pub.__file__, kss_plugin.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(ROOT) not in where and where.count(str(site_packages(tmp_path / "venv"))) == 2, where
    check_installed_example(bin_dir, tmp_path / "elsewhere")
