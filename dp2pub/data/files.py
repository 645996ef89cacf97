"""The real data files: the copies packaged with dp2pub, a user's own copies, and downloads.

Every real dataset travels inside the package, gzip-compressed, under
``dp2pub/data/packaged/`` (the layout of :data:`SHA256`: ``adult.data``,
``privbayes/nltcs.csv``, ...); ``NOTICE`` at the top of the repository names each file's
source, citation and license. Where the bytes come from, in order:

1. ``dataset.download=true`` (adult and car only): the files of ``dataset.url_base``,
   fetched into ``<paths.cache_dir>/uci`` and kept only if their SHA-256 matches. The flag
   means what it says whatever else is set: a data directory (``paths.data_dir`` or
   ``DP2PUB_DATA_DIR``) is not read for the dataset, and a ``url_base`` that cannot be
   reached fails the job in one line naming it. A file fetched before from the same URL
   (recorded beside it, ``<name>.url``) is reused; another URL fetches again.
2. ``paths.data_dir`` in the config, else the environment variable ``DP2PUB_DATA_DIR``: a
   directory holding the same files under the same relative paths, plain or ``.gz``
   (a user's own copy, or another version of the files: the checksum check says which file
   differs). Nothing else is searched when one is set.
3. Otherwise the packaged copy.

Every file is checked against the SHA-256 of the original (of the uncompressed bytes, so the
packaged copy, a user's plain copy and a download are checked alike). A user's copy may skip
the check (``dataset.verify_checksum=false``); a packaged copy is always checked, and a
damaged one is reported as a broken install; a download is checked before it is kept.
Nothing is ever written into a data directory.

gzip rather than xz: every Python has zlib, while ``lzma`` is missing from Pythons built
without liblzma; the whole packaged set is 1.6 MB with gzip -9 (1.2 MB with xz).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dp2pub.data.errors import DataFileError, DataNotFoundError
from dp2pub.digest import sha256_of
from dp2pub.validation import ConfigError, check_text

log = logging.getLogger(__name__)

ENV_VAR = "DP2PUB_DATA_DIR"
#: The packaged copies: ``<PACKAGED_DIR>/<name>.gz`` for every name of :data:`SHA256`.
PACKAGED_DIR = Path(__file__).resolve().parent / "packaged"
REINSTALL = "the installed dp2pub is damaged: reinstall it (pip install --force-reinstall dp2pub)"

#: SHA-256 of each original file (uncompressed), by its path in a data directory.
SHA256: dict[str, str] = {
    # UCI Adult (Becker & Kohavi 1996) and Car Evaluation (Bohanec 1997)
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "car.data": "b703a9ac69f11e64ce8c223c0a40de4d2e9d769f7fb20be5f8f2e8a619893d83",
    "car.names": "9835ccf47cdbd111577adc50000d6d247f71a31fd6ef84bf25181449685d22bd",
    # the PrivBayes benchmark tables, as preprocessed by PrivMRF (Apache-2.0)
    "privbayes/nltcs.csv": "31d23617ba74786d2d163c9c31a841e11e5a5f5f8266918d8021ec4e562684b4",
    "privbayes/nltcs.json": "eb398738ce3a006924c79a3849824f791510713ec30cd258b59e13bd5538f8cf",
    "privbayes/nltcs_int_to_str.json": "46c34d5d35d3a5d8d7dec4454522ba7bd6bfa2cf77288225074cd3aac7055f66",
    "privbayes/acs.csv": "89e337a3431f9b3f76d84142cb048495fec93ff10018b1f38b25a19491582cc8",
    "privbayes/acs.json": "153ce7fa936e7c6a8bb70205ae5203dc028f8896cacab12e43e9e874eef7eb15",
    "privbayes/acs_int_to_str.json": "bdec50d59a927b8fe5c09fc6d6f762acbc1cc20884aefbf1ec8a282b48681c15",
    "privbayes/br2000.csv": "a08ae196bd1facefe86039524c628b3d94bc08d1d1408fc7afc5684f03044104",
    "privbayes/br2000.json": "1e285a611e3ded08366f237df1d669285ba1a79a55fb5e874884e94bd1c28f70",
    "privbayes/br2000_int_to_str.json": "0141c1cba2723595d5b2a91d88314ae2780340cf252999ee9394178657b1272c",
    "privbayes/adult.csv": "b150d694898d13d8c8ff916d481ca4e8a985ab5e03b7cfbc33ac5aa3802a9419",
    "privbayes/adult.json": "00c5d976f97ac55c1b7f617726f5362691ab4e0831c2befe3530665363f92323",
    "privbayes/adult_int_to_str.json": "fb5c979db55e9ceb038bd4416b679cf1d3eb248121380858bc45cc419bfbf95c",
    # UCI Mushroom, Nursery, Chess (King-Rook vs King-Pawn) and Connect-4
    "uci-nb/agaricus-lepiota.data": "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
    "uci-nb/agaricus-lepiota.names": "79e440566900901a5900febc1f3c9659e3746e306a5fa1aed4d084a1e4da76fd",
    "uci-nb/nursery.data": "8e0389c3dd37590248a921c2726d869ee96b817761a35eb8416afa24f31f931d",
    "uci-nb/nursery.names": "f18db269d8300cb47f9caf01a5e5513e23c8fa6ba647cfecb0e3af04790f5467",
    "uci-nb/kr-vs-kp.data": "70a5540902b4063d3977d3e820ac5b9fe5624eb5d93709eee5d50d7a94fca205",
    "uci-nb/kr-vs-kp.names": "491da0e0a8756fb8553c62d7eb3bd95333db1ccd5c62819f0e43f92aad614d72",
    "uci-nb/connect-4.data": "063152e6eadbb424c7ef4645df76e493a43812edd9c992400983da4fa54f8cba",
    "uci-nb/connect-4.names": "dc366b892f457153057eb51e9f10b1e76cca02a71e4198481d3abbc95293653f",
}

#: The URL schemes a download may use (``dataset.url_base``).
URL_SCHEMES = ("http", "https", "ftp", "file")
#: What a download's error adds: where the URL comes from, and the other sources.
DOWNLOAD_REMEDY = (
    "check dataset.url_base (the folder serving the files, e.g. the UCI archive's), or leave "
    "dataset.download=false to read paths.data_dir / DP2PUB_DATA_DIR or the copy packaged with dp2pub"
)

#: Where the UCI archive serves each dataset's files (``dataset.download=true``).
UCI_URL: dict[str, str] = {
    "adult": "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/",
    "car": "https://archive.ics.uci.edu/ml/machine-learning-databases/car/",
}


@dataclass(frozen=True)
class DataFile:
    """The uncompressed bytes of one data file.

    Attributes:
        name: its path in a data directory, a key of :data:`SHA256` (``privbayes/acs.csv``).
        path: the file read (``.gz`` for a compressed copy); messages name it.
        raw: the uncompressed contents.
        packaged: whether it is the copy packaged with dp2pub.
    """

    name: str
    path: Path
    raw: bytes
    packaged: bool = False

    @classmethod
    def read(cls, path: str | Path, name: str | None = None, packaged: bool = False) -> DataFile:
        """Read ``path``, uncompressing it if its name ends in ``.gz``.

        Raises:
            DataFileError: naming the file if it cannot be read or is not valid gzip.
        """
        path = Path(path)
        name = name if name is not None else path.name.removesuffix(".gz")
        remedy = REINSTALL if packaged else "replace it"
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise DataFileError(path, f"cannot be read ({error.strerror or error}); {remedy}") from None
        if path.suffix == ".gz":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as error:
                raise DataFileError(path, f"is not a complete gzip file ({error}); {remedy}") from None
        return cls(name, path, raw, packaged)

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the uncompressed bytes."""
        return hashlib.sha256(self.raw).hexdigest()

    def verify(self, detail: str = "") -> None:
        """Check the bytes against the original's SHA-256 in :data:`SHA256`.

        ``detail`` (such as the records read and the last line) is added to the message.

        Raises:
            DataFileError: naming the file, the expected and the found SHA-256, and what to do
                (a damaged packaged copy: reinstall; a user's copy: replace it or skip the
                check).
        """
        expected, actual = SHA256[self.name], self.sha256
        if actual == expected:
            return
        extra = f"; {detail}" if detail else ""
        remedy = (
            REINSTALL
            if self.packaged
            else ("an altered or truncated copy: replace it, or set dataset.verify_checksum=false to load it anyway")
        )
        raise DataFileError(self.path, f"SHA-256 {actual} differs from the original's {expected}{extra}; {remedy}")

    def check(self, verify_checksum: bool, detail: str = "") -> None:
        """After parsing, :meth:`verify` a user's copy or a download unless ``verify_checksum``
        is false (a packaged copy was verified when read, see :func:`packaged`)."""
        if verify_checksum and not self.packaged:
            self.verify(detail)


