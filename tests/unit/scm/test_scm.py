"""rcakit.scm: the do-operations, the contrastive locus on the pivotal SCM, and Shapley values of SCM failures
by replay (CAR §2-5). The chapter's sections, and its claims failing when the code under them breaks, are tested
in ``tests/unit/chapters/test_car_shapley.py``."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import rcakit.shapley
from rcakit import scm, stats
from rcakit.shapley import shapley_exact, shapley_permutation


def test_exact_interaction_scm_matches_analytic_values():
    for q in (0.3, 0.5, 0.8):
        s = scm.interaction_scm(q)
        phi = shapley_exact(s.analytic_v, 3)
        assert np.allclose(phi, [(1 - q**2) / 2, (1 - q**2) / 2, 0])


def test_monte_carlo_shapley_on_interaction_scm_covers_analytic_values():
    s = scm.interaction_scm(0.3, seed=0)
    value = scm.RolloutValue(s, 12, np.random.default_rng(0))
    est = shapley_permutation(value, 3, 80, seed=1)
    assert value.rollouts == 80 * 2 * 4 * 12 == 7680
    assert abs(est.efficiency - 0.91) < 0.03
    assert np.all(np.abs(est.values - [0.455, 0.455, 0]) < 0.06)


def test_same_seed_same_estimate():
    s = scm.interaction_scm(0.3, seed=0)
    a = shapley_permutation(scm.RolloutValue(s, 5, np.random.default_rng(9)), 3, 10, seed=4)
    b = shapley_permutation(scm.RolloutValue(s, 5, np.random.default_rng(9)), 3, 10, seed=4)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.ci_low, b.ci_low)


def test_contrastive_locus_is_the_pivotal_step():
    pivotal = scm.pivotal_scm(p_bad=0.3, seed=0)
    result = scm.contrastive_effects(pivotal, k_samples=80, seed=0)
    assert result.locus == 1
    effects = result.table["effect"].to_numpy()
    assert effects[0] < -0.5 and effects[1] < -0.5  # run-forward confound at step 0
    assert effects[2] == 0.0 and result.table.loc[2, "effect_hi"] == 0.0
    assert (result.table["p_lo"] <= result.table["p_bad_do"]).all()


def test_locus_rule_takes_the_last_rescuing_step():
    # Planted: the outcome is bad iff step 2 is bad; steps 0 and 1 are idle.
    steps = [scm.PolicyStep(f"s{i}", lambda c, r: "bad" if r.random() < 0.2 else "ok") for i in range(4)]
    run = scm.SCM(steps, outcome=lambda t: float(t[2].action == "bad"))
    run.observe_run(np.random.default_rng(0))
    result = scm.contrastive_effects(run, k_samples=60, seed=3)
    assert result.locus == 2


def test_no_locus_when_nothing_rescues():
    steps = [scm.PolicyStep("only", lambda c, r: "x")]
    run = scm.SCM(steps, outcome=lambda t: 1.0).observe_run(np.random.default_rng(0))
    assert scm.contrastive_effects(run, 20, 0).locus is None


@pytest.fixture
def chain():
    """Three steps; step 1 copies step 0's action unless its context says otherwise."""
    steps = [
        scm.PolicyStep("a", lambda c, r: "bad" if r.random() < 0.5 else "ok", observe=lambda c, a: f"saw {a}"),
        scm.PolicyStep("b", lambda c, r: c[0].action if c else "none"),
        scm.PolicyStep("c", lambda c, r: c[1].observation or c[1].action),
    ]
    run = scm.SCM(steps, outcome=lambda t: float(t[2].action == "bad"))
    return run.observe_run(np.random.default_rng(0))


def test_do_force_action_propagates_downstream(chain):
    trace = chain.rollout(np.random.default_rng(1), scm.do_force_action(1, "ok"))
    assert trace[0] == chain.observed[0]
    assert trace[1].action == "ok" and trace[2].action == "ok"


def test_do_replace_observation_keeps_action(chain):
    trace = chain.rollout(np.random.default_rng(1), scm.do_replace_observation(1, "ok", "bad"))
    assert trace[1].action == "bad" and trace[1].observation == "ok" and trace[2].action == "ok"


