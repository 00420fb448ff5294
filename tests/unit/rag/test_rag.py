"""Tests of rcakit.rag: normalisation and outcomes, the world, the agent, interventions, diagnosers, protocol."""

import json
import random
from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest

from rcakit import RcakitError
from rcakit.rag import AgentSettings, RuleReader, Trace, answer_correct, classify_outcome, normalise
from rcakit.rag import diagnosers as dg
from rcakit.rag import interventions as I
from rcakit.rag import metrics as M
from rcakit.rag import outcomes as O
from rcakit.rag import propagation as PR
from rcakit.rag import protocol as P
from rcakit.rag.interventions import (
    AUTHORS_SET,
    DRIFT_WORDS,
    FALSE_PREMISE,
    OFF_TOPIC,
    STALE_NOTICE,
    STRUCTURAL,
    corrupt_content,
    inject,
    perturb_number,
    span_present,
)
from rcakit.rag.relations import RELATIONS
from rcakit.rag.retrieval import Corpora, Retriever
from rcakit.rag.settings import AUTHORS, EARLIER
from rcakit.rag.text import split_tokens
from rcakit.rag.world import Paragraph, build_world
from support.rag_cases import content_row, structural_row


@pytest.fixture(scope="module")
def lab():
    return P.build_lab(3, n_entities=600, n_questions=30, hops=3)


@pytest.fixture(scope="module")
def earlier():
    """rcakit's targeted variant of the protocol (rcakit.rag.settings.EARLIER)."""
    return P.build_lab(3, n_entities=600, n_questions=30, hops=3, **EARLIER.lab_params())


def _ok(lab, depth=1):
    return [t for t in lab.clean.values() if P.eligible(t, depth)]


# --- text ---------------------------------------------------------------------------------


def test_normalise_follows_squad_rules():
    assert normalise("The  12,979 Cats, an Apple!") == "12 979 cats apple"
    assert normalise("Theatre") == "theatre"  # only whole-word articles go


@pytest.mark.parametrize(
    "answer,gold,expected",
    [
        ("the Republic of Velane", "Republic of Velane", True),
        ("Velane", "Republic of Velane", False),  # recall 1/2
        ("It is Port Karith, I think", "Port Karith", True),  # recall 1.0
        ("", "Port Karith", False),
        (None, "Port Karith", False),
    ],
)
def test_answer_correct(answer, gold, expected):
    assert answer_correct(answer, gold) is expected


def test_outcome_classes_on_hand_made_cases():
    assert classify_outcome("Port Karith", "Port Karith", "Port Karith Heights") == "resisted"  # correct wins
    assert classify_outcome("New Ostion", "Port Karith", "New Ostion") == "absorbed"
    assert classify_outcome("Ostion", "Port Karith", "New Ostion") == "derailed"  # recall 0.5
    assert classify_outcome("Mara", "Port Karith", "the") == "derailed"  # empty normalised span


# --- world and agent -------------------------------------------------------------------------


def test_world_is_seeded_and_certified():
    a, b = build_world(5, n_entities=300, n_questions=10), build_world(5, n_entities=300, n_questions=10)
    assert a.corpus == b.corpus and a.questions == b.questions
    assert build_world(6, n_entities=300, n_questions=10).corpus != a.corpus
    for q in a.questions:
        assert len(q.hops) == 3 and q.hops[-1].object == q.answer
        for gold in q.hops:
            para = a.corpus[gold.paragraph_id]
            assert para.title == gold.subject and gold.object in para.text
            assert a.facts[gold.subject][gold.relation] == gold.object


def test_world_rejects_bad_sizes():
    with pytest.raises(RcakitError, match="hops"):
        build_world(0, hops=5)
    with pytest.raises(RcakitError, match="distractor_rate"):
        build_world(0, distractor_rate=1.5)


def test_clean_agent_is_deterministic_and_mostly_right(lab):
    again = P.build_lab(3, n_entities=600, n_questions=30, hops=3)
    assert [t.answer for t in again.clean.values()] == [t.answer for t in lab.clean.values()]
    share = sum(t.correct for t in lab.clean.values()) / len(lab.clean)
    assert 0.6 < share <= 1.0


def test_resume_requires_a_matching_prefix(lab):
    trace = _ok(lab)[0]
    with pytest.raises(RcakitError, match="prefix"):
        lab.agent.resume_from(trace.question, trace.hops[:1], 3)


@pytest.mark.parametrize("tokenizer", ["authors", "normalised"])
def test_vectorised_bm25_equals_rank_bm25(lab, tokenizer):
    r = Retriever(lab.world.corpus, tokenizer)
    for q in ["the director of " + lab.world.questions[0].start, "born in city", "zzz unknown", "of of the"]:
        assert r.scores(q) == pytest.approx(r.bm25.get_scores(split_tokens(q, tokenizer)), abs=1e-9)
    hits = r.search("the founder of " + lab.world.questions[1].start, 3)
    assert len(hits) == 3 and r.search("zzz unknown", 3) == ()


def test_reader_needs_the_subject_paragraph_and_the_right_type(lab):
    q = lab.world.questions[0]
    gold = q.hops[0]
    para = lab.world.corpus[gold.paragraph_id]
    rel = RELATIONS[gold.relation]
    quiet = RuleReader(lab.world, 0.0, 0)
    assert quiet.act([para], rel, gold.subject, "k").answer == gold.object
    assert quiet.act([para], rel, "Somebody Else", "k").answer is None  # title must be the subject
    deaf = RuleReader(lab.world, 1.0, 0)
    assert deaf.act([para], rel, gold.subject, "k").answer is None and deaf.guess([para], rel, "x") == gold.object
    with pytest.raises(RcakitError, match="reading_noise"):
        RuleReader(lab.world, 1.5, 0)


