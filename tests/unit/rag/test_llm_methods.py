"""Tests of rcakit.rag's language-model methods: the LLM judge, the LLM reader, their wiring.

No model is needed: ``ScriptedProvider`` answers in-process and ``FakeOllamaServer``
speaks Ollama's HTTP API through the real client.
"""

import copy
import json
import random
from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest

from rcakit import RcakitError
from rcakit.llm import MethodUsage, ResponseCache, cached, request_seed
from rcakit.llm.prompts import CUT_MARKER, Budget
from rcakit.rag import Agent, AgentSettings, LLMReader, fidelity, metrics
from rcakit.rag import diagnosers as dg
from rcakit.rag import llm_methods as M
from rcakit.rag import protocol as P
from rcakit.rag.interventions import inject
from rcakit.rag.readers import rule_reformulation
from rcakit.rag.relations import RELATIONS
from support.llm_servers import FakeOllamaServer, ScriptedProvider
from support.scripted_reader import oracle

VERDICT = json.dumps({"stage": "retrieval", "hop": 2})


@pytest.fixture(scope="module")
def lab():
    return P.build_lab(3, n_entities=600, n_questions=30, hops=3)


@pytest.fixture()
def failed(lab):
    """A three-hop trace that fails after a false premise at hop 2."""
    for trace in lab.clean.values():
        if P.eligible(trace, 3):
            out = inject(lab.agent, trace, 2, "false_premise", random.Random(0))
            if not out.correct and len(out.hops) >= 3:
                return out
    raise AssertionError("no failing case in the fixture world")


def scripted(respond, tmp_path, model="script"):
    """A ScriptedProvider behind a fresh cache, charging a fresh MethodUsage."""
    raw = ScriptedProvider(respond, model=model)
    return raw, cached(raw, cache=ResponseCache(tmp_path / "cache"), accounting=MethodUsage())


def replies(*texts):
    it = iter(texts)
    return lambda messages: next(it)


# --- the judge -------------------------------------------------------------------------------------


def test_judge_sees_question_every_query_and_document_and_both_answers(failed, tmp_path):
    raw, chat = scripted(lambda m: VERDICT, tmp_path)
    found = dg.LLMJudge(chat, seed=7)(failed, "case-a")
    assert (found.stage, found.hop) == ("retrieval", 2)
    (call,) = raw.calls
    prompt = call["messages"][-1]["content"]
    assert failed.question.text in prompt
    assert f"Final answer: {failed.answer}" in prompt and f"Gold answer: {failed.gold}" in prompt
    for hop in failed.hops:
        assert f"Hop {hop.index}" in prompt
        assert all(f"query: {q}" in prompt for q in hop.queries)
        assert all(d.text in prompt and f"[{d.id}]" in prompt for d in hop.docs)
    assert call["json_schema"]["properties"]["hop"] == {"type": "integer"}  # the authors' judge: any hop
    assert call["messages"][0]["content"] == dg.AUTHORS_JUDGE_SYSTEM and call["max_tokens"] == 256
    assert call["json_schema"]["properties"]["stage"]["enum"] == ["retrieval", "answer_generation", "none"]
    assert "is wrong" not in prompt and "if the agent stopped" not in prompt  # the authors' ask nothing more
    assert call["seed"] == request_seed(7, "case-a") and call["temperature"] == 0.0
    assert found.cost == chat.accounting.input_tokens + chat.accounting.output_tokens > 0
    assert chat.accounting.totals()["cases"] == 1


def test_rcakits_judge_prompt_says_the_answer_is_wrong_offers_hop_n_plus_1_and_cuts_documents(failed, tmp_path):
    hops = list(failed.hops)
    long_doc = replace(hops[0].docs[0], text="word " * 400)
    hops[0] = replace(hops[0], docs=(long_doc,) + hops[0].docs[1:])
    trace = replace(failed, hops=tuple(hops))
    for prompt, whole in (("authors", True), ("rcakit", False)):
        raw, chat = scripted(lambda m: json.dumps({"stage": "retrieval", "hop": 2}), tmp_path / prompt)
        judge = dg.LLMJudge(chat, seed=0, prompt=prompt)
        judge(trace, "k")
        (call,) = raw.calls
        text = call["messages"][-1]["content"]
        assert (long_doc.text in text) == whole and judge.truncated_docs == (0 if whole else 1)
        assert (f"or {len(trace.hops) + 1} if the agent stopped" in text) == (not whole)
        assert call["max_tokens"] == (256 if whole else 32)
    with pytest.raises(RcakitError, match="^judge_prompt: expected one of authors, rcakit"):
        dg.LLMJudge(chat, seed=0, prompt="mine")


