"""Publisher ``aim``: AIM, the adaptive and iterative mechanism of McKenna, Mullins, Sheldon, Miklau.

McKenna, Mullins, Sheldon, Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", PVLDB 15(11), 2022, Algorithm 2 (private-pgm's
``mechanisms/aim.py``). A trusted curator holds the table.

**Privacy.** As MST (:mod:`dp2pub.publish.mst`): rho-zCDP for *add/remove* neighbours,
converted to (epsilon, delta)-DP; the ledger says ``add/remove`` on every item.

**The workload** is every marginal of ``workload_degree`` attributes, each of weight 1 (the
paper's "All-3Way" workload with the default 3). Its candidates are the workload's downward
closure; a candidate r is weighted ``w_r = sum over workload marginals s of |r ∩ s|``.

1. **Initialize** (section 4.1): every 1-way marginal measured with Gaussian noise
   ``sigma = sqrt(T / (2 * 0.9 rho))`` (T the most rounds, ``16 d`` by default), and a
   model fitted to them by private-pgm's mirror descent (:mod:`dp2pub.synthesis.pgm`).
2. **Each round** (sections 4.2-4.4): of the candidates whose addition keeps the model's
   junction tree within ``max_model_size * rho_used / rho`` megabytes (or that the model
   already covers), one is drawn by the exponential mechanism at
   ``epsilon_t = sqrt(8 * 0.1 rho / T)`` on the quality
   ``w_r (||x_r - x̂_r||_1 - sqrt(2/pi) sigma n_r)`` (x̂ the model's counts, n_r the cells;
   sensitivity ``max w_r``), measured with noise sigma, and the model refitted from its
   previous potentials. A round costs ``1 / (2 sigma^2) + epsilon_t^2 / 8``. When the new
   measurement barely moved the model (``||x̂'_r - x̂_r||_1 <= sqrt(2/pi) sigma n_r``) the
   budget per round is raised: sigma halved, epsilon_t doubled (annealing). When less than
   two rounds' budget remains, the last round spends all of it (0.9 on the measurement, 0.1
   on the choice).
3. **Generate**: a last fit, and as many records as the model estimates sampled exactly
   (:func:`dp2pub.synthesis.pgm.sample`; private-pgm's own sampler lost the
   dependence AIM's model has).

``time_limit`` (seconds, not in the paper): on 2 cores AIM on nltcs at epsilon 1.6 took 15
minutes (55 rounds; through private-pgm's JAX, an hour with capped rounds), and on adult15 a
single fit of a large model ran for tens of minutes. With a limit ``L`` the job stays near it:
once :data:`ROUNDS_SHARE` of ``L`` has passed, the next round is the last (it spends what
remains, so the budget is spent as without the cap), no fit of the rounds takes a step after
that point, and the last round's fit and the final fit take none after ``L`` (the first step
of each excepted: :func:`dp2pub.synthesis.pgm.fit`'s ``deadline``). Beyond it run at most the
first step of the last round's fit and of the final fit, with each one's step-size estimate
(50 steps of power iteration), the last round's choice and measurement if they started
late, and the sampling. The job logs ``time_limit_bound = 1``, the rounds it
ran and ``fits_cut``, the fits stopped short of their ``iterations``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype, table_bytes
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.exponential import exponential_draw
from dp2pub.mechanisms.zcdp import exponential_rho, gaussian_rho, zcdp_epsilon, zcdp_rho
from dp2pub.publish.base import Outcome, claim_memory, parts_total
from dp2pub.publish.mst import CentralZCDP, exponential_epsilon, gaussian_sigma, measure, zcdp_spend
from dp2pub.publish.release import TableRelease
from dp2pub.synthesis.pgm import MODEL_COPIES, Model, fit, model_megabytes, model_memory, sample
from dp2pub.validation import ConfigError, check_epsilon, check_float, check_int

#: The share of ``time_limit`` after which no round starts but the last; the rest is the last
#: round's fit and the final fit's.
ROUNDS_SHARE = 0.8
#: Shares of a round's budget: the measurement's and the choice's (the paper's 0.9 and 0.1).
MEASURE_SHARE, SELECT_SHARE = 0.9, 0.1


def downward_closure(workload: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Every non-empty subset of a workload marginal, smallest first."""
    closure = {
        sub for clique in workload for r in range(1, len(clique) + 1) for sub in itertools.combinations(clique, r)
    }
    return sorted(closure, key=lambda c: (len(c), c))


