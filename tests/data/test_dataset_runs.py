"""End to end: each dataset lands a FINISHED run with its sizes; missing data fails the run."""

import hashlib

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
