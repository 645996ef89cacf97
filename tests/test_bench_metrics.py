"""The metrics benchmark's comparison agrees with its references and with evaluate_marginals."""

import json

import numpy as np
import pytest

from dp2pub.bench import metrics
from dp2pub.data import Dataset, Domain
from dp2pub.metrics import evaluate_marginals
from dp2pub.publish import PRAMPublisher, TableRelease


def tiny(sizes: tuple[int, ...] = (2, 3, 1, 4, 2, 5)) -> tuple[Dataset, TableRelease]:
    """A 300-row table and a perturbed sample of 250 of its rows."""
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, k, size=300) for k in sizes], axis=1).astype(np.uint8)
    original = Dataset(codes, Domain.from_sizes(sizes))
    perturbed = codes[rng.permutation(300)[:250]]
    perturbed[:40, 3] = (perturbed[:40, 3] + 1) % 4
    return original, TableRelease(Dataset(perturbed, original.domain))


@pytest.mark.parametrize("way", [1, 2, 3, 4])
def test_compare_agrees_with_the_references_and_the_evaluation(way):
    original, release = tiny()
    row = metrics.compare(original, release, way, repeat=2, reference_subsets=4)
    assert row["same_as_per_subset"] and row["max_diff_unique"] <= metrics.TOLERANCE
    assert row["subsets"] == {1: 6, 2: 15, 3: 20, 4: 15}[way] and row["unique_measured_subsets"] == min(
        4, row["subsets"]
    )
    assert row[f"tvd_{way}way"] > 0.01  # the tables differ, so a zero would hide a broken comparison
    if way > 1:
        evaluation = evaluate_marginals(original, release, np.random.default_rng(0), (way,), max_subsets=None)
        assert row[f"tvd_{way}way"] == evaluation.metrics[f"tvd_{way}way"]


def test_the_unique_reference_counts_by_hand():
    original = Dataset(np.array([[0, 1], [1, 2], [0, 1]], dtype=np.uint8), Domain.from_sizes([2, 3]))
    assert metrics.unique_marginal(original, (0, 1)).tolist() == [0, 2 / 3, 0, 0, 0, 1 / 3]
    assert metrics.unique_marginal(original, (1, 0)).tolist() == [0, 0, 2 / 3, 0, 0, 1 / 3]


def test_the_published_table_is_pram_s_plain_table():
    original, _ = tiny((2, 3, 2, 4))  # PRAM's channels need two values or more
    release = metrics.published(original, 1.0, seed=0)
    again = PRAMPublisher().publish(original, 1.0, np.random.default_rng(0)).release
    assert release.covers is None and np.array_equal(release.table.codes, again.table.codes)


@pytest.mark.slow
def test_the_bench_runs_on_br2000_and_writes_its_results(tmp_path):
    out = tmp_path / "metrics.json"
    result = metrics.main(["--tables", "br2000", "--repeat", "1", "--reference-subsets", "3", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert [(r["table"], r["way"], r["subsets"]) for r in result["cases"]] == [("br2000", 3, 364), ("br2000", 2, 91)]
    assert result["agree"] and result["under_target"] is None  # the target is acs's
