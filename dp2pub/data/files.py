"""Where the real data files are, whether they are the UCI originals, and fetching them.

The data directory is ``paths.data_dir`` in the config, which defaults to the environment
variable ``DP2PUB_DATA_DIR``. When neither is set, :func:`search_dirs` looks in ``./data``
(working directory), ``<project>/data`` and ``<project>/../shared/data`` (the workplace's
shared copy), in that order. Files are never written into a data directory: downloads (only
with ``dataset.download=true``) go to ``<cache_dir>/uci`` and are kept only if their SHA-256
matches the UCI original.

The sums are those of the UCI Machine Learning Repository distributions (Becker & Kohavi
1996, doi:10.24432/C5XW20; Bohanec 1997, doi:10.24432/C5JP48) as listed in
``../shared/data/README.md``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from dp2pub.data.errors import DataFileError, DataNotFoundError

ENV_VAR = "DP2PUB_DATA_DIR"

#: SHA-256 of the UCI originals (../shared/data/README.md).
UCI_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "car.data": "b703a9ac69f11e64ce8c223c0a40de4d2e9d769f7fb20be5f8f2e8a619893d83",
    "car.names": "9835ccf47cdbd111577adc50000d6d247f71a31fd6ef84bf25181449685d22bd",
}

#: Where the UCI archive serves each dataset's files.
UCI_URL: dict[str, str] = {
    "adult": "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/",
    "car": "https://archive.ics.uci.edu/ml/machine-learning-databases/car/",
}

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def default_data_dirs() -> list[Path]:
    """The directories searched when neither ``paths.data_dir`` nor DP2PUB_DATA_DIR is set."""
    candidates = [Path.cwd() / "data", PROJECT_ROOT / "data", PROJECT_ROOT.parent / "shared" / "data"]
    unique: list[Path] = []
    for candidate in (c.resolve() for c in candidates):
        if candidate not in unique:
            unique.append(candidate)
    return unique


def search_dirs(data_dir: str | Path | None) -> list[Path]:
    """The directories to look in: ``data_dir`` alone if given, else DP2PUB_DATA_DIR alone if
    set, else :func:`default_data_dirs`. Relative paths are taken from the working directory."""
    for given in (data_dir, os.environ.get(ENV_VAR)):
        if given is not None and str(given).strip():
            return [Path(given).expanduser().resolve()]
    return default_data_dirs()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dp2pub`` (``~/.cache/dp2pub``): downloads when no cache dir is given."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dp2pub"


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str, detail: str = "", actual: str | None = None) -> str:
    """Return the file's SHA-256 if it is ``expected``, else raise DataFileError naming the
    file (``detail``, such as the record count read, is added to the message). ``actual`` is
    the sum if already computed."""
    actual = actual or sha256_of(path)
    if actual != expected:
        extra = f"; {detail}" if detail else ""
        raise DataFileError(
            path,
            f"SHA-256 {actual} differs from the UCI original's {expected}{extra} (altered or "
            "truncated copy: replace it, or set dataset.verify_checksum=false to load it anyway)",
        )
    return actual


def fetch(url: str, dest: Path, expected_sha256: str, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` and keep it only if its SHA-256 is ``expected_sha256``.

    The file is written to ``dest.part`` and renamed when verified, so an interrupted or
    wrong download never leaves a file at ``dest``.

    Raises:
        DataFileError: naming the URL, if the download fails or the checksum differs.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError, ValueError) as error:
        part.unlink(missing_ok=True)
        raise DataFileError(url, f"download failed ({error}); provide the file yourself "
                                 f"(set DP2PUB_DATA_DIR or paths.data_dir)") from None
    actual = sha256_of(part)
    if actual != expected_sha256:
        part.unlink(missing_ok=True)
        raise DataFileError(url, f"downloaded file has SHA-256 {actual}, expected {expected_sha256}; "
                                 "not saved")
    os.replace(part, dest)
    return dest


def locate(
    filenames: Sequence[str],
    data_dir: str | Path | None,
    *,
    download: bool = False,
    url_base: str | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, Path]:
    """Paths of ``filenames``, all from one directory.

    Looks in :func:`search_dirs` ``(data_dir)``; with ``download`` also in ``<cache_dir>/uci``,
    and fetches what is missing there from ``url_base`` (verified against :data:`UCI_SHA256`).

    Raises:
        DataNotFoundError: naming every directory searched and how to provide the files.
        DataFileError: if a download fails or does not match its checksum.
    """
    dirs = search_dirs(data_dir)
    for folder in dirs:
        if all((folder / name).is_file() for name in filenames):
            return {name: folder / name for name in filenames}
    if download:
        if url_base is None:
            raise ValueError("download=True needs url_base")
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        target = cache.expanduser().resolve() / "uci"
        for name in filenames:
            if not (target / name).is_file():
                fetch(url_base.rstrip("/") + "/" + name, target / name, UCI_SHA256[name])
        return {name: target / name for name in filenames}
    hint = (
        f"put the UCI files there, or set DP2PUB_DATA_DIR or paths.data_dir to the directory "
        f"that holds them (or set dataset.download=true to fetch them from {url_base or 'UCI'})"
    )
    raise DataNotFoundError(", ".join(filenames), dirs, hint)
