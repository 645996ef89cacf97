"""Bad command lines: each exits with status 2 and one line naming the key
and the bad value, and leaves no MLflow run RUNNING (config errors found before the run
starts leave no run at all; the others leave it FAILED with the message)."""

import pytest

from tests.conftest import run_cli, runs_in

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

CAR_QI = "mechanism.quasi_identifiers=[buying,maint,safety]"
BAD_COMMAND_LINES = [
    (["epsilon=-1"], "epsilon=-1.0 is invalid: expected a finite number > 0"),
    (["epsilon=0"], "epsilon=0.0 is invalid: expected a finite number > 0"),
    (["epsilon=nan"], "epsilon=nan is invalid: expected a finite number > 0"),
    (["epsilon=inf"], "epsilon=inf is invalid: expected a finite number > 0"),
    (["epsilon=abc"], "epsilon='abc' is invalid: expected a finite number > 0"),
    (
        ["dataset=nosuchdata"],
        "dataset='nosuchdata' is invalid: expected one of acs, adult, adult15, br2000, car, chess, connect4, csv, mushroom, nltcs, nursery, synthetic, synthetic_bn, synthetic_bn_tree",
    ),
    (
        ["mechanism=nosuchmech"],
        "mechanism='nosuchmech' is invalid: expected one of aim, dp2pub, dp2pub_ibu, dp2pub_trusted, dp2pub_trusted_ibu, dppro",
    ),
    (["dataset.n=0"], "dataset.n=0 is invalid: expected an integer >= 1"),
    (["dataset.d=0"], "dataset.d=0 is invalid: expected an integer >= 1"),
    (["dataset.k_min=1"], "dataset.k_min=1 is invalid: expected an integer >= 2"),
    (["dataset.k_min=20", "dataset.k_max=10"], "dataset.k_min=20 is invalid: expected an integer <= k_max=10"),
    (["mechanism=mondrian", "mechanism.k=0"], "mechanism.k=0 is invalid: expected an integer >= 1"),
    (
        ["mechanism=mondrian", "dataset=car", CAR_QI, "mechanism.k=5000"],
        "mechanism.k=5000 is invalid: expected an integer in [1, 1209] (the number of records)",
    ),
    (
        ["mechanism=samarati", "dataset=car", CAR_QI, "mechanism.k=5000"],
        "mechanism.k=5000 is invalid: expected an integer in [1, 1209] (the number of records)",
    ),
    (
        ["mechanism=samarati", "dataset=car", CAR_QI, "mechanism.l=5"],
        "mechanism.l=5 is invalid: expected an integer in [1, 4] (the distinct values of class in car)",
    ),
    (
        ["mechanism=mondrian", "dataset=car", CAR_QI, "mechanism.t=0"],
        "mechanism.t=0 is invalid: expected a number in (0, 1] or null",
    ),
    (
        ["mechanism=mondrian", "dataset=car", CAR_QI, "mechanism.t=1.5"],
        "mechanism.t=1.5 is invalid: expected a number in (0, 1] or null",
    ),
    (
        ["mechanism=mondrian", "dataset=car", CAR_QI, "mechanism.sensitive=[safety]"],
        "mechanism.sensitive=['safety'] is invalid: expected attributes that are not quasi-identifiers (both: ['safety'])",
    ),
    (
        ["mechanism=mondrian", "dataset=adult", "mechanism.quasi_identifiers=[age,education,sex]"],
        "(a functional dependency in the data): add education-num to mechanism.quasi_identifiers",
    ),
    (["mechanism=dp2pub", "mechanism.degree=-1"], "mechanism.degree=-1 is invalid: expected an integer >= 1"),
    (["seed=-5"], "seed=-5 is invalid: expected an integer >= 0"),
    (
        ["-m", "dataset=car,nosuchdata"],
        "dataset='nosuchdata' is invalid: expected one of acs, adult, adult15, br2000, car",
    ),
]


@pytest.mark.parametrize("overrides,message", BAD_COMMAND_LINES, ids=[" ".join(o) for o, _ in BAD_COMMAND_LINES])
def test_bad_command_line_is_refused_in_one_line_and_leaves_no_running_run(overrides, message, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [*overrides, f"tracking.uri={uri}", "tracking.experiment=bad", f"paths.outputs={tmp_path}"], cwd=tmp_path
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dp2pub: error: ") and message in lines[0], done.stderr
    runs = runs_in(uri, "bad")
    assert all(
        run.info.status == "FAILED" and run.data.tags["error"].endswith(lines[0][len("dp2pub: error: ") :])
        for run in runs
    )
