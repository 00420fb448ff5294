"""Tests of rcakit.rag's readers, the actions they return and the agent that acts on them, and the synthetic
world's parts (relations, entities).

No model is needed: ``ScriptedProvider`` answers in-process, deterministically in the prompt.
"""

import hashlib
import json
import pickle
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from rcakit.llm import MethodUsage, ResponseCache, cached
from rcakit.rag import fidelity
from rcakit.rag import protocol as P
from rcakit.rag.agent import Agent, AgentSettings
from rcakit.rag.entities import TYPE_COUNTS, draw_entities, draw_lookalikes
from rcakit.rag.interventions import FALSE_PREMISE
from rcakit.rag.readers import ABSTAIN, NO_ACTION, Action, LLMReader, RuleReader, parse_action, rule_reformulation
from rcakit.rag.relations import RELATIONS
from rcakit.rag.world import build_world
from support.llm_servers import ScriptedProvider

PHRASES = [(re.compile("^" + re.escape(r.phrase).replace(r"\{\}", "(.+)") + "$"), r.name) for r in RELATIONS.values()]


@pytest.fixture(scope="module")
def lab():
    return P.build_lab(3, n_entities=600, n_questions=30, hops=3)


def asked(text):
    """(subject, relation) of the sub-question in a reader prompt."""
    ask = re.match(r"Sub-question: what is (.+)\?\n", text).group(1)
    return next((m.group(1), name) for rx, name in PHRASES if (m := rx.match(ask)))


@dataclass
class Model:
    """A reader model, deterministic in its prompt: when the subject's own paragraph is shown it answers, except
    for one prompt in three, where it asks to search with a query naming the subject (as when it is missing).
    A plain object, so that a reader over it pickles."""

    world: object
    pause: float = 0.0  # lets concurrent reads interleave

    def __call__(self, messages):
        time.sleep(self.pause)
        text = messages[-1]["content"]
        subject, rel = asked(text)
        odd = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 3 == 0
        if f"] {subject}: " in text and not odd:
            return json.dumps({"action": "answer", "answer": self.world.facts[subject][rel]})
        return json.dumps({"action": "search", "query": f"{subject} biography facts"})


def llm_reader(lab, respond, folder, **settings):
    chat = cached(ScriptedProvider(respond), cache=ResponseCache(folder), accounting=MethodUsage())
    return LLMReader(chat, lab.agent.reader, 5, **settings)


def reformulating(lab, reader):
    return Agent(lab.world, lab.agent.corpora, reader, AgentSettings(top_k=lab.agent.top_k, reformulate=True))


@dataclass
class Planted:
    """A reader whose action per read key is planted (a miss by default); it guesses nothing."""

    actions: dict = field(default_factory=dict)
    keys: list = field(default_factory=list)

    def act(self, docs, relation, subject, key):
        self.keys.append(key)
        return self.actions.get(key, NO_ACTION)

    def guess(self, docs, relation, subject):
        return None

    def mentions(self, sentence):
        return []


# --- actions ---------------------------------------------------------------------------------------


def test_an_action_says_what_the_agent_does_next():
    assert (Action("answer", "Ada").answer, Action("answer", "Ada").query) == ("Ada", None)
    assert (Action("search", "q w").answer, Action("search", "q w").query) == (None, "q w")
    assert Action("search", "q").missed and NO_ACTION.missed
    assert not ABSTAIN.missed and not Action("answer", "Ada").missed
    assert Action("answer", "Ada") == ("answer", "Ada")  # a recorded action compares as a plain pair


def test_parse_action_returns_the_models_action_and_rejects_an_empty_query():
    assert parse_action({"action": "search", "query": "  born   in\nVelane "}) == Action("search", "born in Velane")
    assert parse_action({"action": "answer", "answer": "Ada Velane"}).answer == "Ada Velane"
    with pytest.raises(ValueError, match="query"):
        parse_action({"action": "search", "query": " "})
    with pytest.raises(ValueError, match="expected"):
        parse_action({"action": "stop"})


# --- the readers -----------------------------------------------------------------------------------


def test_the_llm_readers_search_action_carries_the_models_query(lab, tmp_path):
    q = lab.world.questions[0]
    rel = RELATIONS[q.relations[0]]
    reader = llm_reader(lab, lambda m: json.dumps({"action": "search", "query": "Velane  film credits"}), tmp_path)
    first = reader.act((), rel, q.start, f"{q.id}:1:0")
    assert first == Action("search", "Velane film credits") and first.query == "Velane film credits"
    assert reader.act((), rel, q.start, f"{q.id}:1:0") == first  # reading again gives the same action
    assert set(vars(reader)) == {"chat", "fallback", "seed", "max_doc_chars", "max_tokens"}  # settings only


def test_an_invalid_reply_is_no_action_and_the_rule_words_are_searched(lab, tmp_path):
    q = lab.world.questions[0]
    reader = llm_reader(lab, lambda m: "not json", tmp_path)
    assert reader.act((), RELATIONS[q.relations[0]], q.start, "k") == NO_ACTION
    hop = reformulating(lab, reader)._hop(q, 1, 0, q.start)
    assert hop.queries == (hop.query, rule_reformulation(RELATIONS[q.relations[0]], q.start))


