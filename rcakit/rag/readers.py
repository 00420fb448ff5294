"""The agent's readers: what a hop's documents say, as an action (AgenticRAG-FP §3-4).

At each read the agent shows its reader the hop's relation, the bridge
entity (the subject) and the retrieved documents; the reader returns an
:class:`Action`: an answer (the relation's object), a search with its own
query, nothing (a miss), or an abstention (it heeded a warning in the
documents, so the agent neither reads on nor guesses). The agent acts on it
(``rcakit.rag.agent``). A read changes nothing in the reader, so one reader
serves any number of concurrent cases and replays a recorded read exactly
from its inputs (CAR §3, ``rcakit.rag.fidelity``).

The offline :class:`RuleReader` misses a stated fact with probability
``noise``, then guesses from the evidence. It also meets the authors' generic
warning texts (a false premise, a stale-evidence notice): with probability
``heed_warnings`` a read whose documents carry such a warning abstains, as a
language model that defers to the warning would; otherwise it reads on as if
the warning were not there. Its noise and heed draws come from
``random.Random`` keyed by (seed, question, hop, attempt), so a rerun from a
changed prefix meets the same draws as the clean run wherever the situation
is the same (common random numbers).

:class:`LLMReader` puts a language model behind the same interface: one JSON
action per read, answer or search, its seed keyed by the same (question, hop,
attempt), so a resumed suffix reuses the cached prefix calls.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from rcakit import RcakitError
from rcakit.llm.base import Provider, request_seed
from rcakit.llm.prompts import clip, is_clipped
from rcakit.rag.trace import Trace
from rcakit.rag.world import Paragraph, Relation, World

# How often the rule reader abstains on a read whose documents carry a warning: the rule reader's own setting,
# not one of the authors' choices (their reader is a language model, which reacts on its own), chosen once,
# before any attribution number was seen, as a model that defers to an in-context warning as often as not.
HEED_WARNINGS = 0.5

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
# What the rule reader takes for a warning: the authors' generic false-premise and stale-evidence texts
# say that the entity does not exist or that the reported value is outdated.
WARNING_CUE = re.compile(r"does not exist|no specific answer|outdated|superseded", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+")


class Action(NamedTuple):
    """What a reader decides at one read: ``("answer", name)``, ``("search", query)``, ``("none", "")`` (a
    miss) or ``("abstain", "")`` (a heeded warning: no answer, and no guess after it). A plain tuple, so a
    recorded read's action compares with a replayed one (``rcakit.fidelity.ActionMatch``)."""

    kind: str
    text: str = ""

    @property
    def answer(self) -> str | None:
        """The name read, or ``None``."""
        return self.text if self.kind == "answer" else None

    @property
    def query(self) -> str | None:
        """The query a search action asks the agent to run, or ``None``."""
        return self.text if self.kind == "search" else None

    @property
    def missed(self) -> bool:
        """Neither an answer nor an abstention: the agent may search again, then guesses."""
        return self.kind in ("none", "search")


NO_ACTION = Action("none")
ABSTAIN = Action("abstain")