def test_the_authors_judge_stages_map_onto_the_scoring_taxonomy(failed, tmp_path):
    for said, scored in (("answer_generation", "answer"), ("none", "none"), ("retrieval", "retrieval")):
        raw, chat = scripted(lambda m, said=said: json.dumps({"stage": said, "hop": 1}), tmp_path / said)
        assert dg.LLMJudge(chat, seed=0)(failed, "k").stage == scored
    raw, chat = scripted(lambda m: json.dumps({"stage": "tool", "hop": 1}), tmp_path / "tool")
    assert dg.LLMJudge(chat, seed=0)(failed, "k").stage == "none" and len(raw.calls) == 2  # not the authors' word


def test_judge_retries_a_malformed_reply_once_then_abstains(failed, tmp_path):
    raw, chat = scripted(replies("the hop is two", VERDICT), tmp_path / "a")
    found = dg.LLMJudge(chat, seed=0)(failed, "k")
    assert found.hop == 2 and len(raw.calls) == 2 and chat.accounting.abstentions == 0
    assert "could not be used" in raw.calls[1]["messages"][-1]["content"]
    assert raw.calls[1]["messages"][-2] == {"role": "assistant", "content": "the hop is two"}

    raw, chat = scripted(lambda m: json.dumps({"stage": "retrieval", "hop": 99}), tmp_path / "b")
    found = dg.LLMJudge(chat, seed=0, hops="trace")(failed, "k")
    assert (found.stage, found.hop) == ("none", 0) and found.cost > 0
    assert len(raw.calls) == 2 and chat.accounting.totals()["abstentions"] == 1


def test_judge_cuts_long_documents_with_a_marker_and_counts_them(failed, tmp_path):
    hops = list(failed.hops)
    long_doc = replace(hops[0].docs[0], text="word " * 400)
    hops[0] = replace(hops[0], docs=(long_doc,) + hops[0].docs[1:])
    trace = replace(failed, hops=tuple(hops))
    raw, chat = scripted(lambda m: VERDICT, tmp_path)
    judge = dg.LLMJudge(chat, seed=0, max_doc_chars=500)  # the world's paragraphs are shorter
    judge(trace, "k")
    prompt = raw.calls[0]["messages"][-1]["content"]
    assert CUT_MARKER.format(len(long_doc.text) - 500) in prompt and judge.truncated_docs == 1


def test_judge_fits_the_prompt_to_the_context_window_by_the_prompt_budget(failed, tmp_path):
    raw, chat = scripted(lambda m: VERDICT, tmp_path)
    full = raw.count_tokens(dg.judge_messages(failed, 600)[0])
    raw.context_window = chat.context_window = full  # the reply's tokens no longer fit
    judge = dg.LLMJudge(chat, seed=0)
    judge(failed, "k")
    sent = raw.calls[0]["messages"]
    assert raw.count_tokens(sent) <= Budget(chat, judge.max_tokens).limit < full
    assert judge.truncated_docs > 0 and "more characters cut]" in sent[-1]["content"]
    assert all(f"Hop {h.index}" in sent[-1]["content"] for h in failed.hops)  # every hop is still shown


def test_trace_judge_makes_no_call_on_an_empty_trace_and_keeps_to_its_hops(failed, tmp_path):
    raw, chat = scripted(lambda m: VERDICT, tmp_path)
    judge = dg.LLMJudge(chat, seed=0, hops="trace")
    assert judge(replace(failed, hops=()), "k") == dg.NO_HOP and raw.calls == []
    judge(failed, "k")
    assert raw.calls[0]["json_schema"]["properties"]["hop"]["enum"] == list(range(1, len(failed.hops) + 1))
    with pytest.raises(RcakitError, match="judge_hops"):
        dg.LLMJudge(chat, seed=0, hops="all")