def test_do_edit_context_changes_what_the_step_sees(chain):
    edit = lambda ctx: (scm.Record("a", (), "ok", "saw ok"),)  # noqa: E731
    trace = chain.rollout(np.random.default_rng(1), scm.do_edit_context(1, edit))
    assert trace[0].action == "bad"  # the real history is unchanged
    assert trace[1].action == "ok" and trace[1].context[0].action == "ok"


def test_do_swap_policy_from_step_k(chain):
    trace = chain.rollout(np.random.default_rng(1), scm.do_swap_policy(1, lambda c, r: "ok", 3))
    assert [r.action for r in trace] == ["bad", "ok", "ok"]


def test_do_resample_holds_the_prefix(chain):
    rng = np.random.default_rng(2)
    traces = [chain.rollout(rng, scm.do_resample(1)) for _ in range(20)]
    assert all(t[0] == chain.observed[0] for t in traces)
    first = {chain.rollout(rng, scm.do_resample(0))[0].action for _ in range(40)}
    assert first == {"bad", "ok"}


def test_or_failure_exact_values():
    s = scm.or_failure_scm(0.3)
    assert np.allclose(shapley_exact(s.analytic_v, 3), [0.245, 0.245, 0])
    assert s.observed[0].action == s.observed[1].action == "bad"


@pytest.mark.parametrize("seed", [2, 3])  # 10,000 draws missed the 1-in-10,000 failure at these seeds
def test_the_and_run_finds_its_failure_at_the_smallest_q(seed):
    """At q = 0.01 a failing AND run has probability 1e-4; observing one never raises."""
    s = scm.interaction_scm(q=0.01, seed=seed)
    assert s.observed[0].action == s.observed[1].action == "bad"


class ScriptedModel:
    """A stand-in chat provider: answers REFUND for even seeds, records the calls."""

    name, model, context_window = "scripted", "even-seeds", None

    def __init__(self):
        self.seeds = []

    def chat(self, messages, *, temperature, seed, max_tokens, json_schema=None):
        from rcakit.llm import Reply

        self.seeds.append(seed)
        return Reply("REFUND" if seed % 2 == 0 else "DENY", 10, 1)


def test_policy_from_llm_draws_seeds_from_the_rollout_generator():
    model = ScriptedModel()
    run = scm.llm_refund_scm(model, seed=0)
    assert run.observed[1].action == "refund" and model.seeds[-1] % 2 == 0
    first = run.sample_bad(np.random.default_rng(5), scm.do_resample(1), 40)
    seeds_first = list(model.seeds[-40:])
    again = run.sample_bad(np.random.default_rng(5), scm.do_resample(1), 40)
    assert np.array_equal(first, again) and model.seeds[-40:] == seeds_first  # replayable
    assert first.mean() == np.mean([s % 2 == 0 for s in seeds_first])  # outcome follows the model
    assert 0.2 < first.mean() < 0.8  # and the policy is genuinely stochastic
    calls = len(model.seeds)
    held = run.sample_bad(np.random.default_rng(5), scm.do_hold({0, 1}), 10)
    assert held.all() and len(model.seeds) == calls  # a held step asks no model


def test_llm_refund_scm_without_a_failure_keeps_no_observed_run():
    class AlwaysDeny(ScriptedModel):
        def chat(self, messages, **kw):
            from rcakit.llm import Reply

            return Reply("DENY", 10, 1)

    assert scm.llm_refund_scm(AlwaysDeny(), seed=0).observed == ()


# --- Shapley values of an SCM's failure by replay (rcakit.scm.shapley_sweeps) ---


def test_scm_shapley_spends_the_rollout_budget_in_whole_permutations():
    s = scm.interaction_scm(0.3, seed=0)
    seeds = {"value_seed": 0, "order_seed": 0}
    est = scm.scm_shapley(s, n_permutations=100, samples_per_eval=12, rollout_budget=1000, **seeds)  # 96 per pair
    assert est.permutations == 10 and est.truncated and est.evaluations * 12 == 960
    assert scm.scm_shapley(s, n_permutations=3, samples_per_eval=12, rollout_budget=0, **seeds).permutations == 3


