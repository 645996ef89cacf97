"""Inputs a hostile user tries, each refused in one line before any work: sizes that cannot
fit, stores and artifact locations that cannot be used, values of the wrong type or out of
range, configs Hydra cannot compose. Each case asserts the exit status 2, the one stderr line
naming the key and the value, and the store: no run left RUNNING (a refusal found after the
run started leaves it FAILED with the same line). How fast a refusal comes is a figure of the
benchmark (``python -m dp2pub.bench overhead``, against Hydra's own start in the same run);
here a refusal only has to come within :data:`REFUSED_WITHIN` times the machine's own start
(tests.conftest.calibrate): never after the job's work, and not failed by a loaded machine.

The unusual inputs that must *run* are at the end (huge and tiny budgets, DP2-Pub's largest
clusters at a tiny budget).

Every CLI here runs under an address-space cap (tests.conftest.cap_memory, 6 GiB): a size
estimate that regressed would let a job start allocating, and the cap turns that into a
failing case instead of an exhausted machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dp2pub.services import free_port
from tests.conftest import calibrate, cap_memory, run_cli, runs_in

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

#: A refusal comes within this many times a bare start of the command line and MLflow
#: (tests.conftest.calibrate): about 3 s idle, so a minute; a job's work takes minutes.
REFUSED_WITHIN = 20
#: A fixed memory cap, so the refusals do not depend on the machine's memory.
CAP = "limits.memory_gib=16"

SIZES = [
    (
        ["dataset.k_max=1000000000", CAP],
        "job too large: dataset.n=10000, dataset.d=10, dataset.k_max=1000000000 would need about",
    ),
    (["dataset.d=1000000", CAP], "would compute 1,000,100 marginals > limits.max_marginals=100,000"),
    (
        ["dataset.d=1000000", "limits.max_marginals=10000000", CAP],
        "job too large: dataset.n=10000, dataset.d=1000000, dataset.k_max=10 would need about",
    ),
    (["dataset.n=1000000000000", CAP], "job too large: dataset.n=1000000000000, dataset.d=10"),
    (
        ["mechanism=rappor", "mechanism.num_bits=1000000000", CAP],
        "job too large: mechanism.num_bits=1000000000 with dataset.n=10000, dataset.d=10, dataset.k_max=10 would "
        "need about 12.5 TiB (table 104 KiB, rappor 12.5 TiB) > limits.memory_gib=16 = 16 GiB; lower "
        "mechanism.num_bits or raise limits.memory_gib",
    ),
    (
        ["mechanism=privbayes", "mechanism.degree=9", CAP],
        "job too large: mechanism.degree=9 with dataset.n=10000, dataset.d=10, dataset.k_max=10 would need about",
    ),
    (
        ["mechanism=dppro", "mechanism.k=100000000", CAP],
        "job too large: mechanism.k=100000000 with dataset.n=10000, dataset.d=10, dataset.k_max=10 would need about",
    ),
    (
        ["dataset.d=20", "dataset.k_min=20", "dataset.k_max=20", "metrics.ways=[8]", CAP],
        "job too large: metrics.ways=[8] with synthetic (10000 records x 20 attributes) would need about",
    ),
    # the range of a mechanism key is checked before the estimate that would otherwise refuse it
    (
        ["mechanism=dp2pub", "mechanism.degree=100"],
        "mechanism.degree=100 is invalid: expected an integer in [1, 9] (d=10)",
    ),
    (
        ["mechanism=privbayes", "mechanism.degree=100"],
        "mechanism.degree=100 is invalid: expected an integer in [1, 9] (d=10)",
    ),
    (
        ["dataset.d=100", "metrics.ways=[5]", "metrics.max_subsets=null", CAP],
        "metrics.ways=[5] with metrics.max_subsets=null on 100 attributes would compute 75,287,620 marginals",
    ),
    (["dataset=synthetic_bn", "dataset.k_max=1000000000", CAP], "job too large: dataset.n=10000"),
    (
        ["dataset=car", "mechanism=dp2pub", "mechanism.max_cells=1000000000000", "limits.memory_gib=0.001"],
        "job too large: car (1728 records x 7 attributes) would need about",
    ),
]
TYPES_AND_RANGES = [
    (["metrics.ways=2"], "metrics.ways=2 is invalid: expected a list of integers >= 1, e.g. [1, 2]"),
    (["metrics.ways=[0]"], "metrics.ways=0 is invalid: expected an integer >= 1"),
    (["metrics.ways=[11]"], "metrics.ways=11 is invalid: expected an integer in [1, 10]"),
    (
        ["dataset=car", "metrics.models=logreg"],
        "metrics.models='logreg' is invalid: expected a list of logreg, nb, svm, e.g. [logreg]",
    ),
    (["dataset=car", "metrics.models=[forest]"], "metrics.models='forest' is invalid: expected one of logreg, nb, svm"),
    (["metrics.max_subsets=0"], "metrics.max_subsets=0 is invalid: expected an integer >= 1"),
    (
        ["mechanism=dp2pub", "dataset.d=1", "metrics.ways=[1]"],
        "dataset.d=1 is invalid: expected at least 2 attributes for dp2pub's network",
    ),
    (["save_published=no"], "save_published='no' is invalid: expected true or false"),
    (["save_published=1"], "save_published=1 is invalid: expected true or false"),
    (["metrics.test_size=1.5"], "metrics.test_size=1.5 is invalid: expected a number in (0, 1)"),
    (["dataset=car", "metrics.test_size='0.3'"], "metrics.test_size='0.3' is invalid: expected a number in (0, 1)"),
    (["epsilon='2'"], "epsilon='2' is invalid: expected a finite number > 0"),
    (["tracking.experiment="], "tracking.experiment='' is invalid: expected a non-empty name"),
    (["tracking.uri="], "tracking.uri='' is invalid: expected a store URI"),
    (["tracking.artifact_location="], "tracking.artifact_location='' is invalid"),
    (["tracking.skip_finished=yes"], "tracking.skip_finished='yes' is invalid: expected true or false"),
    (["limits.memory_gib=0"], "limits.memory_gib=0 is invalid: expected a finite number > 0"),
    (["limits.max_marginals=-1"], "limits.max_marginals=-1 is invalid: expected an integer >= 1"),
    (["+foo=1"], "foo=1 is invalid: expected a key of the config: ['epsilon', 'seed'"),
    (["+metrics.foo=1"], "metrics.foo=1 is invalid: expected a key of metrics: ['ways', 'max_subsets'"),
    (["foo=1"], "foo=1 is invalid: expected a key of the config ('foo' is not one; +foo=1 adds a new key)"),
    (["metrics.foo=1"], "metrics.foo=1 is invalid: expected a key of the config ('metrics.foo' is not one"),
    (["epsilon=[1"], "epsilon=[1 is invalid: expected key=value in Hydra's override grammar"),
    (["epsilon=${nope}"], "epsilon='${nope}' is invalid: expected a value that resolves (Interpolation key 'nope'"),
    (
        ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0", "epsilon=1,2"],
        "hydra.launcher.n_jobs=0 is invalid: expected an integer >= 1, or < 0 (-1: one job per core)",
    ),
]


def assert_refused(
    done: subprocess.CompletedProcess, message: str, uri: str | None, experiment: str = "hostile"
) -> None:
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dp2pub: error: "), done.stderr[-3000:]
    assert message in lines[0], lines[0]
    if uri is not None:
        runs = runs_in(uri, experiment)
        assert all(run.info.status == "FAILED" for run in runs)
        assert all(run.data.tags["error"].endswith(lines[0][len("dp2pub: error: ") :]) for run in runs)


def refuse(overrides: list[str], tmp_path: Path, uri: str | None = None, env: dict | None = None):
    uri = uri or f"sqlite:///{tmp_path / 'mlflow.db'}"
    flags = [o for o in overrides if o.startswith("-")]  # the bad value comes last: it wins
    done = run_cli(
        [
            *flags,
            f"tracking.uri={uri}",
            "tracking.experiment=hostile",
            f"paths.outputs={tmp_path}",
            *[o for o in overrides if o not in flags],
        ],
        cwd=tmp_path,
        env=env,
        capped=True,
        timeout=REFUSED_WITHIN * calibrate(),
    )
    return done


@pytest.mark.parametrize(
    "overrides,message", SIZES + TYPES_AND_RANGES, ids=[" ".join(o) for o, _ in SIZES + TYPES_AND_RANGES]
)
def test_a_bad_value_is_refused_in_one_line(overrides, message, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = refuse(overrides, tmp_path, uri)
    assert_refused(done, message, uri)


def test_an_unreachable_tracking_server_is_refused_at_once(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"
    done = refuse([], tmp_path, uri)
    assert_refused(done, f"tracking store {uri} is unreachable (Connection refused)", None)


@pytest.mark.parametrize(
    "store,message",
    [
        ("DIR", "is a directory; name a database file in it"),
        ("TEXT", "is not an SQLite database"),
        ("foo://bar", "tracking store foo://bar has an unknown scheme 'foo'"),
        ("sqlite:////nonexistent-dir/m.db", "the directory /nonexistent-dir does not exist"),
    ],
)
def test_a_store_that_cannot_be_used_is_refused_in_one_line(store, message, tmp_path):
    if store == "DIR":
        (tmp_path / "db").mkdir()
        store = f"sqlite:///{tmp_path / 'db'}"
    elif store == "TEXT":
        (tmp_path / "notes.db").write_text("not a database\n")
        store = f"sqlite:///{tmp_path / 'notes.db'}"
    done = refuse([], tmp_path, store)
    assert_refused(done, message, None)


@pytest.mark.parametrize(
    "location,message",
    [
        ("gs://bucket/path", "artifact location gs://bucket/path cannot be used (ModuleNotFoundError"),
        ("nosuchscheme://x/y", "artifact location nosuchscheme://x/y cannot be used"),
        ("FILE", "cannot be written (Not a directory)"),
    ],
)
def test_an_artifact_location_that_cannot_be_used_is_refused_before_the_job(location, message, tmp_path):
    if location == "FILE":
        (tmp_path / "a-file").write_text("")
        location = str(tmp_path / "a-file" / "artifacts")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = refuse([f"tracking.artifact_location={location}"], tmp_path, uri)
    assert_refused(done, message, uri)
    assert runs_in(uri, "hostile") == []  # refused before a run was created


def test_an_empty_tracking_uri_in_the_environment_of_a_cluster_sweep_is_refused(tmp_path):
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "MLFLOW_TRACKING_URI": ""}
    done = subprocess.run(
        [sys.executable, "-m", "dp2pub", "-m", "cluster=ray", "epsilon=1,2", f"paths.outputs={tmp_path}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=cap_memory,
        timeout=REFUSED_WITHIN * calibrate(),
    )
    assert_refused(done, "tracking.uri='' is invalid: expected a store URI", None)


def test_too_few_records_to_split_are_refused_by_name(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "car.data").write_text("vhigh,vhigh,2,2,small,low,unacc\n")
    done = refuse(["dataset=car", f"paths.data_dir={tmp_path / 'data'}", "dataset.verify_checksum=false"], tmp_path)
    assert_refused(
        done,
        "metrics.test_size=0.3 is invalid: expected a fraction that leaves records to train and to test on (car has 1)",
        f"sqlite:///{tmp_path / 'mlflow.db'}",
    )


def without_root_override() -> list[str]:
    """A command prefix under which file permissions hold: root bypasses them, so as root
    the command runs without the capabilities that do (util-linux ``setpriv``)."""
    if os.geteuid() != 0:
        return []
    assert shutil.which("setpriv"), "running as root: setpriv (util-linux) is needed to drop CAP_DAC_OVERRIDE"
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize(
    "case", ["read-only store directory", "read-only database", "read-only artifact location", "unreadable data file"]
)
def test_what_cannot_be_written_or_read_is_refused_in_one_line(case, tmp_path):
    work = tmp_path / "work"
    locked = tmp_path / "locked"
    work.mkdir()
    locked.mkdir()
    overrides, message, store = [], "", f"sqlite:///{work / 'mlflow.db'}"
    if case == "read-only store directory":
        store, message = f"sqlite:///{locked / 'mlflow.db'}", "cannot create the lock file"
    elif case == "read-only database":
        (work / "mlflow.db").write_bytes(b"")
        os.chmod(work / "mlflow.db", 0o444)
        message = "mlflow.db cannot be written (read-only)"
    elif case == "read-only artifact location":
        overrides, message = [f"tracking.artifact_location={locked / 'art'}"], "cannot be written (Permission denied)"
    else:
        (work / "car.data").write_text("vhigh,vhigh,2,2,small,low,unacc\n")
        os.chmod(work / "car.data", 0)
        overrides, message = ["dataset=car", f"paths.data_dir={work}"], "car.data: cannot be read (Permission denied)"
    os.chmod(locked, 0o555)
    done = run_cli(
        [*overrides, f"tracking.uri={store}", "tracking.experiment=hostile", f"paths.outputs={work / 'out'}"],
        cwd=work,
        capped=True,
        prefix=tuple(without_root_override()),
        timeout=REFUSED_WITHIN * calibrate(),
    )
    assert_refused(done, message, None)


#: Unusual inputs that must run, not be refused: budgets far outside the usual range,
#: DP2-Pub's largest clusters at a tiny budget (estimates of 1e16 in the simplex projection),
#: and jobs whose estimates once refused them (a 10-way metric of the drawn domains; clusters
#: that max_cells caps but does not size).
MUST_RUN = [
    (1.0, ["metrics.ways=[10]"]),
    (
        8.0,
        [
            "dataset=adult",
            "mechanism=dp2pub",
            "mechanism.max_cluster_size=14",
            "mechanism.max_cells=1000000000000",
            "metrics.models=[]",
        ],
    ),
    (1000.0, ["mechanism=olh", "dataset.n=2000"]),
    (1e308, ["mechanism=sue", "dataset.n=2000"]),
    (1e300, ["mechanism=grr", "dataset.n=2000"]),
    (1e-5, ["mechanism=grr", "dataset.n=2000"]),
    (
        0.1,
        [
            "dataset=adult",
            "mechanism=dp2pub",
            "mechanism.max_cluster_size=6",
            "mechanism.max_cells=1000000",
            "metrics.models=[]",
        ],
    ),
]


@pytest.mark.parametrize("epsilon,overrides", MUST_RUN, ids=[f"{' '.join(o)} epsilon={e}" for e, o in MUST_RUN])
def test_an_unusual_but_valid_input_runs_to_a_finished_run(epsilon, overrides, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            *overrides,
            f"epsilon={epsilon!r}",
            f"tracking.uri={uri}",
            "tracking.experiment=hostile",
            f"paths.outputs={tmp_path}",
            "metrics.max_subsets=5",
        ],
        cwd=tmp_path,
        capped=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = runs_in(uri, "hostile")
    assert run.info.status == "FINISHED"
    assert run.data.metrics["epsilon_spent"] <= epsilon  # exact, no slack
