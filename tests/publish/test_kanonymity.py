"""k-anonymity publishers (Samarati TKDE 2001, Mondrian ICDE 2006): published tables are
k-anonymous by a direct group-by, the lattice search finds the brute-force minimal height,
the utility metrics hit their end points, and bad input is named."""

import itertools
import logging

import numpy as np
import pandas as pd
import pytest

import dp2pub.anonymity.hierarchy as hierarchy_module
from dp2pub.anonymity.hierarchy import Hierarchy
from dp2pub.anonymity.metrics import cavg, discernibility, ncp
from dp2pub.anonymity.mondrian import mondrian
from dp2pub.anonymity.samarati import lattice, nodes_at, samarati
from dp2pub.data import Dataset, Domain
from dp2pub.job import run_job
from dp2pub.publish.kanonymity import MondrianPublisher, SamaratiPublisher
from dp2pub.registry import build_publisher
from dp2pub.validation import ConfigError

ADULT_QIS = [
    "age",
    "workclass",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "race",
    "sex",
    "native-country",
]
KANON_METRICS = ("ncp", "discernibility", "cavg", "suppressed", "n_classes")


def toy_hierarchies() -> list[Hierarchy]:
    a = Hierarchy(
        "a",
        (np.arange(6), np.array([0, 0, 1, 1, 2, 2]), np.zeros(6, dtype=np.int64)),
        (tuple("uvwxyz"), ("uv", "wx", "yz"), ("*",)),
    )
    b = Hierarchy(
        "b",
        (np.arange(4), np.array([0, 0, 1, 1]), np.zeros(4, dtype=np.int64)),
        (("0", "1", "2", "3"), ("01", "23"), ("*",)),
    )
    c = Hierarchy("c", (np.arange(3), np.zeros(3, dtype=np.int64)), (("p", "q", "r"), ("*",)))
    return [a, b, c]


def toy_codes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack(
        [
            rng.choice(6, n, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05]),
            rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05]),
            rng.choice(3, n, p=[0.6, 0.3, 0.1]),
        ],
        axis=1,
    )


def brute_force(codes, hierarchies, k, max_suppression):
    """Every lattice node with its suppressed count and NCP, counted with pandas."""
    out = []
    for node in itertools.product(*(range(h.height + 1) for h in hierarchies)):
        frame = pd.DataFrame({j: h.maps[l][codes[:, j]] for j, (h, l) in enumerate(zip(hierarchies, node))})
        small = (frame.groupby(list(frame.columns))[0].transform("size") < k).to_numpy()
        widths = np.stack([h.leaf_width(l)[codes[:, j]] for j, (h, l) in enumerate(zip(hierarchies, node))], 1)
        sizes = np.array([len(h.labels[0]) for h in hierarchies])
        out.append((node, sum(node), int(small.sum()), ncp(widths[~small], sizes, int(small.sum()))))
    return out


@pytest.mark.parametrize("k,max_suppression,seed", [(2, 0, 0), (3, 3, 1), (5, 0, 2), (5, 10, 3), (8, 4, 4), (12, 0, 5)])
def test_lattice_search_finds_the_brute_force_minimal_height_and_best_node(k, max_suppression, seed):
    codes, hierarchies = toy_codes(80, seed), toy_hierarchies()
    result = samarati(codes, hierarchies, k, max_suppression)
    nodes = brute_force(codes, hierarchies, k, max_suppression)
    ok = [row for row in nodes if row[2] <= max_suppression]
    minimal = min(row[1] for row in ok)
    assert result.height == minimal == sum(result.levels)
    best = min(row[3] for row in ok if row[1] == minimal)
    chosen = next(row for row in nodes if row[0] == result.levels)
    assert chosen[2] <= max_suppression and chosen[3] == pytest.approx(best)
    assert int((~result.keep).sum()) == chosen[2]
    assert len(lattice([2, 2, 1])) == 18


@pytest.mark.parametrize("heights", [[2, 2, 1], [3, 0, 2, 1], [1], [0, 0]])
def test_nodes_at_a_height_are_the_lattice_rows_of_that_height_in_order(heights):
    nodes = lattice(heights)
    for height in range(-1, sum(heights) + 2):
        expected = [tuple(int(v) for v in row) for row in nodes[nodes.sum(axis=1) == height]]
        assert list(nodes_at(heights, height)) == expected


def test_samarati_takes_narrow_codes_and_returns_narrow_generalized_codes():
    codes, hierarchies = toy_codes(80, 3), toy_hierarchies()
    wide = samarati(codes.astype(np.int64), hierarchies, 5, 4)
    narrow = samarati(codes.astype(np.uint8), hierarchies, 5, 4)
    assert narrow.generalized.dtype == np.uint8 and np.array_equal(narrow.generalized, wide.generalized)
    assert (narrow.levels, narrow.nodes_checked) == (wide.levels, wide.nodes_checked)
    assert np.array_equal(narrow.keep, wide.keep)