def test_shapley_reruns_are_independent_and_reproducible():
    s = scm.interaction_scm(0.3, seed=0)
    small = {"n_permutations": 10, "samples_per_eval": 6, "rollout_budget": 0}
    a = scm.shapley_reruns(s, 3, **small, seed=4)
    assert list(a.columns) == ["rerun", "player", "interval", "phi", "ci_low", "ci_high"] and len(a) == 9
    assert a.equals(scm.shapley_reruns(s, 3, **small, seed=4))
    phi0 = a[a["player"] == 0]["phi"].to_numpy()
    assert len(set(phi0)) == 3  # each rerun draws afresh
    assert (a["ci_low"] <= a["phi"]).all() and (a["phi"] <= a["ci_high"]).all()


def test_shapley_reruns_score_every_interval_on_the_same_draws():
    s = scm.interaction_scm(0.3, seed=0)
    small = {"n_permutations": 6, "samples_per_eval": 6, "rollout_budget": 0, "seed": 2}
    both = scm.shapley_reruns(s, 4, **small, intervals=("normal", "student"))
    car, t = (both[both["interval"] == m].reset_index(drop=True) for m in ("normal", "student"))
    assert car["phi"].equals(t["phi"])  # one estimate, two intervals
    assert (t["ci_low"] < car["ci_low"]).all() and (car["ci_high"] < t["ci_high"]).all()
    assert car.drop(columns="interval").equals(scm.shapley_reruns(s, 4, **small).drop(columns="interval"))


def test_shapley_convergence_reports_both_samplings_at_equal_rollouts():
    s = scm.interaction_scm(0.3, seed=0)
    table = scm.shapley_convergence(s, scm.permutation_budgets(s, 12, [1, 10]), seeds=2, samples_per_eval=12, seed=0)
    assert len(table) == 2 * 2 * 2
    spent = table.groupby(["rollouts", "sampling"]).size()
    assert set(spent.index.get_level_values(0)) == {96, 960}
    big = table[table["rollouts"] == 960]
    assert (big["efficiency error"] < 0.15).all() and (table["max per-player error"] >= 0).all()


def test_interval_coverage_counts_intervals_that_hold_each_target():
    reruns = pd.DataFrame(
        {
            "rerun": [0, 0, 1, 1, 2, 2],
            "player": [0, 1] * 3,
            "interval": "normal",
            "phi": [0.5] * 6,
            "ci_low": [0.40, 0.0, 0.45, 0.0, 0.30, 0.2],
            "ci_high": [0.50, 0.1, 0.60, 0.1, 0.42, 0.3],
        }
    )
    targets = {"paper": [0.44, 0.0], "analytic": [0.455, 0.25]}
    table = scm.interval_coverage(reruns, targets).set_index(["step", "target"])
    assert table.loc[(0, "paper"), "coverage"] == pytest.approx(1 / 3)  # only [0.40, 0.50] holds 0.44
    assert table.loc[(0, "analytic"), "coverage"] == pytest.approx(2 / 3)
    assert table.loc[(1, "paper"), "coverage"] == pytest.approx(2 / 3)
    assert table.loc[(1, "analytic"), "coverage"] == pytest.approx(1 / 3)
    assert (table["Wilson low"] <= table["coverage"]).all() and (table["reruns"] == 3).all()
    assert table.loc[(0, "paper"), "mean width"] == pytest.approx((0.10 + 0.15 + 0.12) / 3)


def test_cached_values_are_drawn_once_per_coalition():
    s = scm.interaction_scm(0.3, seed=0)
    small = {"n_permutations": 10, "samples_per_eval": 12, "rollout_budget": 0, "value_seed": 1, "order_seed": 2}
    est = scm.scm_shapley(s, **small, cache_values=True)
    assert all(rollouts == 12 for _, rollouts in est.tallies.values()) and len(est.tallies) <= 8
    fresh = scm.scm_shapley(s, **small)
    assert sum(r for _, r in fresh.tallies.values()) == fresh.spent == 10 * 2 * 4 * 12


def test_scm_shapley_cost_is_counted_in_rollouts():
    s = scm.interaction_scm(0.3, seed=0)
    est = scm.scm_shapley(s, n_permutations=5, samples_per_eval=12, rollout_budget=0, value_seed=1, order_seed=2)
    assert est.cost_per_evaluation == 12 and est.spent == 5 * 2 * 4 * 12 and est.walks == 10


