"""A user's own copy of the real data files, for the tests of ``paths.data_dir``.

Every other test reads the copies packaged with dp2pub: nothing outside the clone is used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dp2pub.data.files import SHA256, packaged


def export_originals(folder: Path, names=tuple(SHA256)) -> Path:
    """Write the packaged files ``names``, uncompressed, under ``folder`` (their relative
    paths kept): the directory a user would point DP2PUB_DATA_DIR at."""
    for name in names:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(packaged(name).raw)
    return folder


@pytest.fixture(scope="session")
def uci_dir(tmp_path_factory) -> Path:
    """A data directory holding the original (uncompressed) files, as a user would keep them."""
    return export_originals(tmp_path_factory.mktemp("own-copy"))