def toy_dataset(n: int = 300, seed: int = 0) -> Dataset:
    codes = np.column_stack([toy_codes(n, seed), np.random.default_rng(seed + 100).integers(0, 2, n)])
    domain = Domain(("a", "b", "c", "s"), (tuple("uvwxyz"), ("0", "1", "2", "3"), ("p", "q", "r"), ("no", "yes")))
    return Dataset(codes.astype(np.uint8), domain, target="s", name="toy")


@pytest.fixture
def toy_files(tmp_path, monkeypatch):
    """Hierarchy files for dataset ``toy`` (``c`` has none: it generalizes to ``*``)."""
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "a.csv").write_text("u;uv;*\nv;uv;*\nw;wx;*\nx;wx;*\ny;yz;*\nz;yz;*\n")
    (folder / "b.csv").write_text("0;01;*\n1;01;*\n2;23;*\n3;23;*\n")
    monkeypatch.setattr(hierarchy_module, "HIERARCHY_DIR", tmp_path)
    return folder


def assert_k_anonymous(outcome, qis, k):
    frame = outcome.published.to_frame()
    sizes = frame.groupby(qis, observed=True).size()
    assert sizes.min() >= k
    assert outcome.extra_metrics["n_classes"] == len(sizes)
    for name in KANON_METRICS:
        assert np.isfinite(outcome.extra_metrics[name])
    assert outcome.ledger == [] and outcome.epsilon_spent is None
    assert set(outcome.timings) == {"anonymize"}


@pytest.mark.parametrize("k", [1, 2, 5, 20, 60])
def test_samarati_publishes_k_anonymous_tables(toy_files, k):
    data = toy_dataset()
    outcome = SamaratiPublisher(k=k, quasi_identifiers=["a", "b", "c"], sensitive=["s"], max_suppression=5).publish(
        data
    )
    assert_k_anonymous(outcome, ["a", "b", "c"], k)
    assert outcome.published.n == data.n - outcome.extra_metrics["suppressed"] >= data.n - 5
    # the sensitive column is published unchanged for the kept records
    kept = outcome.published.n
    assert outcome.published.domain.labels[3] == data.domain.labels[3] and kept > 0
    levels = outcome.artifacts["generalization"]["levels"]
    assert set(levels) == {"a", "b", "c"}


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
@pytest.mark.parametrize("k", [1, 2, 3, 7, 25, 150])
def test_mondrian_never_makes_a_class_smaller_than_k(mode, k):
    data = toy_dataset(400, seed=k)
    result = mondrian(data.codes[:, :3], data.domain.sizes[:3], k, mode)
    assert np.bincount(result.partition).min() >= k
    assert np.all(result.low <= result.high)
    outcome = MondrianPublisher(k=k, quasi_identifiers=["a", "b", "c"], sensitive=["s"], mode=mode).publish(data)
    assert_k_anonymous(outcome, ["a", "b", "c"], k)
    assert outcome.extra_metrics["suppressed"] == 0 and outcome.published.n == data.n


def test_strict_mondrian_boxes_are_disjoint():
    data = toy_dataset(500, seed=9)
    result = mondrian(data.codes[:, :3], data.domain.sizes[:3], 4, "strict")
    lo, hi = result.low, result.high
    overlap = np.all((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :]), axis=2)
    assert np.array_equal(overlap, np.eye(len(lo), dtype=bool))


def test_ncp_is_0_for_the_original_and_100_when_fully_generalized(toy_files):
    data = toy_dataset()
    sizes = data.domain.sizes[:3]
    assert ncp(np.ones((10, 3)), sizes) == 0.0
    assert ncp(np.tile(sizes, (10, 1)), sizes) == pytest.approx(100.0)
    assert ncp(np.ones((0, 3)), sizes, n_suppressed=10) == pytest.approx(100.0)
    original = SamaratiPublisher(k=1, quasi_identifiers=["a", "b", "c"]).publish(data)
    assert original.extra_metrics["ncp"] == 0.0 and original.extra_metrics["suppressed"] == 0
    assert original.artifacts["generalization"]["height"] == 0
    top = SamaratiPublisher(k=data.n, quasi_identifiers=["a", "b", "c"]).publish(data)
    assert top.extra_metrics["ncp"] == pytest.approx(100.0) and top.extra_metrics["n_classes"] == 1
    assert set(top.published.to_frame()["a"]) == {"*"}
    whole = MondrianPublisher(k=data.n, quasi_identifiers=["a", "b", "c"]).publish(data)  # one partition: full ranges
    assert whole.extra_metrics["ncp"] == pytest.approx(100.0)
    assert whole.published.to_frame()["a"].iloc[0] == "[u..z]"


def test_other_metrics_follow_their_definitions():
    sizes = np.array([3, 5, 2])
    assert discernibility(sizes, 4, 14) == 9 + 25 + 4 + 4 * 14
    assert cavg(sizes, 2) == pytest.approx((10 / 3) / 2)