def test_the_rule_reader_abstains_on_a_heeded_warning_and_reads_through_an_ignored_one(lab):
    gold = lab.world.questions[0].hops[0]
    docs = (FALSE_PREMISE, lab.world.corpus[gold.paragraph_id])
    rel = RELATIONS[gold.relation]
    assert RuleReader(lab.world, 0.0, 0, 1.0).act(docs, rel, gold.subject, "k") == ABSTAIN
    assert RuleReader(lab.world, 0.0, 0, 0.0).act(docs, rel, gold.subject, "k") == Action("answer", gold.object)
    assert RuleReader(lab.world, 1.0, 0, 0.0).act(docs, rel, gold.subject, "k") == NO_ACTION  # a noisy miss


def test_truncated_docs_counts_each_cut_document_of_a_trace_once(lab, tmp_path):
    q = lab.world.questions[1]
    reader = llm_reader(lab, Model(lab.world), tmp_path, max_doc_chars=120)
    trace = reformulating(lab, reader).run(q)
    long = {d.id for h in trace.hops for d in h.docs if len(d.text) > 120}
    assert long and reader.truncated_docs(trace) == len(long)
    assert llm_reader(lab, Model(lab.world), tmp_path, max_doc_chars=10**6).truncated_docs(trace) == 0


# --- the agent acts on the action ------------------------------------------------------------------


def test_the_agent_searches_again_with_the_query_a_search_action_names(lab):
    q = lab.world.questions[0]
    own = lab.world.corpus[q.hops[0].paragraph_id].title
    reader = Planted({f"{q.id}:1:0": Action("search", own), f"{q.id}:1:1": Action("answer", q.hops[0].object)})
    hop = reformulating(lab, reader)._hop(q, 1, 0, q.start)
    assert hop.queries == (hop.query, own) and (hop.mode, hop.entity) == ("reformulated", q.hops[0].object)
    assert reader.keys == [f"{q.id}:1:0", f"{q.id}:1:1"]
    once = lab.agent.with_reader(Planted({f"{q.id}:1:0": Action("search", own)}))._hop(q, 1, 0, q.start)
    assert once.queries == (once.query,) and once.mode == "unresolved"  # the authors' agent searches once


def test_an_abstention_neither_searches_again_nor_guesses(lab):
    q = lab.world.questions[0]
    reader = Planted({f"{q.id}:1:0": ABSTAIN})
    reader.guess = lambda docs, relation, subject: "Somebody"
    hop = reformulating(lab, reader)._hop(q, 1, 0, q.start)
    assert (hop.mode, hop.entity, hop.queries) == ("abstained", None, (hop.query,))
    assert reformulating(lab, Planted())._hop(q, 1, 0, q.start).mode == "unresolved"  # a miss is not abstaining


def test_threads_sharing_one_reader_give_the_serial_traces(lab, tmp_path):
    questions = lab.world.questions[:20]
    serial = [reformulating(lab, llm_reader(lab, Model(lab.world), tmp_path / "a")).run(q) for q in questions]
    searched = [h for t in serial for h in t.hops if h.mode == "reformulated"]
    assert searched and all(h.queries[1].endswith("biography facts") for h in searched)
    shared = reformulating(lab, llm_reader(lab, Model(lab.world, pause=0.002), tmp_path / "b"))
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(shared.run, questions)) == serial


def test_a_pickled_reader_reads_as_the_original(lab, tmp_path):
    q = lab.world.questions[2]
    agent = reformulating(lab, llm_reader(lab, Model(lab.world), tmp_path))
    assert pickle.loads(pickle.dumps(agent)).run(q) == agent.run(q)


def test_a_recorded_run_replays_the_planted_actions(lab):
    q = lab.world.questions[0]
    reader = Planted({f"{q.id}:1:0": Action("search", "x")})
    trace, reads = fidelity.record_reads(reformulating(lab, reader), q)
    assert [r.key for r in reads] == reader.keys[: len(reads)] and reads[0].action == Action("search", "x")
    assert trace.hops[0].queries[1] == "x" and fidelity.replay_reads(reader, reads).rate == 1.0


# --- the synthetic world's parts -------------------------------------------------------------------


def test_entities_are_drawn_in_their_shares_and_lookalikes_contain_the_original():
    types = draw_entities(600, random.Random(0))
    assert types == draw_entities(600, random.Random(0)) and set(types.values()) == set(TYPE_COUNTS)
    for kind, share in TYPE_COUNTS.items():
        assert sum(t == kind for t in types.values()) == max(3, round(share * 600))
    twins = draw_lookalikes(types, 0.3, random.Random(1))
    assert 0.2 * len(types) < len(twins) < 0.4 * len(types)
    assert all(name.startswith(original + " ") and name not in types for name, original in twins.items())


def test_builders_take_their_settings_by_keyword():
    with pytest.raises(TypeError):
        build_world(0, 300)
    with pytest.raises(TypeError):
        P.build_lab(0, 300)
    world = build_world(0, n_entities=300, n_questions=5)
    assert world.relations == RELATIONS and len(world.questions) == 5
