"""Locating, verifying and downloading the UCI files; the train/test field of a Dataset."""

import gzip

import numpy as np
import pytest

from dp2pub.data import DataFileError, DataNotFoundError, Dataset, Domain, files, load_car
from dp2pub.data.files import (
    PACKAGED_DIR,
    SHA256,
    fetch,
    open_data_files,
    packaged,
    user_data_dir,
)
from dp2pub.digest import sha256_of
from dp2pub.validation import ConfigError
from tests.conftest import ROOT


def test_every_catalogued_file_is_packaged_with_its_original_sum():
    for name, digest in SHA256.items():
        file = packaged(name)  # verifies
        assert file.packaged and file.sha256 == digest and file.path == PACKAGED_DIR / f"{name}.gz"
    shipped = {str(p.relative_to(PACKAGED_DIR)).removesuffix(".gz") for p in PACKAGED_DIR.rglob("*.gz")}
    assert shipped == set(SHA256)


def test_notice_names_every_packaged_file_and_its_license():
    notice = (ROOT / "NOTICE").read_text()
    for name in SHA256:  # each data file by name; a table's .json files with its .csv
        base = name.rsplit("/", 1)[-1]
        if base.endswith(".json"):
            base = base.removesuffix("_int_to_str.json").removesuffix(".json") + ".csv"
        assert base in notice, name
    assert "CC BY 4.0" in notice and "Apache License 2.0" in notice
    assert (
        "Apache License\n                           Version 2.0"
        in (PACKAGED_DIR / "privbayes" / "LICENSE-PrivMRF.txt").read_text()
    )


def test_config_then_environment_then_the_packaged_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("DP2PUB_DATA_DIR", str(tmp_path / "env"))
    assert user_data_dir(tmp_path / "cfg") == tmp_path / "cfg"
    assert user_data_dir(None) == tmp_path / "env"
    monkeypatch.setenv("DP2PUB_DATA_DIR", " ")
    assert user_data_dir(None) is None
    monkeypatch.delenv("DP2PUB_DATA_DIR")
    assert user_data_dir(None) is None
    assert open_data_files(["car.data"])["car.data"].packaged


def test_a_users_directory_is_the_only_place_looked_in(tmp_path, uci_dir):
    (tmp_path / "car.data").write_bytes((uci_dir / "car.data").read_bytes())
    with pytest.raises(DataNotFoundError) as caught:
        open_data_files(["car.data", "adult.data", "adult.test"], tmp_path)
    message = str(caught.value)
    assert message.startswith(f"adult.data, adult.test: not found in {tmp_path};")
    assert "DP2PUB_DATA_DIR" in message and "packaged" in message and caught.value.searched == [tmp_path]


def test_a_users_altered_copy_names_both_sums(tmp_path, uci_dir):
    altered = (uci_dir / "car.data").read_bytes().replace(b"small", b"med", 1)  # still parses
    (tmp_path / "car.data").write_bytes(altered)
    with pytest.raises(DataFileError) as caught:
        load_car(tmp_path)
    message = str(caught.value)
    found = sha256_of(tmp_path / "car.data")
    assert message.startswith(
        f"{tmp_path / 'car.data'}: SHA-256 {found} differs from the original's {SHA256['car.data']}"
    )
    assert "replace it" in message and "verify_checksum=false" in message and "\n" not in message


@pytest.fixture
def broken_install(tmp_path, monkeypatch):
    """A packaged directory whose car.data is damaged in the way the test chooses."""
    folder = tmp_path / "packaged"
    folder.mkdir()
    monkeypatch.setattr(files, "PACKAGED_DIR", folder)
    return folder / "car.data.gz"


def test_a_damaged_packaged_copy_says_to_reinstall(broken_install):
    original = packaged_bytes("car.data")
    broken_install.write_bytes(gzip.compress(original.replace(b"vhigh", b"vlow!", 1)))
    with pytest.raises(DataFileError) as caught:
        load_car()
    message = str(caught.value)
    assert message.startswith(f"{broken_install}: SHA-256 ") and SHA256["car.data"] in message
    assert "reinstall" in message and "verify_checksum" not in message
    with pytest.raises(DataFileError, match="reinstall"):
        load_car(verify_checksum=False)  # a packaged copy is always checked


def test_a_truncated_or_missing_packaged_copy_says_to_reinstall(broken_install):
    broken_install.write_bytes(gzip.compress(packaged_bytes("car.data"))[:-50])
    with pytest.raises(DataFileError, match=r"car.data.gz: is not a complete gzip file .*reinstall"):
        load_car()
    broken_install.unlink()
    with pytest.raises(DataFileError, match=r"car.data.gz: missing; .*reinstall"):
        load_car()