def test_release_spreads_classes_uniformly_and_is_exact_without_generalization(toy_files):
    data = toy_dataset()
    exact = SamaratiPublisher(k=1, quasi_identifiers=["a", "b", "c"]).publish(data).release
    truth = np.bincount(data.codes[:, 0] * 4 + data.codes[:, 1], minlength=24).reshape(6, 4) / data.n
    assert np.allclose(exact.marginal((0, 1)), truth)
    release = SamaratiPublisher(k=data.n, quasi_identifiers=["a", "b"]).publish(data).release  # a and b -> *
    assert np.allclose(release.marginal((0,)), np.full(6, 1 / 6))
    joint = release.marginal((0, 3))
    assert joint.shape == (6, 2) and joint.sum() == pytest.approx(1.0)
    s = np.bincount(data.codes[:, 3], minlength=2) / data.n
    assert np.allclose(joint, np.outer(np.full(6, 1 / 6), s))
    mondrian_release = MondrianPublisher(k=5, quasi_identifiers=["a", "b", "c"], mode="relaxed").publish(data).release
    assert mondrian_release.marginal((0, 1, 2)).sum() == pytest.approx(1.0)


def test_bad_input_is_named(toy_files):
    data = toy_dataset(50)
    with pytest.raises(ConfigError, match=r"mechanism\.k=0"):
        build_publisher({"name": "samarati", "k": 0})
    with pytest.raises(ConfigError, match=r"mechanism\.mode='loose'"):
        build_publisher({"name": "mondrian", "mode": "loose"})
    with pytest.raises(ConfigError, match=r"mechanism\.max_suppression=-1"):
        build_publisher({"name": "samarati", "max_suppression": -1})
    with pytest.raises(ConfigError, match=r"mechanism\.k=51.*\[1, 50\]"):
        MondrianPublisher(k=51, quasi_identifiers=["a"]).publish(data)
    with pytest.raises(ConfigError) as caught:
        SamaratiPublisher(k=2, quasi_identifiers=["a", "zip"]).publish(data)
    assert "quasi_identifiers='zip'" in str(caught.value) and "['a', 'b', 'c', 's']" in str(caught.value)
    with pytest.raises(ConfigError, match="sensitive"):
        SamaratiPublisher(k=2, quasi_identifiers=["a", "s"], sensitive=["s"])
    (toy_files / "b.csv").write_text("0;01;*\n1;01;*\n2;23;*\n")  # no row for "3"
    with pytest.raises(ConfigError, match=r"mechanism\.hierarchy\.b='3'"):
        SamaratiPublisher(k=2, quasi_identifiers=["a", "b"]).publish(data)


@pytest.mark.parametrize("mechanism", ["samarati", "mondrian"])
def test_run_job_needs_no_epsilon_and_logs_none(mechanism, caplog):
    cfg = {
        "epsilon": None,
        "seed": 0,
        "metrics": {"ways": [1, 2]},
        "dataset": {"name": "synthetic", "n": 500, "d": 4, "k_min": 2, "k_max": 4},
        "mechanism": {"name": mechanism, "k": 5, "quasi_identifiers": None},
    }
    with caplog.at_level(logging.INFO, logger="dp2pub.job"):
        result = run_job(cfg)
    assert "epsilon_spent" not in result.metrics
    assert result.ledger.empty
    assert result.guarantee == "k=5"  # the results header names k, not an epsilon
    assert f"{mechanism}: publishing 500 records at k=5 ..." in caplog.text and "epsilon" not in caplog.text
    cfg["mechanism"] |= {"l": 2, "sensitive": ["a3"]}
    assert run_job(cfg).guarantee == "k=5, l=2"
    for name in (*KANON_METRICS, "tvd_1way", "tvd_2way", "time_anonymize_s"):
        assert name in result.metrics
    ignored = run_job({**cfg, "epsilon": 3.0})  # a valid epsilon is ignored
    assert "epsilon_spent" not in ignored.metrics and ignored.guarantee == "k=5, l=2"
    with pytest.raises(ConfigError, match="epsilon='not a number' is invalid"):  # given, it must be valid
        run_job({**cfg, "epsilon": "not a number"})


@pytest.mark.slow  # whole adult jobs
@pytest.mark.parametrize("mechanism", ["samarati", "mondrian"])
def test_adult_end_to_end_is_10_anonymous(mechanism):
    cfg = {
        "seed": 0,
        "metrics": {"ways": [1, 2], "max_subsets": 20},
        "dataset": {"name": "adult"},
        "mechanism": {"name": mechanism, "k": 10, "quasi_identifiers": ADULT_QIS, "sensitive": ["income"]},
    }
    if mechanism == "samarati":
        cfg["mechanism"]["max_suppression"] = 452
    result = run_job(cfg)
    sizes = result.published.to_frame().groupby(ADULT_QIS, observed=True).size()
    assert sizes.min() >= 10
    for name in KANON_METRICS:
        assert name in result.metrics
    assert 0 < result.metrics["ncp"] < 100 and result.metrics["suppressed"] <= 452 * (mechanism == "samarati")
    print(
        f"{mechanism} k=10 on adult: anonymize {result.metrics['time_anonymize_s']:.2f} s, "
        f"ncp {result.metrics['ncp']:.2f} %, {result.artifacts['generalization']}"
    )
