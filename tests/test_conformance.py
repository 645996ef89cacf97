"""The conformance suite (:mod:`dp2pub.testing`): every built-in publisher, in every shipped
mechanism config, and every built-in frequency oracle passes it in one parametrized test, so
the suite cannot drift from them; and each check fails on a publisher or an oracle broken on
purpose, so none passes vacuously."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import yaml

from dp2pub.bench.estimates import SHORT_FITS
from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.mechanisms import ORACLES, RAPPOR
from dp2pub.mechanisms.accounting import Spend, fit_shares
from dp2pub.mechanisms.grr import GRR
from dp2pub.publish.base import Outcome, Publisher, working_bytes
from dp2pub.publish.release import Release, TableRelease
from dp2pub.registry import PUBLISHERS
from dp2pub.testing import (
    ConformanceError,
    OracleCase,
    PublisherCase,
    all_checks,
    oracle_checks,
    parametrize_with_checks,
    publisher_checks,
)
from dp2pub.testing.budget import FIXED_DRAWS
from dp2pub.validation import ConfigError, check_epsilon, check_float

CONF = Path(__file__).resolve().parent.parent / "conf" / "mechanism"
#: Traced measurements (check_memory), each collecting only what the module allocated.
pytestmark = pytest.mark.usefixtures("settled_heap")

# ---------------------------------------------------------------- the built-ins
#: Invalid settings of every mechanism (each must be refused naming its key).
ORACLE_TABLE_BAD = {"estimator": "median", "strategy": "everyone", "simulate": "sometimes"}
BAD: dict[str, dict] = {
    **{name: ORACLE_TABLE_BAD for name in ("grr", "sue", "oue", "olh")},
    "rappor": {**ORACLE_TABLE_BAD, "num_bits": 0, "guarantee": "never", "f": 1.5},
    "pram": {"prior": "flat"},
    "dp2pub": {"trust": "nobody", "degree": 0, "compound": "sum", "max_cluster_size": 0},
    "privbayes": {"beta": 1.5, "degree": 0},
    "dppro": {"k": 0, "delta": 2.0, "label_share": 0.0, "labels": []},
    "samarati": {"k": 0, "l": 0, "t": 2.0, "max_suppression": -1},
    "mondrian": {"k": 0, "l": 0, "t": 2.0, "mode": "loose"},
    "ldp_nb": {"oracle": "coin", "alpha": 0.0, "strategy": "everyone", "accounting": "none"},
    "ldp_marginals": {
        "marginals": "some",
        "select_fraction": 1.5,
        "iterations": -1,
        "max_cells": 0,
        "allocation": "optimal",
        "inference": "exact",
        "pgm_iterations": 0,
        "max_model_size": 0.0,
        "rare_sd": -1.0,
    },
    "mst": {"delta": 1.0, "iterations": 0, "select_iterations": 0},
    "aim": {"delta": 0.0, "workload_degree": 0, "rounds": 0, "max_model_size": 0.0, "iterations": 0, "time_limit": -1},
    "hdg": {"g1": 1, "g2": 1.5, "alpha1": 0.0, "alpha2": -1.0, "consistency_rounds": -1, "iterations": 0},
    "inpht": {"ways": 0, "estimator": "ibu"},
}
#: Table ranges a mechanism needs: a degree-2 network needs 3 attributes; InpHT binary tables; the marginal
#: synthesizer's selection phase (a fifth of the users) needs a user per pair. The graphical
#: models' budget check on the fixed draws only (the two budgets whose shares add up to more
#: than epsilon, a tiny and a huge one): AIM's rounds take seconds a table.
TABLES: dict[str, dict] = {
    "dp2pub": {"dims": (3, 6)},
    "privbayes": {"dims": (3, 6)},
    "ldp_marginals": {"rows": (100, 200)},
    "mst": {"draws": len(FIXED_DRAWS)},
    "inpht": {"sizes": (2, 2)},
    "aim": {"draws": len(FIXED_DRAWS)},
    "ldp_marginals_pgm": {"rows": (100, 200), "draws": len(FIXED_DRAWS)},
    "ldp_marginals_pgm_tree": {"rows": (100, 200), "draws": len(FIXED_DRAWS)},
    "ldp_marginals_rare": {"rows": (100, 200)},
}
#: Settings of a shipped config that only fit its dataset: adult's quasi-identifiers.
ADULT_ONLY = {"quasi_identifiers": None}
#: Checks a built-in fails today, with why; strict: the test fails once it passes.
KNOWN_FAILURES: dict[str, str] = {}


def conf_settings(path: Path) -> dict:
    """A shipped mechanism config as keyword settings and its ``name``: its ``defaults``
    merged in, without interpolations (``${...}``, filled by Hydra from other groups)."""
    entry = yaml.safe_load(path.read_text())
    merged: dict = {}
    for base in entry.pop("defaults", []):
        merged.update(entry if base == "_self_" else conf_settings(CONF / f"{base}.yaml"))
    merged.update(entry)
    return {k: v for k, v in merged.items() if not (isinstance(v, str) and v.startswith("${"))}


def builtin_publisher(path: Path) -> PublisherCase:
    """The case of one shipped config, ``conf/mechanism/<stem>.yaml``."""
    settings = conf_settings(path)
    name = settings.pop("name")
    settings.update({k: v for k, v in ADULT_ONLY.items() if k in settings})
    settings.update(SHORT_FITS.get(name, {}))  # a model's fit, not what the checks examine
    return PublisherCase(
        PUBLISHERS[name], settings, bad=BAD[name], name=path.stem, distributions=True, **TABLES.get(name, {})
    )


def disjoint_rappor_seed(k: int, num_bits: int) -> int:
    """A hash seed whose Bloom design is full rank and has two values with disjoint sets of
    two bits: then the exact channel loses the whole budget (the worst case is realized)."""
    for seed in range(100):
        design = RAPPOR(epsilon=1.0, k=k, num_bits=num_bits, num_hashes=2, hash_seed=seed)
        sets = [set(np.flatnonzero(design.design[:, v])) for v in range(k)]
        if design.full_rank and any(len(a) == 2 == len(b) and not a & b for a in sets for b in sets):
            return seed
    raise AssertionError("no hash seed gives a full-rank design with disjoint Bloom filters")


def builtin_oracle(name: str) -> OracleCase:
    """The case of one built-in oracle; RAPPOR on a Bloom filter small enough to enumerate."""
    if name != "rappor":
        return OracleCase(ORACLES[name], name=name)
    options = {"num_bits": 10, "num_hashes": 2, "hash_seed": disjoint_rappor_seed(4, 10)}
    return OracleCase(ORACLES[name], options, bad={"num_bits": 0, "guarantee": "never", "f": 0.01}, name=name)


CONFIGS = sorted(CONF.glob("*.yaml"))
#: Settings beyond the shipped configs whose accounting or release takes another path:
#: histograms instead of records, one sampled attribute per user, a spend beyond epsilon at
#: the configuration's request, a step that is not private at its request, disjoint groups, the
#: marginal synthesizer's graphical model (a short fit, as :data:`SHORT_FITS`), held whole or
#: in a junction tree (a model size below the whole domain's).
VARIANTS = {
    "oue_aggregates": ("oue", {"simulate": "aggregates"}),
    "grr_sample_unbiased": ("grr", {"strategy": "sample", "estimator": "unbiased"}),
    "ldp_nb_per_report": ("ldp_nb", {"strategy": "split", "accounting": "per_report"}),
    "dp2pub_exact_entropies": ("dp2pub", {"trust": "trusted", "entropies": "exact"}),
    "dp2pub_two_phase_users": ("dp2pub", {"trust": "local_two_phase", "split": "users"}),
    "ldp_marginals_pgm": ("ldp_marginals", {"inference": "pgm", "allocation": "cells", "pgm_iterations": 20}),
    "ldp_marginals_pgm_tree": ("ldp_marginals", {"inference": "pgm", "pgm_iterations": 20, "max_model_size": 1e-4}),
    "ldp_marginals_rare": ("ldp_marginals", {"rare_sd": 3.0}),
}


def variant(label: str) -> PublisherCase:
    """The case of one of :data:`VARIANTS`."""
    name, settings = VARIANTS[label]
    unbiased = settings.get("estimator") == "unbiased"
    return PublisherCase(
        PUBLISHERS[name],
        settings,
        bad=BAD[name],
        name=label,
        distributions=not unbiased,
        **TABLES.get(label, TABLES.get(name, {})),
    )


def test_every_registered_publisher_and_oracle_is_in_the_suite():
    assert {conf_settings(path)["name"] for path in CONFIGS} == set(PUBLISHERS) == set(BAD)
    assert set(ORACLES) == {"grr", "sue", "oue", "olh", "rappor"}


@parametrize_with_checks(
    publishers=[*map(builtin_publisher, CONFIGS), *map(variant, VARIANTS)],
    oracles=[builtin_oracle(name) for name in ORACLES],
)
def test_builtins_conform(check, request):
    reason = KNOWN_FAILURES.get(request.node.callspec.id)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True, raises=ConformanceError))
    check()


# ---------------------------------------------------------------- a toy publisher, right and broken
@dataclass(frozen=True, kw_only=True)
class ToyPublisher(Publisher):
    """GRR on every attribute at an equal share of ``fraction`` of the budget; the reports are
    the published table."""

    name: ClassVar[str] = "toy"
    fraction: float = 1.0

    def __post_init__(self) -> None:
        check_float(self.fraction, "fraction", 0.0, 1.0, open_high=False)

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        return working_bytes(n, sizes) + (1 << 20)  # GRR's work arrays: three blocks of 2^15 words

    def shares(self, epsilon: float, d: int) -> list[float]:
        return fit_shares([min(self.fraction, 1.0) * epsilon / d] * d, epsilon)

    def generator(self, rng: np.random.Generator) -> np.random.Generator:
        return rng

    def release(self, data: Dataset, reports: np.ndarray) -> Release:
        return TableRelease(data.with_codes(reports))

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        shares, rng = self.shares(epsilon, data.d), self.generator(rng)
        columns = [
            GRR(epsilon=s, k=int(k)).perturb(data.codes[:, j], rng)
            for j, (s, k) in enumerate(zip(shares, data.domain.sizes))
        ]
        ledger = [Spend("perturb", a, s) for a, s in zip(data.domain.names, shares)]
        return Outcome(self.release(data, np.column_stack(columns)), ledger)


class Overspending(ToyPublisher):
    """Plain ``epsilon / d`` shares: their exact sum exceeds epsilon at some (epsilon, d)."""

    def shares(self, epsilon: float, d: int) -> list[float]:
        return [epsilon / d] * d


class Unseeded(ToyPublisher):
    """Draws from a fresh unseeded generator instead of the one it is given."""

    def generator(self, rng: np.random.Generator) -> np.random.Generator:
        return np.random.default_rng()


class FixedSeed(ToyPublisher):
    """Draws from its own fixed seed: the same release whatever the seed."""

    def generator(self, rng: np.random.Generator) -> np.random.Generator:
        return np.random.default_rng(0)


class Forgetful(ToyPublisher):
    """Claims to need no memory."""

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        return 0


class Hoarder(ToyPublisher):
    """Claims a hundred times the memory it needs: a refusal of jobs that fit."""

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        return 100 * super().memory_bytes(n, sizes)


@dataclass(frozen=True)
class TransposedRelease(TableRelease):
    """Answers a joint marginal with its axes reversed."""

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        return super().marginal(columns).T


class Transposed(ToyPublisher):
    def release(self, data: Dataset, reports: np.ndarray) -> Release:
        return TransposedRelease(data.with_codes(reports))


@dataclass(frozen=True)
class ShiftedRelease(TableRelease):
    """Debiases its counts into something that is not a distribution."""

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        return super().marginal(columns) * 1.5 - 0.1


class Shifted(ToyPublisher):
    def release(self, data: Dataset, reports: np.ndarray) -> Release:
        return ShiftedRelease(data.with_codes(reports))


class Undeclared(ToyPublisher):
    """Says it uses no budget, then spends one."""

    uses_budget: ClassVar[bool] = False

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        return super().publish(data, 1.0, rng)


class Unserializable(ToyPublisher):
    """Keeps its generator as an artifact."""

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        outcome = super().publish(data, epsilon, rng)
        outcome.artifacts["generator"] = rng
        return outcome


class Widened(ToyPublisher):
    """Publishes its reports on a domain one value wider than the input's."""

    def release(self, data: Dataset, reports: np.ndarray) -> Release:
        wider = Domain.from_sizes(data.domain.sizes + 1)
        return TableRelease(Dataset(reports, wider, target=data.target, name=data.name))