# --- interventions -----------------------------------------------------------------------------


def test_question_corpus_holds_the_support_and_the_empty_search_falls_back_to_its_first_two(lab):
    q = lab.world.questions[0]
    own = lab.world.contexts[q.id]
    assert len(own) == 20 and {h.paragraph_id for h in q.hops} <= set(own)
    assert lab.world.context(q)[0].id == own[0]
    corpora = lab.agent.corpora
    found = corpora.search(q, "the director of " + q.start, 5)
    assert found and {d.id for d in found} <= set(own)
    assert corpora.search(q, "zzz unknown", 5) == tuple(lab.world.corpus[i] for i in own[:2])
    assert Corpora(lab.world, "question", "nothing").search(q, "zzz unknown", 5) == ()
    assert Corpora(lab.world, "global").size(q) == len(lab.world.corpus) and corpora.size(q) == 20
    with pytest.raises(RcakitError, match="corpus"):
        Corpora(lab.world, "shared")


def test_protocol_record_names_the_authors_protocol(lab):
    record = P.protocol_record(lab)
    assert record["corpus"] == AUTHORS.corpus and record["paragraphs_per_question"] == {
        "min": 20,
        "median": 20,
        "max": 20,
    }
    assert (record["hop_budget"], record["retrievals_per_hop"], record["top_k"]) == (3, 1, AUTHORS.top_k)
    assert record["empty_search"] == AUTHORS.empty_search and record["interventions"] == AUTHORS.interventions
    assert record["intervention_set"] == list(AUTHORS_SET) and record["intervention_set_name"] == "authors"
    assert record["contamination_recall"] == 1.0 and record["max_probes"] is None  # the authors' rules
    assert "random.Random(42)" in record["bootstrap"] and record["span_rule"] == AUTHORS.span_rule


def test_the_authors_tokens_keep_punctuation_and_read_titles():
    assert split_tokens("Port Karith, a city.") == ["port", "karith,", "a", "city."]
    assert split_tokens("Port Karith, a city.", "normalised") == ["port", "karith", "city"]
    hop = [Paragraph(0, "Port Karith", "A harbour town.")]
    assert dg.coverage_score("Port Karith", hop) == pytest.approx(1 / 6)  # "karith:" is not "karith"
    assert dg.coverage_score("Port Karith", hop, "normalised") == 0.0  # the text alone: no title
    with pytest.raises(ValueError, match="tokenizer"):
        split_tokens("x", "raw")


def test_the_authors_set_is_four_of_the_six_and_a_sweep_injects_only_its_set(tmp_path):
    assert set(AUTHORS_SET) == set(STRUCTURAL) - {"query_drift", "early_termination"}
    small = P.build_lab(3, n_entities=300, n_questions=10, hops=3, intervention_set="authors")
    cases = P.sweep(small, "structural", [1, 2], P.case_store("t", {"s": "a"}, tmp_path), progress=None)
    assert set(cases["kind"]) == set(AUTHORS_SET)
    one = P.build_lab(3, n_entities=300, n_questions=10, hops=3, intervention_set="stale_evidence")
    assert set(P.sweep(one, "structural", [1], P.case_store("t", {"s": "b"}, tmp_path), progress=None)["kind"]) == {
        "stale_evidence"
    }
    assert P.build_lab(3, n_entities=300, n_questions=10, hops=3, intervention_set="all").kinds == STRUCTURAL
    with pytest.raises(RcakitError, match=r"^intervention_set: expected one of authors, all, "):
        P.build_lab(3, n_entities=300, n_questions=10, hops=3, intervention_set="five")


def test_a_probe_cap_repairs_only_the_first_hops(lab):
    """With max_probes k the flip branch never names a hop after k, and at k = n it is the uncapped probe."""
    traces = [inject(lab.agent, t, 3, "empty_retrieval", random.Random(0)) for t in _ok(lab, 3)]
    failed = [t for t in traces if not t.correct]
    uncapped = [dg.propagation_aware(lab.agent, t) for t in failed]
    assert any(d.branch == "flip" and d.hop == 3 for d in uncapped)  # else the test could not fail
    for probe in (dg.propagation_aware, dg.suf_regen):
        capped = [probe(lab.agent, t, 2) for t in failed]
        assert not any(d.branch == "flip" and d.hop > 2 for d in capped)
        assert [probe(lab.agent, t, 3) for t in failed] == [probe(lab.agent, t) for t in failed]


def test_a_capped_probe_follows_from_the_uncapped_runs_recorded_branches(lab):
    """metrics.capped_probes gives the diagnoses a run with the cap gives, case by case (costs aside)."""
    capped_lab = replace(lab, max_probes=2)
    qids = [t.question.id for t in _ok(lab, 3)]
    cases = [
        P.structural_case(lab, q, d, k) for q in qids for d in (1, 3) for k in ("empty_retrieval", "false_premise")
    ]
    rerun = [P.structural_case(capped_lab, c["qid"], c["depth"], c["kind"]) for c in cases]
    derived = M.capped_probes(pd.DataFrame(cases), 2)["diagnoses"].tolist()
    changed = 0
    for want, got, before in zip(rerun, derived, cases, strict=True):
        for name in P.PROBES:
            if want["diagnoses"]:
                assert list(got[name])[:2] + [got[name][3]] == list(want["diagnoses"][name])[:2] + [
                    want["diagnoses"][name][3]
                ]
                changed += list(got[name]) != list(before["diagnoses"][name])
    assert changed > 0  # the cap moved some diagnosis, so the test can fail