def candidate_weights(workload: Sequence[tuple[int, ...]]) -> dict[tuple[int, ...], float]:
    """Each candidate r of the downward closure weighted ``sum over s of |r ∩ s|``."""
    return {r: float(sum(len(set(r) & set(s)) for s in workload)) for r in downward_closure(workload)}


def bias(sigma: float, cells: int) -> float:
    """The expected L1 norm of ``cells`` cells of Gaussian noise: ``sqrt(2/pi) sigma cells``."""
    return math.sqrt(2.0 / math.pi) * sigma * cells


@dataclass
class Budget:
    """The rounds' budget: ``rho`` in all, the rho's spent so far (the ledger's), and this
    round's noise and choice (``sigma``, ``epsilon``)."""

    rho: float
    epsilon_dp: float
    delta: float
    sigma: float
    epsilon: float
    spent: list[float]

    def round_rho(self) -> float:
        return gaussian_rho(self.sigma) + exponential_rho(self.epsilon)

    def last_round(self) -> None:
        """Spend all that remains in this round: 0.9 on the measurement, 0.1 on the choice,
        sigma rounded up and epsilon down until the ledger converts within budget."""
        remaining = self.rho - math.fsum(self.spent)
        self.sigma = gaussian_sigma(MEASURE_SHARE * remaining, 1)
        self.epsilon = exponential_epsilon(SELECT_SHARE * remaining, 1)
        while zcdp_epsilon(math.fsum([*self.spent, self.round_rho()]), self.delta) > self.epsilon_dp:
            self.sigma = math.nextafter(self.sigma, math.inf)
            self.epsilon = math.nextafter(self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class AIMPublisher(CentralZCDP):
    """``mechanism=aim``: AIM (McKenna et al. PVLDB 2022), central rho-zCDP converted to
    (epsilon, delta)-DP, add/remove neighbours (see the module)."""

    name: ClassVar[str] = "aim"
    workload_degree: int = 3
    rounds: int | None = None
    max_model_size: float = 80.0
    iterations: int = 1000
    time_limit: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.workload_degree, "workload_degree", 1)
        if self.rounds is not None:
            check_int(self.rounds, "rounds", 1)
        check_float(self.max_model_size, "max_model_size", 0.0)
        check_int(self.iterations, "iterations", 1)
        if self.time_limit is not None:
            check_float(self.time_limit, "time_limit", 0.0, open_low=False)

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """The initialization measures d 1-way marginals at one round's noise each, 0.9 d / T
        of rho: T (``rounds``) must exceed d, or it would spend more than the budget."""
        d = len(sizes)
        if self.rounds is not None and self.rounds <= d:
            raise ConfigError("rounds", self.rounds, f"more rounds than the table's {d} attributes (or null: 16 d)")

    #: The model's size is decided by the data (the candidates chosen), within
    #: ``max_model_size``: claimed once the last model is known.
    deferred_memory: ClassVar[frozenset[str]] = frozenset({"max_model_size"})

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """From the shape: the true counts of every candidate (float64, twice: the answers
        and a model's estimate), the table's int64 codes and the sampled ones, its published
        copy, and a few arrays per record. Under ``max_model_size``: the copies of the model's
        tables that a fit, the candidates' queries (einsum's factors and intermediates) and the
        sampler hold (:func:`~dp2pub.synthesis.pgm.model_memory`), deferred, and claimed once
        the model is known."""
        n, sizes = int(n), [int(k) for k in sizes]
        cells = sum(math.prod(sizes[a] for a in r) for r in downward_closure(self.workload(len(sizes))))
        shape = 16 * cells + 16 * n * len(sizes) + table_bytes(n, sizes) + 192 * n
        return {"": shape, "max_model_size": model_memory(self.max_model_size, sizes)}

    def deadlines(self, start: float) -> tuple[float | None, float | None]:
        """``(rounds_end, end)``: when the rounds stop and when the fits must end, as
        ``time.perf_counter()`` values from ``start`` (both None without a ``time_limit``)."""
        if self.time_limit is None:
            return None, None
        return start + ROUNDS_SHARE * self.time_limit, start + self.time_limit

    def workload(self, d: int) -> list[tuple[int, ...]]:
        """Every marginal of ``workload_degree`` attributes (of all d if there are fewer)."""
        return list(itertools.combinations(range(d), min(self.workload_degree, d)))

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        self.check_shape(data.n, data.domain.sizes)
        start = time.perf_counter()
        d, sizes = data.d, [int(k) for k in data.domain.sizes]
        codes = data.codes.astype(np.int64)
        rho = zcdp_rho(epsilon, self.delta)
        rounds = self.rounds or 16 * d
        budget = Budget(rho, epsilon, self.delta, 0.0, 0.0, [])
        budget.sigma = gaussian_sigma(MEASURE_SHARE * rho / rounds, 1)
        budget.epsilon = exponential_epsilon(SELECT_SHARE * rho / rounds, 1)
        weights = candidate_weights(self.workload(d))
        answers = {
            r: marginal_counts(codes[:, list(r)], [sizes[a] for a in r]).ravel().astype(np.float64) for r in weights
        }
        measured = measure(codes, sizes, [(a,) for a in range(d)], budget.sigma, rng)
        budget.spent.append(math.fsum([gaussian_rho(budget.sigma)] * d))
        ledger = [zcdp_spend("measure", f"{d} 1-way marginals (sigma={budget.sigma:.6g})", budget.spent[0], self.delta)]
        rounds_end, end = self.deadlines(start)
        fits = [fit(sizes, measured, self.iterations, deadline=rounds_end)]
        model = fits[0]
        ran, annealed, bound, last = 0, 0, False, False
        while not last:
            if budget.rho - math.fsum(budget.spent) < 2 * budget.round_rho():
                budget.last_round()
                last = True
            elif rounds_end is not None and time.perf_counter() > rounds_end:
                budget.last_round()
                last = bound = True
            ran += 1
            used = math.fsum([*budget.spent, budget.round_rho()])
            chosen = self.choose(model, weights, answers, sizes, budget, self.max_model_size * used / budget.rho, rng)
            (before,) = model.counts_of([chosen])
            measured += measure(codes, sizes, [chosen], budget.sigma, rng)
            budget.spent.append(budget.round_rho())
            label = "+".join(data.domain.names[a] for a in chosen)
            ledger.append(
                zcdp_spend(
                    "select+measure",
                    f"round {ran}: {label} (sigma={budget.sigma:.6g}, epsilon={budget.epsilon:.6g})",
                    budget.spent[-1],
                    self.delta,
                )
            )
            model = fit(sizes, measured, self.iterations, warm=model, deadline=end if last else rounds_end)
            fits.append(model)
            cells = math.prod(sizes[a] for a in chosen)
            if not last and np.abs(model.counts_of([chosen])[0] - before).sum() <= bias(budget.sigma, cells):
                budget.sigma /= 2.0
                budget.epsilon *= 2.0
                annealed += 1
        timed = {"select_measure": time.perf_counter() - start}
        model = fit(sizes, measured, self.iterations, warm=model, deadline=end)
        fits.append(model)
        timed["fit"] = time.perf_counter() - start - timed["select_measure"]
        megabytes = model_megabytes(sizes, model.cliques)
        claim_memory(
            "max_model_size", self.max_model_size, MODEL_COPIES * int(megabytes * 2**20), "AIM's graphical model"
        )
        rows = max(1, round(model.total))
        records = sample(model, rows, rng)
        timed["synthesis"] = time.perf_counter() - start - sum(timed.values())
        published = data.with_codes(records.astype(code_dtype(max(sizes, default=1))))
        extra = {
            "records_published": float(rows),
            "rounds": float(ran),
            "rounds_annealed": float(annealed),
            "time_limit_bound": float(bound),
            "fits_cut": float(sum(f.steps < self.iterations for f in fits)),
            "model_megabytes": megabytes,
        }
        cliques = {"measured": ["+".join(data.domain.names[a] for a in m.clique) for m in measured]}
        return Outcome(TableRelease(published), ledger, timed, extra, {"aim": cliques})

    def choose(
        self,
        model: Model,
        weights: dict[tuple[int, ...], float],
        answers: dict[tuple[int, ...], np.ndarray],
        sizes: Sequence[int],
        budget: Budget,
        size_limit: float,
        rng: np.random.Generator,
    ) -> tuple[int, ...]:
        """Step 2's choice: among the candidates within the size limit (or covered by the
        model), the exponential mechanism on the weighted error beyond the noise expected."""
        covered = set(downward_closure(model.cliques))
        small = [r for r in weights if r in covered or model_megabytes(sizes, [*model.cliques, r]) <= size_limit]
        estimates = model.counts_of(small)
        quality = np.array(
            [weights[r] * (np.abs(answers[r] - x).sum() - bias(budget.sigma, x.size)) for r, x in zip(small, estimates)]
        )
        sensitivity = max(weights[r] for r in small)
        return small[exponential_draw(quality, sensitivity, budget.epsilon, rng)]
