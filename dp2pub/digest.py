"""The SHA-256 of a file, read a megabyte at a time: the checksums of data files, of a
plugin's source and of the files a config names."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (as stored, not uncompressed)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
