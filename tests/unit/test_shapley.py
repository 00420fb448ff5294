"""rcakit.shapley: exact and Monte-Carlo Shapley on games with known values (CAR §4)."""

from itertools import combinations

import numpy as np
import pytest

import rcakit.scm
from rcakit import RcakitError, stats
from rcakit.shapley import (
    COUPLED,
    KnownFull,
    antithetic_walks,
    coupling,
    membership,
    permutation_interval,
    shapley_car,
    shapley_coefficients,
    shapley_enumerated,
    shapley_exact,
    shapley_exact_batched,
    shapley_leverage,
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


PROOF = KnownFull(1.0, "the test game's v(N)")  # what a protocol with deterministic replay would pass


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
    pooled = shapley_pooled(exact_draw, 3, rollout_budget=600, k=1, full=PROOF, seed=5)
    car = shapley_car(exact_draw, 3, rollout_budget=10**6, k=1, seed=5)
    assert pooled.rollouts == pooled.pairs * 2 * 3 <= 600  # n, not n + 1, rollouts per walk
    walks = shapley_permutation(game_value, 3, n_permutations=pooled.pairs, seed=5)
    np.testing.assert_allclose(pooled.values, walks.values)
    assert car.pairs > pooled.pairs
    shapley_pooled(draw, 3, rollout_budget=600, full=PROOF, seed=5)
    assert all((masks != 7).all() for masks, _, _ in seen)  # v(N) = 1 is proven, never rolled out
    shapley_pooled(draw, 3, rollout_budget=600, seed=5)
    assert (seen[-1][0] == 7).any()  # by default v(N) is rolled out


def test_pooled_values_add_up_to_one_minus_the_pooled_estimate_of_v_of_the_empty_set():
    """Every walk telescopes from v(∅) to v(N) = 1, so with one pooled v(∅) for all walks the sum is exact;
    a per-visit estimate of v(S) would give another sum."""
    draw, seen = recording_draw(3)
    est = shapley_pooled(draw, 3, rollout_budget=900, k=2, full=PROOF, seed=1)
    masks, k, bad = seen[0]
    empty = masks == 0
    assert est.values.sum() == pytest.approx(1.0 - bad[empty].sum() / (k * empty.sum()), abs=1e-12)


def test_the_jackknife_interval_needs_two_pairs_and_brackets_the_estimate():
    draw, _ = recording_draw(4)
    est = shapley_pooled(draw, 3, rollout_budget=6000, seed=2, groups=20)
    assert est.groups == 20 and est.interval == "jackknife"
    assert (est.ci_low <= est.values).all() and (est.values <= est.ci_high).all()
    assert (est.ci_high - est.ci_low > 0).all()
    lone = shapley_pooled(draw, 3, rollout_budget=8, seed=2)
    assert lone.pairs == 1 and np.isnan(lone.ci_low).all()
    few = shapley_pooled(draw, 3, rollout_budget=40, seed=2)
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

    est = shapley_paired(draw, 3, rollout_budget=500, full=PROOF, seed=4)
    (masks,) = seen
    assert masks.shape == (est.pairs, 5) and est.rollouts == est.pairs * 5 <= 500  # 2n - 1 coalitions a pair
    assert (masks[:, 0] == 0).all() and (masks != 7).all() and (masks[:, 1:] != 0).all()
    np.testing.assert_allclose(est.values, shapley_permutation(game_value, 3, n_permutations=est.pairs, seed=4).values)
    rolled = shapley_paired(draw, 3, rollout_budget=500, seed=4)  # the default rolls v(N) out
    assert (seen[-1][:, -1] == 7).all() and rolled.rollouts == rolled.pairs * 6


def test_two_paired_players_get_their_exact_values_from_one_pair():
    """With two players a walk and its reverse are every order, so one pair of a deterministic game is exact."""
    est = shapley_paired(lambda m, k: np.array([0.2, 0.5, 0.4, 1.0])[m] * k, 2, rollout_budget=4, seed=0)
    assert est.pairs == 1
    np.testing.assert_allclose(est.values, shapley_exact(lambda s: [0.2, 0.5, 0.4, 1.0][sum(1 << i for i in s)], 2))


def test_enumerated_values_are_exact_on_a_deterministic_game_and_its_interval_never_collapses():
    est = shapley_enumerated(exact_draw, 3, rollout_budget=700, full=PROOF)
    assert est.rollouts == 7 * 100  # every coalition but the proven N, 100 rollouts each
    assert shapley_enumerated(exact_draw, 3, rollout_budget=800).rollouts == 8 * 100  # v(N) rolled out
    np.testing.assert_allclose(est.values, shapley_exact(game_value, 3))
    assert (est.ci_high - est.ci_low > 0).all()
    certain = shapley_enumerated(lambda m, k: np.where(m > 0, k, 0), 3, rollout_budget=80)
    assert (certain.ci_high - certain.ci_low > 0).all()  # every coalition's rollouts agree: smoothed, not 0
    assert np.isnan(shapley_enumerated(exact_draw, 3, rollout_budget=7).values).all()


def test_the_enumerated_interval_covers_near_its_level_on_a_noisy_game():
    exact = shapley_exact(game_value, 3)
    rng = np.random.default_rng(11)
    held = [
        (est.ci_low <= exact) & (exact <= est.ci_high)
        for est in (shapley_enumerated(lambda m, k: rng.binomial(k, GAME_V[m]), 3, 1400) for _ in range(300))
    ]
    assert 0.92 <= np.mean(held) <= 0.99


# --- v(N) measured, a regression estimator without common random numbers, the coupling rule ---------------

FLAKY = 0.8  # holding every step replays the failure only this often (a flaky tool)


def flaky_v(mask):
    """v on 4 players: an AND of players 0 and 1, player 2 adds a chance, player 3 is idle; background 0.1;
    the failure then happens only when the flaky tool fails too, so v(N) = 0.8."""
    both = (mask & 3) == 3
    two = (mask >> 2) & 1
    return FLAKY * (1 - 0.9 * (1 - both) * (1 - 0.3 * two))


def flaky_paired(rng, coupled=True):
    """Common random numbers on the flaky game: per row and rollout one uniform each for the tool, the
    background and player 2's chance (``coupled=False``: fresh ones per coalition, a draw that only claims
    to pair)."""

    def draw(masks, k):
        rows, columns = masks.shape
        u = rng.random((rows, 1 if coupled else columns, k, 3))
        both = ((masks & 3) == 3)[..., None]
        two = ((masks >> 2) & 1).astype(bool)[..., None]
        failing = (u[..., 0] < FLAKY) & (both | (u[..., 1] < 0.1) | (two & (u[..., 2] < 0.3)))
        return failing.sum(axis=-1)

    return draw


def flaky_exact():
    return shapley_exact(lambda s: flaky_v(sum(1 << i for i in s)), 4)


def errors_and_idle_cover(estimate_for, seeds=200):
    exact, errors, idle = flaky_exact(), [], []
    for s in range(seeds):
        est = estimate_for(s)
        errors.append(est.values - exact)
        idle.append(est.ci_low[3] <= 0 <= est.ci_high[3])
    errors = np.array(errors)
    half = 3.0 * errors.std(axis=0, ddof=1) / np.sqrt(seeds)  # per player, about 99.7%: four players at once
    return errors.mean(axis=0), half, float(np.mean(idle))


def test_assuming_v_of_n_is_one_biases_every_player_and_blames_the_idle_step_and_the_default_does_not():
    """On a game with v(N) = 0.8 an assumed v(N) = 1 adds (1 - 0.8) / n = 0.05 to every player; the
    default rolls v(N) out and is unbiased, and the idle step's interval holds 0 at about its level."""
    assumed = KnownFull(1.0, "assumed, as the old default did")
    old = errors_and_idle_cover(
        lambda s: shapley_paired(flaky_paired(np.random.default_rng([s, 1])), 4, 2000, full=assumed, seed=s)
    )
    new = errors_and_idle_cover(
        lambda s: shapley_rollouts(4, 2000, paired=flaky_paired(np.random.default_rng([s, 1])), seed=s)
    )
    assert (np.abs(old[0]) > old[1]).all() and np.allclose(old[0], (1 - FLAKY) / 4, atol=0.01)
    assert old[2] < 0.5  # the idle step is blamed in most runs
    assert (np.abs(new[0]) <= new[1]).all()  # every player's mean error over seeds: its interval holds 0
    assert new[2] >= 0.9  # 200 runs of a 95% interval: 0.9 is over four standard errors below


def test_the_fresh_draw_default_is_leverage_and_unbiased_when_v_of_n_is_below_one():
    def fresh(s):
        paired = flaky_paired(np.random.default_rng([s, 2]))
        return shapley_rollouts(4, 2000, draw=lambda m, k: paired(m[:, None], k)[:, 0], seed=s)

    assert fresh(0).estimator == "leverage"
    mean, half, idle = errors_and_idle_cover(fresh)
    assert (np.abs(mean) <= half).all() and idle >= 0.9
    with pytest.raises(RcakitError, match="assumption"):
        shapley_pooled(exact_draw, 3, 600, full=1.0)  # a bare number is refused


def test_leverage_is_exact_on_an_additive_game_and_consistent_on_a_non_additive_one():
    """An additive game's regression fits every sampled row exactly, so any sample gives the exact values;
    on GAME_V (interactions) the weights 1 / (s (n - s)) make the estimate converge to Shapley's values,
    where unweighted least squares does not."""
    weights = np.array([0.1, 0.25, -0.05, 0.3])
    table = 0.2 + membership(4) @ weights
    est = shapley_leverage(lambda m, k: table[m] * k, 4, 300, seed=3)
    np.testing.assert_allclose(est.values, weights, atol=1e-12)
    big = shapley_leverage(exact_draw, 3, 200_000, seed=1)
    np.testing.assert_allclose(big.values, shapley_exact(game_value, 3), atol=0.005)
    assert big.rollouts <= 200_000 and big.estimator == "leverage" and (big.ci_low <= big.ci_high).all()


def test_the_leverage_interval_covers_each_player_near_its_level_on_a_noisy_game():
    exact = shapley_exact(game_value, 3)
    rng = np.random.default_rng(12)
    held = np.array(
        [
            (est.ci_low <= exact) & (exact <= est.ci_high)
            for est in (shapley_leverage(lambda m, k: rng.binomial(k, GAME_V[m]), 3, 1500, seed=s) for s in range(300))
        ]
    )
    assert (held.mean(axis=0) >= 0.9).all() and (held.mean(axis=0) <= 0.995).all()


NEAR_V = (
    0.4 + 0.04 * np.array([bin(m).count("1") for m in range(8)]) + 0.02 * (np.arange(8) == 7)
)  # small marginals, v in [0.4, 0.54]


def threshold_paired(rng, coupled=True):
    """NEAR_V with one uniform per row and rollout: a rollout is bad when it falls below v(S), so two
    coalitions of a row differ only in the band between their values (``coupled=False``: one per entry)."""

    def draw(masks, k):
        u = rng.random((masks.shape[0], 1 if coupled else masks.shape[1], k))
        return (u < NEAR_V[masks][..., None]).sum(axis=-1)

    return draw


def test_coupling_is_near_one_for_shared_noise_near_zero_for_fresh_noise_and_picks_the_estimator():
    rng = np.random.default_rng(4)
    orders, masks = antithetic_walks(4, 200, rng)
    twice = masks.reshape(200, 1, 2, 5).repeat(2, axis=1).reshape(-1, 5)
    for coupled in (True, False):
        draw = flaky_paired(np.random.default_rng(5), coupled)
        forward, reverse = twice[0::2], twice[1::2]
        values = draw(np.concatenate([forward, reverse[:, 1:4]], axis=1), 1).astype(float)
        along = np.empty(twice.shape)
        along[0::2] = values[:, :5]
        along[1::2, 0], along[1::2, 1:4], along[1::2, 4] = values[:, 0], values[:, 5:8], values[:, 4]
        kappa = coupling(along, known=False)
        assert kappa > 0.7 if coupled else abs(kappa) < 0.15
    paired = shapley_rollouts(3, 3000, paired=threshold_paired(np.random.default_rng(6)), seed=1)
    claimed = shapley_rollouts(3, 3000, paired=threshold_paired(np.random.default_rng(6), coupled=False), seed=1)
    assert paired.estimator == "paired" and paired.coupling >= COUPLED and paired.rollouts <= 3000
    assert claimed.estimator == "leverage" and claimed.coupling < COUPLED and claimed.rollouts <= 3000
    noiseless = shapley_rollouts(3, 500, paired=exact_paired, seed=1)  # no noise: nothing to share, paired
    assert noiseless.estimator == "paired" and np.isnan(noiseless.coupling)


def test_the_default_by_rollouts_is_paired_where_the_policy_can_be_seeded_and_leverage_otherwise():
    assert shapley_rollouts(3, 500, paired=exact_paired, seed=1).interval == "padded"
    assert shapley_rollouts(3, 500, draw=exact_draw, seed=1).estimator == "leverage"
    with pytest.raises(RcakitError, match="give draw"):
        shapley_rollouts(3, 500)
