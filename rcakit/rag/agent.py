"""A resumable hop-by-hop agent that acts on its reader's actions (AgenticRAG-FP §3-4, the authors' agent by default).

At each hop the agent forms a sub-query from the relation and the current
bridge entity, retrieves the ``top_k`` best paragraphs of the question's
corpus with BM25 (``rcakit.rag.retrieval.Corpora``), and asks its reader
(``rcakit.rag.readers``) for the action of that read: an answer resolves the
relation; an abstention leaves it unresolved; after a miss (no answer, or a
search) the agent guesses from the evidence with the reader's guess, or, when
``reformulate`` is on, first searches once more (the search action's query,
else the rule words) and reads the new documents. A hop that yields nothing
leaves its relation unresolved for the next hop. The hop budget is the
question's hop count plus ``spare_hops``; when it is spent the agent is forced
to answer from the evidence it has.

``AgentSettings`` holds these choices; its defaults are the authors'
(``rcakit.rag.settings.AUTHORS``, from the authors' code, ``anote-ai/Research-AgenticRAG``: a budget of 3
for their three-hop questions, one retrieval per hop, five paragraphs each); the targeted variant's agent
(``rcakit.rag.settings.EARLIER``) searched a second time inside a hop after a miss and had one spare hop.

The agent keeps no state between questions: its world, corpora, reader and
settings. Its runs are traces (``rcakit.rag.trace``), their cost in words.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rcakit import RcakitError
from rcakit.rag.readers import ABSTAIN, Action, Reader, rule_reformulation
from rcakit.rag.retrieval import Corpora
from rcakit.rag.settings import AUTHORS
from rcakit.rag.trace import Hop, Trace, pooled, tokens_read
from rcakit.rag.world import Paragraph, Question, Relation, World

__all__ = ["Agent", "AgentSettings"]


@dataclass(frozen=True)
class AgentSettings:
    """The agent's budget and search, the authors' by default (``rcakit.rag.settings.AUTHORS``).

    ``top_k`` paragraphs per retrieval; the hop budget is the question's hops
    plus ``spare_hops`` (0: the authors' 3 for three-hop questions);
    ``reformulate`` lets a hop search a second time after a failed read (the
    authors' agent retrieves once per hop).
    """

    top_k: int = AUTHORS.top_k
    spare_hops: int = AUTHORS.spare_hops
    reformulate: bool = AUTHORS.reformulate

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise RcakitError(f"top_k: expected >= 1, got {self.top_k}")
        if self.spare_hops < 0:
            raise RcakitError(f"spare_hops: expected >= 0, got {self.spare_hops}")

    def budget(self, q: Question) -> int:
        """The hops question ``q``'s agent may retrieve before it is forced to answer."""
        return len(q.relations) + self.spare_hops


class Agent:
    """Hop-by-hop agent: ``run``, ``resume_from`` a changed prefix, ``force_answer`` from evidence."""

    def __init__(self, world: World, corpora: Corpora, reader: Reader, settings: AgentSettings | None = None) -> None:
        self.world, self.corpora, self.reader = world, corpora, reader
        self.settings = settings or AgentSettings()

    @property
    def top_k(self) -> int:
        return self.settings.top_k

    def with_reader(self, reader: Reader) -> Agent:
        """The same agent (world, corpora, settings) with another reader."""
        return Agent(self.world, self.corpora, reader, self.settings)

    def fetch(self, q: Question, query: str) -> tuple[Paragraph, ...]:
        """Top-k clean paragraphs for ``query`` in question ``q``'s corpus."""
        return self.corpora.search(q, query, self.top_k)

    def query_for(self, relation: str, subject: str) -> str:
        """The hop's sub-query: the relation's phrase for ``subject``."""
        return self.world.relations[relation].phrase.format(subject)

    def _outcome(
        self, action: Action, docs: Sequence[Paragraph], rel: Relation, subject: str
    ) -> tuple[str | None, str]:
        """(entity, mode) after a read's ``action``: its answer; nothing after an abstention; after a miss,
        the reader's guess from ``docs``."""
        if action == ABSTAIN:
            return None, "abstained"
        if action.answer is not None:
            return action.answer, "read"
        entity = self.reader.guess(docs, rel, subject)
        return entity, "guessed" if entity else "unresolved"

    def _hop(self, q: Question, index: int, ri: int, subject: str) -> Hop:
        rel = self.world.relations[q.relations[ri]]
        query = self.query_for(rel.name, subject)
        docs = self.fetch(q, query)
        queries = (query,)
        action = self.reader.act(docs, rel, subject, f"{q.id}:{index}:0")
        if self.settings.reformulate and action.missed:
            second = action.query or rule_reformulation(rel, subject)
            fresh = self.fetch(q, second)
            queries, docs = (query, second), docs + tuple(d for d in fresh if d not in docs)
            action = self.reader.act(fresh, rel, subject, f"{q.id}:{index}:1")
        entity, mode = self._outcome(action, docs, rel, subject)
        if mode == "read" and len(queries) == 2:
            mode = "reformulated"
        cost = sum(len(x.split()) for x in queries) + tokens_read(docs)
        return Hop(index, ri, subject, query, docs, entity, mode, cost, queries)

    def _read_fixed(self, q: Question, hop: Hop) -> Hop:
        """Read evidence an intervention placed at this hop: no new retrieval, so no reformulation."""
        rel = self.world.relations[q.relations[hop.relation]]
        action = self.reader.act(hop.docs, rel, hop.subject, f"{q.id}:{hop.index}:0")
        entity, mode = self._outcome(action, hop.docs, rel, hop.subject)
        cost = len(hop.query.split()) + tokens_read(hop.docs)
        return replace(hop, entity=entity, mode=mode, word_cost=cost)

    def run(self, q: Question) -> Trace:
        """The clean trace of question ``q``."""
        return self.resume_from(q, (), 1)

    def resume_from(self, q: Question, prefix: Sequence[Hop], start_hop: int) -> Trace:
        """Keep ``prefix`` (hops 1..start_hop-1), read any unread hop in it, then regenerate the suffix
        within the hop budget; a chain still open when the budget is spent is answered from the evidence."""
        if len(prefix) != start_hop - 1:
            raise RcakitError(f"resume_from: prefix has {len(prefix)} hops, start_hop is {start_hop}")
        hops, ri, subject = [], 0, q.start
        for hop in prefix:
            if hop.mode == "unread":
                hop = self._read_fixed(q, hop)
            hops.append(hop)
            ri, subject = (hop.relation + 1, hop.entity) if hop.entity else (hop.relation, hop.subject)
        index = start_hop
        while ri < len(q.relations) and index <= self.settings.budget(q):
            hop = self._hop(q, index, ri, subject)
            hops.append(hop)
            if hop.entity:
                ri, subject = ri + 1, hop.entity
            index += 1
        if ri == len(q.relations):
            return Trace(q, tuple(hops), subject)
        answer, cost = self._answer_from(q, hops)
        return Trace(q, tuple(hops), answer, extra_words=cost)

    def _answer_from(self, q: Question, hops: Sequence[Hop]) -> tuple[str, int]:
        """Walk the whole chain over the pooled evidence of ``hops``: the answer ("" when a relation stays
        unresolved) and the words read."""
        evidence = pooled(hops)
        subject = q.start
        for ri, name in enumerate(q.relations):
            rel = self.world.relations[name]
            action = self.reader.act(evidence, rel, subject, f"{q.id}:force:{ri}")
            found, _ = self._outcome(action, evidence, rel, subject)
            if found is None:
                return "", tokens_read(evidence)
            subject = found
        return subject, tokens_read(evidence)

    def force_answer(self, q: Question, prefix: Sequence[Hop]) -> Trace:
        """Answer from the prefix's pooled evidence, with no further retrieval."""
        answer, cost = self._answer_from(q, prefix)
        return Trace(q, tuple(prefix), answer, terminated=True, extra_words=cost)