def test_agent_settings_reject_bad_values():
    with pytest.raises(RcakitError, match="top_k"):
        AgentSettings(top_k=0)
    with pytest.raises(RcakitError, match="spare_hops"):
        AgentSettings(spare_hops=-1)


def test_reader_heeds_a_warning_with_its_probability(lab):
    q = lab.world.questions[0]
    gold = q.hops[0]
    docs = (FALSE_PREMISE, lab.world.corpus[gold.paragraph_id])
    always, never = RuleReader(lab.world, 0.0, 0, 1.0), RuleReader(lab.world, 0.0, 0, 0.0)
    assert always.heeds(docs, "k") and not never.heeds(docs, "k")
    assert not always.heeds(docs[1:], "k")  # no warning, nothing to heed
    half = RuleReader(lab.world, 0.0, 0, 0.5)
    share = sum(half.heeds((STALE_NOTICE,), f"k{i}") for i in range(400)) / 400
    assert 0.4 < share < 0.6
    with pytest.raises(RcakitError, match="heed_warnings"):
        RuleReader(lab.world, 0.0, 0, 2.0)


def test_a_heeded_warning_abstains_without_a_guess(lab):
    trace = _ok(lab, 2)[0]
    stubborn = P.build_lab(3, n_entities=600, n_questions=30, hops=3, heed_warnings=1.0)
    out = inject(stubborn.agent, stubborn.clean[trace.question.id], 1, "false_premise", random.Random(0))
    assert out.hops[0].mode == "abstained" and out.hops[0].entity is None and not out.correct
    deaf = P.build_lab(3, n_entities=600, n_questions=30, hops=3, heed_warnings=0.0)
    out = inject(deaf.agent, deaf.clean[trace.question.id], 1, "false_premise", random.Random(0))
    assert out.hops[0].entity == deaf.clean[trace.question.id].hops[0].entity


@pytest.mark.parametrize("kind", [k for k in STRUCTURAL if k != "early_termination"])
def test_generic_intervention_semantics(lab, kind):
    trace = _ok(lab, 2)[0]
    for h in (1, 2):
        out = inject(lab.agent, trace, h, kind, random.Random(0))
        assert out.hops[: h - 1] == trace.hops[: h - 1]
        hop, before = out.hops[h - 1], trace.hops[h - 1]
        assert hop.label == kind and hop.mode != "unread"
        if kind == "empty_retrieval":
            assert hop.docs == () and hop.query == before.query
        elif kind == "irrelevant_documents":
            assert hop.docs == OFF_TOPIC
        elif kind == "query_drift":
            assert hop.query == f"{before.query} {DRIFT_WORDS}"
        elif kind == "false_premise":
            assert hop.docs == (FALSE_PREMISE,) + before.docs
        else:
            assert hop.docs == (STALE_NOTICE,) + before.docs
        # no generic text names an object of the world
        named = [m for d in hop.docs if d.id < 0 for m in lab.agent.reader.mentions(d.text)]
        assert named == []


def test_generic_empty_retrieval_at_the_last_hop_gets_no_extra_retrieval(lab):
    for trace in _ok(lab, 3)[:10]:
        out = inject(lab.agent, trace, 3, "empty_retrieval", random.Random(0))
        assert len(out.hops) == 3 and out.hops[2].docs == ()  # the budget is spent: answer from the evidence


def test_continue_probe_is_a_plain_re_answer_on_a_full_trace(lab):
    for trace in _ok(lab, 3)[:10]:
        for kind in ("empty_retrieval", "irrelevant_documents", "false_premise"):
            out = inject(lab.agent, trace, 3, kind, random.Random(0))
            if out.correct:
                continue
            found = dg.continue_retrieving(lab.agent, out)
            assert found.branch == "none" and found.hop == 0
            assert lab.agent.resume_from(out.question, out.hops, 4).hops == out.hops  # nothing retrieved


HEDGES = {"may", "might", "perhaps", "possibly", "reportedly", "unclear", "could", "likely", "probably"}


def test_each_generic_text_carries_what_the_authors_intervention_must(lab):
    """rcakit words the authors' generic texts itself; each must still carry what the intervention is
    (``WHAT_EACH_CARRIES``): off-topic paragraphs, a confident false premise, a superseded record."""
    assert set(I.WHAT_EACH_CARRIES) == {"irrelevant_documents", "false_premise", "stale_evidence"}

    def content(text):  # content words: the world's relations are named with "by", "in", "at"
        return {w for w in split_tokens(text, "normalised") if len(w) > 3}

    world = set().union(*(content(name) for name in lab.world.types))
    world |= set().union(*(content(relation.replace("_", " ")) for relation in lab.world.relations))
    for paragraph in OFF_TOPIC:
        assert not content(f"{paragraph.title} {paragraph.text}") & world, paragraph
    premise = set(split_tokens(FALSE_PREMISE.text, "normalised"))
    assert "does not exist" in FALSE_PREMISE.text and "no specific answer" in FALSE_PREMISE.text
    assert not premise & HEDGES  # confident: no hedge
    stale = STALE_NOTICE.text
    assert "outdated" in stale and "superseded" in stale and not any(c.isdigit() for c in stale)
    assert not set(split_tokens(stale, "normalised")) & HEDGES


def test_the_text_check_fails_on_a_hedged_premise(lab, monkeypatch):
    hedged = Paragraph(
        -4, "Notice", "The entity this question asks about may not exist, so no specific answer applies."
    )
    monkeypatch.setattr(I, "FALSE_PREMISE", hedged)
    monkeypatch.setitem(globals(), "FALSE_PREMISE", hedged)
    with pytest.raises(AssertionError):
        test_each_generic_text_carries_what_the_authors_intervention_must(lab)