def test_authors_judge_may_name_hop_n_plus_1_and_clips_negative_hops(failed, tmp_path):
    n = len(failed.hops)
    raw, chat = scripted(lambda m: json.dumps({"stage": "retrieval", "hop": n + 1}), tmp_path / "a")
    assert dg.LLMJudge(chat, seed=0)(failed, "k").hop == n + 1
    assert dg.LLMJudge(chat, seed=0)(replace(failed, hops=()), "e").hop == n + 1 and len(raw.calls) == 2
    raw, chat = scripted(lambda m: json.dumps({"stage": "retrieval", "hop": -2}), tmp_path / "b")
    assert dg.LLMJudge(chat, seed=0)(failed, "k").hop == 0


# --- the reader ------------------------------------------------------------------------------------


def llm_agent(lab, chat):
    """An LLM-read agent that may search a second time inside a hop (the targeted variant's agent)."""
    settings = AgentSettings(top_k=lab.agent.top_k, reformulate=True)
    return Agent(lab.world, lab.agent.corpora, LLMReader(chat, lab.agent.reader, seed=5), settings)


def test_llm_reader_follows_answer_actions(lab, tmp_path):
    raw, chat = scripted(oracle(lab.world), tmp_path)
    q = next(t.question for t in lab.clean.values() if t.correct and all(h.mode == "read" for h in t.hops))
    trace = llm_agent(lab, chat).run(q)
    assert trace.correct and [h.entity for h in trace.hops] == [g.object for g in q.hops]
    assert raw.calls[0]["seed"] == request_seed(5, f"{q.id}:1:0")
    assert "anyOf" in raw.calls[0]["json_schema"]


def test_llm_reader_search_action_becomes_the_agents_reformulation(lab, tmp_path):
    q = next(t.question for t in lab.clean.values() if t.correct)
    raw, chat = scripted(oracle(lab.world, search_first={q.start}), tmp_path)
    trace = llm_agent(lab, chat).run(q)
    first = trace.hops[0]
    assert first.mode == "reformulated" and first.queries[1] == f"{q.start} biography facts"
    assert raw.calls[1]["seed"] == request_seed(5, f"{q.id}:1:1")
    assert first.entity == q.hops[0].object


def test_llm_reader_abstains_after_one_retry_and_falls_back(lab, tmp_path):
    raw, chat = scripted(lambda m: "I am not sure", tmp_path)
    q = lab.world.questions[0]
    agent = llm_agent(lab, chat)
    hop = agent._hop(q, 1, 0, q.start)
    rel = RELATIONS[q.relations[0]]
    assert hop.queries == (hop.query, rule_reformulation(rel, q.start))
    assert hop.mode in ("guessed", "unresolved") and hop.entity == lab.agent.reader.guess(hop.docs, rel, q.start)
    assert len(raw.calls) == 4 and chat.accounting.abstentions == 2


def test_llm_reader_needs_a_provider(lab):
    from rcakit.llm import NullProvider

    with pytest.raises(RcakitError, match="agent: llm needs"):
        LLMReader(NullProvider(), lab.agent.reader, 0)


# --- wiring, sample, costs, cache ------------------------------------------------------------------


def test_models_from_params_errors_and_none():
    lm = M.models_from_params("none", "none", "rule", 0)
    assert lm.judge is None and lm.reader_chat is None
    with pytest.raises(RcakitError, match="^agent: expected one of rule, llm"):
        M.models_from_params("none", "none", "gpt", 0)
    with pytest.raises(RcakitError, match="^agent: llm needs"):
        M.models_from_params("none", "none", "llm", 0)
    with pytest.raises(RcakitError, match="^judge_provider: unknown provider"):
        M.models_from_params("none", "bogus", "rule", 0)


