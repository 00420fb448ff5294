"""The car-shapley chapter (``rcakit.chapters.car_shapley``): its sections, what they record, its figures, and its
claims failing when the code under them breaks (CAR §2-5, Figure 1)."""

import numpy as np
import pandas as pd
import pytest

import rcakit.shapley
from rcakit import claims, scm
from rcakit.chapters import car_shapley as chapter
from rcakit.llm import ResponseCache, cached
from rcakit.scm import examples
from rcakit.scm import support_agent as sa
from rcakit.shapley import shapley_exact
from support.llm_servers import FakeOllamaServer, ScriptedProvider

# --- the chapter's claims fail when the code under them is broken ------------


def car_verdicts(n_permutations=80, samples_per_eval=12, budget=7680, seed=0):
    """The car-shapley claims on the interaction SCM at the paper's setting (q = 0.3)."""
    from rcakit import claims

    s = scm.interaction_scm(0.3, seed=seed)
    est = scm.scm_shapley(
        s,
        n_permutations=n_permutations,
        samples_per_eval=samples_per_eval,
        rollout_budget=budget,
        value_seed=[seed, 1],
        order_seed=seed,
    )
    split, efficiency = chapter.shapley_split_section(s, est), chapter.efficiency_check_section(s, est)
    measured = {"interaction": {**split.numbers["interaction"], **efficiency.numbers["interaction"]}}
    table = claims.compare("car-shapley", measured, {"q": 0.3})
    return table.set_index("claim")["verdict"], table


def claim_named(start):
    from rcakit import claims

    names = [c["claim"] for c in claims.chapter_claims("car-shapley")["claims"] if c["claim"].startswith(start)]
    assert len(names) == 1, names
    return names[0]


EFFICIENCY = claim_named("Efficiency sum: the Wilson interval")
TELESCOPES = claim_named("Efficiency sum $= 1 - ")
PHI = [claim_named(f"Shapley $\\phi_{i}$") for i in range(3)]


def test_correct_estimator_agrees_with_every_shapley_claim():
    verdicts, table = car_verdicts()
    assert verdicts[EFFICIENCY] == "agrees" and verdicts[TELESCOPES] == "holds"
    assert all(verdicts[name] == "agrees" for name in PHI)
    assert table.set_index("claim")["asserted"][TELESCOPES]


def test_only_exact_claims_are_asserted():
    """No Monte-Carlo check can stop the chapter: the asserted claims are the exact identities."""
    from rcakit import claims

    asserted = {
        c["claim"] for c in claims.chapter_claims("car-shapley")["claims"] if claims.is_exact(c) and c.get("holds")
    }
    assert asserted == {
        TELESCOPES,
        claim_named("Resampling after the point of commitment"),
        claim_named("Support agent: replay action-match rate of the scripted"),
        claim_named("Support agent: replay action-match rate of a seeded"),
        claim_named("$v(N) = 1$ is proven by the SCM's replay"),
    }


def test_the_coverage_claims_of_rcakits_estimators_read_the_worst_player_against_the_nominal_level_in_their_rule():
    """0.95 is the intervals' nominal level, not a published number: paper null, the level in the rule."""
    from rcakit import claims

    for name in ("pooled", "paired"):
        (claim,) = [
            c
            for c in claims.chapter_claims("car-shapley")["claims"]
            if c["measured"].endswith(f"{name}_worst_coverage_ci.1")
        ]
        assert claim["paper"] is None and claim["expect"] == ">= 0.95"


def test_the_rollouts_section_records_each_players_coverage_and_the_worst_one():
    section = _rollouts_section(scm.interaction_scm(0.3, seed=0))
    found = section.numbers["interaction"]["by_rollouts"]
    each = found["coverage_by_player"]["paired"]["192"]
    assert len(each) == 3 and found["coverage"]["paired"]["192"] == min(each)  # the table's coverage: the worst
    assert found["paired_worst_coverage"] == min(each) and found["v_full"] is None  # this study rolled v(N) out
    proven = chapter.rollouts_section(
        _study(scm.interaction_scm(0.3, seed=0)), 192, scm.full_replay(scm.interaction_scm(0.3, seed=0))
    )
    assert proven.numbers["interaction"]["by_rollouts"]["v_full"] == 1.0


