"""What an agent run leaves behind: its hops and its trace (AgenticRAG-FP §3).

A trace is tau = (q, {(q_h, D_h)}, A, y, c): the question, per hop the query
issued and the documents retrieved, the final answer, the gold answer and the
cost. The workbench counts the cost in whitespace words (query words issued
plus document words read): ``Hop.word_cost``, ``Trace.word_cost`` and
:func:`tokens_read`.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rcakit.rag.text import answer_correct
from rcakit.rag.world import Paragraph, Question


@dataclass(frozen=True)
class Hop:
    """One hop of a trace. ``mode`` is read, reformulated (read after a second search), guessed, abstained,
    unresolved, or unread (evidence set by an intervention, not yet read). ``word_cost`` is the query and
    document words of the hop.
    """

    index: int  # 1-based position in the trace
    relation: int  # index into question.relations this hop tries to resolve
    subject: str
    query: str
    docs: tuple[Paragraph, ...]
    entity: str | None
    mode: str
    word_cost: int
    queries: tuple[str, ...] = ()
    label: str = ""  # intervention label, empty for a clean hop

    @property
    def doc_ids(self) -> tuple[int, ...]:
        return tuple(d.id for d in self.docs)


@dataclass(frozen=True)
class Trace:
    """tau = (q, {(q_h, D_h)}, A, y, c): question, hops, answer, gold and cost (§3), the cost in words."""

    question: Question
    hops: tuple[Hop, ...]
    answer: str
    terminated: bool = False
    extra_words: int = field(default=0)  # words read to force an answer from pooled evidence

    @property
    def gold(self) -> str:
        return self.question.answer

    @property
    def correct(self) -> bool:
        return answer_correct(self.answer, self.gold)

    @property
    def word_cost(self) -> int:
        """Whitespace words issued and read over the whole trace (the workbench's token count)."""
        return sum(h.word_cost for h in self.hops) + self.extra_words

    @property
    def documents(self) -> tuple[Paragraph, ...]:
        """Every document the trace retrieved, each once, in the order first retrieved."""
        return pooled(self.hops)


def pooled(hops: Sequence[Hop]) -> tuple[Paragraph, ...]:
    """The documents of ``hops``, each once, in the order first retrieved (the evidence a forced answer reads)."""
    return tuple(dict.fromkeys(d for hop in hops for d in hop.docs))


def tokens_read(docs: Sequence[Paragraph]) -> int:
    """The words an agent reads in ``docs`` (the workbench's token count)."""
    return sum(len(d.text.split()) for d in docs)