@pytest.mark.parametrize("kind", [k for k in STRUCTURAL if k != "early_termination"])
def test_targeted_intervention_semantics(lab, kind):
    trace = _ok(lab, 2)[0]
    for h in (1, 2):
        out = inject(lab.agent, trace, h, kind, random.Random(0), "targeted")
        assert out.hops[: h - 1] == trace.hops[: h - 1]  # prefix untouched
        hop = out.hops[h - 1]
        assert hop.label == kind and hop.mode != "unread"
        subject = hop.subject
        if kind == "empty_retrieval":
            assert hop.docs == ()
        elif kind == "irrelevant_documents":
            assert all(subject not in d.text for d in hop.docs) and len(hop.docs) == lab.agent.top_k
        elif kind == "query_drift":
            assert hop.query != trace.hops[h - 1].query and subject not in hop.query
        elif kind == "false_premise":
            assert hop.docs[0].id == -1 and hop.docs[0].title == subject and hop.docs[1:] == trace.hops[h - 1].docs
        elif kind == "stale_evidence":
            true_obj = lab.world.facts[subject][trace.question.relations[hop.relation]]
            assert hop.docs[0].text.startswith("Archived") and true_obj not in hop.docs[0].text
        # suffix regenerated from the new state, not copied
        for prev, nxt in zip(out.hops[h - 1 : -1], out.hops[h:], strict=True):
            assert nxt.label == ""
            expected = prev.entity if prev.entity else prev.subject
            assert nxt.subject == expected
            assert nxt.query == lab.agent.query_for(trace.question.relations[nxt.relation], nxt.subject)


def test_targeted_false_premise_changes_the_bridge_and_the_suffix(earlier):
    lab = earlier
    trace = _ok(lab, 2)[0]
    out = inject(lab.agent, trace, 1, "false_premise", random.Random(1), "targeted")
    assert out.hops[0].entity != trace.hops[0].entity
    assert out.hops[1].subject == out.hops[0].entity != trace.hops[1].subject
    assert not out.correct


def test_early_termination_answers_from_the_prefix(lab, monkeypatch):
    trace = _ok(lab, 3)[0]
    monkeypatch.setattr(lab.agent, "fetch", lambda q, query: pytest.fail("retrieved after termination"))
    out = inject(lab.agent, trace, 3, "early_termination", random.Random(0))
    assert out.terminated and out.hops == trace.hops[:2]
    # hop 3's evidence was never seen, so the answer cannot be read from it
    assert out.answer == lab.agent.force_answer(trace.question, trace.hops[:2]).answer


def test_unknown_intervention_and_bad_hop(lab):
    trace = _ok(lab)[0]
    with pytest.raises(RcakitError, match="unknown kind"):
        inject(lab.agent, trace, 1, "meteor", random.Random(0))
    with pytest.raises(RcakitError, match="hop"):
        inject(lab.agent, trace, 9, "empty_retrieval", random.Random(0))
    with pytest.raises(RcakitError, match="interventions"):
        inject(lab.agent, trace, 1, "empty_retrieval", random.Random(0), "tailored")


def test_content_corruption_is_certified_and_corpus_stays_clean(lab):
    answers = [q.answer for q in lab.world.questions]
    before = list(lab.world.corpus)
    made = 0
    for trace in _ok(lab, 3)[:8]:
        for h in (1, 2, 3):
            out = corrupt_content(lab.agent, trace, h, answers, random.Random(h))
            if out is None:
                continue
            corruption, hop = out
            made += 1
            assert span_present(corruption.original, trace.hops[h - 1].docs)
            assert not span_present(corruption.original, hop.docs) and span_present(corruption.replacement, hop.docs)
            if h == 3:
                assert corruption.strategy == "answer_fact" and corruption.original == trace.gold
    assert made >= 10 and lab.world.corpus == before


def _with_hop_docs(trace, hop, docs):
    hops = list(trace.hops)
    hops[hop - 1] = replace(hops[hop - 1], docs=tuple(docs))
    return replace(trace, hops=tuple(hops))


def test_the_authors_span_rule_ranks_every_documents_spans_and_the_earlier_takes_the_top_document(lab):
    trace = next(t for t in _ok(lab, 3) if len(t.hops) >= 3)
    names = sorted(lab.world.types, key=lambda n: (len(n.split()), n))
    short, long = names[0], names[-1]  # one word; the most words of any name
    docs = [
        Paragraph(901, "Note one", f"{short} was mentioned in 1931."),
        Paragraph(902, "Note two", f"The archive names {long} twice: {long}."),
    ]
    case = _with_hop_docs(replace(trace, question=replace(trace.question, answer="zz")), 1, docs)
    later = replace(case.hops[1], queries=("nothing in common",), query="nothing in common")
    case = replace(case, hops=(case.hops[0], later) + case.hops[2:])
    assert I.choose_span(lab.agent, case, 1, "authors") == ("salient_entity", long)  # most tokens, all documents
    assert I.choose_span(lab.agent, case, 1, "first_mention") == ("salient_entity", short)  # top document, first
    bridged = replace(case, hops=(case.hops[0], replace(later, queries=(f"where is {short}",))) + case.hops[2:])
    assert I.choose_span(lab.agent, bridged, 1, "authors") == ("bridge_entity", short)  # a later query recalls it
    counts = I.candidate_spans(lab.agent, docs)
    assert I.bridge_spans(counts, bridged, 1) == {short: 1} and I.bridge_spans(counts, case, 1) == {}
    with pytest.raises(RcakitError, match="^span_rule: expected one of authors, first_mention"):
        I.choose_span(lab.agent, case, 1, "last_mention")