def test_efficiency_from_v_empty_recovers_the_empty_coalitions_count():
    s = scm.interaction_scm(0.3, seed=0)
    est = scm.scm_shapley(s, n_permutations=20, samples_per_eval=6, rollout_budget=0, value_seed=3, order_seed=4)
    check = scm.efficiency_from_v_empty(est)
    assert check["walks"] == 40 and check["empty_rollouts"] == 240 == est.tallies[frozenset()][1]
    # the sum is exactly 1 - (bad among the empty coalitions' rollouts) / their number
    assert est.efficiency == pytest.approx(1 - check["empty_bad"] / 240, abs=1e-12)
    assert check["v_full"] == 1.0 and check["efficiency_gap"] < 1e-12
    lo, hi = check["efficiency_ci"]
    assert lo < est.efficiency < hi
    assert (lo, hi) == pytest.approx(tuple(1 - x for x in stats.wilson_ci(check["empty_bad"], 240)[::-1]))


def test_forcing_the_pivotal_step_rescues_the_run_and_forcing_the_lookup_does_not():
    pivotal = scm.pivotal_scm(p_bad=0.3, seed=0)
    rng = np.random.default_rng(1)
    assert scm.do_force_action(1, "no_refund").hold == {0}
    assert not pivotal.sample_bad(rng, scm.do_force_action(1, "no_refund"), 50).any()
    other_lookup = "order_found" if pivotal.observed[0].action != "order_found" else "order_found_partial"
    bad = pivotal.sample_bad(rng, scm.do_force_action(0, other_lookup), 400)
    lo, hi = stats.wilson_ci(int(bad.sum()), 400)
    assert lo < 0.3 < hi  # the refund is re-decided: P(bad) falls back to p_bad, not to 0


def test_policy_constructors_draw_from_the_rollout_generator():
    rng = np.random.default_rng(0)
    draws = [scm.bernoulli_policy(0.25, "y", "n")((), rng) for _ in range(4000)]
    assert abs(draws.count("y") / 4000 - 0.25) < 0.03
    assert {scm.uniform_policy(["a", "b", "c"])((), rng) for _ in range(100)} == {"a", "b", "c"}


def test_refund_prompt_carries_the_injection_and_the_lookup():
    messages = scm.refund_messages((scm.Record("lookup", (), "order_found", "delivered late"),))
    assert messages[0]["content"] == scm.REFUND_SYSTEM and "REFUND or DENY" in scm.REFUND_SYSTEM
    assert "SYSTEM OVERRIDE" in messages[1]["content"] and messages[1]["content"].endswith("delivered late")
    assert scm.parse_refund(" refund.") == "refund" and scm.parse_refund("DENY") == "no_refund"


# --- the paired bootstrap of the contrastive effect (rcakit.stats) -----------


def test_bootstrap_difference_ci_brackets_the_difference_and_takes_the_level():
    rng = np.random.default_rng(0)
    a, b = rng.random(200) < 0.7, rng.random(150) < 0.2
    diff, lo, hi = stats.bootstrap_difference_ci(a, b, 2000, seed=1)
    assert diff == pytest.approx(a.mean() - b.mean()) and lo < diff < hi
    _, lo90, hi90 = stats.bootstrap_difference_ci(a, b, 2000, seed=1, level=0.9)
    assert lo < lo90 < hi90 < hi  # a lower level gives a narrower interval from the same draws
    se = np.sqrt(a.var() / len(a) + b.var() / len(b))
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.1)  # about the normal-theory width


def test_bootstrap_difference_ci_is_seeded_and_continues_a_generator():
    a, b = np.array([1, 1, 0, 1]), np.array([0, 0, 1])
    assert stats.bootstrap_difference_ci(a, b, 500, seed=3) == stats.bootstrap_difference_ci(a, b, 500, seed=3)
    shared = np.random.default_rng(3)
    first = stats.bootstrap_difference_ci(a, b, 500, seed=shared)
    assert first == stats.bootstrap_difference_ci(a, b, 500, seed=3)
    assert stats.bootstrap_difference_ci(a, b, 500, seed=shared) != first  # the stream moved on


def test_bootstrap_difference_ci_of_constant_arms_is_a_point():
    assert stats.bootstrap_difference_ci([1, 1, 1], [0, 0], 100) == (1.0, 1.0, 1.0)
    assert all(np.isnan(stats.bootstrap_difference_ci([], [1.0], 100)))


