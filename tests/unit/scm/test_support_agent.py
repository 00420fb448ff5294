"""The support agent with an injected note, its report, and the replay action-match rate (CAR Figure 1, §3)."""

import dataclasses
import itertools

import numpy as np
import pytest

from rcakit import RcakitError, scm
from rcakit.llm import ReplayChannel, ResponseCache, cached, provider_from_spec
from rcakit.scm import support_agent as sa
from support.llm_servers import FakeOllamaServer, ScriptedProvider


@pytest.fixture(scope="module")
def report():
    return scm.support_report(k_samples=80, n_permutations=40, samples_per_eval=12, seed=0, extra_runs=10)


def test_the_recorded_incident_refunds_after_the_injected_note(report):
    observed = report.scm.observed
    assert [r.name for r in observed] == ["read_ticket", "lookup_order", "decide_refund", "reply"]
    assert observed[2].action == "refund" and sa.is_injected(observed[2].context)
    assert report.scm.is_bad(observed)
    assert not sa.is_injected(observed[1].context)  # the note enters with the lookup's observation


def test_contrastive_effects_match_the_analytic_values(report):
    v = sa.scripted_value
    analytic = [v(frozenset()) - 1, v(frozenset()) - 1, v(frozenset({1})) - 1, 0.0]
    table = report.contrast.table
    assert np.all((table["effect_lo"] <= analytic) & (np.array(analytic) <= table["effect_hi"]))


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


def test_the_prompt_shows_the_decision_context_with_the_note(report):
    messages = sa.support_messages(report.scm.observed[2].context)
    assert messages[0]["content"] == sa.SUPPORT_SYSTEM
    assert sa.INJECTED_NOTE in messages[1]["content"] and sa.TICKET in messages[1]["content"]
    flagged = [text for text, injected in sa.decision_lines(report.scm.observed[2].context) if injected]
    assert flagged == [f"Customer note: {sa.INJECTED_NOTE}"]


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
        assert [r.action for r in again.scm.observed] == [r.action for r in out.scm.observed]


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