def test_the_authors_replacement_perturbs_any_number_and_falls_back_to_invented_names():
    rng = random.Random(0)
    assert I._replacement("1931", "bridge_entity", [], rng)[0] == "year"  # a number whatever its strategy
    assert I._replacement("1931", "bridge_entity", ["Port Karith"], rng, rule="first_mention") == (
        "entity",
        "Port Karith",
    )
    kind, name = I._replacement("Port Karith", "salient_entity", ["Port Ostion", "12"], rng)
    assert kind == "entity" and name in I.FALLBACK_NAMES  # shares "Port" / is a number: no answer fits
    assert I._replacement("Port Karith", "salient_entity", ["Port Ostion"], rng, rule="first_mention") is None
    docs = (Paragraph(1, "t", " ".join(I.FALLBACK_NAMES[1:])),)
    assert I._replacement("Port Karith", "salient_entity", [], rng, docs) == ("entity", I.FALLBACK_NAMES[0])


def test_corruption_without_a_span_is_skipped_and_counted(lab):
    trace = _ok(lab, 2)[0]
    bare = replace(trace, hops=(replace(trace.hops[0], docs=()),) + trace.hops[1:])
    assert corrupt_content(lab.agent, bare, 1, [q.answer for q in lab.world.questions], random.Random(0)) is None
    lab.clean["bare"] = bare
    try:
        case = P.content_case(lab, "bare", 1)
    finally:
        del lab.clean["bare"]
    assert case["skipped"] is True
    cases = pd.DataFrame([case, {**case, "skipped": False, "outcome": "derailed", "correct": False}])
    assert O.outcome_shares(cases)["n"].tolist() == [1]


def test_number_perturbation_rules():
    rng = random.Random(0)
    for _ in range(50):
        kind, new = perturb_number("1950", rng)
        assert kind == "year" and 2 <= abs(int(new) - 1950) <= 5
        kind, new = perturb_number("7", rng)
        assert kind == "small_int" and 1 <= int(new) - 7 <= 3
        kind, new = perturb_number("20", rng)  # the authors' small integers stop below 10
        assert kind == "number" and int(new) in (10, 14, 26, 30, 40)
        kind, new = perturb_number("12,000", rng)
        assert kind == "number" and int(new.replace(",", "")) in (6000, 8400, 15600, 18000, 24000)


# --- diagnosers ----------------------------------------------------------------------------------


def test_coverage_definition(lab):
    trace = _ok(lab)[0]
    assert dg.coverage(trace, 0.05).hop == 1  # a short answer in long paragraphs scores below 0.05
    assert dg.coverage(trace, 0.0) == dg.NO_HOP
    assert dg.constant_hop1(trace).hop == 1


def test_oracle_gold_hop_finds_the_missing_certified_fact(lab):
    trace = _ok(lab, 3)[0]
    assert dg.oracle_gold_hop(trace) == dg.NO_HOP
    hops = list(trace.hops)
    hops[1] = replace(hops[1], docs=())
    assert dg.oracle_gold_hop(replace(trace, hops=tuple(hops))).hop == 2


# The authors' trace format: the question, each hop's query and documents, the answer and the gold answer.
# SimpleNamespace has no other field, so a diagnoser reaching for agent state raises AttributeError.
def recorded(hops, answer, gold="Port Karith"):
    return SimpleNamespace(
        question="Where?",
        hops=tuple(SimpleNamespace(query=q, docs=tuple(SimpleNamespace(text=t) for t in docs)) for q, docs in hops),
        answer=answer,
        gold=gold,
    )


GROUNDED = "Ada Velane was born in Port Karith and studied at New Ostion."


@pytest.mark.parametrize(
    "hops,answer,expected",
    [
        ([], "", ("retrieval", 1)),  # no hop at all: nothing retrieved
        ([("q1", []), ("q2", [])], "Port Karith", ("retrieval", 1)),  # no document retrieved at all
        ([("", [GROUNDED])], "New Ostion", ("tool", 0)),  # documents but no tool call
        ([("q1", [GROUNDED])], "", ("answer", 0)),  # empty answer
        ([("q1", [GROUNDED])], "Velmora Falls", ("answer", 0)),  # ungrounded: no answer token in the documents
        (
            [("q1", [GROUNDED]), ("q2", [])],
            "New Ostion",
            ("answer", 0),
        ),  # grounded but wrong; an empty hop is not named
        ([("q1", [GROUNDED])], "Port Karith", ("none", 0)),  # nothing visible is wrong
    ],
)
def test_rule_based_reads_only_the_recorded_trace(hops, answer, expected):
    found = dg.rule_based(recorded(hops, answer))
    assert (found.stage, found.hop) == expected and found.branch == "none"


def test_rule_based_gives_the_same_verdict_on_a_real_trace_and_its_record(lab):
    seen = set()
    for trace in _ok(lab, 2)[:6]:
        for kind in STRUCTURAL:
            out = inject(lab.agent, trace, 2, kind, random.Random(0))
            record = recorded([(h.query, [d.text for d in h.docs]) for h in out.hops], out.answer, out.gold)
            assert dg.rule_based(out) == dg.rule_based(record)
            seen.add(dg.rule_based(out).stage)
    assert "answer" in seen


