"""The dp2pub publisher's three versions: exact ledgers, the LDP channel, the private network
selection, the unaccounted exact entropies, and input checks."""

import math

import numpy as np
import pytest

import dp2pub.publish.dp2pub_publisher as module
from dp2pub.audit import privacy_loss, satisfies_ldp
from dp2pub.data.synthetic_bn import make_synthetic_bn
from dp2pub.job import check_budget
from dp2pub.mechanisms.accounting import REPLACE_ONE, epsilon_spent, split_budget, two_shares
from dp2pub.mechanisms.grr import GRR
from dp2pub.publish.dp2pub_publisher import DP2PubPublisher
from dp2pub.publish.invariant_pram import channel_matrix
from dp2pub.publish.privbayes import pair_sensitivities
from dp2pub.validation import ConfigError


@pytest.fixture(scope="module")
def data():
    return make_synthetic_bn(n=3000, d=6, degree=2, k_min=2, k_max=5, strength=0.8, rng=np.random.default_rng(0))


def by_phase(outcome, phase):
    return [item for item in outcome.ledger if item.phase == phase]


def test_trusted_spends_eps1_on_d_minus_1_selections_and_d_entropies_and_eps2_over_the_clusters(data):
    epsilon = 1.3
    outcome = DP2PubPublisher(trust="trusted").publish(data, epsilon, np.random.default_rng(1))
    assert outcome.epsilon_spent <= epsilon and outcome.epsilon_spent == pytest.approx(epsilon)
    assert not outcome.not_private
    eps1, eps2 = two_shares(epsilon, 0.5)  # the paper's eps1 = eps2 = eps/2
    eps_h, eps_net = two_shares(eps1, 0.1)  # 10% of eps1 for the entropies
    selections, weights, release = (by_phase(outcome, p) for p in ("structure", "weights", "release"))
    assert len(selections) == data.d - 1 and {s.epsilon for s in selections} == {split_budget(eps_net, data.d - 1)}
    assert len(weights) == data.d and math.fsum(s.epsilon for s in weights) == pytest.approx(eps_h)
    assert len(outcome.ledger) == len(selections) + len(weights) + len(release)
    # the curator's queries are central over replace-one neighbours; the release is local
    assert {s.neighbours for s in selections + weights} == {REPLACE_ONE}
    assert {s.neighbours for s in release} == {""}
    spent = {item.attribute: item.epsilon for item in release}
    clusters = outcome.artifacts["clusters"]
    assert sorted(a for c in clusters for a in c["attributes"]) == sorted(data.domain.names)
    assert sum(c["pbc"] for c in clusters) == pytest.approx(1.0)
    for cluster in clusters:  # PBC(C) * eps2, evenly over the cluster's attributes
        shares = [spent[a] for a in cluster["attributes"]]
        assert shares == pytest.approx([cluster["pbc"] * eps2 / len(shares)] * len(shares))
    assert len(outcome.artifacts["network"]) == data.d
    assert outcome.published.n == data.n


def test_local_spends_epsilon_over_d_per_attribute_and_nothing_else(data):
    outcome = DP2PubPublisher(trust="local").publish(data, 2.0, np.random.default_rng(1))
    share = split_budget(2.0, data.d)
    assert [(s.phase, s.attribute, s.epsilon) for s in outcome.ledger] == [
        ("perturb", a, share) for a in data.domain.names
    ]
    assert outcome.epsilon_spent <= 2.0 and outcome.epsilon_spent == pytest.approx(2.0)
    assert all("pbc" not in c for c in outcome.artifacts["clusters"])


def test_the_local_users_channel_is_grr_per_attribute_at_epsilon_over_d(data, monkeypatch):
    seen = []
    real = module.perturb_table

    def spy(table, budgets, rng):
        reports, oracles = real(table, budgets, rng)
        seen.append(oracles)
        return reports, oracles

    monkeypatch.setattr(module, "perturb_table", spy)
    epsilon = 1.5
    DP2PubPublisher(trust="local").publish(data, epsilon, np.random.default_rng(2))
    (oracles,) = seen  # the users report once
    share = split_budget(epsilon, data.d)
    assert [(type(o), o.k, o.epsilon) for o in oracles] == [(GRR, int(k), share) for k in data.domain.sizes]
    channel = channel_matrix(oracles)  # a user's whole record: the Kronecker product
    assert privacy_loss(channel) == pytest.approx(data.d * share, rel=1e-9)
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon * (1 - 1e-6))


@pytest.mark.parametrize("split", ["budget", "users"])
def test_local_two_phase_spends_exactly_epsilon_per_user(data, split):
    pub = DP2PubPublisher(trust="local_two_phase", split=split, structure_fraction=0.3)
    outcome = pub.publish(data, 2.0, np.random.default_rng(1))
    assert outcome.epsilon_spent <= 2.0 and outcome.epsilon_spent == pytest.approx(2.0)
    rows = outcome.published.n
    assert rows == data.n if split == "budget" else rows == data.n - round(0.3 * data.n)
    assert sum(c["pbc"] for c in outcome.artifacts["clusters"]) == pytest.approx(1.0)
    assert {"structure", "perturb", "pram"} <= set(outcome.timings)