class Lax(ToyPublisher):
    """Checks nothing (a fraction over 1 is silently taken as 1)."""

    def __post_init__(self) -> None:
        pass


class Misnamed(ToyPublisher):
    """Names another key than the bad one."""

    def __post_init__(self) -> None:
        check_float(self.fraction, "share", 0.0, 1.0, open_high=False)


class Logarithmic(ToyPublisher):
    """Takes the logarithm of its budget before checking it (a ValueError, not a ConfigError)."""

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        math.log(epsilon)  # type: ignore[arg-type]
        return super().publish(data, epsilon, rng)


def run_check(make, check_name: str, **options) -> None:
    """Run one named check of a publisher."""
    dict(publisher_checks(make, **options))[check_name]()


@pytest.mark.parametrize(
    "check_name",
    ["check_budget", "check_deterministic", "check_release", "check_memory", "check_bad_settings", "check_bad_epsilon"],
)
def test_the_toy_publisher_passes_every_check(check_name):
    run_check(ToyPublisher, check_name, bad={"fraction": 1.5}, distributions=True)


@pytest.mark.parametrize(
    "make, check_name, options, message",
    [
        (Overspending, "check_budget", {}, r"epsilon=3.1.*spent epsilon=3.1000000000000005 > budget 3.1"),
        (Unseeded, "check_deterministic", {}, "the same seed .* gave different published.codes"),
        (FixedSeed, "check_deterministic", {}, "gave identical releases"),
        (Undeclared, "check_budget", {}, "uses no budget but its ledger spent epsilon=1.0"),
        (Forgetful, "check_memory", {}, "more than memory_bytes = 0"),
        (
            Hoarder,
            "check_memory",
            {},
            r"memory_bytes = [\d,]+ is \d+\.\d+ times the traced peak [\d,]+, more than 4 times",
        ),
        (Unserializable, "check_release", {}, "artifacts are not JSON-serializable"),
        (Widened, "check_release", {}, r"published domain sizes \[\d, .*\], not the input's"),
        (Transposed, "check_release", {}, r"marginal\(\d, \d\) has shape \((\d), (\d)\), not \(\2, \1\)"),
        (Shifted, "check_release", {"distributions": True}, "a marginal is not a distribution"),
        (Lax, "check_bad_settings", {"bad": {"fraction": 1.5}}, "fraction=1.5 was accepted"),
        (Misnamed, "check_bad_settings", {"bad": {"fraction": 1.5}}, "raised a ConfigError naming 'share'"),
        (Logarithmic, "check_bad_epsilon", {}, "epsilon=0.0 raised ValueError"),
    ],
)
def test_each_publisher_check_fails_on_a_broken_publisher(make, check_name, options, message):
    with pytest.raises(ConformanceError, match=message):
        run_check(make, check_name, **options)