def test_efficiency_identity_fails_when_the_reverse_walk_does_not_telescope(monkeypatch):
    from rcakit import claims

    def stale_reverse_walk(value_fn, order):
        """Bug: every marginal is taken against v(empty set), not the previous coalition."""
        marginals, coalition, empty = np.empty(len(order)), frozenset(), value_fn(frozenset())
        for player in order[::-1]:
            coalition = coalition | {int(player)}
            marginals[player] = value_fn(coalition) - empty
        return marginals

    monkeypatch.setattr(rcakit.shapley, "_reverse_walk", stale_reverse_walk)
    verdicts, table = car_verdicts()
    assert verdicts[TELESCOPES] == "fails"
    with pytest.raises(AssertionError, match=r"Efficiency sum \$= 1 - "):
        claims.assert_holds(table)


def test_efficiency_identity_fails_when_a_held_step_is_re_decided(monkeypatch):
    # Bug: holding a coalition forgets step 1, so holding every step no longer replays the failure.
    from rcakit.scm import causal_model, shapley_sweeps

    monkeypatch.setattr(shapley_sweeps, "do_hold", lambda steps: causal_model.Do(hold=frozenset(steps) - {1}))
    verdicts, _ = car_verdicts()
    s = scm.interaction_scm(0.3, seed=0)
    assert (
        scm.efficiency_from_v_empty(
            scm.scm_shapley(s, n_permutations=10, samples_per_eval=12, rollout_budget=0, value_seed=0, order_seed=0)
        )["v_full"]
        < 1
    )
    assert verdicts[TELESCOPES] == "fails"


def test_efficiency_check_fails_when_the_simulator_draws_the_wrong_probability(monkeypatch):
    # Bug: a step goes bad with probability 1 - q, so v(empty set) = 0.49, not q^2 = 0.09. The sum still
    # telescopes exactly; the Monte-Carlo check against 1 - q^2 catches it.
    def inverted(p, yes, no):
        return lambda context, rng: yes if rng.random() >= p else no

    monkeypatch.setattr(examples, "bernoulli_policy", inverted)
    verdicts, _ = car_verdicts()
    assert verdicts[EFFICIENCY] == "differs" and verdicts[TELESCOPES] == "holds"


def test_misattributing_reverse_walk_passes_the_identity_but_fails_the_split(monkeypatch):
    # Bug: the reverse walk's marginals are flipped as if indexed by position, so player i
    # is credited with player n-1-i's marginal. The sum still telescopes; the split does not.
    monkeypatch.setattr(
        rcakit.shapley, "_reverse_walk", lambda value_fn, order: rcakit.shapley._walk(value_fn, order[::-1])[::-1]
    )
    verdicts, _ = car_verdicts()
    assert verdicts[EFFICIENCY] == "agrees" and verdicts[TELESCOPES] == "holds"
    assert verdicts[PHI[0]] == "differs" and verdicts[PHI[2]] == "differs"


# --- the chapter's sections and figures ----------------------------------------


def test_coverage_study_finds_the_normal_quantile_short_with_few_permutations():
    """Planted: with 3 permutations the z quantile ignores the error of the estimated spread."""
    s = scm.interaction_scm(0.3, seed=0)
    study = scm.coverage_study({"few": (s, 3, 4, 0)}, 200, seed=1)
    cov = study.set_index(["variant", "step"])["coverage"]
    assert list(dict.fromkeys(study["variant"])) == list(scm.COVERAGE_VARIANTS)
    for step in range(3):
        assert cov["student", step] >= cov["car", step]  # same centre, larger quantile, same draws
    assert cov["car"].mean() < 0.9 < cov["student"].mean()
    assert cov["cached"].mean() < 0.7  # without the noise of v(S) in the spread the interval is far too short
    facts = chapter._coverage_summary(study)["few"]
    assert facts["t_quantile"] == pytest.approx(4.303, abs=1e-3) and facts["reruns"] == 200
    assert facts["walks"][0]["width"] > 1.5 * facts["car"][0]["width"]  # the pairs cancel the ordering noise


