"""dp2pub-figures in-process: files, byte-identical rebuilds, one-line errors with status 2."""

import re

import pytest

from dp2pub.figures.cli import main
from tests.figures.conftest import STUDIES

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

FILES = ("fo_variance_runs.csv", "fo_variance_summary.csv", "fo_variance.png", "fo_variance.pdf")


@pytest.fixture(scope="module")
def built(fake_store, tmp_path_factory):
    """The fo_variance figures built twice from the store, and once from the runs CSV alone."""
    first, second, rebuilt = (tmp_path_factory.mktemp(name) for name in ("first", "second", "rebuilt"))
    for out in (first, second):
        assert main(["fo_variance", f"tracking.uri={fake_store['uri']}", f"figures.dir={out}"]) == 0
    csv = first / "fo_variance_runs.csv"
    assert (
        main(
            [
                "fo_variance",
                f"figures.from_csv={csv}",
                f"figures.dir={rebuilt}",
                "tracking.uri=sqlite:////nonexistent/never/read.db",
            ]
        )
        == 0
    )
    return first, second, rebuilt


def test_writes_figures_and_csvs_named_after_the_study(built, capsys):
    first, _, _ = built
    for name in FILES:
        assert (first / name).stat().st_size > 0
    assert (first / "fo_variance.png").read_bytes().startswith(b"\x89PNG")
    assert (first / "fo_variance.pdf").read_bytes().startswith(b"%PDF")


def test_prints_the_paths_written(fake_store, tmp_path, capsys):
    main(["fo_variance", f"tracking.uri={fake_store['uri']}", f"figures.dir={tmp_path}"])
    out = capsys.readouterr().out.split()
    assert out == [str(tmp_path / name) for name in FILES]


def test_two_builds_are_byte_identical(built):
    first, second, _ = built
    for name in FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_rebuild_from_csv_alone_is_byte_identical(built):
    first, _, rebuilt = built
    assert not (rebuilt / "fo_variance_runs.csv").exists()  # the input is not rewritten
    for name in FILES[1:]:
        assert (first / name).read_bytes() == (rebuilt / name).read_bytes(), name


def test_default_dir_is_under_paths_outputs(fake_store, tmp_path):
    main(["fo_variance", f"tracking.uri={fake_store['uri']}", f"paths.outputs={tmp_path}"])
    assert (tmp_path / "figures" / "fo_variance.png").is_file()


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dp2pub-figures: error: ")
    return err


def test_no_arguments_print_the_usage_and_every_study_with_its_title(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: dp2pub-figures [-h] [--config-dir DIR] study [key=value ...]")
    for name, spec in STUDIES.items():
        assert re.search(rf"^  {name} +{re.escape(spec.title)}$", out, re.MULTILINE), name
    assert "figures.from_csv" in out


def test_unknown_study_lists_the_studies(capsys):
    err = _error(capsys, ["nosuch"])
    assert (
        "unknown study 'nosuch'; available: dp2pub_adult, dp2pub_paper, dp2pub_paper_svm, dp2pub_regimes, fo_variance, kanon_adult, ldp_marginals, ldp_marginals_svm, nb_car, nb_uci, seed_tables"
        in err
    )


def test_unknown_key(capsys, tmp_path):
    assert "unknown key 'figures.bogus'" in _error(capsys, ["nb_car", "figures.bogus=1"])
    assert "expected key=value" in _error(capsys, ["nb_car", "tracking.uri"])


def test_empty_experiment_names_experiment_store_and_sweep(capsys, fake_store, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    err = _error(capsys, ["nb_car", f"tracking.uri={fake_store['uri']}"])
    assert f"experiment 'nb_car' in {fake_store['uri']} has no finished runs" in err
    assert f"fill it with: dp2pub -m experiment=nb_car tracking.uri={fake_store['uri']}\n" in err
    err = _error(capsys, ["nb_car", f"paths.outputs={tmp_path}"])
    assert f"in sqlite:///{tmp_path}/mlflow.db has no finished runs" in err
    assert f"fill it with: dp2pub -m experiment=nb_car paths.outputs={tmp_path}\n" in err


def test_missing_csv(capsys, tmp_path):
    assert "cannot read" in _error(capsys, ["nb_car", f"figures.from_csv={tmp_path / 'no.csv'}"])
