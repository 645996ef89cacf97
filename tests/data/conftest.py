"""Where the tests find the UCI files: DP2PUB_DATA_DIR, else <repo>/../shared/data.

Tests that need the files skip, naming both places, only when neither has them; CI
(``.ci/run``) exports DP2PUB_DATA_DIR, so there they run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT

UCI_FILES = ("adult.data", "adult.test", "car.data", "car.names", "adult.names")


def find_uci_dir() -> tuple[Path | None, list[Path]]:
    """The first candidate directory holding every UCI file, and all candidates."""
    candidates = []
    if os.environ.get("DP2PUB_DATA_DIR"):
        candidates.append(Path(os.environ["DP2PUB_DATA_DIR"]).resolve())
    candidates.append((ROOT.parent / "shared" / "data").resolve())
    for folder in candidates:
        if all((folder / name).is_file() for name in UCI_FILES):
            return folder, candidates
    return None, candidates


@pytest.fixture(scope="session")
def uci_dir() -> Path:
    """The directory with adult.data, adult.test, adult.names, car.data, car.names."""
    folder, candidates = find_uci_dir()
    if folder is None:
        env = os.environ.get("DP2PUB_DATA_DIR") or "(DP2PUB_DATA_DIR not set)"
        pytest.skip(f"UCI files {', '.join(UCI_FILES)} found neither in DP2PUB_DATA_DIR={env} "
                    f"nor in {ROOT.parent / 'shared' / 'data'}")
    return folder
