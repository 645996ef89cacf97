"""End to end: each dataset lands a FINISHED run with its sizes; missing data fails the run."""

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from dp2pub.data.files import SHA256
from dp2pub.job import run_job
from dp2pub.validation import ConfigError
from tests.conftest import compose_config, run_cli, runs_in

#: Runs the command line or whole jobs on real data end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def test_car_run_lands_finished_with_its_sizes(tmp_path, uci_dir, store):
    uri = store
    done = run_cli(
        ["dataset=car", f"tracking.uri={uri}", "tracking.experiment=dataset-car", f"paths.outputs={tmp_path / 'out'}"],
        cwd=tmp_path,
        env={"DP2PUB_DATA_DIR": str(uci_dir)},
    )
    assert done.returncode == 0, done.stderr
    (run,) = runs_in(uri, "dataset-car")
    assert run.info.status == "FINISHED"
    assert run.data.metrics["n_records"] == 1728 and run.data.metrics["n_attributes"] == 7
    assert run.data.params["dataset.name"] == "car" and run.data.params["paths.data_dir"] == str(uci_dir)


def test_a_real_data_run_from_any_directory_reads_the_packaged_copy(tmp_path, store):
    done = run_cli(
        [
            "dataset=adult",
            "mechanism=pram",
            f"tracking.uri={store}",
            "tracking.experiment=dataset-packaged",
            f"paths.outputs={tmp_path / 'out'}",
            "metrics.max_subsets=5",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (run,) = runs_in(store, "dataset-packaged")
    assert run.info.status == "FINISHED" and run.data.metrics["n_records"] == 45222
    assert run.data.params["paths.data_dir"] == "None"


def test_missing_data_directory_fails_naming_it(tmp_path, store):
    uri = store
    done = run_cli(
        [
            "dataset=adult",
            f"tracking.uri={uri}",
            "tracking.experiment=dataset-nodata",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        env={"DP2PUB_DATA_DIR": "/nonexistent"},
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("dp2pub: error:")]
    assert "/nonexistent" in line and "DP2PUB_DATA_DIR" in line
    (run,) = runs_in(uri, "dataset-nodata")
    assert run.info.status == "FAILED" and "/nonexistent" in run.data.tags["error"]


def test_a_wrong_file_in_a_users_directory_fails_the_run_in_one_line(tmp_path, uci_dir, store):
    (tmp_path / "car.data").write_bytes((uci_dir / "car.data").read_bytes()[:-1000])
    done = run_cli(
        [
            "dataset=car",
            f"tracking.uri={store}",
            "tracking.experiment=dataset-wrong",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        env={"DP2PUB_DATA_DIR": str(tmp_path)},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("dp2pub: error:")]
    found = hashlib.sha256((tmp_path / "car.data").read_bytes()).hexdigest()
    assert f"{tmp_path / 'car.data'}: SHA-256 {found} differs from the original's {SHA256['car.data']}" in line
    (run,) = runs_in(store, "dataset-wrong")
    assert run.info.status == "FAILED" and found in run.data.tags["error"]


def plain(overrides):
    return OmegaConf.to_container(compose_config(overrides), resolve=True)


@pytest.mark.parametrize(
    "dataset,sizes", [("adult", (45222, 14)), ("car", (1728, 7)), ("nltcs", (21574, 16)), ("adult15", (45222, 15))]
)
def test_jobs_on_real_data_read_paths_data_dir(dataset, sizes, uci_dir):
    result = run_job(plain([f"dataset={dataset}", f"paths.data_dir={uci_dir}", "metrics.max_subsets=5"]))
    assert (result.metrics["n_records"], result.metrics["n_attributes"]) == sizes


def test_synthetic_bn_job_reports_its_sizes():
    result = run_job(plain(["dataset=synthetic_bn", "dataset.n=2000", "dataset.d=6"]))
    assert (result.metrics["n_records"], result.metrics["n_attributes"]) == (2000, 6)


def test_unknown_dataset_name_lists_the_available_ones():
    expected = "dataset.name='cars' is invalid: expected one of acs, adult, adult15, br2000, car, chess, connect4, csv, mushroom, nltcs, nursery, synthetic, synthetic_bn"
    with pytest.raises(ConfigError, match=expected):
        run_job(plain(["dataset.name=cars"]))


def test_data_dir_is_not_a_dataset_key():
    with pytest.raises(ConfigError, match=r"dataset.data_dir='x'.*download"):
        run_job(plain(["dataset=car", "+dataset.data_dir=x"]))


class Mirror:
    """A local HTTP server on 127.0.0.1 serving the files of a folder, recording the paths it
    was asked for."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                requests.append(self.path)

        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(folder))
        )
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def mirror(tmp_path, uci_dir) -> Iterator[Mirror]:
    """A mirror of the UCI folder of car.data, started and stopped around the test."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    (folder / "car.data").write_bytes((uci_dir / "car.data").read_bytes())
    served = Mirror(folder)
    served.thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()
        served.thread.join()


#: A mirror on 127.0.0.1 is reached directly, whatever proxy the environment names.
NO_PROXY = {"no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}


def test_download_true_downloads_even_with_a_data_directory(tmp_path, mirror, store):
    """DP2PUB_DATA_DIR (an empty directory: reading it would fail) with paths.data_dir=null
    does not stop dataset.download=true: the file comes from the mirror, verified, into
    <paths.cache_dir>/uci."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_cli(
        [
            "dataset=car",
            "dataset.download=true",
            f"dataset.url_base={mirror.url}",
            "paths.data_dir=null",
            f"tracking.uri={store}",
            "tracking.experiment=dataset-download",
            f"paths.outputs={tmp_path / 'out'}",
            "metrics.max_subsets=5",
        ],
        cwd=tmp_path,
        env={"DP2PUB_DATA_DIR": str(empty), **NO_PROXY},
    )
    assert done.returncode == 0, done.stderr
    assert mirror.requests == ["/car.data"]
    assert (tmp_path / "out" / "cache" / "uci" / "car.data").read_bytes() == (
        tmp_path / "mirror" / "car.data"
    ).read_bytes()
    (run,) = runs_in(store, "dataset-download")
    assert run.info.status == "FINISHED" and run.data.metrics["n_records"] == 1728


def test_an_unreachable_url_base_fails_the_run_in_one_line(tmp_path, uci_dir, store):
    """With the files at hand in DP2PUB_DATA_DIR, an unreachable dataset.url_base still
    fails the job: download=true means a download."""
    done = run_cli(
        [
            "dataset=car",
            "dataset.download=true",
            "dataset.url_base=http://127.0.0.1:9/",
            "paths.data_dir=null",
            f"tracking.uri={store}",
            "tracking.experiment=dataset-unreachable",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        env={"DP2PUB_DATA_DIR": str(uci_dir), **NO_PROXY},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        "dp2pub: error: http://127.0.0.1:9/car.data: download failed (Connection refused); check dataset.url_base"
    )
    (run,) = runs_in(store, "dataset-unreachable")
    assert run.info.status == "FAILED" and run.data.tags["error"].endswith(line[len("dp2pub: error: ") :])


def test_a_url_base_that_is_no_url_fails_the_run_naming_it(tmp_path, store):
    done = run_cli(
        [
            "dataset=car",
            "dataset.download=true",
            "dataset.url_base=archive.ics.uci.edu/ml/",
            f"tracking.uri={store}",
            "tracking.experiment=dataset-nourl",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "dp2pub: error: dataset.url_base='archive.ics.uci.edu/ml/' is invalid: expected the URL of the folder "
        "serving the files (http://, https://, ftp://, file://)"
    )
    (run,) = runs_in(store, "dataset-nourl")
    assert run.info.status == "FAILED"
