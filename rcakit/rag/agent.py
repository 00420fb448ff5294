"""A resumable hop-by-hop agent with a pluggable reader (AgenticRAG-FP §3-4, the authors' agent by default).

At each hop the agent forms a sub-query from the relation and the current
bridge entity, retrieves the ``top_k`` best paragraphs of the question's
corpus with BM25 (``rcakit.rag.retrieval.Corpora``), and asks its reader for
the relation's object. A hop that yields nothing leaves its relation
unresolved for the next hop. The hop budget is the question's hop count plus
``spare_hops``; when it is spent the agent is forced to answer from the
evidence it has. ``AgentSettings`` holds these choices; its defaults are the
authors' (``papers/README.md``: a budget of 3 for their three-hop questions,
one retrieval per hop, ``top_k = 5``); ``reformulate = True`` and
``spare_hops = 1`` give the workbench's earlier agent, which searched a
second time inside a hop after a miss and had one spare hop.

The offline ``RuleReader`` misses a stated fact with probability ``noise``,
then guesses from the evidence. It also meets the authors' generic warning
texts (a false premise, a stale-evidence notice): with probability
``heed_warnings`` a read whose documents carry such a warning abstains
(no answer and no guess), as a language model that defers to the warning
would; otherwise it reads on as if the warning were not there.

Reading noise and heeding are drawn from ``random.Random`` keyed by (seed,
question, hop, attempt), so a rerun from a changed prefix meets the same
draws as the clean run wherever the situation is the same (common random
numbers).

``LLMReader`` puts a language model behind the same interface: per
hop it returns a JSON action, answer or search, and keys its seed by the same
(question, hop, attempt), so a resumed suffix reuses the cached prefix calls.

Costs are counted in whitespace words (query words issued plus document words
read): ``Hop.word_cost`` and ``Trace.word_cost``.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from rcakit import RcakitError
from rcakit.llm.base import Provider, request_seed
from rcakit.llm.prompts import clip, is_clipped
from rcakit.rag.retrieval import Corpora
from rcakit.rag.text import answer_correct
from rcakit.rag.world import Paragraph, Question, Relation, World

REFORMULATION_WORDS = {
    "directed_by": "film directed by director",
    "produced_by": "produced by studio production",
    "born_in": "born in birthplace",
    "educated_at": "studied at graduated from university",
    "founded_by": "founded by founder established",
    "headquartered_in": "headquartered in offices",
    "located_in": "located in campus",
    "in_country": "city in country part of",
}
NO_ACTION = ("none", "")  # a read that neither answered nor asked for a search (a miss, an abstention)
ABSTAIN = ("abstain", "")  # a read that heeded a warning: no answer, and no guess after it
# What the rule reader takes for a warning: the authors' generic false-premise and stale-evidence texts
# say that the entity does not exist or that the reported value is outdated.
WARNING_CUE = re.compile(r"does not exist|no specific answer|outdated|superseded", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Hop:
    """One hop of a trace. ``mode`` is read, reformulated, guessed, abstained or unresolved; ``unread`` marks
    evidence set by an intervention, not yet read. ``word_cost`` is the query and document words of the hop.
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