def test_coverage_reading_names_where_the_nominal_level_lies():
    assert chapter._coverage_reading(0.80, 0.90) == "below the nominal level"
    assert chapter._coverage_reading(0.93, 0.97) == "consistent with the nominal level"
    assert chapter._coverage_reading(0.96, 0.99) == "above the nominal level"


def test_coverage_figure_draws_one_panel_per_setting_with_the_nominal_line():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = scm.interaction_scm(0.3, seed=0)
    study = scm.coverage_study({"a": (s, 3, 2, 0), "b": (s, 2, 2, 0)}, 5, seed=0, variants=["car", "student"])
    fig = chapter.interval_coverage_figure(study)
    assert len(fig.axes) == 2 and [ax.get_title().split(" ")[0] for ax in fig.axes] == ["3", "2"]
    assert all(any(line.get_ydata()[0] == 0.95 for line in ax.get_lines()) for ax in fig.axes)
    plt.close(fig)


def test_contrastive_locus_section_names_the_locus_and_records_its_effects():
    pivotal = scm.pivotal_scm(p_bad=0.3, seed=0)
    contrast = scm.contrastive_effects(pivotal, k_samples=80, seed=0)
    section = chapter.contrastive_locus_section(pivotal, contrast)
    assert section.numbers["pivotal"]["locus"] == 1 and section.facts["locus_text"].data == "step 1, `issue_refund`"
    assert list(section.table.index) == pivotal.step_names and section.table.index.name == "step"
    assert list(section.table.columns) == list(chapter.EFFECT_LABELS.values())  # headed in words, no snake_case
    assert section.facts["effect"][2] == 0.0 == section.numbers["pivotal"]["effects"][2]
    assert np.array_equal(section.numbers["pivotal"]["effect_ci"], contrast.table[["effect_lo", "effect_hi"]])
    nowhere = chapter.contrastive_locus_section(pivotal, scm.Contrastive(contrast.table, None))
    assert nowhere.numbers["pivotal"]["locus"] is None and nowhere.facts["locus_text"].data == "no step"


def test_shapley_split_section_records_the_estimate_with_its_interval_method():
    s = scm.interaction_scm(0.3, seed=0)
    est = scm.scm_shapley(
        s, n_permutations=6, samples_per_eval=4, rollout_budget=0, value_seed=1, order_seed=2, interval="student"
    )
    section = chapter.shapley_split_section(s, est)
    recorded = section.numbers["interaction"]
    assert (
        recorded["phi_interval"] == "student" and recorded["rollouts"] == est.spent == section.facts["shapley_rollouts"]
    )
    assert np.array_equal(recorded["phi_ci"], np.column_stack([est.ci_low, est.ci_high]))
    assert section.table[r"\(\phi_i\), closed form"].tolist() == pytest.approx([0.455, 0.455, 0.0])
    assert list(section.table.index) == s.step_names
    assert section.facts["analytic_phi"] == pytest.approx(0.455) and section.facts["phi"][1] == est.values[1]


def test_efficiency_check_section_reads_the_closed_form_and_the_tallies():
    s = scm.interaction_scm(0.5, seed=0)
    est = scm.scm_shapley(s, n_permutations=20, samples_per_eval=6, rollout_budget=0, value_seed=3, order_seed=4)
    section = chapter.efficiency_check_section(s, est)
    assert section.facts["q2"] == 0.25 and section.facts["analytic_efficiency"] == 0.75
    assert section.numbers["interaction"]["analytic_efficiency"] == 0.75
    assert section.numbers["interaction"]["efficiency_gap"] < 1e-12 and section.facts["empty_rollouts"] == 240
    assert section.table.loc["efficiency sum", "value"] == est.efficiency and section.decimals == 4
    assert section.table.loc["walks", "value"] == 40 and "40" in str(section.show())  # a count prints whole