class Reader(Protocol):
    """What the agent asks of a reader: the action of a read, a guess, the entity mentions of a sentence.

    ``key`` is "question:hop:attempt" (or "question:force:relation" when
    answering from pooled evidence); a reader draws any randomness from it, so
    the same read gives the same action. ``act`` changes nothing in the
    reader (a model's call is charged to the model's own accounting).
    ``guess`` names an object from the evidence after a miss. ``mentions``
    finds the entity names in a sentence; the content interventions use it to
    choose the span they corrupt.
    """

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> Action: ...

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None: ...

    def mentions(self, sentence: str) -> list[str]: ...


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
    ``heed_warnings`` (0: the warning is ignored; 1: always heeded). It never
    asks for a search, so a reformulating agent searches with
    :func:`rule_reformulation`.
    """

    def __init__(self, world: World, noise: float, seed: int, heed_warnings: float = HEED_WARNINGS) -> None:
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

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> Action:
        """``ABSTAIN`` when the read heeds a warning; else ``("answer", name)``, or ``NO_ACTION`` on a miss."""
        if self.heeds(docs, key):
            return ABSTAIN
        if random.Random(f"{self.seed}:{key}").random() < self.noise:
            return NO_ACTION
        for doc, sentence in self._statements(docs, relation):
            if doc.title == subject and (obj := self._object(sentence, relation, subject)):
                return Action("answer", obj)
        return NO_ACTION

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


def parse_action(obj: Any) -> Action:
    """Validate a reader reply: ``("answer", name)`` or ``("search", query)``; ``ValueError`` says what is wrong."""
    if not isinstance(obj, dict) or obj.get("action") not in ACTIONS:
        raise ValueError('expected {"action": "answer" or "search", ...}')
    field_name = "answer" if obj["action"] == "answer" else "query"
    value = obj.get(field_name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"action {obj['action']} needs a non-empty string field {field_name!r}")
    return Action(obj["action"], " ".join(value.split()))


parse_action.schema = ACTION_SCHEMA  # pyright: ignore[reportFunctionMemberAccess] - read by rcakit.llm.structured


class LLMReader:
    """A language model as the agent's reader: one JSON action per read.

    The model sees the hop's sub-question (the relation's phrase for the
    subject) and the retrieved documents, and answers with the object or asks
    to search again with its own query; a reformulating agent runs that query
    as its one second search. The reply is validated by :func:`parse_action`
    through ``rcakit.llm.ask_json``: one retry with the error shown, then no
    action (counted as an abstention in the chat's accounting), which the agent
    takes as a miss with no query of the model's, so a second search uses the
    rule words. After a miss the guess is the rule reader's typed guess
    (``fallback``).

    Requests run at temperature 0 with a seed derived from (chapter seed,
    question, hop, attempt), so the response cache key is stable and a resumed
    suffix meets the same cached calls as the clean run wherever its evidence
    is the same. Documents longer than ``max_doc_chars`` are cut with
    ``rcakit.llm.prompts.clip``'s marker; :meth:`truncated_docs` counts them
    in a trace. The reader holds only its settings, so concurrent cases (on
    threads or, pickled, on a Dask cluster) share it freely.
    """

    def __init__(
        self, chat: Provider, fallback: RuleReader, seed: int, *, max_doc_chars: int = 600, max_tokens: int = 48
    ) -> None:
        if not chat:
            raise RcakitError("agent: llm needs a provider (set provider, e.g. llamacpp:smollm2)")
        self.chat, self.fallback, self.seed = chat, fallback, seed
        self.max_doc_chars, self.max_tokens = max_doc_chars, max_tokens

    def mentions(self, sentence: str) -> list[str]:
        """Entity mentions, as the interventions need them: the rule reader's."""
        return self.fallback.mentions(sentence)

    def messages(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> list[dict[str, Any]]:
        """The read's prompt: the sub-question and every document, cut at ``max_doc_chars``."""
        lines = [f"Sub-question: {relation.sub_question(subject)}", "Documents:"]
        lines += [f"[{doc.id}] {doc.title}: {clip(doc.text, self.max_doc_chars)}" for doc in docs]
        if not docs:
            lines.append("(no documents were retrieved)")
        return [{"role": "system", "content": READER_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]

    def act(self, docs: Sequence[Paragraph], relation: Relation, subject: str, key: str) -> Action:
        """The model's action for this read: ``("answer", name)``, ``("search", query)`` or ``NO_ACTION``
        (no valid reply after the retry). The model reacts to a warning in its own reply, so it never
        abstains on one."""
        from rcakit.llm import ask_json

        action = ask_json(
            self.chat,
            self.messages(docs, relation, subject),
            parse_action,
            seed=request_seed(self.seed, key),
            max_tokens=self.max_tokens,
        )
        return NO_ACTION if action is None else action

    def guess(self, docs: Sequence[Paragraph], relation: Relation, subject: str) -> str | None:
        return self.fallback.guess(docs, relation, subject)

    def truncated_docs(self, trace: Trace) -> int:
        """How many of ``trace``'s documents (each counted once) this reader's prompts show cut."""
        return sum(is_clipped(doc.text, self.max_doc_chars) for doc in trace.documents)