class Reader(Protocol):
    """What the agent asks of a reader: read a hop, say how to search again, guess, find mentions.

    ``key`` is "question:hop:attempt" (or "question:force:relation" when
    answering from pooled evidence). The agent calls ``reformulate`` only
    right after ``read`` with the same ``key`` returned ``None``, and passes
    that key: a reader may base its second query on that failed read (the
    ``LLMReader`` returns the query its model asked for), so a reader keeps
    at most the one pending query of the read just made. ``mentions`` finds
    the entity names in a sentence; the content interventions use it to
    choose the span they corrupt. ``heeds`` says whether the read ``key``
    abstains because ``docs`` carry a warning; the agent then neither reads
    nor guesses.
    """

    def read(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> str | None: ...

    def heeds(self, docs: Sequence[Paragraph], key: str) -> bool: ...

    def reformulate(self, relation: Relation, subject: str, key: str) -> str: ...

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None: ...

    def mentions(self, sentence: str) -> list[str]: ...


@runtime_checkable
class ActingReader(Reader, Protocol):
    """A reader whose read splits in two, as the replay of a recorded run needs (CAR §3): ``act`` gives the
    read's action with no side effect, ``apply`` turns it into what ``read`` returns (``read`` is
    ``apply(key, act(...))``). The rule and LLM readers are both."""

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> tuple[str, str]: ...

    def apply(self, key: str, action: tuple[str, str]) -> str | None: ...


def rule_reformulation(relation: Relation, subject: str) -> str:
    """The rule agent's second query: the subject plus the relation's question words."""
    return f"{subject} {REFORMULATION_WORDS[relation.name]}"


class RuleReader:
    """Reads "subject -relation-> object" from paragraphs titled by the subject.

    A sentence states the relation when it matches the relation's cue; the
    object is the first entity mention of the expected type in it, so a
    director that is a country is not read (as a language model would balk).
    A guess takes the first typed object of any sentence stating the relation,
    whoever its subject: the drift to a neighbouring fact. A read whose
    documents carry a warning (``WARNING_CUE``) abstains with probability
    ``heed_warnings`` (0: the warning is ignored; 1: always heeded).
    """

    def __init__(self, world: World, noise: float, seed: int, heed_warnings: float = 0.5) -> None:
        if not 0.0 <= noise <= 1.0:
            raise RcakitError(f"reading_noise: expected a probability in [0, 1], got {noise}")
        if not 0.0 <= heed_warnings <= 1.0:
            raise RcakitError(f"heed_warnings: expected a probability in [0, 1], got {heed_warnings}")
        self.types, self.noise, self.seed, self.heed_warnings = world.types, noise, seed, heed_warnings
        self._max_words = max(len(n.split()) for n in world.types)

    def heeds(self, docs: Sequence[Paragraph], key: str) -> bool:
        """Whether read ``key`` abstains: its documents carry a warning and the heed draw falls under
        ``heed_warnings``."""
        warned = any(WARNING_CUE.search(d.text) for d in docs)
        return warned and random.Random(f"{self.seed}:heed:{key}").random() < self.heed_warnings

    def mentions(self, sentence: str) -> list[str]:
        """Entity names in ``sentence``, longest match first, left to right."""
        words = _WORD.findall(sentence)
        found, i = [], 0
        while i < len(words):
            for span in range(min(self._max_words, len(words) - i), 0, -1):
                name = " ".join(words[i : i + span])
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

    def _statements(self, docs: Sequence[Paragraph], relation: Relation) -> Iterator[tuple[Paragraph, str]]:
        cue = re.compile(relation.cue, re.IGNORECASE)
        for doc in docs:
            for sentence in _SENTENCE.split(doc.text):
                if cue.search(sentence):
                    yield doc, sentence

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> tuple[str, str]:
        """The read's action, without side effects: ``("answer", name)`` or ``("none", "")`` (a miss)."""
        if random.Random(f"{self.seed}:{key}").random() < self.noise:
            return NO_ACTION
        for doc, sentence in self._statements(docs, relation):
            if doc.title == subject and (obj := self._object(sentence, relation, subject)):
                return "answer", obj
        return NO_ACTION

    def apply(self, key: str, action: tuple[str, str]) -> str | None:
        """What ``read`` returns for ``action``: the answer, or ``None``."""
        return action[1] if action[0] == "answer" else None

    def read(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> str | None:
        return self.apply(key, self.act(docs, relation, subject, key))

    def reformulate(self, relation: Relation, subject: str, key: str) -> str:
        return rule_reformulation(relation, subject)

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None:
        for _, sentence in self._statements(docs, relation):
            if obj := self._object(sentence, relation, subject):
                return obj
        return None


READER_SYSTEM = (
    "You are the reader of a multi-hop search agent. You get one sub-question and the documents "
    "retrieved for it. If the documents state the answer, reply "
    '{"action": "answer", "answer": "<the name, exactly as written>"}. Otherwise reply '
    '{"action": "search", "query": "<a better search query>"}. Reply with the JSON object only.'
)
ACTIONS = ("search", "answer")
ACTION_SCHEMA = {
    "anyOf": [
        {
            "type": "object",
            "properties": {"action": {"const": name}, field: {"type": "string"}},
            "required": ["action", field],
        }
        for name, field in (("answer", "answer"), ("search", "query"))
    ]
}


def parse_action(obj: Any) -> tuple[str, str]:
    """Validate a reader reply: ``("answer", name)`` or ``("search", query)``; ``ValueError`` says what is wrong."""
    if not isinstance(obj, dict) or obj.get("action") not in ACTIONS:
        raise ValueError('expected {"action": "answer" or "search", ...}')
    field_name = "answer" if obj["action"] == "answer" else "query"
    value = obj.get(field_name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"action {obj['action']} needs a non-empty string field {field_name!r}")
    return obj["action"], " ".join(value.split())


parse_action.schema = ACTION_SCHEMA


class LLMReader:
    """A language model as the agent's reader: one JSON action per read.

    The model sees the hop's sub-question (the relation's phrase for the
    subject) and the retrieved documents, and answers with the object or asks
    to search again with its own query; the agent then runs that query as its
    one reformulation. The reply is validated by :func:`parse_action` through
    ``rcakit.llm.ask_json`` (one retry with the error shown, then an
    abstention, counted in the chat's accounting). An abstention, like a
    search, is a failed read, so the agent takes its documented fallback:
    reformulate once (the rule words when the model gave no query), then
    guess from the evidence with the rule reader's typed guess.

    Requests run at temperature 0 with a seed derived from (chapter seed,
    question, hop, attempt), so the response cache key is stable and a resumed
    suffix meets the same cached calls as the clean run wherever its
    evidence is the same. Documents longer than ``max_doc_chars`` are cut
    with ``rcakit.llm.prompts.clip``'s marker and counted in ``truncated_docs``.

    Concurrent cases may share one reader: the pending search query lives in
    the thread that made the read (a case runs in one thread), and the count
    of cut documents is taken under a lock. A reader pickles without that
    per-thread state.
    """

    def __init__(
        self, chat: Provider, fallback: RuleReader, seed: int, max_doc_chars: int = 600, max_tokens: int = 48
    ) -> None:
        if not chat:
            raise RcakitError("agent: llm needs a provider (set provider, e.g. llamacpp:smollm2)")
        self.chat, self.fallback, self.seed = chat, fallback, seed
        self.max_doc_chars, self.max_tokens = max_doc_chars, max_tokens
        self.truncated_docs = 0
        self._fresh_state()

    def _fresh_state(self) -> None:
        self._lock = threading.Lock()
        self._pending = threading.local()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_pending")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fresh_state()

    @property
    def _searches(self) -> dict[str, str]:
        """This thread's pending search query per read key (at most the read just made)."""
        return self._pending.__dict__.setdefault("searches", {})

    def mentions(self, sentence: str) -> list[str]:
        """Entity mentions, as the interventions need them: the rule reader's."""
        return self.fallback.mentions(sentence)

    def heeds(self, docs: Sequence[Paragraph], key: str) -> bool:
        """Never imposed: the model reacts to a warning in its own reply."""
        return False

    def messages(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> list[dict]:
        lines = [f"Sub-question: {relation.sub_question(subject)}", "Documents:"]
        cut = sum(is_clipped(doc.text, self.max_doc_chars) for doc in docs)
        lines += [f"[{doc.id}] {doc.title}: {clip(doc.text, self.max_doc_chars)}" for doc in docs]
        if cut:
            with self._lock:
                self.truncated_docs += cut
        if not docs:
            lines.append("(no documents were retrieved)")
        return [{"role": "system", "content": READER_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> tuple[str, str]:
        """The model's action for this read: ``("answer", name)``, ``("search", query)`` or
        ``("none", "")`` (an abstention); no state changes (the replay check calls it alone)."""
        from rcakit.llm import ask_json

        action = ask_json(
            self.chat,
            self.messages(docs, relation, subject),
            parse_action,
            seed=request_seed(self.seed, key),
            max_tokens=self.max_tokens,
        )
        return NO_ACTION if action is None else action

    def apply(self, key: str, action: tuple[str, str]) -> str | None:
        """What ``read`` returns for ``action``; a search query waits for ``reformulate``."""
        self._searches.pop(key, None)  # a search query is only ever the reformulation of the read just made
        kind, text = action
        if kind == "search":
            self._searches[key] = text
        return text if kind == "answer" else None

    def read(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> str | None:
        return self.apply(key, self.act(docs, relation, subject, key))

    def reformulate(self, relation: Relation, subject: str, key: str) -> str:
        return self._searches.pop(key, None) or rule_reformulation(relation, subject)

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None:
        return self.fallback.guess(docs, relation, subject)


def tokens_read(docs: Sequence[Paragraph]) -> int:
    """The words an agent reads in ``docs`` (the workbench's token count)."""
    return sum(len(d.text.split()) for d in docs)


@dataclass(frozen=True)
class AgentSettings:
    """The agent's budget and search, the authors' by default (``papers/README.md``).

    ``top_k`` paragraphs per retrieval; the hop budget is the question's hops
    plus ``spare_hops`` (0: the authors' 3 for three-hop questions);
    ``reformulate`` lets a hop search a second time after a failed read (the
    authors' agent retrieves once per hop).
    """

    top_k: int = 5
    spare_hops: int = 0
    reformulate: bool = False

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

    def _read(
        self, docs: Sequence[Paragraph], rel: Relation, subject: str, key: str, guess: bool = True
    ) -> tuple[str | None, str]:
        """One read and, after a miss, a guess: (entity, mode); a heeded warning abstains without a guess."""
        if self.reader.heeds(docs, key):
            return None, "abstained"
        entity = self.reader.read(docs, rel, subject, key)
        if entity is not None:
            return entity, "read"
        if not guess:
            return None, "missed"
        entity = self.reader.guess(docs, rel, subject)
        return entity, "guessed" if entity else "unresolved"

    def _hop(self, q: Question, index: int, ri: int, subject: str) -> Hop:
        rel = self.world.relations[q.relations[ri]]
        query = self.query_for(rel.name, subject)
        docs = self.fetch(q, query)
        queries = (query,)
        entity, mode = self._read(docs, rel, subject, f"{q.id}:{index}:0", guess=not self.settings.reformulate)
        if mode == "missed":
            second = self.reader.reformulate(rel, subject, f"{q.id}:{index}:0")
            queries = (query, second)
            fresh = self.fetch(q, second)
            docs = docs + tuple(d for d in fresh if d not in docs)
            entity, mode = self._read(fresh, rel, subject, f"{q.id}:{index}:1", guess=False)
            if mode == "read":
                mode = "reformulated"
            elif mode == "missed":
                entity = self.reader.guess(docs, rel, subject)
                mode = "guessed" if entity else "unresolved"
        cost = sum(len(x.split()) for x in queries) + tokens_read(docs)
        return Hop(index, ri, subject, query, docs, entity, mode, cost, queries)

    def _read_fixed(self, q: Question, hop: Hop) -> Hop:
        """Read evidence an intervention placed at this hop: no new retrieval, so no reformulation."""
        rel = self.world.relations[q.relations[hop.relation]]
        entity, mode = self._read(hop.docs, rel, hop.subject, f"{q.id}:{hop.index}:0")
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
        pooled = []
        for hop in hops:
            pooled += [d for d in hop.docs if d not in pooled]
        subject = q.start
        for ri, name in enumerate(q.relations):
            rel = self.world.relations[name]
            found, _ = self._read(pooled, rel, subject, f"{q.id}:force:{ri}")
            if found is None:
                return "", tokens_read(pooled)
            subject = found
        return subject, tokens_read(pooled)

    def force_answer(self, q: Question, prefix: Sequence[Hop]) -> Trace:
        """Answer from the prefix's pooled evidence, with no further retrieval."""
        answer, cost = self._answer_from(q, prefix)
        return Trace(q, tuple(prefix), answer, terminated=True, extra_words=cost)