def user_data_dir(data_dir: str | Path | None) -> Path | None:
    """The directory given by ``data_dir`` (``paths.data_dir``), else by DP2PUB_DATA_DIR, else
    None (use the packaged copies). Relative paths are taken from the working directory."""
    for given in (data_dir, os.environ.get(ENV_VAR)):
        if given is not None and str(given).strip():
            return Path(given).expanduser().resolve()
    return None


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dp2pub`` (``~/.cache/dp2pub``): downloads when no cache dir is given."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dp2pub"


def fetch(url: str, dest: Path, expected_sha256: str, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` and keep it only if its SHA-256 is ``expected_sha256``.

    The file is written to a ``.part`` file of this process and renamed when verified, so an
    interrupted or wrong download never leaves a file at ``dest``, and two jobs fetching the
    same file do not write into each other's.

    Raises:
        DataFileError: naming the URL, if the download fails or the checksum differs (each
            time: check ``dataset.url_base``).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError, ValueError) as error:
        part.unlink(missing_ok=True)
        raise DataFileError(url, f"download failed ({_reason(error)}); {DOWNLOAD_REMEDY}") from None
    actual = sha256_of(part)
    if actual != expected_sha256:
        part.unlink(missing_ok=True)
        raise DataFileError(
            url, f"downloaded file has SHA-256 {actual}, expected {expected_sha256}; not saved; {DOWNLOAD_REMEDY}"
        )
    os.replace(part, dest)
    return dest


def _reason(error: Exception) -> str:
    """Why a download failed, in a few words (``Connection refused``, ``HTTP Error 404: Not Found``)."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP Error {error.code}: {error.reason}"
    if isinstance(error, urllib.error.URLError):
        reason = error.reason
        return getattr(reason, "strerror", None) or str(reason)
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def check_url_base(url_base: object) -> str:
    """``url_base`` if it is the URL of a folder that a download can read (a scheme of
    :data:`URL_SCHEMES` and a place), else ConfigError naming ``url_base``."""
    allowed = "the URL of the folder serving the files (" + ", ".join(f"{s}://" for s in URL_SCHEMES) + ")"
    text = check_text(url_base, "url_base", allowed)
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in URL_SCHEMES or not (parts.netloc or parts.path.strip("/")):
        raise ConfigError("url_base", url_base, allowed)
    return text.strip()


def _from_directory(names: Sequence[str], folder: Path) -> dict[str, DataFile]:
    """The files ``names`` from a user's data directory, each plain or ``.gz``."""
    found: dict[str, Path] = {}
    for name in names:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                found[name] = candidate
                break
    missing = [name for name in names if name not in found]
    if missing:
        hint = (
            "put the files there (plain or .gz, same relative paths), or unset paths.data_dir "
            f"and {ENV_VAR} to use the copies packaged with dp2pub"
        )
        raise DataNotFoundError(", ".join(missing), [folder], hint)
    return {name: DataFile.read(found[name], name) for name in names}


def _download(names: Sequence[str], url_base: str, cache_dir: str | Path | None) -> dict[str, DataFile]:
    """The files ``names`` fetched from ``url_base`` into ``<cache_dir>/uci``; a file that
    was fetched from the same URL before (the URL is recorded in ``<name>.url`` beside it)
    is reused, any other is fetched again."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache.expanduser().resolve() / "uci"
    for name in names:
        url, dest = url_base.rstrip("/") + "/" + name, target / name
        record = dest.with_name(f"{dest.name}.url")
        if dest.is_file() and record.is_file() and record.read_text().strip() == url:
            continue
        log.info("downloading %s into %s", url, dest)
        fetch(url, dest, SHA256[name])
        record.write_text(url + "\n")
    return {name: DataFile.read(target / name, name) for name in names}


def packaged(name: str) -> DataFile:
    """The copy of ``name`` packaged with dp2pub, verified against its SHA-256.

    Raises:
        DataFileError: if the install lacks it, or it is not valid gzip, or its bytes differ
            from the original's (each time: reinstall).
    """
    path = PACKAGED_DIR / f"{name}.gz"
    if not path.is_file():
        raise DataFileError(path, f"missing; {REINSTALL}")
    file = DataFile.read(path, name, packaged=True)
    file.verify()
    return file


def open_data_files(
    names: Sequence[str],
    data_dir: str | Path | None = None,
    *,
    download: bool = False,
    url_base: str | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, DataFile]:
    """The files ``names`` (keys of :data:`SHA256`), all from one place: a download from
    ``url_base`` into ``<cache_dir>/uci`` with ``download`` (a data directory is then not
    read), else the user's data directory if one is set (:func:`user_data_dir`), else the
    packaged copies. Only packaged copies and downloads are verified here; the caller checks
    a user's copy after parsing it (:meth:`DataFile.check`), so that a bad line is reported
    as such.

    Raises:
        ConfigError: naming ``url_base`` if ``download`` is set and it is not a URL.
        DataNotFoundError: naming the user's directory and the files it lacks.
        DataFileError: if a file cannot be read, a download fails, or the install is damaged.
    """
    unknown = [name for name in names if name not in SHA256]
    if unknown:
        raise KeyError(f"not a known data file: {unknown[0]!r}")
    folder = user_data_dir(data_dir)
    if download:
        url_base = check_url_base(url_base)
        if folder is not None:
            log.info("download=true: fetching from %s, not reading the data directory %s", url_base, folder)
        return _download(names, url_base, cache_dir)
    if folder is not None:
        return _from_directory(names, folder)
    return {name: packaged(name) for name in names}
