"""rcakit.shapley: exact and Monte-Carlo Shapley on games with known values (CAR §4)."""

from itertools import combinations

import numpy as np
import pytest

import rcakit.scm
from rcakit import RcakitError, stats
from rcakit.shapley import (
    antithetic_walks,
    permutation_interval,
    shapley_car,
    shapley_coefficients,
    shapley_enumerated,
    shapley_exact,
    shapley_exact_batched,
    shapley_of_table,
    shapley_paired,
    shapley_permutation,
    shapley_pooled,
    shapley_rollouts,
)


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


def test_permutation_interval_normal_and_student_quantiles():
    rows = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])  # mean 1.5, sd 1.2910; a constant
    mean, lo, hi = permutation_interval(rows, "normal")
    assert np.allclose(mean, [1.5, 1.0]) and np.allclose(hi - mean, [1.959964 * 1.290994 / 2, 0.0])
    mean_t, lo_t, hi_t = permutation_interval(rows, "student")
    assert np.allclose(mean_t, mean) and hi_t[0] - mean_t[0] == pytest.approx(3.182446 * 1.290994 / 2, rel=1e-5)
    assert lo_t[1] == hi_t[1] == 1.0  # rows that never vary give a point: the interval cannot see noise
    _, lo90, hi90 = permutation_interval(rows, "normal", level=0.90)
    assert lo[0] < lo90[0] < hi90[0] < hi[0]
    assert all(np.isnan(x).all() for x in permutation_interval(rows[:1], "student")[1:])
    with pytest.raises(RcakitError, match="method"):
        permutation_interval(rows, "walks")


def test_normal_interval_is_the_clt_interval_of_rcakit_stats():
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(25, 3))
    mean, lo, hi = permutation_interval(rows, "normal")
    for i in range(3):
        assert (mean[i], lo[i], hi[i]) == stats.mean_ci_normal(rows[:, i])  # bit for bit: CAR's interval


def test_estimate_keeps_every_walk_and_pairs_them_into_rows():
    table = np.random.default_rng(6).normal(size=2**4)
    est = shapley_permutation(lambda s: table[sum(1 << i for i in s)], 4, n_permutations=6, seed=2)
    assert est.walk_samples.shape == (12, 4) and est.samples.shape == (6, 4)
    assert np.allclose(est.samples, (est.walk_samples[0::2] + est.walk_samples[1::2]) / 2)
    student = shapley_permutation(lambda s: table[sum(1 << i for i in s)], 4, 6, seed=2, interval="student")
    assert np.array_equal(student.values, est.values)
    assert np.array_equal(student.ci_low, est.interval("student")[0]) and (student.ci_low < est.ci_low).all()
    walks_lo, walks_hi = est.interval("walks")
    assert np.allclose(walks_hi - walks_lo, 2 * 1.959964 * est.walk_samples.std(axis=0, ddof=1) / np.sqrt(12))
    with pytest.raises(RcakitError, match="interval"):
        shapley_permutation(lambda s: 0.0, 3, 2, interval="bootstrap")


def test_walks_as_independent_draws_overstate_the_noise_of_a_pairwise_game():
    # In a pairwise game the reverse walk cancels the ordering noise: every pair row is exact, the walks are not.
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=4), np.triu(rng.normal(size=(4, 4)), 1)
    v, phi = pairwise_game(a, b)
    est = shapley_permutation(v, 4, n_permutations=8, seed=1)
    assert np.allclose(est.ci_low, phi) and np.allclose(est.ci_high, phi)
    walks_lo, walks_hi = est.interval("walks")
    assert (walks_hi - walks_lo > 0.01).any()


# --- estimators priced in rollouts (issue 30) -----------------------------------------------------

GAME_V = np.array([0.1, 0.3, 0.2, 0.6, 0.15, 0.5, 0.4, 1.0])  # v on the bitmasks of 3 players; v(N) = 1


def exact_draw(masks, k):
    """k rollouts that come out exactly k v(S) bad (a deterministic game, fractions allowed)."""
    return GAME_V[masks] * k