def test_the_bootstraps_share_one_resampling_step():
    data = np.arange(10.0)
    rows = stats.resample(data, 7, np.random.default_rng(4))
    assert rows.shape == (7, 10) and set(rows.ravel()) <= set(data)
    point, lo, hi = stats.bootstrap_ci(data, n_boot=7, seed=4)
    assert (lo, hi) == stats.percentile_interval(rows.mean(axis=1))
    assert stats.percentile_interval(np.arange(101.0), 0.9) == (5.0, 95.0)


# --- contrastive effects in closed form, and the rollout draws ---------------


def test_analytic_contrastive_effects_re_roll_the_later_bad_step():
    from rcakit.scm.contrastive import analytic_effects

    assert analytic_effects(scm.interaction_scm(0.3)) == pytest.approx([-(1 - 0.3**2), -(1 - 0.3), 0.0])
    assert analytic_effects(scm.or_failure_scm(0.3)) == pytest.approx([-(0.7**2), 0.0, 0.0])  # v(empty set) = 1 - 0.7^2
    with pytest.raises(ValueError, match="closed-form"):
        analytic_effects(scm.pivotal_scm())


def test_scm_draw_counts_bad_replays_and_holding_every_step_always_fails():
    s = scm.interaction_scm(0.3, seed=0)
    draw = scm.scm_draw(s, np.random.default_rng(0))
    full, empty = (1 << s.n_steps) - 1, 0
    bad = draw(np.array([full, empty, full]), 50)
    assert list(bad[[0, 2]]) == [50, 50]  # v(N) = 1: the failing run replays
    assert 0 < bad[1] < 50  # v(empty) = q^2 = 0.09


def test_common_random_numbers_make_an_idle_step_change_nothing_in_any_rollout():
    """Holding the idle report step changes no rollout of a row with common random numbers; with fresh
    rollouts the two coalitions' counts differ by noise."""
    model = scm.interaction_scm()
    masks = np.tile([0b000, 0b100, 0b001, 0b101], (50, 1))
    paired = scm.scm_paired_draw(model, np.random.default_rng(3))(masks, 4)
    assert (paired[:, 0] == paired[:, 1]).all() and (paired[:, 2] == paired[:, 3]).all()
    assert (paired[:, 2] >= paired[:, 0]).all()  # holding the bad plan can only add failures, rollout by rollout
    fresh = scm.scm_draw(model, np.random.default_rng(3))(masks.ravel(), 4).reshape(masks.shape)
    assert (fresh[:, 0] != fresh[:, 1]).any()


def test_paired_rollouts_estimate_the_interaction_values_within_their_interval():
    model = scm.interaction_scm()
    exact = np.array([(1 - 0.3**2) / 2, (1 - 0.3**2) / 2, 0.0])
    est = rcakit.shapley.shapley_paired(scm.scm_paired_draw(model, np.random.default_rng(0)), 3, 5000)
    assert ((est.ci_low <= exact) & (exact <= est.ci_high)).all()
    assert est.values[2] == 0.0  # the idle step: exactly 0 in every rollout, not 0 on average


def test_full_replay_proves_v_of_n_from_the_recorded_run_and_the_binomial_floor_falls_with_more_cells():
    model = scm.interaction_scm(0.3, seed=0)
    proof = scm.full_replay(model)
    assert proof.value == 1.0 and "draws nothing" in proof.source
    assert scm.binomial_floor(200, 1) == pytest.approx(0.925)  # binom.ppf(0.05, 200, 0.95) = 185 of 200
    assert scm.binomial_floor(40, 120) < scm.binomial_floor(40, 10) < scm.binomial_floor(40, 1) <= 0.95


def _study_rows(estimator, budget, covered, errors):
    """Rows of a rollout study for one estimator and budget: ``covered`` and ``errors`` per run and player."""
    return [
        {
            "estimator": estimator,
            "budget": budget,
            "seed": s,
            **{f"covered {i}": bool(c) for i, c in enumerate(run)},
            "covered phi_0": bool(run[0]),
            **{f"error {i}": float(e) for i, e in enumerate(err)},
        }
        for s, (run, err) in enumerate(zip(covered, errors, strict=True))
    ]


