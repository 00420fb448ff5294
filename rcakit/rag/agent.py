"""A resumable hop-by-hop agent with a pluggable reader (AgenticRAG-FP §3-4).

At each hop the agent forms a sub-query from the relation and the current
bridge entity, retrieves with BM25, and asks its reader for the relation's
object. The offline ``RuleReader`` misses with probability ``noise``; the
agent then reformulates once (relation words plus subject) and, failing that,
guesses from the evidence. A hop that yields nothing leaves its relation
unresolved for the next hop; the agent has ``spare_hops`` extra hops beyond
the question's length and answers from its evidence when it runs out.

Reading noise is drawn from ``random.Random`` keyed by (seed, question, hop,
attempt), so a rerun from a changed prefix meets the same draws as the clean
run wherever the situation is the same (common random numbers).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

from rcakit import RcakitError
from rcakit.rag.retrieval import Retriever
from rcakit.rag.text import answer_correct
from rcakit.rag.world import RELATIONS, Paragraph, Question, Relation, World

REFORMULATION_WORDS = {
    "directed_by": "film directed by director", "produced_by": "produced by studio production",
    "born_in": "born in birthplace", "educated_at": "studied at graduated from university",
    "founded_by": "founded by founder established", "headquartered_in": "headquartered in offices",
    "located_in": "located in campus", "in_country": "city in country part of",
}
MODES = ("read", "reformulated", "guessed", "unresolved", "unread")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Hop:
    """One hop of a trace. ``mode == "unread"`` marks evidence set by an intervention, not yet read."""

    index: int  # 1-based position in the trace
    relation: int  # index into question.relations this hop tries to resolve
    subject: str
    query: str
    docs: tuple[Paragraph, ...]
    entity: str | None
    mode: str
    cost: int
    queries: tuple[str, ...] = ()
    label: str = ""  # intervention label, empty for a clean hop

    @property
    def doc_ids(self) -> tuple[int, ...]:
        return tuple(d.id for d in self.docs)


@dataclass(frozen=True)
class Trace:
    """tau = (q, {(q_h, D_h)}, A, y, c): question, hops, answer, gold and token cost (§3)."""

    question: Question
    hops: tuple[Hop, ...]
    answer: str
    terminated: bool = False
    extra_cost: int = field(default=0)

    @property
    def gold(self) -> str:
        return self.question.answer

    @property
    def correct(self) -> bool:
        return answer_correct(self.answer, self.gold)

    @property
    def cost(self) -> int:
        return sum(h.cost for h in self.hops) + self.extra_cost


class Reader(Protocol):
    """What the agent asks of a reader; an LLM-backed reader implements the same two calls."""

    def read(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> str | None: ...

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None: ...


class RuleReader:
    """Reads "subject -relation-> object" from paragraphs titled by the subject.

    A sentence states the relation when it matches the relation's cue; the
    object is the first entity mention of the expected type in it, so a
    director that is a country is not read (as a language model would balk).
    A guess takes the first typed object of any sentence stating the relation,
    whoever its subject: the drift to a neighbouring fact.
    """

    def __init__(self, world: World, noise: float, seed: int):
        if not 0.0 <= noise <= 1.0:
            raise RcakitError(f"reading_noise: expected a probability in [0, 1], got {noise}")
        self.types, self.noise, self.seed = world.types, noise, seed
        self._max_words = max(len(n.split()) for n in world.types)

    def mentions(self, sentence: str) -> list[str]:
        """Entity names in ``sentence``, longest match first, left to right."""
        words = _WORD.findall(sentence)
        found, i = [], 0
        while i < len(words):
            for span in range(min(self._max_words, len(words) - i), 0, -1):
                name = " ".join(words[i:i + span])
                if name in self.types:
                    found.append(name)
                    i += span
                    break
            else:
                i += 1
        return found

    def _object(self, sentence: str, relation: Relation, subject: str) -> str | None:
        typed = [m for m in self.mentions(sentence) if m != subject and self.types[m] == relation.object_type]
        return typed[0] if typed else None

    def _statements(self, docs: Sequence[Paragraph], relation: Relation):
        cue = re.compile(relation.cue, re.IGNORECASE)
        for doc in docs:
            for sentence in _SENTENCE.split(doc.text):
                if cue.search(sentence):
                    yield doc, sentence

    def read(self, docs, relation, subject, key):
        if random.Random(f"{self.seed}:{key}").random() < self.noise:
            return None
        for doc, sentence in self._statements(docs, relation):
            if doc.title == subject and (obj := self._object(sentence, relation, subject)):
                return obj
        return None

    def guess(self, docs, relation, subject):
        for _, sentence in self._statements(docs, relation):
            if obj := self._object(sentence, relation, subject):
                return obj
        return None


def _tokens_in(docs: Sequence[Paragraph]) -> int:
    return sum(len(d.text.split()) for d in docs)


class Agent:
    """Hop-by-hop agent: ``run``, ``resume_from`` a changed prefix, ``force_answer`` from evidence."""

    def __init__(self, world: World, retriever: Retriever, reader: Reader, top_k: int = 3, spare_hops: int = 1):
        if top_k < 1:
            raise RcakitError(f"top_k: expected >= 1, got {top_k}")
        self.world, self.retriever, self.reader = world, retriever, reader
        self.top_k, self.spare_hops = top_k, spare_hops

    def fetch(self, query: str) -> tuple[Paragraph, ...]:
        """Top-k clean paragraphs for ``query``."""
        return tuple(self.world.corpus[i] for i in self.retriever.search(query, self.top_k))

    @staticmethod
    def query_for(relation: str, subject: str) -> str:
        return RELATIONS[relation].phrase.format(subject)

    def _hop(self, q: Question, index: int, ri: int, subject: str) -> Hop:
        rel = RELATIONS[q.relations[ri]]
        query = self.query_for(rel.name, subject)
        docs = self.fetch(query)
        queries, mode = (query,), "read"
        entity = self.reader.read(docs, rel, subject, f"{q.id}:{index}:0")
        if entity is None:
            second = f"{subject} {REFORMULATION_WORDS[rel.name]}"
            queries, mode = (query, second), "reformulated"
            fresh = self.fetch(second)
            docs = docs + tuple(d for d in fresh if d not in docs)
            entity = self.reader.read(fresh, rel, subject, f"{q.id}:{index}:1")
        if entity is None:
            entity = self.reader.guess(docs, rel, subject)
            mode = "guessed" if entity else "unresolved"
        cost = sum(len(x.split()) for x in queries) + _tokens_in(docs)
        return Hop(index, ri, subject, query, docs, entity, mode, cost, queries)

    def _read_fixed(self, q: Question, hop: Hop) -> Hop:
        """Read evidence an intervention placed at this hop: no new retrieval, so no reformulation."""
        rel = RELATIONS[q.relations[hop.relation]]
        entity, mode = self.reader.read(hop.docs, rel, hop.subject, f"{q.id}:{hop.index}:0"), "read"
        if entity is None:
            entity = self.reader.guess(hop.docs, rel, hop.subject)
            mode = "guessed" if entity else "unresolved"
        cost = len(hop.query.split()) + _tokens_in(hop.docs)
        return replace(hop, entity=entity, mode=mode, cost=cost)

    def run(self, q: Question) -> Trace:
        """The clean trace of question ``q``."""
        return self.resume_from(q, (), 1)

    def resume_from(self, q: Question, prefix: Sequence[Hop], start_hop: int) -> Trace:
        """Keep ``prefix`` (hops 1..start_hop-1), read any unread hop in it, then regenerate the suffix."""
        if len(prefix) != start_hop - 1:
            raise RcakitError(f"resume_from: prefix has {len(prefix)} hops, start_hop is {start_hop}")
        hops, ri, subject = [], 0, q.start
        for hop in prefix:
            if hop.mode == "unread":
                hop = self._read_fixed(q, hop)
            hops.append(hop)
            ri, subject = (hop.relation + 1, hop.entity) if hop.entity else (hop.relation, hop.subject)
        index = start_hop
        while ri < len(q.relations) and index <= len(q.relations) + self.spare_hops:
            hop = self._hop(q, index, ri, subject)
            hops.append(hop)
            if hop.entity:
                ri, subject = ri + 1, hop.entity
            index += 1
        if ri == len(q.relations):
            return Trace(q, tuple(hops), subject)
        answer, cost = self._answer_from(q, hops)
        return Trace(q, tuple(hops), answer, extra_cost=cost)

    def _answer_from(self, q: Question, hops: Sequence[Hop]) -> tuple[str, int]:
        pooled = []
        for hop in hops:
            pooled += [d for d in hop.docs if d not in pooled]
        subject = q.start
        for ri, name in enumerate(q.relations):
            rel = RELATIONS[name]
            found = self.reader.read(pooled, rel, subject, f"{q.id}:force:{ri}") or self.reader.guess(pooled, rel, subject)
            if found is None:
                return "", _tokens_in(pooled)
            subject = found
        return subject, _tokens_in(pooled)

    def force_answer(self, q: Question, prefix: Sequence[Hop]) -> Trace:
        """Answer from the prefix's pooled evidence, with no further retrieval."""
        answer, cost = self._answer_from(q, prefix)
        return Trace(q, tuple(prefix), answer, terminated=True, extra_cost=cost)