def test_over_count_section_sums_the_absolute_effects_against_their_closed_form():
    s = scm.interaction_scm(0.3, seed=0)
    section = chapter.contrastive_over_count_section(s, k_samples=200, seed=1)
    total = section.numbers["interaction"]["contrastive_abs_sum"]
    effects = section.table[chapter.EFFECT_LABELS["effect"]]
    assert total == section.facts["contrastive_abs_sum"] == pytest.approx(effects.abs().sum())
    assert section.facts["contrastive_abs_sum_analytic"] == pytest.approx(0.91 + 0.7)
    assert abs(total - 1.61) < 0.15 and list(section.table.index) == s.step_names


def test_or_failure_section_gives_each_bad_step_half_of_what_is_left():
    table = chapter.or_failure_split_section(q=0.3, seed=0).table
    assert table[r"\(\phi_i\), exact"].tolist() == pytest.approx([0.245, 0.245, 0.0])


def test_convergence_section_averages_over_seeds_per_sampling_and_budget():
    runs = pd.DataFrame(
        {
            "rollouts": [96, 96, 96, 96],
            "sampling": ["antithetic", "antithetic", "plain", "plain"],
            "efficiency error": [0.1, 0.3, 0.2, 0.4],
            "max per-player error": [0.0, 0.2, 0.5, 0.7],
        }
    )
    table = chapter.convergence_section(runs).table
    assert table.loc[96, ("efficiency error", "antithetic")] == pytest.approx(0.2)
    assert table.loc[96, ("max per-player error", "plain")] == pytest.approx(0.6)


def test_coverage_section_records_the_chapter_setting_and_reads_every_step():
    s = scm.interaction_scm(0.3, seed=0)
    study = scm.coverage_study({"chapter": (s, 3, 2, 0), "few": (s, 2, 2, 0)}, 6, seed=0, variants=["car", "student"])
    section = chapter.interval_coverage_section(study)
    row = study.set_index(["setting", "variant", "step"]).loc[("chapter", "car", 0)]
    recorded = section.numbers["interaction"]["coverage"]
    assert recorded["car_phi_0"] == row["coverage"] and recorded["car_phi_0_ci"] == [
        row["Wilson low"],
        row["Wilson high"],
    ]
    reading = section.facts["chapter"]["car"][0]["reading"].data
    assert reading == chapter._coverage_reading(row["Wilson low"], row["Wilson high"])
    assert "reading" not in recorded["study"]["chapter"]["car"][0]  # the words are for the prose, not the results
    assert section.facts["few"]["permutations"] == 2 and section.facts["few"]["t_quantile"] == pytest.approx(
        12.706, 1e-3
    )
    assert section.table.index.names == ["setting", "interval", "step"] and "reruns" not in section.table.columns
    few = chapter.interval_coverage_section(study, setting="few").numbers["interaction"]["coverage"]["car_phi_0"]
    assert few == study.set_index(["setting", "variant", "step"]).loc[("few", "car", 0), "coverage"]


def _rollouts_section(model):
    return chapter.rollouts_section(_study(model), 192)


def _study(model):
    exact = shapley_exact(model.analytic_v, model.n_steps)
    return scm.rollout_study(
        lambda rng: scm.scm_draw(model, rng),
        exact,
        [96, 192],
        seeds=3,
        seed=0,
        car_k=2,
        paired_for=lambda rng: scm.scm_paired_draw(model, rng),
    )