def test_models_from_params_passes_the_timeout_to_every_provider(monkeypatch):
    seen = []

    def spy(spec, host=None, *, timeout=None, param="provider", base_url=None):
        seen.append((param, timeout))
        return None

    from rcakit.llm import settings

    monkeypatch.setattr(settings, "provider_from_spec", spy)  # the one place a spec becomes a model
    M.models_from_params("ollama:a", "ollama:b", "rule", 0, timeout=7.5)
    assert seen == [("provider", 7.5), ("judge_provider", 7.5)]


def test_judge_stage_words_follow_the_scoring_taxonomy():
    from rcakit.rag.interventions import STAGE

    assert set(STAGE.values()) <= set(dg.JUDGE_STAGES)
    assert STAGE["query_drift"] == "retrieval"
    retrieval, tool = dg.JUDGE_SYSTEM.index("retrieval ("), dg.JUDGE_SYSTEM.index("tool (")
    assert retrieval < dg.JUDGE_SYSTEM.index("drifted") < tool  # a drifted query is described as a retrieval fault


def fake_model(messages):
    """The fake server's two roles: a judge verdict, or a reader that always asks to search."""
    if "diagnose" in messages[0]["content"]:
        return json.dumps({"stage": "retrieval", "hop": 1})
    return json.dumps({"action": "search", "query": "anything"})


def test_cross_family_judge_uses_the_judge_provider(lab, failed, tmp_path, monkeypatch):
    with FakeOllamaServer(fake_model) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path))
        lm = M.models_from_params("ollama:agent-model", "ollama:judge-model", "llm", 0)
        assert (lm.reader_chat.model, lm.judge.chat.model) == ("agent-model", "judge-model")
        assert lm.judge(failed, "k").hop == 1
        q = lab.world.questions[0]
        lab.agent.with_reader(LLMReader(lm.reader_chat, lab.agent.reader, 0)).run(q)
        by_model = {}
        for body in server.requests:
            by_model.setdefault(body["model"], set()).add(body["messages"][0]["content"][:20])
        assert by_model["judge-model"] == {dg.AUTHORS_JUDGE_SYSTEM[:20]}
        readers = {b["model"] for b in server.requests if "diagnose" not in b["messages"][0]["content"]}
        assert "judge-model" not in readers
        assert lm.accounting["llm_judge"].calls == 1 and lm.accounting["llm_reader"].calls > 0
        own = M.models_from_params("ollama:agent-model", "none", "rule", 0)
        assert own.judge.chat.model == "agent-model" and own.reader_chat is None


def test_judge_sample_caps_failed_cases_per_depth_deterministically():
    rows = [
        {"qid": f"q{i}", "depth": 1 + i % 2, "kind": "k", "skipped": i == 0, "correct": i % 3 == 0, "diagnoses": {}}
        for i in range(30)
    ]
    cases = pd.DataFrame(rows)
    sample = M.judge_sample(cases, 4, seed=1)
    assert (sample.groupby("depth").size() == 4).all()
    assert not sample["correct"].any() and not sample["skipped"].any()
    assert sample.equals(M.judge_sample(cases, 4, seed=1)) and list(sample.index) == sorted(sample.index)
    assert len(M.judge_sample(cases, 100, seed=1)) == int((~cases["correct"] & ~cases["skipped"]).sum())
    with pytest.raises(RcakitError, match="llm_max_cases"):
        M.judge_sample(cases, 0, seed=1)


def test_rebuilt_traces_match_their_stored_cases(lab, tmp_path):
    small = copy.copy(lab)
    small.clean = dict(list(lab.clean.items())[:6])
    for arm in ("structural", "content"):
        cases = P.sweep(small, arm, [1, 2], P.case_store("t", {"arm": arm}, tmp_path))
        live = cases[~cases["skipped"].astype(bool)]
        assert len(live) > 0
        for case in live.to_dict("records"):
            trace = P.injected_trace(small, case)
            assert (trace.answer, trace.correct, len(trace.hops)) == (case["answer"], case["correct"], case["n_hops"])