def test_the_trusted_network_is_chosen_by_privbayes_exponential_mechanism_at_eps_net_over_d_minus_1(data, monkeypatch):
    calls = []
    real = module.privbayes_selector

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, "privbayes_selector", spy)
    epsilon = 0.8
    DP2PubPublisher(trust="trusted").publish(data, epsilon, np.random.default_rng(3))
    _, eps_net = two_shares(0.5 * epsilon, 0.1)  # the network gets eps1 less the entropies' share
    ((share, n, sizes),) = calls
    assert (share, n) == (split_budget(eps_net, data.d - 1), data.n) and list(sizes) == list(data.domain.sizes)
    # the selector draws the softmax of each score over its own sensitivity (a binary child: the smaller one)
    binary, other = int(np.flatnonzero(data.domain.sizes == 2)[0]), int(np.flatnonzero(data.domain.sizes == 4)[0])
    parent = int(np.argmax(data.domain.sizes))  # 5 values
    scores = np.array([0.0, 0.02, 0.05, 0.05])
    children = np.array([binary, other, binary, other])
    parents = np.full((4, 1), parent)
    sensitivities = pair_sensitivities(data.n, data.domain.sizes, children, parents)
    assert len(set(sensitivities.tolist())) == 2  # both bounds of Lemma 1 are exercised
    select, draws, rng = real(share, n, sizes), 60_000, np.random.default_rng(4)
    picks = np.bincount([select(scores, children, parents, rng) for _ in range(draws)], minlength=4)
    expected = np.exp(scores * share / (2 * sensitivities))
    expected /= expected.sum()
    assert np.all(np.abs(picks / draws - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / draws))
    assert expected[2] / expected[0] > 1.3  # the scores matter: a uniform or wrongly scaled draw fails


def test_exact_entropies_are_the_papers_reading_and_are_not_private(data):
    outcome = DP2PubPublisher(trust="trusted", entropies="exact").publish(data, 1.0, np.random.default_rng(1))
    assert outcome.epsilon_spent == math.inf
    assert "entropies" in outcome.not_private
    assert by_phase(outcome, "weights")[-1].epsilon == math.inf
    finite = [item for item in outcome.ledger if item.epsilon < math.inf]
    assert epsilon_spent(finite) <= 1.0 and epsilon_spent(finite) == pytest.approx(1.0)  # eps1 all to the network
    check_budget(DP2PubPublisher(trust="trusted", entropies="exact"), outcome, 1.0)  # let through, with a warning


@pytest.mark.parametrize("trust", ["trusted", "local", "local_two_phase"])
def test_a_budget_that_would_exceed_epsilon_is_refused(data, trust, monkeypatch):
    # the naive epsilon / d: 6 * (0.1 / 6) > 0.1 (and so on); the job must refuse such a ledger
    monkeypatch.setattr(module, "split_budget", lambda eps, parts: eps / parts * (1 + 1e-12))
    monkeypatch.setattr(module, "fit_shares", lambda shares, eps, spent=(): [s * (1 + 1e-12) for s in shares])
    pub = DP2PubPublisher(trust=trust)
    outcome = pub.publish(data, 0.1, np.random.default_rng(1))
    assert outcome.epsilon_spent > 0.1
    with pytest.raises(RuntimeError, match="spent epsilon=.* > budget 0.1"):
        check_budget(pub, outcome, 0.1)


@pytest.mark.parametrize("compound", ["joint", "kronecker"])
@pytest.mark.parametrize("prior", ["inverse", "ibu"])
def test_every_option_publishes_a_table_of_the_data_domain(data, compound, prior):
    outcome = DP2PubPublisher(prior=prior, compound=compound).publish(data, 4.0, np.random.default_rng(5))
    assert outcome.published.domain == data.domain
    assert outcome.published.n == data.n
    assert outcome.artifacts["settings"]["compound"] == compound


def test_with_a_huge_budget_every_version_returns_the_table(data):
    for trust in ("trusted", "local", "local_two_phase"):
        outcome = DP2PubPublisher(trust=trust).publish(data, 2000.0, np.random.default_rng(6))
        assert np.mean(outcome.published.codes == data.codes) > 0.999, trust


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"degree": 0}, "degree=0"),
        ({"trust": "server"}, "trust='server'"),
        ({"compound": "product"}, "compound='product'"),
        ({"cluster_head": "first"}, "cluster_head='first'"),
        ({"max_cluster_size": 0}, "max_cluster_size=0"),
        ({"max_cells": 0}, "max_cells=0"),
        ({"trust": "local", "structure_fraction": 0.3}, "structure_fraction=0.3 .*null with trust=local"),
        ({"trust": "local", "entropies": "exact"}, "entropies='exact' .*trust=trusted"),
        ({"trust": "trusted", "split": "users"}, "split='users' .*trust=local_two_phase"),
        ({"trust": "trusted", "structure_fraction": 0}, "structure_fraction=0"),
        ({"trust": "trusted", "structure_fraction": 1.0}, "structure_fraction=1.0"),
        ({"trust": "trusted", "entropy_fraction": 0}, "entropy_fraction=0"),
        ({"trust": "trusted", "entropies": "exact", "entropy_fraction": 0.2}, "entropy_fraction=0.2 .*exact"),
        ({"trust": "local_two_phase", "split": "rows"}, "split='rows'"),
    ],
)
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        DP2PubPublisher(**kwargs)


def test_degree_must_be_below_d(data):
    with pytest.raises(ConfigError, match=r"mechanism.degree=6 .*\[1, 5\]"):
        DP2PubPublisher(degree=6).publish(data, 1.0, np.random.default_rng(0))