def test_the_rollouts_section_says_why_when_the_budget_holds_no_two_pairs():
    s = scm.interaction_scm(0.3, seed=0)
    exact = shapley_exact(s.analytic_v, s.n_steps)
    study = scm.rollout_study(lambda rng: scm.scm_draw(s, rng), exact, [4, 8], seeds=2, seed=0)
    assert not {"car", "pooled", "paired"} & set(study["estimator"])  # 8 rollouts buy no two pairs of any walks
    section = chapter.rollouts_section(study, 8)
    assert section.numbers == {} and section.skipped is None  # nothing recorded: the claims read "not run"
    assert str(section.facts["reading"].data).startswith("No comparison: 8 rollouts do not buy two")
    cheap = scm.rollout_study(lambda rng: scm.scm_draw(s, rng), exact, [48, 96], seeds=2, seed=0)
    assert set(cheap["estimator"]) == {"pooled", "leverage", "default"}  # 96 rollouts: none of CAR's pairs
    assert chapter.rollouts_section(cheap, 96).numbers == {}  # no CAR to compare with: no ratio of NaN


def test_the_interaction_sections_record_every_key_the_claims_read_once():
    from rcakit import claims

    s = scm.interaction_scm(0.3, seed=0)
    est = scm.scm_shapley(s, n_permutations=4, samples_per_eval=4, rollout_budget=0, value_seed=0, order_seed=0)
    study = scm.coverage_study({"chapter": (s, 3, 2, 0)}, 3, seed=0, variants=["car"])
    parts = [
        chapter.shapley_split_section(s, est),
        chapter.efficiency_check_section(s, est),
        chapter.interval_coverage_section(study),
        chapter.contrastive_over_count_section(s, k_samples=10, seed=0),
        _rollouts_section(s),
    ]
    keys = [key for part in parts for key in part.numbers["interaction"]]
    assert len(keys) == len(set(keys))  # no section records another's key
    read = {
        path.split(".")[1]
        for c in claims.chapter_claims("car-shapley")["claims"]
        for path in (c.get("measured"), c.get("ci"), c.get("expected"))
        if isinstance(path, str) and path.startswith("interaction.")
    }
    assert read <= set(keys)


def test_the_chapter_sections_record_every_key_its_claims_read():
    """Every results key ``data/claims.yaml`` reads for car-shapley comes from one section (no model: no ``llm``)."""
    from rcakit import claims, results, sections

    pivotal, s = scm.pivotal_scm(seed=0), scm.interaction_scm(0.3, seed=0)
    est = scm.scm_shapley(s, n_permutations=4, samples_per_eval=4, rollout_budget=0, value_seed=0, order_seed=0)
    support = scm.support_report(k_samples=10, n_permutations=2, samples_per_eval=2, seed=0, extra_runs=1)
    parts = [
        chapter.contrastive_locus_section(pivotal, scm.contrastive_effects(pivotal, k_samples=10, seed=0)),
        chapter.shapley_split_section(s, est),
        chapter.interval_coverage_section(scm.coverage_study({"chapter": (s, 3, 2, 0)}, 3, seed=0, variants=["car"])),
        chapter.efficiency_check_section(s, est),
        chapter.contrastive_over_count_section(s, k_samples=10, seed=0),
        _rollouts_section(s),
        chapter.support_report_section(support),
        chapter.replay_action_match_section(support),
        chapter.language_model_support_section(
            "none", k_samples=2, n_permutations=1, seed=0, extra_runs=0, timeout=1.0
        ),
    ]
    numbers = results.to_jsonable(sections.collect(*parts))
    for claim in claims.chapter_claims("car-shapley")["claims"]:
        for path in (claim.get("measured"), claim.get("ci"), claim.get("expected")):
            if isinstance(path, str) and not path.startswith(("params.", "support_agent.llm")):
                results.lookup(numbers, path)  # a KeyError names the key no section records
    assert set(numbers) == {"interaction", "pivotal", "support_agent"}


# --- the support agent's sections (CAR Figure 1, §3) -----------------------------


@pytest.fixture(scope="module")
def report():
    return scm.support_report(k_samples=80, n_permutations=40, samples_per_eval=12, seed=0, extra_runs=10)


