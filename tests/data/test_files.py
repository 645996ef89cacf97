"""Locating, verifying and downloading the UCI files; the train/test field of a Dataset."""

import numpy as np
import pytest

from dp2pub.data import DataFileError, DataNotFoundError, Dataset, Domain, load_car
from dp2pub.data import files
from dp2pub.data.files import UCI_SHA256, fetch, locate, search_dirs, sha256_of


def test_recorded_sums_match_the_shared_copies(uci_dir):
    for name, digest in UCI_SHA256.items():
        assert sha256_of(uci_dir / name) == digest, name


def test_search_order_config_then_environment_then_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("DP2PUB_DATA_DIR", str(tmp_path / "env"))
    assert search_dirs(tmp_path / "cfg") == [tmp_path / "cfg"]
    assert search_dirs(None) == [tmp_path / "env"]
    monkeypatch.delenv("DP2PUB_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    dirs = search_dirs(None)
    assert dirs[0] == tmp_path / "data" and dirs[-1] == files.PROJECT_ROOT.parent / "shared" / "data"


def test_missing_files_name_every_directory_searched(tmp_path, monkeypatch):
    monkeypatch.delenv("DP2PUB_DATA_DIR", raising=False)
    monkeypatch.setattr(files, "default_data_dirs", lambda: [tmp_path / "a", tmp_path / "b"])
    with pytest.raises(DataNotFoundError) as caught:
        locate(["car.data"], None)
    assert f"{tmp_path / 'a'}, {tmp_path / 'b'}" in str(caught.value)
    assert caught.value.searched == [tmp_path / "a", tmp_path / "b"]


def test_download_from_a_mirror_is_verified_and_cached(tmp_path, uci_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    data = load_car(empty, cache_dir=cache, download=True, url_base=uci_dir.as_uri() + "/")
    assert data.n == 1728 and (cache / "uci" / "car.data").is_file()
    again = locate(["car.data"], empty, download=True, url_base="file:///nonexistent/", cache_dir=cache)
    assert again["car.data"] == cache / "uci" / "car.data"  # reused, not fetched again


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
        load_car(tmp_path / "nothing", cache_dir=tmp_path / "c", download=True, url_base=mirror.as_uri())
    assert not (tmp_path / "c" / "uci" / "car.data").exists()


def test_offline_download_failure_says_how_to_provide_the_files(tmp_path):
    with pytest.raises(DataFileError) as caught:
        load_car(tmp_path, cache_dir=tmp_path / "c", download=True, url_base="file:///nonexistent/")
    assert "download failed" in str(caught.value) and "DP2PUB_DATA_DIR" in str(caught.value)


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