def test_a_check_that_does_not_apply_is_skipped_with_its_reason():
    with pytest.raises(pytest.skip.Exception, match=r"no invalid settings declared"):
        run_check(ToyPublisher, "check_bad_settings")
    with pytest.raises(pytest.skip.Exception, match="uses no budget"):
        run_check(PUBLISHERS["samarati"], "check_bad_epsilon")


def test_an_instance_is_refused():
    with pytest.raises(TypeError, match="not an instance"):
        publisher_checks(ToyPublisher())
    with pytest.raises(TypeError, match="not an instance"):
        oracle_checks(GRR(epsilon=1.0, k=3))


# ---------------------------------------------------------------- toy oracles, broken
class Leaky(GRR):
    """Runs GRR at a budget 1% larger than the one it is given."""

    def __init__(self, *, epsilon: float, k: int) -> None:
        super().__init__(epsilon=1.01 * check_epsilon(epsilon), k=k)
        self.epsilon = epsilon


class Timid(GRR):
    """Runs GRR at half its budget: private, but not what it claims to spend."""

    def __init__(self, *, epsilon: float, k: int) -> None:
        super().__init__(epsilon=check_epsilon(epsilon) / 2, k=k)
        self.epsilon = epsilon


class Raw(GRR):
    """Answers ``unbiased`` with the raw report histogram (biased towards uniform)."""

    def estimate(self, reports, estimator="unbiased", trace=None):
        return super().estimate(reports, "none" if estimator == "unbiased" else estimator, trace)