def obeys_the_note(messages):
    return "REFUND" if sa.INJECTED_NOTE in messages[-1]["content"] else "DENY"


def test_locus_is_the_decision_whose_context_holds_the_injection(report):
    numbers = chapter._support_numbers(report)
    assert numbers["locus"] == 2 and numbers["locus_context_injected"]
    effects = np.asarray(numbers["effects"])
    assert effects[0] < 0 and effects[1] < 0  # earlier steps look influential: they re-roll the decision
    assert effects[3] == 0.0  # the reply cannot undo a refund
    verdicts = claims.compare("car-shapley", {"support_agent": numbers}).set_index("claim")["verdict"]
    assert verdicts.filter(like="locus is the refund").eq("agrees").all()


def test_monte_carlo_shapley_covers_the_analytic_values(report):
    exact = chapter._support_numbers(report)["analytic_shapley"]
    assert np.allclose(exact, [0.0, 0.5 * (0.6 - 0.435), 0.5 * (1 - 0.435) + 0.5 * (1 - 0.6), 0.0])
    assert np.isclose(exact.sum(), 1 - sa.scripted_value(frozenset()))
    assert np.all((report.shapley.ci_low <= exact + 1e-9) & (exact - 1e-9 <= report.shapley.ci_high))


def test_a_rule_naming_the_largest_effect_would_fail_the_locus_claim(report):
    numbers = dict(chapter._support_numbers(report), locus=int(np.argmin(report.contrast.table["effect"])))
    assert numbers["locus"] == 0
    verdicts = claims.compare("car-shapley", {"support_agent": numbers}).set_index("claim")["verdict"]
    assert verdicts.filter(like="locus is the refund").eq("differs").all()


def test_same_seed_same_report():
    small = {"k_samples": 20, "n_permutations": 4, "samples_per_eval": 4, "seed": 3, "extra_runs": 2}
    a = chapter._support_numbers(scm.support_report(**small))
    b = chapter._support_numbers(scm.support_report(**small))
    assert a["observed"] == b["observed"] and np.array_equal(a["effects"], b["effects"])
    assert np.array_equal(a["shapley"], b["shapley"])


def test_an_agent_that_never_refunds_gives_no_attribution():
    never = scm.support_report(
        refund_policy=lambda ctx, rng: "no_refund",
        k_samples=10,
        n_permutations=2,
        samples_per_eval=2,
        seed=0,
        extra_runs=2,
        max_tries=30,
    )
    numbers = chapter._support_numbers(never)
    assert never.run is None and numbers["locus"] is None and numbers["observed"] is None
    assert numbers["action_match_rate"] == 1.0 and numbers["replayed_steps"] == 12  # the replay is still measured
    section = chapter.support_report_section(never)
    assert section.skipped and "no recorded run refunded" in section.skipped and not section.numbers
    replay = chapter.replay_action_match_section(never)  # measured even with nothing to attribute
    assert replay.numbers["support_agent"]["replayed_steps"] == 12 and replay.facts["amr"] == 1.0


def test_support_section_quotes_the_locus_and_the_closed_form(report):
    section = chapter.support_report_section(report)
    facts, recorded = section.facts, section.numbers["support_agent"]
    assert facts["locus"] == recorded["locus"] == 2 and facts["locus_text"].data == "`decide_refund`"
    assert facts["effect"] == report.contrast.table["effect"][2]
    assert facts["p_bad_locus"] == report.contrast.table["p_bad_do"][2] and abs(facts["p_bad_locus"] - 0.6) < 0.15
    assert facts["phi_exact"][2] == pytest.approx(0.5 * (1 - 0.435) + 0.5 * (1 - 0.6))
    assert "action_match_rate" not in recorded  # the replay section records the replay
    assert list(section.table["name"]) == ["read_ticket", "lookup_order", "decide_refund", "reply"]