class ScriptedAgent:
    """An agent whose re-executions are planted: which repaired hops flip, whether resuming helps.

    Each query costs its words; a forced answer costs 7 and a resumed hop 5, so the probes' cost is known.
    """

    def __init__(self, flips=(), resume_correct=False, known=()):
        self.flips, self.resume_correct, self.known = set(flips), resume_correct, set(known)
        self.fetched, self.forced = [], []

    def fetch(self, q, query):
        self.fetched.append(query)
        return () if query not in self.known else (Paragraph(9, "Repaired", f"fresh evidence for {query}"),)

    def _answer(self, q, flipped):
        return q.answer if flipped else "Nobody"

    def force_answer(self, q, hops):
        self.forced.append(tuple(hops))
        flipped = any(h.docs and h.docs[0].title == "Repaired" and h.index in self.flips for h in hops)
        return Trace(q, tuple(hops), self._answer(q, flipped), terminated=True, extra_words=7)

    def resume_from(self, q, prefix, start):
        repaired = bool(prefix) and prefix[-1].mode == "unread"
        flipped = prefix[-1].index in self.flips if repaired else self.resume_correct
        extra = replace(prefix[-1], index=start, word_cost=5) if prefix else None
        return Trace(q, tuple(prefix) + ((extra,) if extra else ()), self._answer(q, flipped))


def planted(lab, docs_per_hop):
    """A failed two-or-three-hop trace of the fixture world with the given documents per hop."""
    trace = _ok(lab, 3)[0]
    hops = tuple(replace(h, docs=d, query="one two three") for h, d in zip(trace.hops, docs_per_hop, strict=False))
    return replace(trace, hops=hops, answer="Nobody")


@pytest.mark.parametrize("probe", [dg.propagation_aware, dg.suf_regen])
def test_probe_branch_flip_is_the_first_repair_that_flips(lab, probe):
    trace = planted(lab, [(lab.world.corpus[0],)] * 3)
    agent = ScriptedAgent(flips={2, 3}, known={"one two three"})
    found = probe(agent, trace)
    assert (found.stage, found.hop, found.branch) == ("retrieval", 2, "flip")
    assert agent.fetched == ["one two three"] * 2  # hop 3 is never tried


def test_probe_repair_falls_back_to_the_question_and_pays_for_both_queries(lab):
    trace = planted(lab, [(lab.world.corpus[0],)] * 3)
    question = trace.question.text
    agent = ScriptedAgent(flips={1}, known={question})
    found = dg.propagation_aware(agent, trace)
    assert agent.fetched == ["one two three", question] and found.branch == "flip"
    assert agent.forced[0][0].docs[0].text == f"fresh evidence for {question}"
    assert found.cost == 3 + len(question.split()) + 7


@pytest.mark.parametrize("probe", [dg.propagation_aware, dg.suf_regen])
def test_probe_branch_continue_names_hop_n_plus_1(lab, probe):
    trace = planted(lab, [(lab.world.corpus[0],)] * 2)  # two hops
    found = probe(ScriptedAgent(resume_correct=True, known={"one two three"}), trace)
    assert (found.stage, found.hop, found.branch) == ("retrieval", 3, "continue")


def test_propagation_aware_cost_counts_every_re_execution(lab):
    trace = planted(lab, [(lab.world.corpus[0],)] * 2)
    found = dg.propagation_aware(ScriptedAgent(resume_correct=True, known={"one two three"}), trace)
    assert found.cost == 2 * (3 + 7) + 5  # two repairs (query words + forced answer), one resumed hop


@pytest.mark.parametrize("probe", [dg.propagation_aware, dg.suf_regen])
def test_probe_branch_fallback_takes_the_earliest_empty_or_unsupported_hop(lab, probe):
    gold = _ok(lab, 3)[0].gold
    support = Paragraph(1, "x", f"It mentions {gold}.")
    unrelated = Paragraph(2, "y", "zzz qqq")
    cases = [
        ([(support,), (unrelated,), ()], 2, "fallback"),  # hop 2 shares no token with the gold answer
        ([(support,), (support,), ()], 3, "fallback"),  # hop 3 is empty
        ([(support,), (support,), (support,)], 0, "none"),
    ]  # nothing: answer stage, hop 0
    for docs, hop, branch in cases:
        found = probe(ScriptedAgent(known={"one two three"}), planted(lab, docs))
        assert (found.hop, found.branch) == (hop, branch)
        assert found.stage == ("retrieval" if hop else "answer") and found.cost > 0
        assert (dg.fallback_rule(planted(lab, docs)).hop, dg.fallback_rule(planted(lab, docs)).branch) == (hop, branch)


def test_probe_scopes_differ_on_a_hop3_fault():
    lab = P.build_lab(3, n_entities=600, n_questions=10, hops=3, reading_noise=0.0, heed_warnings=1.0)
    out = inject(lab.agent, _ok(lab, 3)[0], 3, "false_premise", random.Random(0))
    assert not out.correct  # the reader heeds the notice
    # frozen-hop repair leaves hops 1-2 as observed, so only repairing hop 3 flips the answer
    assert (dg.propagation_aware(lab.agent, out).hop, dg.propagation_aware(lab.agent, out).branch) == (3, "flip")
    # suffix regeneration from hop 1 re-runs hop 3 against the clean corpus, so it already flips at hop 1
    found = dg.suf_regen(lab.agent, out)
    assert found.hop == 1 and found.cost > 0 and found.branch == "flip"


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_early_termination_is_named_only_by_continuing_to_retrieve(lab, depth):
    cut = (inject(lab.agent, t, depth, "early_termination", random.Random(0)) for t in _ok(lab, 3))
    out = next(o for o in cut if not o.correct)  # pooled evidence sometimes answers without the cut hop
    assert len(out.hops) == depth - 1  # hop `depth` is absent from the trace
    for probe in (dg.propagation_aware, dg.continue_retrieving):
        found = probe(lab.agent, out)
        assert (found.hop, found.branch) == (depth, "continue") and found.cost > 0
    # Suf-Regen's first repair already regenerates the missing hops, so it flips at hop 1 (or continues at hop 1)
    regenerated = dg.suf_regen(lab.agent, out)
    assert (regenerated.hop, regenerated.branch) == (1, "flip" if depth > 1 else "continue")
    if depth > 1:
        assert all(d(out).hop != depth for d in (dg.coverage, dg.rule_based, dg.fallback_rule))


