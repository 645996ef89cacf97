"""Faults of the machine under a job, recognised in whatever exception reports them.

A full disk reaches dp2pub as ``OSError(ENOSPC)`` from Python, ``sqlite3.OperationalError:
database or disk is full`` (``SQLITE_FULL``) from SQLite, or either wrapped by SQLAlchemy and
MLflow; a damaged SQLite file as ``database disk image is malformed`` (``SQLITE_CORRUPT``) or
``file is not a database`` (``SQLITE_NOTADB``). :func:`disk_full` and :func:`damage` look
through an exception's causes for them, so that the caller can word the fault in one line
(:mod:`dp2pub.store`, :mod:`dp2pub.tracking`) instead of printing MLflow's traceback.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

#: SQLite's primary result codes (``sqlite3.SQLITE_*`` from Python 3.11 only; the
#: ``sqlite_errorcode`` of an error too, so the words are matched as well).
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 11, 13, 26
#: What SQLite says of a damaged database file, by its result code.
DAMAGE = {SQLITE_CORRUPT: "database disk image is malformed", SQLITE_NOTADB: "file is not a database"}


def chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions it was raised from or during, innermost last (not past a
    ``raise ... from None``: an error already worded)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` comes from a full disk (``ENOSPC``, ``EDQUOT`` or ``SQLITE_FULL``)."""
    for link in chain(error):
        if isinstance(link, OSError) and link.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if _primary(link) == SQLITE_FULL or "database or disk is full" in str(link):
            return True
    return False


def damage(error: BaseException) -> str | None:
    """What SQLite said of a damaged database file behind ``error``, or None."""
    for link in chain(error):
        code = _primary(link)
        if code in DAMAGE:
            return DAMAGE[code]
        for words in DAMAGE.values():
            if words in str(link):
                return words
    return None


def _primary(error: BaseException) -> int | None:
    """SQLite's primary result code of ``error`` (its extended code's low byte), if any."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def existing(path: Path) -> Path:
    """``path`` or its nearest parent that exists (the filesystem a new file there lands on)."""
    return next((folder for folder in (path, *path.parents) if folder.exists()), Path("/"))


def free_bytes(path: Path) -> int:
    """The free bytes of the filesystem that holds ``path`` (or its nearest existing parent)."""
    return shutil.disk_usage(existing(path)).free
