"""Logging a run's artifacts without leaving half of them on a full disk.

``mlflow.log_artifacts`` copies file after file into the run's artifact location; on a full
filesystem it fails halfway with a traceback and leaves the files it copied. :func:`log_folder`
refuses the copy when a local location has less free space than the files need (in whole
blocks of that filesystem), and when the disk fills during the copy anyway (another writer),
removes what was copied; either way the caller gets one line naming the location, the space
needed and the space free (:class:`NoRoom`).
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
from pathlib import Path

import mlflow

from dp2pub.faults import disk_full, existing, free_bytes
from dp2pub.store import StoreError
from dp2pub.units import human


class NoRoom(StoreError):
    """Too little space where the run's artifacts go; one line with the place and sizes."""

    def __init__(self, where: str, need: int, free: int) -> None:
        super().__init__(
            f"no space left for the run's artifacts in {where}: they need {human(need)}, {human(free)} is free; "
            "free space there, or log to a new tracking.experiment with tracking.artifact_location on another disk"
        )


def local_dir(uri: str) -> Path | None:
    """The directory of a local artifact URI (``file:`` or a plain path), else None."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(urllib.parse.unquote(parsed.path))
    return None


def space_needed(folder: Path, destination: Path) -> int:
    """The bytes the files under ``folder`` take on the filesystem of ``destination``: each
    file's size rounded up to that filesystem's blocks."""
    block = os.statvfs(existing(destination)).f_frsize or 4096
    return sum(-(-f.stat().st_size // block) * block for f in folder.rglob("*") if f.is_file())


def log_folder(folder: Path) -> None:
    """``mlflow.log_artifacts(folder)`` into the active run, whole or not at all on a full disk.

    Raises:
        NoRoom: a local artifact location without the space; nothing of the run's artifacts
            is left there.
    """
    target = local_dir(mlflow.get_artifact_uri())
    need = 0 if target is None else space_needed(folder, target)
    if target is not None and (free := free_bytes(target)) < need:
        raise NoRoom(str(target), need, free)
    try:
        mlflow.log_artifacts(str(folder))
    except Exception as error:
        if target is None or not disk_full(error):
            raise
        shutil.rmtree(target, ignore_errors=True)
        raise NoRoom(str(target), need, free_bytes(target)) from None