def test_per_player_coverage_is_each_players_lowest_cell_from_960_and_the_worst_is_their_minimum():
    """Player 1 misses twice at 960 and once at 1920 (lowest cell 0.5), player 0 once at 1920; the misses at
    480 are below the budgets counted. The mean over players (0.875 at 960) would hide player 1."""
    zeros = np.zeros((4, 2))
    rows = _study_rows("x", 480, [[0, 0]] * 4, zeros)
    rows += _study_rows("x", 960, [[1, 0], [1, 0], [1, 1], [1, 1]], zeros)
    rows += _study_rows("x", 1920, [[0, 1], [1, 0], [1, 1], [1, 1]], zeros)
    study = pd.DataFrame(rows)
    cover = scm.player_coverage(study)
    assert cover.loc["x"].tolist() == [0.75, 0.5] and list(cover.columns) == [0, 1]
    worst = scm.worst_player_coverage(study)
    assert worst.loc["x", "worst"] == 0.5 and worst.loc["x", "cells"] == 4 and worst.loc["x", "seeds"] == 4


def test_player_bias_averages_the_budgets_mean_errors_with_their_pooled_standard_error():
    errors_960 = np.array([[0.1, 0.0], [0.3, 0.0], [0.2, 0.01], [0.2, -0.01]])
    errors_1920 = np.array([[0.0, 0.02], [0.2, -0.02], [0.1, 0.0], [0.1, 0.0]])
    rows = _study_rows("x", 480, np.ones((4, 2)), np.full((4, 2), 9.0))  # below 960: not counted
    rows += _study_rows("x", 960, np.ones((4, 2)), errors_960) + _study_rows("x", 1920, np.ones((4, 2)), errors_1920)
    bias = scm.player_bias(pd.DataFrame(rows)).set_index("player")
    se = np.sqrt(errors_960.var(axis=0, ddof=1) / 4 + errors_1920.var(axis=0, ddof=1) / 4) / 2
    t = scipy_stats.t.ppf(0.975, 6)  # 3 + 3 degrees of freedom from two budgets of 4 runs
    np.testing.assert_allclose(bias["mean error"], [0.15, 0.0], atol=1e-12)
    np.testing.assert_allclose(bias["high"] - bias["mean error"], t * se)
    assert bias.loc[0, "low"] > 0 and bias.loc[1, "low"] < 0 < bias.loc[1, "high"]


def flaky_interaction_draws(flaky=0.8):
    """The interaction SCM's closed form times a replay that fails only ``flaky`` of the time: v(N) = 0.8.
    Fresh draws, and paired ones whose rows share the replay's and the background's uniforms."""
    model = scm.interaction_scm()
    v = np.array([flaky * model.analytic_v(rcakit.shapley.coalition_of(m, 3)) for m in range(8)])

    def paired_for(rng):
        def draw(masks, k):
            u = rng.random((masks.shape[0], 1, k, 2))
            base = v[masks][..., None] / flaky  # P(bad | the replay fails), a threshold on a shared uniform
            return ((u[..., 0] < flaky) & (u[..., 1] < base)).sum(axis=-1)

        return draw

    return v, (lambda rng: lambda m, k: rng.binomial(k, v[m])), paired_for


def test_an_assumed_v_of_n_shows_as_a_bias_on_every_player_and_rolling_it_out_shows_none():
    """With v(N) = 0.8 an assumed 1 moves every player by 0.2 / 3, the idle step included, and the bias
    columns see it for each estimator that takes the proof; rolled out, no player's interval excludes 0."""
    v, draw_for, paired_for = flaky_interaction_draws()
    exact = rcakit.shapley.shapley_of_table(v)
    assumed = rcakit.shapley.KnownFull(1.0, "assumed")

    def bias(full):
        study = scm.rollout_study(draw_for, exact, [960], seeds=40, seed=0, paired_for=paired_for, full=full)
        found = scm.player_bias(study)
        return found[found["estimator"].isin(["pooled", "paired", "leverage", "default"])]

    old, new = bias(assumed), bias(None)
    assert ((old["low"] > 0).all()) and np.allclose(old["mean error"], 0.2 / 3, atol=0.015)
    assert ((new["low"] <= 0) & (0 <= new["high"])).mean() >= 0.8  # 12 intervals at 95 %: chance misses
    assert (new["mean error"].abs() < 0.01).all()
