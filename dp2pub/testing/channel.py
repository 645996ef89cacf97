"""The exact channel checks of a frequency oracle (:mod:`dp2pub.audit`): its channel meets
the budget, and fails it just below (the guarantee is tight, not loose)."""

from __future__ import annotations

import numpy as np

from dp2pub.audit import privacy_loss, satisfies_ldp
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.testing.cases import OracleCase
from dp2pub.testing.verdicts import expect, skip

#: How far a declared loss may be below the channel's computed one (floating-point rounding
#: of the logarithms, as :func:`~dp2pub.audit.satisfies_ldp` allows).
LOSS_RTOL = 1e-9


def channel_of(oracle: FrequencyOracle, where: str) -> np.ndarray:
    """The oracle's exact channel, checked to be a k-row stochastic matrix."""
    channel = np.asarray(oracle.transition_matrix(), dtype=np.float64)
    expect(channel.ndim == 2 and channel.shape[0] == oracle.k, f"{where}: channel of shape {channel.shape}")
    expect(np.all((channel >= 0) & (channel <= 1)), f"{where}: channel entries outside [0, 1]")
    expect(np.allclose(channel.sum(axis=1), 1.0, rtol=0, atol=1e-9), f"{where}: channel rows do not sum to 1")
    return channel


def check_channel(case: OracleCase) -> None:
    """At each of ``case.epsilons``: ``transition_matrix()`` is a stochastic matrix with one
    row per value; it is epsilon-LDP (:func:`~dp2pub.audit.satisfies_ldp`, which allows only
    floating-point rounding); ``privacy_loss()`` and ``epsilon_promised`` (what the ledger
    records) are at most epsilon, exactly; and ``privacy_loss()`` bounds the channel's loss."""
    for epsilon in case.epsilons:
        oracle = case.build(epsilon)
        where = f"{case.id} at epsilon={epsilon!r}, k={case.k}"
        channel = channel_of(oracle, where)
        loss = privacy_loss(channel)
        expect(satisfies_ldp(channel, epsilon), f"{where}: the exact channel loses {loss!r} > epsilon")
        declared, promised = oracle.privacy_loss(), oracle.epsilon_promised
        expect(declared <= epsilon, f"{where}: privacy_loss() = {declared!r} > epsilon")
        expect(promised <= epsilon, f"{where}: epsilon_promised = {promised!r} > epsilon")
        expect(
            loss <= declared * (1 + LOSS_RTOL) + 1e-12,
            f"{where}: the exact channel loses {loss!r}, more than privacy_loss() = {declared!r}",
        )


def check_channel_tight(case: OracleCase) -> None:
    """At each of ``case.epsilons`` the exact channel is *not* epsilon'-LDP for
    ``epsilon' = epsilon (1 - case.tight_rtol)``: the oracle spends its budget, it does not
    merely stay under it (skipped with ``case.loose``, the reason why it may not)."""
    if case.loose:
        skip(f"{case.id}: {case.loose}")
    for epsilon in case.epsilons:
        where = f"{case.id} at epsilon={epsilon!r}, k={case.k}"
        channel = channel_of(case.build(epsilon), where)
        below = epsilon * (1 - case.tight_rtol)
        expect(
            not satisfies_ldp(channel, below),
            f"{where}: the exact channel loses only {privacy_loss(channel)!r}, within epsilon * (1 - {case.tight_rtol}) = "
            f"{below!r}: not tight (OracleCase.loose says why, if that is meant)",
        )
