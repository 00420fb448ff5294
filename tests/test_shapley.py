"""rcakit.shapley: exact and Monte-Carlo Shapley on games with known values (CAR §4)."""

from itertools import combinations

import numpy as np
import pytest

import rcakit.scm
from rcakit import RcakitError
from rcakit.shapley import shapley_exact, shapley_permutation


def additive(weights):
    return lambda s: float(sum(weights[i] for i in s))


def unanimity(players):
    return lambda s: float(set(players) <= s)


def pairwise_game(a, b):
    """v(S) = sum a_i + sum_{i<j in S} b_ij; Shapley phi_i = a_i + sum_j b_ij / 2."""
    n = len(a)

    def v(s):
        return float(sum(a[i] for i in s) + sum(b[i, j] for i, j in combinations(sorted(s), 2)))

    phi = np.array([a[i] + sum(b[min(i, j), max(i, j)] for j in range(n) if j != i) / 2 for i in range(n)])
    return v, phi


def test_scm_does_not_define_or_reexport_the_estimators():
    for name in ("shapley_exact", "shapley_permutation", "ShapleyEstimate"):
        assert not hasattr(rcakit.scm, name)


def test_exact_additive_game_returns_the_weights():
    w = [0.5, -1.0, 2.0, 0.25]
    assert np.allclose(shapley_exact(additive(w), 4), w)


def test_exact_unanimity_game_splits_evenly_among_carriers():
    phi = shapley_exact(unanimity({1, 3, 4}), 6)
    assert np.allclose(phi, [0, 1 / 3, 0, 1 / 3, 1 / 3, 0])


def test_exact_two_player_and_or_games():
    assert np.allclose(shapley_exact(lambda s: float(s == {0, 1}), 2), [0.5, 0.5])
    assert np.allclose(shapley_exact(lambda s: float(bool(s)), 2), [0.5, 0.5])
    assert np.allclose(shapley_exact(lambda s: float(0 in s), 2), [1.0, 0.0])  # a dummy player gets nothing


def test_exact_efficiency_axiom_on_a_random_game():
    rng = np.random.default_rng(1)
    table = rng.normal(size=2**7)

    def v(s):
        return 0.0 if not s else table[sum(1 << i for i in s)]

    phi = shapley_exact(v, 7)
    assert phi.sum() == pytest.approx(v(frozenset(range(7))) - v(frozenset()))


def test_one_forward_and_reverse_pass_is_exact_for_pairwise_games():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=5), np.triu(rng.normal(size=(5, 5)), 1)
    v, phi = pairwise_game(a, b)
    est = shapley_permutation(v, 5, n_permutations=1, antithetic=True, seed=11)
    assert np.allclose(est.values, phi)
    plain = shapley_permutation(v, 5, n_permutations=1, antithetic=False, seed=11)
    assert not np.allclose(plain.values, phi)  # one plain walk is not enough


def test_permutation_efficiency_axiom_holds_per_walk():
    rng = np.random.default_rng(5)
    table = rng.normal(size=2**6)
    est = shapley_permutation(lambda s: table[sum(1 << i for i in s)], 6, n_permutations=7, seed=2)
    assert est.efficiency == pytest.approx(table[63] - table[0])


def test_budget_keeps_only_whole_permutations():
    calls = []

    def v(s):
        calls.append(s)
        return float(len(s))

    # n = 3: one antithetic permutation costs 2 * 4 = 8 evaluations; 20 fits two.
    est = shapley_permutation(v, 3, n_permutations=10, seed=0, budget=20)
    assert est.truncated and est.permutations == 2 and est.walks == 4
    assert est.evaluations == 16 == len(calls) == est.spent
    assert est.samples.shape == (2, 3)
    untouched = shapley_permutation(v, 3, n_permutations=3, seed=0, budget=24)
    assert not untouched.truncated and untouched.permutations == 3


def test_budget_in_the_callers_unit_matches_a_budget_in_evaluations():
    # One call costs 12 (rollouts); a budget of 1000 rollouts buys floor(1000 / 12) = 83 calls: ten permutations.
    for budget in (96, 191, 1000, 1055, 1056):
        in_rollouts = shapley_permutation(additive([1, 2, 3]), 3, 100, seed=1, budget=budget, cost_per_evaluation=12)
        in_calls = shapley_permutation(additive([1, 2, 3]), 3, 100, seed=1, budget=budget // 12)
        assert in_rollouts.permutations == in_calls.permutations
        assert in_rollouts.spent == in_rollouts.evaluations * 12 <= budget
    assert shapley_permutation(lambda s: 0.0, 3, 100, budget=96, cost_per_evaluation=12).permutations == 1


def test_cost_per_evaluation_must_be_positive():
    with pytest.raises(RcakitError, match="cost_per_evaluation"):
        shapley_permutation(lambda s: 0.0, 3, 1, cost_per_evaluation=0)


def test_no_caching_across_permutations():
    calls = []

    def v(s):
        calls.append(s)
        return 0.0

    shapley_permutation(v, 4, n_permutations=5, antithetic=True, seed=0)
    assert len(calls) == 5 * 2 * 5
    assert calls.count(frozenset()) == 10


def test_intervals_are_the_clt_interval_of_the_per_permutation_rows():
    rng = np.random.default_rng(8)
    table = rng.normal(size=2**4)
    est = shapley_permutation(lambda s: table[sum(1 << i for i in s)], 4, n_permutations=30, seed=3)
    sd = est.samples.std(axis=0, ddof=1)
    assert np.allclose(est.values, est.samples.mean(axis=0))
    assert np.allclose(est.ci_high - est.values, 1.959963984540054 * sd / np.sqrt(30))
    assert np.allclose(est.values - est.ci_low, est.ci_high - est.values)


def test_same_seed_same_estimate_and_another_seed_another():
    table = np.random.default_rng(2).normal(size=2**5)

    def v(s):
        return table[sum(1 << i for i in s)]

    a, b = (shapley_permutation(v, 5, 10, antithetic=False, seed=4) for _ in range(2))
    assert np.array_equal(a.values, b.values) and np.array_equal(a.ci_low, b.ci_low)
    assert not np.array_equal(a.values, shapley_permutation(v, 5, 10, antithetic=False, seed=5).values)