def test_query_drift_repair_reissues_the_drifted_query(earlier, monkeypatch):
    lab = earlier
    drifted = ((t, inject(lab.agent, t, 2, "query_drift", random.Random(0), "targeted")) for t in _ok(lab, 2))
    trace, out = next((t, o) for t, o in drifted if not o.correct)
    issued = []
    fetch = lab.agent.fetch
    monkeypatch.setattr(lab.agent, "fetch", lambda q, query: issued.append(query) or fetch(q, query))
    dg.propagation_aware(lab.agent, out)
    assert out.hops[1].query in issued and trace.hops[1].query not in issued


# --- protocol --------------------------------------------------------------------------------------


def test_strict_eligibility(lab):
    trace = _ok(lab, 3)[0]
    assert P.eligible(trace, 3) and not P.eligible(trace, 4)
    assert not P.eligible(replace(trace, answer="nobody"), 1)


def test_attribution_metrics_on_hand_made_cases():
    def case(qid, depth, correct, cov_hop, stage="retrieval"):
        diag = {} if correct else {"coverage": [stage, cov_hop, 0, "none"]}
        return {
            "qid": qid,
            "depth": depth,
            "kind": "empty_retrieval",
            "true_stage": "retrieval",
            "skipped": False,
            "correct": correct,
            "diagnoses": diag,
        }

    cases = pd.DataFrame(
        [
            case("a", 1, False, 1),
            case("b", 1, False, 2),
            case("c", 1, True, 0),
            case("d", 2, False, 1, "answer"),
            case("e", 2, False, 0),
        ]
    )
    out = M.attribution(cases, [1, 2])
    assert out["failed_n"] == {"1": 2, "2": 2} and out["eligible_n"] == {"1": 3, "2": 2}
    assert out["recovery"]["1"] == pytest.approx(1 / 3) and out["recovery"]["2"] == 0.0
    assert out["accuracy"]["coverage"]["1"]["point"] == 0.5 and out["accuracy"]["coverage"]["2"]["point"] == 0.0
    assert out["stage_accuracy"]["coverage"]["2"] == 0.5 and out["mae"]["coverage"]["2"] == 1.5


def test_branch_counts_and_accuracies_on_hand_made_cases():
    cases = pd.DataFrame(
        [
            structural_row("a", 2, 2, "flip", fact_in_trace=True),
            structural_row("b", 2, 3, "flip"),
            structural_row("c", 2, 2, "continue", "early_termination", 1),
            structural_row("d", 2, 2, "fallback"),
            structural_row("e", 2, 0, "none"),
        ]
    )
    out = M.attribution(cases, [2])
    assert out["probe_branch"]["propagation_aware"]["2"] == {"flip": 2, "continue": 1, "fallback": 1, "none": 1}
    assert out["branch_accuracy"]["propagation_aware"]["2"] == {
        "flip": 0.5,
        "continue": 1.0,
        "fallback": 1.0,
        "none": 0.0,
    }
    shares = out["branch_hit_share"]["propagation_aware"]["2"]
    assert shares == {"flip": 0.2, "continue": 0.2, "fallback": 0.2, "none": 0.0}
    assert sum(shares.values()) == pytest.approx(out["accuracy"]["propagation_aware"]["2"]["point"])
    assert out["accuracy"]["propagation_aware"]["2"]["point"] == pytest.approx(0.6)
    assert out["accuracy_without_fallback"]["propagation_aware"]["2"]["point"] == pytest.approx(0.4)
    assert "coverage" not in out["probe_branch"]
    reach = PR.trace_reader_reach(cases, [2])
    assert reach == {"2": {"failed": 5, "hop_absent": 1, "named_by_none": 5}}
    assert M.failed_share(cases, "fact_in_trace", [2]) == {"2": 0.2}


def test_sweep_is_deterministic_and_resumes_after_a_kill(lab, tmp_path):
    lab.clean = dict(list(lab.clean.items())[:8])
    full = P.sweep(lab, "structural", [1, 2], P.case_store("t", {"k": 1}, tmp_path / "a"))
    store_file = next((tmp_path / "a").glob("*.jsonl"))
    lines = store_file.read_text().splitlines(keepends=True)
    killed = tmp_path / "b" / store_file.name
    killed.parent.mkdir()
    killed.write_text("".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:25])  # torn last line
    resumed = P.sweep(lab, "structural", [1, 2], P.case_store("t", {"k": 1}, tmp_path / "b"))
    a, b = M.attribution(full, [1, 2]), M.attribution(resumed, [1, 2])
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert all(r["diagnoses"] == {} for r in full.to_dict("records") if r["correct"])
    assert P.case_store("t", {"k": 1}, tmp_path).path == P.case_store("t", {"k": 1}, tmp_path).path
    assert P.case_store("t", {"k": 2}, tmp_path).path != P.case_store("t", {"k": 1}, tmp_path).path


def latest_below(trace, threshold=0.05, tokenizer="authors"):
    """A broken coverage: the latest hop below the threshold instead of the earliest."""
    below = [h.index for h in trace.hops if dg.coverage_score(trace.gold, h.docs, tokenizer) < threshold]
    return dg.Diagnosis("retrieval", below[-1]) if below else dg.NO_HOP


def own_hop_reference(trace, threshold=0.05, tokenizer="authors"):
    """A broken coverage: each hop checked against its own certified object instead of the final answer."""
    return dg.oracle_gold_hop(trace)


COVERAGE_CLAIMS = {
    "coverage-collapse": ("structural", ["Coverage collapses at hop 2", "Coverage collapses at hop 3"]),
}