class Overconfident(GRR):
    """States an expected MSE a third below the true one."""

    def expected_mse(self, n, freq=None):
        return super().expected_mse(n, freq) / 1.5


class Tolerant(GRR):
    """Falls back to a default on any bad setting instead of refusing it."""

    def __init__(self, *, epsilon: float, k: int) -> None:
        try:
            super().__init__(epsilon=epsilon, k=k)
        except ConfigError:
            super().__init__(epsilon=1.0, k=2)


class Nonlinear(GRR):
    """Says it has no unbiased estimator."""

    @property
    def linear(self) -> bool:
        return False


def run_oracle_check(make, check_name: str, **options) -> None:
    """Run one named check of an oracle."""
    dict(oracle_checks(make, **options))[check_name]()


@pytest.mark.parametrize(
    "make, check_name, message",
    [
        (Leaky, "check_channel", r"at epsilon=0.05, k=4: the exact channel loses 0.050499\d* > epsilon"),
        (Timid, "check_channel_tight", r"loses only 0.02\d*, within epsilon \* \(1 - 1e-06\)"),
        (Raw, "check_unbiased", r"biased: mean - truth = .* in cells \[0, 1, 2, 3\]"),
        (Overconfident, "check_variance", r"is 1.\d+ x expected_mse .* outside \[0.8\d+, 1.1\d+\]"),
        (Tolerant, "check_oracle_refusals", "epsilon=0.0 was accepted"),
    ],
)
def test_each_oracle_check_fails_on_a_broken_oracle(make, check_name, message):
    with pytest.raises(ConformanceError, match=message):
        run_oracle_check(make, check_name)