def test_judged_cases_join_the_table_and_a_warm_rerun_costs_the_same_without_model_calls(lab, tmp_path):
    from rcakit.chapters._rag import accuracy_table, judge_section  # what the chapters show of the judge

    small = copy.copy(lab)
    cases = P.sweep(small, "structural", [1, 2, 3], P.case_store("t", {}, tmp_path / "store"))
    cases = cases[cases["kind"] != "early_termination"]  # an empty trace gets no call
    cache = ResponseCache(tmp_path / "cache")

    def run():
        raw = ScriptedProvider(lambda m: VERDICT)
        judge = dg.LLMJudge(cached(raw, cache=cache, accounting=MethodUsage()), seed=3)
        judged, _ = M.judge_cases(small, M.judge_sample(cases, 3, seed=3), judge)
        result = metrics.attribution(cases, [1, 2, 3])
        same = M.merge_judge(result, judged, [1, 2, 3])
        return raw, judge, judged, result, same

    raw, judge, judged, result, same = run()
    assert len(raw.calls) == len(judged) == 9 and cache.misses == 9
    assert result["accuracy"]["llm_judge"]["2"]["point"] == 1.0  # it always says hop 2
    assert result["accuracy"]["llm_judge"]["1"]["point"] == 0.0
    assert result["llm_judged_n"] == {"1": 3, "2": 3, "3": 3}
    assert "llm_judge n" in accuracy_table(result, [1, 2, 3]).index
    assert M.hop_counts(judged, [1, 2, 3])[2].tolist() == [3, 3, 3]
    assert M.verdict_summary(judged) == {
        "judged": 9,
        "empty_traces": 0,
        "abstained": 0,
        "verdicts": 9,
        "modal_hop": 2,
        "modal_count": 9,
    }
    assert set(same["accuracy"]) == set(P.DIAGNOSERS) | {"llm_judge"}
    summary = M.judge_record(judge, judged, same, [1, 2, 3])
    run_view = SimpleNamespace(judge_summary=summary, judged=judged, same_cases=same, depths=[1, 2, 3])
    section = judge_section(run_view)  # what the chapters show and record of the judge
    assert section.numbers == {"llm_judge": summary} and section.facts["judge"]["modal_hop"] == 2
    assert "hop_counts" not in section.facts["judge"]
    assert section.table.loc["hop 1", ("judge's hop (0 = none or abstained)", 2)] == 3
    assert section.table.loc["hop 2", ("accuracy on the judged cases", "llm_judge")] == 1.0
    assert section.table.loc["hop 3", ("accuracy on the judged cases", "judged n")] == 3
    cold = judge.usage.totals()
    raw, judge, *_ = run()
    assert raw.calls == [] and cache.misses == 9 and cache.hits == 9
    assert judge.usage.totals() == cold


def test_reader_cost_is_the_same_for_a_computed_and_a_resumed_sweep(tmp_path):
    sizes = dict(n_entities=300, n_questions=5, hops=2)
    world = P.build_lab(3, **sizes).world
    cache = ResponseCache(tmp_path / "cache")

    def llm_lab():
        return P.build_lab(
            3, **sizes, reader_chat=cached(ScriptedProvider(oracle(world)), cache=cache, accounting=MethodUsage())
        )

    first = llm_lab()
    assert isinstance(first.agent.reader, LLMReader) and any(t.correct for t in first.clean.values())
    cost = M.reader_cost(first, P.sweep(first, "structural", [1], P.case_store("t", {}, tmp_path / "store")))
    again = llm_lab()
    resumed = M.reader_cost(again, P.sweep(again, "structural", [1], P.case_store("t", {}, tmp_path / "store")))
    assert cost == resumed and cost["calls"] > cost["cases"] > 5
    assert P.reader_usage(again).totals()["calls"] < cost["calls"]  # the resumed run re-ran only the clean traces


def test_a_sweep_without_eligible_cases_is_a_clear_error(lab, tmp_path):
    small = copy.copy(lab)
    small.clean = {qid: replace(t, answer="nobody") for qid, t in list(lab.clean.items())[:3]}
    with pytest.raises(RcakitError, match="^structural sweep: no eligible case at depths \\[1, 2\\]"):
        P.sweep(small, "structural", iter([1, 2]), P.case_store("t", {}, tmp_path))