@pytest.mark.parametrize("chapter", sorted(COVERAGE_CLAIMS))
def test_coverage_collapse_claims_fail_when_coverage_is_broken(tmp_path, monkeypatch, chapter):
    from rcakit import claims

    arm, checked = COVERAGE_CLAIMS[chapter]
    small = P.build_lab(3, n_entities=600, n_questions=30, hops=3)
    params = {"coverage_threshold": 0.05, "hops": 3, "world": "synthetic"}

    def verdicts(folder):
        cases = P.sweep(small, arm, [1, 2, 3], P.case_store("t", {"arm": arm}, tmp_path / folder))
        result = M.attribution(cases, [1, 2, 3])
        table = claims.compare(chapter, {**result, "accuracy_ci": M.interval_pairs(result)}, params)
        return {c: table[table["claim"].str.startswith(c)]["verdict"].item() for c in checked}

    assert set(verdicts("right").values()) == {"holds"}  # definitional context, checked against its rule
    failed = set()
    for mutant in (latest_below, own_hop_reference):
        monkeypatch.setattr(dg, "coverage", mutant)
        failed |= {c for c, v in verdicts(mutant.__name__).items() if v == "fails"}
    assert failed == set(checked)  # each collapse claim (the paper's 0 in the interval) fails under a broken coverage


# --- lab, store, metrics and the arm runner -----------------------------------------------------


def test_lab_construction_runs_nothing_until_built():
    lab = P.build_lab(3, n_entities=300, n_questions=8, hops=2)
    bare = P.Lab(lab.world, lab.agent, lab.seed)
    assert bare.clean == {} and bare.clean_usage == {}
    built = P.Lab.build(lab.world, lab.agent, lab.seed)
    assert [t.answer for t in built.clean.values()] == [t.answer for t in lab.clean.values()]
    assert built.clean_accuracy == sum(t.correct for t in lab.clean.values()) / len(lab.clean)
    assert built.eligible_questions([1, 4]) == {"1": sum(t.correct for t in lab.clean.values()), "4": 0}


def test_diagnosers_are_the_dispatch_in_table_order():
    assert P.DIAGNOSERS == tuple(P.OFFLINE) and P.DIAGNOSERS[:3] == P.TRACE_READERS
    assert set(P.PROBES) < set(P.DIAGNOSERS) and len(set(P.DIAGNOSERS)) == 8


def test_case_store_lands_under_the_results_folder(tmp_path, monkeypatch):
    from rcakit.store import code_digest

    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "res"))
    default = P.case_store("coverage-collapse", {"seed": 0})
    relative = P.case_store("coverage-collapse", {"seed": 0}, "cases")
    assert default.path.parent == relative.path.parent == tmp_path / "res" / "cases"
    assert P.case_store("x", {}, tmp_path / "abs").path.parent == tmp_path / "abs"
    # the store is keyed by the code of every module that can change a case, the LLM layer included
    assert default.fingerprint["code"] == code_digest(P.CASE_CODE) and "rcakit.llm" in P.CASE_CODE
    assert not default.path.exists()  # opening a store writes nothing


def test_live_and_failed_drop_skipped_and_recovered_cases():
    cases = pd.DataFrame(
        [{"skipped": True, "correct": False}, {"skipped": False, "correct": True}, {"skipped": False, "correct": False}]
    )
    assert list(P.live(cases).index) == [1, 2] and list(P.failed(cases).index) == [2]


def test_content_metrics_on_hand_made_cases():
    cases = pd.DataFrame(
        [
            content_row("a", 3, "answer_fact", "absorbed", later=False, hop=3),
            content_row("b", 3, "answer_fact", "absorbed", later=False, hop=1),
            content_row("c", 1, "bridge_entity", "absorbed", contaminated=True),
            content_row("d", 1, "bridge_entity", "derailed", hop=2),
            content_row("e", 2, "salient_entity", "resisted"),
            {**content_row("f", 1, "bridge_entity", "derailed"), "skipped": True},
        ]
    )
    absorbed = O.absorption(cases)
    assert absorbed["absorbed_n"] == 3 and absorbed["absorbed_answer_fact_n"] == 2
    assert absorbed["absorbed_answer_fact_share"] == pytest.approx(2 / 3)
    assert absorbed["salient_entity_absorbed"] == {"k": 0, "n": 1}
    found = O.query_contamination(cases)
    assert {k: found[k] for k in ("k", "n", "share")} == {"k": 1, "n": 3, "share": 1 / 3}
    assert found["ci"][0] < 1 / 3 < found["ci"][1]  # the share's Wilson interval, the claim's rule
    pooled, by_depth = O.bridge_slice(cases)
    assert pooled["n"] == 2 and pooled["suf_regen"]["point"] == 0.5 and list(by_depth) == ["hop 1"]
    record = O.outcome_record(O.outcome_shares(cases))
    assert record["3"] == {"absorbed": 1.0, "resisted": 0.0, "derailed": 0.0, "n": 2}


def test_flatten_joins_nested_keys():
    from rcakit.prose import flatten

    assert flatten({"acc": {"coverage": {"1": 0.5}}, "n": 3}, "x_") == {"x_acc_coverage_1": 0.5, "x_n": 3}


def test_an_undefined_share_is_quoted_as_no_such_case():
    """A depth with no case to count (coverage-collapse at spare_hops 3) glues text a page can show."""
    from rcakit.prose import NO_CASE, percent

    assert percent(0.97) == "97.0%" and percent(1.0, 0) == "100%" and percent(0.0) == "0.0%"
    assert percent(None) == NO_CASE and "None" not in NO_CASE and "nan" not in NO_CASE