def test_replay_section_reports_the_rate_with_its_interval(report):
    section = chapter.replay_action_match_section(report)
    recorded = section.numbers["support_agent"]
    assert recorded["action_match_rate"] == 1.0 == section.facts["amr"] and recorded["replayed_steps"] == 44
    assert section.table.loc["replayed steps", "value"] == 44
    assert section.show().frame.loc["replayed steps", "value"] == "44"  # a count, never 44.000
    assert section.table.loc["Wilson low", "value"] == section.facts["amr_lo"] == report.replay.ci()[0] < 1.0
    assert set(chapter.support_report_section(report).numbers["support_agent"]).isdisjoint(recorded)


def test_language_model_section_is_skipped_without_a_model():
    section = chapter.language_model_support_section(
        "none", k_samples=2, n_permutations=1, seed=0, extra_runs=0, timeout=1.0
    )
    assert section.skipped and "provider = none" in section.skipped and not section.numbers


def test_language_model_section_records_the_report_and_its_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path))
    with FakeOllamaServer(obeys_the_note) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        section = chapter.language_model_support_section(
            "ollama:tiny", k_samples=4, n_permutations=1, seed=0, extra_runs=3, timeout=5.0
        )
        calls = len(server.requests)
    recorded = section.numbers["support_agent"]["llm"]
    assert recorded["action_match_rate"] == 1.0 == section.facts["amr"] and recorded["replayed_steps"] == 16
    names = ["read_ticket", "lookup_order", "decide_refund", "reply"]
    locus = recorded["locus"]
    assert recorded["observed"][2] == "refund"  # the model followed the note: an incident to attribute
    assert section.facts["locus_text"].data == ("`none`" if locus is None else f"`{names[locus]}`")
    assert list(section.table["action"]) == recorded["observed"]
    assert set(recorded["cost"]) == {"refund_policy", "replay"} and recorded["cost"]["replay"]["calls"] > 0
    assert section.facts["calls"] == sum(m["calls"] for m in recorded["cost"].values()) >= calls


class _Unseeded(ScriptedProvider):
    replays = False  # as Anthropic's API: the seed is not sent


@pytest.mark.parametrize("provider", [ScriptedProvider, _Unseeded])
def test_a_model_policy_gets_common_random_numbers_only_when_its_backend_takes_the_seed(tmp_path, provider):
    chat = provider(obeys_the_note)
    out = scm.llm_support_report(cached(chat, cache=ResponseCache(tmp_path)), k_samples=4, n_permutations=2, seed=0)
    _, shap = out.attributed()
    text = chapter._paired_text(out)
    if chat.replays:
        assert out.paired is not None and 0 < out.paired.rollouts <= shap.spent
        assert np.all(out.paired.ci_low <= out.paired.values) and np.all(out.paired.values <= out.paired.ci_high)
        assert f"on {out.paired.rollouts:,} rollouts" in text and "`decide_refund`" in text
    else:
        assert out.paired is None and "CAR's estimator only" in text


def test_the_support_report_figure_draws_its_four_panels_from_the_report(report):
    import matplotlib.pyplot as plt

    fig = chapter.support_report_figure(report)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "(a) factual trajectory" and titles[1].endswith("decide_refund")
    assert titles[2:] == ["(c) resampling from each step", "(d) per-step effects"]
    plt.close(fig)


def test_the_convergence_figure_draws_both_errors_per_sampling():
    import matplotlib.pyplot as plt

    runs = pd.DataFrame(
        {
            "rollouts": [96, 96, 192, 192] * 2,
            "sampling": ["antithetic"] * 4 + ["plain"] * 4,
            "efficiency error": np.linspace(0.1, 0.8, 8),
            "max per-player error": np.linspace(0.2, 0.9, 8),
        }
    )
    fig = chapter.convergence_figure(runs, seed=0, log_xticks=[96, 192])
    assert [ax.get_title() for ax in fig.axes] == ["efficiency error", "max per-player error"]
    assert fig.axes[0].get_xscale() == "log"
    plt.close(fig)