def test_llm_cost_rows_go_through_the_one_cost_table(lab, tmp_path):
    from rcakit.llm.accounting import cost_table

    raw, chat = scripted(lambda m: VERDICT, tmp_path)
    models = M.LLMPair(M.Accounting(), None, dg.LLMJudge(chat, seed=0))
    models.accounting["llm_judge"].add_case()
    cost = M.llm_cost(models, lab)
    assert set(cost) == {"llm_judge"} and cost["llm_judge"]["cases"] == 1
    assert cost_table(cost).loc["llm_judge", "calls_per_case"] == 0.0


# --- replay action match (CAR §3 in the RAG agent) ----------------------------------------------


def test_the_rule_reader_replays_every_read_exactly(lab):
    match = fidelity.agent_action_match(lab.agent, lab.world.questions[:10])
    assert match.n > 10 and match.rate == 1.0
    record = fidelity.match_record(match)
    assert record["matched"] == record["n"] == match.n and record["ci"][1] == 1.0 and record["ci"][0] < 1.0


def test_recorded_reads_rebuild_the_trace_and_a_perturbed_input_breaks_the_match(lab):
    question = next(
        q
        for q in lab.world.questions
        if lab.clean[q.id].correct and all(h.mode == "read" for h in lab.clean[q.id].hops)
    )
    trace, reads = fidelity.record_reads(lab.agent, question)
    assert trace == lab.clean[question.id]  # recording changes nothing
    assert [r.action for r in reads if r.action[0] == "answer"][-1] == ("answer", trace.answer)
    perturbed = [replace(r, docs=()) if r.action[0] == "answer" else r for r in reads]  # no evidence shown
    match = fidelity.replay_reads(lab.agent.reader, perturbed)
    assert match.recorded == tuple(r.action for r in reads)
    assert match.rate < 1.0 and not all(match.matches)
    assert fidelity.replay_reads(lab.agent.reader, reads).rate == 1.0


def test_the_llm_reader_is_replayed_by_the_model_not_by_the_cache(lab, tmp_path):
    flip = {"on": False}

    def model(messages):
        if flip["on"]:  # a non-reproducible server: the replay answers otherwise
            return json.dumps({"action": "search", "query": "something else"})
        return oracle(lab.world)(messages)

    raw, chat = scripted(model, tmp_path)
    agent = llm_agent(lab, chat)
    questions = lab.world.questions[:4]
    [agent.run(q) for q in questions]
    recorded_calls = len(raw.calls)
    exact = fidelity.agent_action_match(agent, questions)
    assert exact.rate == 1.0 and len(raw.calls) == recorded_calls + exact.n  # each replay reached the model
    assert {c["seed"] for c in raw.calls[recorded_calls:]} <= {c["seed"] for c in raw.calls[:recorded_calls]}
    again = fidelity.agent_action_match(agent, questions)
    assert again.rate == 1.0 and len(raw.calls) == recorded_calls + exact.n  # a rerun reads the replay's cache
    flip["on"] = True
    fresh = llm_agent(lab, cached(raw, cache=ResponseCache(tmp_path / "other"), accounting=MethodUsage()))
    flip["on"] = False
    [fresh.run(q) for q in questions]
    flip["on"] = True
    drifted = fidelity.agent_action_match(fresh, questions)
    assert drifted.rate < 1.0


def test_verdict_summary_counts_an_empty_trace_as_unsent_only_for_the_trace_judge():
    def row(hops, verdict):
        return {
            "qid": "q",
            "depth": 1,
            "kind": "early_termination",
            "n_hops": hops,
            "correct": False,
            "skipped": False,
            "true_stage": "retrieval",
            "diagnoses": {M.JUDGE: verdict},
        }

    unsent = pd.DataFrame([row(0, ["answer", 0, 0, "none"]), row(2, ["retrieval", 2, 40, "none"])])
    assert M.verdict_summary(unsent)["empty_traces"] == 1 and M.verdict_summary(unsent)["verdicts"] == 1
    read = pd.DataFrame([row(0, ["retrieval", 1, 35, "none"]), row(2, ["retrieval", 2, 40, "none"])])
    assert M.verdict_summary(read)["empty_traces"] == 0 and M.verdict_summary(read)["verdicts"] == 2
