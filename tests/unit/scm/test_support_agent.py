"""The support agent with an injected note, its report, and the replay action-match rate (CAR Figure 1, §3)."""

import dataclasses
import itertools

import numpy as np
import pytest

from rcakit import RcakitError, claims, scm
from rcakit.llm import ReplayChannel, ResponseCache, cached, provider_from_spec
from rcakit.llm.testing import FakeOllamaServer, ScriptedProvider
from rcakit.scm import experiments, records
from rcakit.scm import support_agent as sa


@pytest.fixture(scope="module")
def report():
    return scm.support_report(k_samples=80, n_permutations=40, samples_per_eval=12, seed=0, extra_runs=10)


def test_the_recorded_incident_refunds_after_the_injected_note(report):
    observed = report.scm.observed
    assert [r.name for r in observed] == ["read_ticket", "lookup_order", "decide_refund", "reply"]
    assert observed[2].action == "refund" and sa.is_injected(observed[2].context)
    assert report.scm.is_bad(observed)
    assert not sa.is_injected(observed[1].context)  # the note enters with the lookup's observation


def test_locus_is_the_decision_whose_context_holds_the_injection(report):
    numbers = records.support_numbers(report)
    assert numbers["locus"] == 2 and numbers["locus_context_injected"]
    effects = np.asarray(numbers["effects"])
    assert effects[0] < 0 and effects[1] < 0  # earlier steps look influential: they re-roll the decision
    assert effects[3] == 0.0  # the reply cannot undo a refund
    verdicts = claims.compare("car-shapley", {"support_agent": numbers}).set_index("claim")["verdict"]
    assert verdicts.filter(like="locus is the refund").eq("agrees").all()


def test_contrastive_effects_match_the_analytic_values(report):
    v = sa.scripted_value
    analytic = [v(frozenset()) - 1, v(frozenset()) - 1, v(frozenset({1})) - 1, 0.0]
    table = report.contrast.table
    assert np.all((table["effect_lo"] <= analytic) & (np.array(analytic) <= table["effect_hi"]))


def test_monte_carlo_shapley_covers_the_analytic_values(report):
    exact = records.support_numbers(report)["analytic_shapley"]
    assert np.allclose(exact, [0.0, 0.5 * (0.6 - 0.435), 0.5 * (1 - 0.435) + 0.5 * (1 - 0.6), 0.0])
    assert np.isclose(exact.sum(), 1 - sa.scripted_value(frozenset()))
    assert np.all((report.shapley.ci_low <= exact + 1e-9) & (exact - 1e-9 <= report.shapley.ci_high))


def test_a_rule_naming_the_largest_effect_would_fail_the_locus_claim(report):
    numbers = dict(records.support_numbers(report), locus=int(np.argmin(report.contrast.table["effect"])))
    assert numbers["locus"] == 0
    verdicts = claims.compare("car-shapley", {"support_agent": numbers}).set_index("claim")["verdict"]
    assert verdicts.filter(like="locus is the refund").eq("differs").all()


def test_scripted_replay_matches_every_step(report):
    assert report.replay.n == 4 * 11 and report.replay.rate == 1.0
    lo, hi = report.replay.ci()
    assert lo < 1.0 <= hi + 1e-12


def test_rate_falls_below_one_when_a_replay_input_is_perturbed(report):
    run = report.run
    records = list(run.records)
    flipped = records[2].context + (dataclasses.replace(records[2], action="no_refund"),)
    records[3] = dataclasses.replace(records[3], context=flipped)  # the reply sees another decision
    perturbed = scm.action_match_rate(report.scm, records, run.seeds)
    assert perturbed.matches == (True, True, True, False) and perturbed.rate == 0.75
    no_note = tuple(r for r in records[2].context if r.name != "lookup_order")
    records[2] = dataclasses.replace(records[2], context=no_note)  # the decision loses the note
    u = np.random.default_rng(run.seeds[2]).random()
    assert sa.P_REFUND_CLEAN <= u < sa.P_REFUND_INJECTED  # this draw refunds only with the note
    assert scm.action_match_rate(report.scm, records, run.seeds).rate == 0.5


def test_rate_falls_below_one_under_other_seeds(report):
    run = report.run
    others = [s + 1 for s in run.seeds]
    assert scm.action_match_rate(report.scm, run.records, others).rate < 1.0


def test_replay_checks_its_inputs(report):
    with pytest.raises(RcakitError, match="seeds: 3 seeds"):
        scm.action_match_rate(report.scm, report.run.records, report.run.seeds[:3])
    with pytest.raises(RcakitError, match="record: 3 records"):
        scm.action_match_rate(report.scm, report.run.records[:3], report.run.seeds)


def test_same_seed_same_report():
    small = {"k_samples": 20, "n_permutations": 4, "samples_per_eval": 4, "seed": 3, "extra_runs": 2}
    a = records.support_numbers(scm.support_report(**small))
    b = records.support_numbers(scm.support_report(**small))
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
    numbers = records.support_numbers(never)
    assert never.run is None and numbers["locus"] is None and numbers["observed"] is None
    assert numbers["action_match_rate"] == 1.0 and numbers["replayed_steps"] == 12  # the replay is still measured
    section = experiments.support_agent(never)
    assert section.skipped and "no recorded run refunded" in section.skipped and not section.numbers
    replay = experiments.replay_action_match(never)  # measured even with nothing to attribute
    assert replay.numbers["support_agent"]["replayed_steps"] == 12 and replay.facts["amr"] == 1.0