def test_broken_oracles_pass_the_checks_they_do_not_break():
    run_oracle_check(Timid, "check_channel")  # private: only the tightness check fails
    run_oracle_check(Overconfident, "check_unbiased")  # unbiased: only the variance check fails
    run_oracle_check(Raw, "check_channel_tight")


def test_an_oracle_without_an_unbiased_estimator_or_a_tight_channel_is_skipped_with_the_reason():
    for name in ("check_unbiased", "check_variance"):
        with pytest.raises(pytest.skip.Exception, match="linear is False"):
            run_oracle_check(Nonlinear, name)
    with pytest.raises(pytest.skip.Exception, match="spends half on purpose"):
        run_oracle_check(Timid, "check_channel_tight", loose="spends half on purpose")


def test_a_statistical_check_too_weak_to_see_a_bias_fails_instead_of_passing():
    with pytest.raises(ConformanceError, match="could not see a bias of 0.02"):
        run_oracle_check(GRR, "check_unbiased", replicates=20)


# ---------------------------------------------------------------- the decorator and its imports
def test_the_decorator_names_each_case_and_check():
    mark = parametrize_with_checks(publishers=[ToyPublisher], oracles=[OracleCase(GRR, name="grr3", k=3)]).mark
    ids = mark.kwargs["ids"]
    assert ids[0] == "ToyPublisher()-check_budget"
    assert "grr3-check_channel_tight" in ids and len(ids) == len(mark.args[1]) == 6 + 5
    assert [name for name, _ in all_checks(oracles=[GRR])][-1] == "GRR()-check_oracle_refusals"
    with pytest.raises(ValueError, match="no publisher and no oracle"):
        parametrize_with_checks()


def test_the_suite_imports_and_skips_without_pytest():
    script = (
        "import sys, unittest; sys.modules['pytest'] = None\n"
        "from dp2pub.testing import publisher_checks\n"
        "from dp2pub.registry import PUBLISHERS\n"
        "checks = dict(publisher_checks(PUBLISHERS['grr']))\n"
        "try:\n    checks['check_bad_settings']()\nexcept unittest.SkipTest as skip:\n    print('skipped:', skip)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "skipped:" in done.stdout and "no invalid settings declared" in done.stdout