def recording_draw(seed):
    """Bernoulli rollouts with v(S); every (mask, k, bad) drawn is kept."""
    rng, seen = np.random.default_rng(seed), []

    def draw(masks, k):
        bad = rng.binomial(k, GAME_V[masks])
        seen.append((masks.copy(), k, bad.copy()))
        return bad

    return draw, seen


def game_value(coalition):
    return float(GAME_V[sum(1 << i for i in coalition)])


def test_antithetic_walks_pair_each_order_with_its_reverse_and_grow_one_player_a_step():
    orders, masks = antithetic_walks(4, 3, np.random.default_rng(0))
    assert (orders[1::2] == orders[0::2, ::-1]).all()
    assert (masks[:, 0] == 0).all() and (masks[:, -1] == 15).all()
    assert (np.diff(masks, axis=1) == np.left_shift(1, orders)).all()


def test_car_by_rollouts_is_shapley_permutation_with_a_k_rollout_value_function():
    est = shapley_car(exact_draw, 3, rollout_budget=2000, k=12, seed=5)
    same = shapley_permutation(game_value, 3, n_permutations=est.pairs, seed=5)
    assert est.pairs == 2000 // (2 * 4 * 12) and est.rollouts == est.pairs * 2 * 4 * 12 <= 2000
    np.testing.assert_allclose(est.values, same.values)
    np.testing.assert_allclose(est.ci_low, same.ci_low)


def test_pooled_values_on_a_deterministic_game_are_the_walks_average_and_never_roll_out_v_of_n():
    draw, seen = recording_draw(0)
    pooled = shapley_pooled(exact_draw, 3, rollout_budget=600, k=1, seed=5)
    car = shapley_car(exact_draw, 3, rollout_budget=10**6, k=1, seed=5)
    assert pooled.rollouts == pooled.pairs * 2 * 3 <= 600  # n, not n + 1, rollouts per walk
    walks = shapley_permutation(game_value, 3, n_permutations=pooled.pairs, seed=5)
    np.testing.assert_allclose(pooled.values, walks.values)
    assert car.pairs > pooled.pairs
    shapley_pooled(draw, 3, rollout_budget=600, seed=5)
    assert all((masks != 7).all() for masks, _, _ in seen)  # v(N) = 1 is known, never rolled out


def test_pooled_values_add_up_to_one_minus_the_pooled_estimate_of_v_of_the_empty_set():
    """Every walk telescopes from v(∅) to v(N) = 1, so with one pooled v(∅) for all walks the sum is exact;
    a per-visit estimate of v(S) would give another sum."""
    draw, seen = recording_draw(3)
    est = shapley_pooled(draw, 3, rollout_budget=900, k=2, seed=1)
    masks, k, bad = seen[0]
    empty = masks == 0
    assert est.values.sum() == pytest.approx(1.0 - bad[empty].sum() / (k * empty.sum()), abs=1e-12)


def test_the_jackknife_interval_needs_two_pairs_and_brackets_the_estimate():
    draw, _ = recording_draw(4)
    est = shapley_pooled(draw, 3, rollout_budget=6000, seed=2, groups=20)
    assert est.groups == 20 and est.interval == "jackknife"
    assert (est.ci_low <= est.values).all() and (est.values <= est.ci_high).all()
    assert (est.ci_high - est.ci_low > 0).all()
    lone = shapley_pooled(draw, 3, rollout_budget=6, seed=2)
    assert lone.pairs == 1 and np.isnan(lone.ci_low).all()
    few = shapley_pooled(draw, 3, rollout_budget=30, seed=2)
    assert few.groups == few.pairs == 5


def exact_paired(masks, k):
    """Common random numbers on the deterministic game: every row's rollouts come out k v(S) bad."""
    return GAME_V[masks] * k