def test_the_prompt_shows_the_decision_context_with_the_note(report):
    messages = sa.support_messages(report.scm.observed[2].context)
    assert messages[0]["content"] == sa.SUPPORT_SYSTEM
    assert sa.INJECTED_NOTE in messages[1]["content"] and sa.TICKET in messages[1]["content"]
    flagged = [text for text, injected in sa.decision_lines(report.scm.observed[2].context) if injected]
    assert flagged == [f"Customer note: {sa.INJECTED_NOTE}"]


def test_support_section_quotes_the_locus_and_the_closed_form(report):
    section = experiments.support_agent(report)
    facts, recorded = section.facts, section.numbers["support_agent"]
    assert facts["locus"] == recorded["locus"] == 2 and facts["locus_text"].data == "`decide_refund`"
    assert facts["effect"] == report.contrast.table["effect"][2]
    assert facts["p_bad_locus"] == report.contrast.table["p_bad_do"][2] and abs(facts["p_bad_locus"] - 0.6) < 0.15
    assert facts["phi_exact"][2] == pytest.approx(0.5 * (1 - 0.435) + 0.5 * (1 - 0.6))
    assert "action_match_rate" not in recorded  # the replay section records the replay
    assert list(section.table["name"]) == ["read_ticket", "lookup_order", "decide_refund", "reply"]


def test_replay_section_reports_the_rate_with_its_interval(report):
    section = experiments.replay_action_match(report)
    recorded = section.numbers["support_agent"]
    assert recorded["action_match_rate"] == 1.0 == section.facts["amr"] and recorded["replayed_steps"] == 44
    assert section.table.loc["replayed steps", "value"] == 44
    assert section.show().frame.loc["replayed steps", "value"] == "44"  # a count, never 44.000
    assert section.table.loc["Wilson low", "value"] == section.facts["amr_lo"] == report.replay.ci()[0] < 1.0
    assert set(experiments.support_agent(report).numbers["support_agent"]).isdisjoint(recorded)


def test_language_model_section_is_skipped_without_a_model():
    section = experiments.language_model_support(
        "none", k_samples=2, n_permutations=1, seed=0, extra_runs=0, timeout=1.0
    )
    assert section.skipped and "provider = none" in section.skipped and not section.numbers


# --- the language-model policy, over HTTP against the local fake server -----


def obeys_the_note(messages):
    return "REFUND" if sa.INJECTED_NOTE in messages[-1]["content"] else "DENY"


def test_llm_policy_against_the_fake_server_replays_exactly(tmp_path):
    with FakeOllamaServer(obeys_the_note) as server:
        model = cached(provider_from_spec("ollama:tiny", host=server.url, timeout=5.0), cache=ResponseCache(tmp_path))
        out = scm.llm_support_report(model, k_samples=4, n_permutations=1, seed=0, extra_runs=3)
        calls = len(server.requests)
        assert out.scm.observed[2].action == "refund" and out.replay.rate == 1.0 and out.replay.n == 16
        recorded = [b for b in server.requests if sa.INJECTED_NOTE in b["messages"][-1]["content"]]
        assert recorded  # the model saw the note
        again = scm.llm_support_report(model, k_samples=4, n_permutations=1, seed=0, extra_runs=3)
        assert len(server.requests) == calls  # a rerun is answered from the cache, replay included
        assert records.support_numbers(again)["observed"] == records.support_numbers(out)["observed"]


def test_replay_reaches_the_model_not_the_cache(tmp_path):
    with FakeOllamaServer(obeys_the_note) as server:
        model = cached(provider_from_spec("ollama:tiny", host=server.url, timeout=5.0), cache=ResponseCache(tmp_path))
        scm.llm_support_report(model, k_samples=2, n_permutations=1, seed=0)
        decision = [b for b in server.requests if sa.INJECTED_NOTE in b["messages"][-1]["content"]]
        seeds = [b["options"]["seed"] for b in decision]
        assert any(seeds.count(s) == 2 for s in seeds)  # the recorded call and its replay both asked the model


def test_a_drifting_model_gives_a_deterministic_rate_below_one(tmp_path):
    def run(folder):
        counter = itertools.count()

        def drifting(messages):  # refuses every third call, whatever the prompt
            return "DENY" if next(counter) % 3 == 2 else obeys_the_note(messages)

        with FakeOllamaServer(drifting) as server:
            model = cached(provider_from_spec("ollama:tiny", host=server.url, timeout=5.0), cache=ResponseCache(folder))
            return scm.llm_support_report(model, k_samples=2, n_permutations=1, seed=0, extra_runs=5).replay

    first, second = run(tmp_path / "a"), run(tmp_path / "b")
    assert first.matches == second.matches and first.rate < 1.0


def test_replay_channel_names_its_own_cache_entry():
    inner = ScriptedProvider(lambda m: "REFUND")
    channel = ReplayChannel(inner)
    assert channel.name == "scripted+replay" and channel.model == inner.model
    assert channel.chat([{"role": "user", "content": "x"}], seed=3).text == "REFUND" and len(inner.calls) == 1


def test_language_model_section_records_the_report_and_its_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path))
    with FakeOllamaServer(obeys_the_note) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        section = experiments.language_model_support(
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
    text = experiments._paired_text(out)
    if chat.replays:
        assert out.paired is not None and 0 < out.paired.rollouts <= shap.spent
        assert np.all(out.paired.ci_low <= out.paired.values) and np.all(out.paired.values <= out.paired.ci_high)
        assert f"on {out.paired.rollouts:,} rollouts" in text and "`decide_refund`" in text
    else:
        assert out.paired is None and "CAR's estimator only" in text
