r"""Replay of a recorded RAG trace, read by read, and its action-match rate (CAR §3, for AgenticRAG-FP's agent).

CAR reports how faithfully a recorded run replays instead of assuming it. The
RAG agent's decisions are its reader's actions: at each read of a hop it
either answers with a name or asks for a search with its own query (or gives
nothing: a miss, an abstention). :func:`record_reads` runs a question once
and keeps every read's inputs (the documents shown, the relation, the
subject, the read key that seeds it) and its action. :func:`replay_reads`
asks a reader again from exactly those inputs with the same seeds, and
:class:`rcakit.fidelity.ActionMatch` counts the share whose action matches,

.. math:: \mathrm{AMR} = \frac{1}{|K|} \sum_{k \in K} \mathbf{1}[\hat a_k = a_k],

with its Wilson interval. The rule reader replays exactly (its draws are
keyed by the read), so its rate is 1. An LLM reader is replayed through
:class:`rcakit.llm.ReplayChannel`, under its own cache name, so the
response cache cannot answer the replay with the recorded reply; a rerun
reads the replay's own answers back. Which traces are replayed is a choice
the paper leaves open: the clean traces of the first questions of the world.

Used in the chapter `coverage-collapse`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rcakit import RcakitError
from rcakit.fidelity import ActionMatch
from rcakit.llm.cache import CachedProvider, cached
from rcakit.llm.replay import ReplayChannel
from rcakit.parallel import Runner
from rcakit.rag.agent import Agent
from rcakit.rag.readers import Action, LLMReader, Reader
from rcakit.rag.trace import Trace
from rcakit.rag.world import Paragraph, Question, Relation


@dataclass(frozen=True)
class Read:
    """One recorded read: its inputs (documents, relation, subject, seeding key) and the action taken."""

    key: str
    docs: tuple[Paragraph, ...]
    relation: Relation
    subject: str
    action: Action


@dataclass
class _Recorder:
    """A reader that asks ``inner`` and keeps each read as a :class:`Read` (one recorder per recorded run)."""

    inner: Reader
    reads: list[Read] = field(default_factory=list)

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> Action:
        action = self.inner.act(docs, relation, subject, key)
        self.reads.append(Read(key, tuple(docs), relation, subject, action))
        return action

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None:
        return self.inner.guess(docs, relation, subject)

    def mentions(self, sentence: str) -> list[str]:
        return self.inner.mentions(sentence)


def record_reads(agent: Agent, question: Question) -> tuple[Trace, tuple[Read, ...]]:
    """Run ``question`` with ``agent`` and keep every read its reader made, in order."""
    recorder = _Recorder(agent.reader)
    return agent.with_reader(recorder).run(question), tuple(recorder.reads)


def replay_reads(reader: Reader, reads: Sequence[Read]) -> ActionMatch:
    """Ask ``reader`` each recorded read again, from its recorded inputs and key (so its seed)."""
    replayed = tuple(reader.act(r.docs, r.relation, r.subject, r.key) for r in reads)
    return ActionMatch(tuple(range(len(reads))), tuple(r.action for r in reads), replayed)


def replay_reader(reader: Reader) -> Reader:
    """The reader a replay asks: the reader itself (the rule reader's draws are keyed by the read), or the
    LLM reader with its model behind a :class:`ReplayChannel` (same model, same seeds, its own cache entries)."""
    if not isinstance(reader, LLMReader):
        return reader
    chat = reader.chat
    if not isinstance(chat, CachedProvider):
        raise RcakitError("replay: the LLM reader's chat is not behind rcakit.llm.cached; a replay needs its cache")
    channel = cached(ReplayChannel(chat.provider), cache=chat.cache)
    return LLMReader(
        channel, reader.fallback, reader.seed, max_doc_chars=reader.max_doc_chars, max_tokens=reader.max_tokens
    )


@dataclass
class ReplayQuestion:
    """``work(question)``: record the question's clean run and replay its reads with ``replayer``."""

    agent: Agent
    replayer: Reader

    def __call__(self, question: Question) -> ActionMatch:
        return replay_reads(self.replayer, record_reads(self.agent, question)[1])


def agent_action_match(
    agent: Agent,
    questions: Sequence[Question],
    replayer: Reader | None = None,
    runner: Runner | None = None,
) -> ActionMatch:
    """Record each question's clean run and replay all its reads with ``replayer`` (by default
    :func:`replay_reader` of the agent's reader); the pooled :class:`ActionMatch`, questions in order.
    ``runner`` (``rcakit.parallel.Runner``, serial by default) runs the questions."""
    if not questions:
        raise RcakitError("replay: no question to replay")
    replayer = replay_reader(agent.reader) if replayer is None else replayer
    matches = (runner or Runner()).run([(q.id, q) for q in questions], ReplayQuestion(agent, replayer))
    pooled = functools.reduce(operator.add, matches)
    return ActionMatch(tuple(range(pooled.n)), pooled.recorded, pooled.replayed)


def match_record(match: ActionMatch) -> dict[str, Any]:
    """The results entry: rate, Wilson 95% interval, reads replayed and matched."""
    low, high = match.ci()
    return {"rate": match.rate, "ci": [low, high], "n": match.n, "matched": sum(match.matches)}