def test_the_batched_value_function_and_the_coefficients_give_the_exact_values():
    rng = np.random.default_rng(7)
    table = rng.random(1 << 6)
    phi = shapley_exact(lambda s: float(table[sum(1 << i for i in s)]), 6)
    np.testing.assert_allclose(shapley_exact_batched(lambda members: table[members @ (1 << np.arange(6))], 6), phi)
    np.testing.assert_allclose(shapley_coefficients(6) @ table, phi)
    with pytest.raises(RcakitError, match="2\\^n"):
        shapley_of_table(np.ones(6))


def test_the_padded_interval_keeps_a_width_when_every_row_is_zero_and_shrinks_towards_zero():
    rows = np.zeros((40, 2))
    rows[0, 1] = 1.0
    mean, low, high = permutation_interval(rows, "padded")
    _, s_low, s_high = permutation_interval(rows, "student")
    assert s_low[0] == s_high[0] == 0.0  # Student's t over 40 zeros is a point
    assert low[0] < 0 < high[0] and high[0] - low[0] > 0.1  # two pseudo-rows at -1 and +1 of 42
    assert mean[1] == pytest.approx(1 / 40) and (low[1] + high[1]) / 2 == pytest.approx(1 / 42)


def test_paired_walks_share_the_empty_coalition_and_never_roll_out_v_of_n():
    seen = []

    def draw(masks, k):
        seen.append(masks.copy())
        return GAME_V[masks] * k

    est = shapley_paired(draw, 3, rollout_budget=500, seed=4)
    (masks,) = seen
    assert masks.shape == (est.pairs, 5) and est.rollouts == est.pairs * 5 <= 500  # 2n - 1 coalitions a pair
    assert (masks[:, 0] == 0).all() and (masks != 7).all() and (masks[:, 1:] != 0).all()
    np.testing.assert_allclose(est.values, shapley_permutation(game_value, 3, n_permutations=est.pairs, seed=4).values)
    rolled = shapley_paired(draw, 3, rollout_budget=500, full=None, seed=4)
    assert (seen[-1][:, -1] == 7).all() and rolled.rollouts == rolled.pairs * 6


def test_two_paired_players_get_their_exact_values_from_one_pair():
    """With two players a walk and its reverse are every order, so one pair of a deterministic game is exact."""
    est = shapley_paired(lambda m, k: np.array([0.2, 0.5, 0.4, 1.0])[m] * k, 2, rollout_budget=3, seed=0)
    assert est.pairs == 1
    np.testing.assert_allclose(est.values, shapley_exact(lambda s: [0.2, 0.5, 0.4, 1.0][sum(1 << i for i in s)], 2))


def test_enumerated_values_are_exact_on_a_deterministic_game_and_its_interval_never_collapses():
    est = shapley_enumerated(exact_draw, 3, rollout_budget=700)
    assert est.rollouts == 7 * 100  # every coalition but N, 100 rollouts each
    np.testing.assert_allclose(est.values, shapley_exact(game_value, 3))
    assert (est.ci_high - est.ci_low > 0).all()
    certain = shapley_enumerated(lambda m, k: np.where(m > 0, k, 0), 3, rollout_budget=70)
    assert (certain.ci_high - certain.ci_low > 0).all()  # every coalition's rollouts agree: smoothed, not 0
    assert np.isnan(shapley_enumerated(exact_draw, 3, rollout_budget=6).values).all()


def test_the_enumerated_interval_covers_near_its_level_on_a_noisy_game():
    exact = shapley_exact(game_value, 3)
    rng = np.random.default_rng(11)
    held = [
        (est.ci_low <= exact) & (exact <= est.ci_high)
        for est in (shapley_enumerated(lambda m, k: rng.binomial(k, GAME_V[m]), 3, 1400) for _ in range(300))
    ]
    assert 0.92 <= np.mean(held) <= 0.99


def test_the_default_by_rollouts_is_paired_where_the_policy_can_be_seeded_and_pooled_otherwise():
    assert shapley_rollouts(3, 500, paired=exact_paired, seed=1).interval == "padded"
    assert shapley_rollouts(3, 500, draw=exact_draw, seed=1).interval == "jackknife"
    with pytest.raises(RcakitError, match="give draw"):
        shapley_rollouts(3, 500)