def packaged_bytes(name: str) -> bytes:
    return gzip.decompress((ROOT / "dp2pub" / "data" / "packaged" / f"{name}.gz").read_bytes())


def test_download_from_a_mirror_is_verified_and_cached(tmp_path, uci_dir):
    cache = tmp_path / "cache"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "car.data").write_bytes((uci_dir / "car.data").read_bytes())
    data = load_car(cache_dir=cache, download=True, url_base=mirror.as_uri() + "/")
    assert data.n == 1728 and (cache / "uci" / "car.data").is_file()
    assert (cache / "uci" / "car.data.url").read_text() == (mirror / "car.data").as_uri() + "\n"
    (mirror / "car.data").unlink()
    again = open_data_files(["car.data"], download=True, url_base=mirror.as_uri(), cache_dir=cache)
    assert again["car.data"].path == cache / "uci" / "car.data"  # same URL: reused, not fetched again
    with pytest.raises(DataFileError, match="download failed"):  # another URL is fetched, and fails
        open_data_files(["car.data"], download=True, url_base="file:///nonexistent/", cache_dir=cache)
    assert (cache / "uci" / "car.data").is_file()  # the earlier download is kept


def test_download_wins_over_a_data_directory(tmp_path, uci_dir, monkeypatch):
    """download=true reads the download, not paths.data_dir or DP2PUB_DATA_DIR (an empty
    directory here: reading it would fail), and a URL that cannot be read fails."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DP2PUB_DATA_DIR", str(empty))
    for data_dir in (None, empty):
        cache = tmp_path / f"cache-{data_dir is None}"
        opened = open_data_files(["car.data"], data_dir, download=True, url_base=uci_dir.as_uri(), cache_dir=cache)
        assert opened["car.data"].path == cache / "uci" / "car.data"
        with pytest.raises(DataFileError, match=r"^file:///nonexistent/car.data: download failed .*dataset.url_base"):
            load_car(data_dir, cache_dir=tmp_path / "c", download=True, url_base="file:///nonexistent/")


@pytest.mark.parametrize("url_base", [None, "", "  ", "archive.ics.uci.edu/ml/", "gopher://x/", "http://", 3])
def test_a_url_base_that_is_no_url_is_refused_by_name(url_base, tmp_path):
    with pytest.raises(ConfigError, match=r"^url_base=.* is invalid: expected the URL of the folder serving"):
        open_data_files(["car.data"], download=True, url_base=url_base, cache_dir=tmp_path)  # type: ignore[arg-type]
    open_data_files(["car.data"], url_base=url_base, cache_dir=tmp_path)  # not read without download


def test_download_with_a_wrong_checksum_keeps_nothing(tmp_path, uci_dir):
    dest = tmp_path / "cache" / "car.data"
    with pytest.raises(DataFileError) as caught:
        fetch((uci_dir / "car.data").as_uri(), dest, "0" * 64)
    assert (uci_dir / "car.data").as_uri() in str(caught.value) and "expected 000" in str(caught.value)
    assert not dest.exists() and not list(dest.parent.iterdir())


def test_download_of_an_altered_file_is_refused(tmp_path, uci_dir):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "car.data").write_bytes((uci_dir / "car.data").read_bytes()[:-100])
    with pytest.raises(DataFileError, match="differs|expected"):
        load_car(cache_dir=tmp_path / "c", download=True, url_base=mirror.as_uri())
    assert not (tmp_path / "c" / "uci" / "car.data").exists()


def test_offline_download_failure_says_how_to_provide_the_files(tmp_path):
    with pytest.raises(DataFileError) as caught:
        load_car(cache_dir=tmp_path / "c", download=True, url_base="file:///nonexistent/")
    assert "download failed" in str(caught.value) and "DP2PUB_DATA_DIR" in str(caught.value)
    assert "dataset.download=false" in str(caught.value)


def test_is_test_is_checked_and_follows_the_records():
    domain = Domain.from_sizes([3])
    codes = np.array([[0], [1], [2]])
    data = Dataset(codes, domain, is_test=np.array([False, True, True]))
    assert data.with_codes(codes[::-1].copy()).is_test.tolist() == [False, True, True]
    assert data.with_codes(codes[:2]).is_test is None  # another size: no split
    train, test = data.train_test()
    assert train.codes.ravel().tolist() == [0] and test.codes.ravel().tolist() == [1, 2]
    with pytest.raises(ValueError, match="is_test"):
        Dataset(codes, domain, is_test=np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="is_test"):
        Dataset(codes, domain, is_test=np.array([True, False]))
    with pytest.raises(ValueError, match="no train/test split"):
        Dataset(codes, domain).train_test()
