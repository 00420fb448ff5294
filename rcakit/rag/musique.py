"""A MuSiQue world: the paper's questions with their certified per-hop facts (AgenticRAG-FP §6).

MuSiQue (Trivedi et al., TACL 2022) composes each question from single-hop
sub-questions and records, for every hop, its sub-question, its answer and
the index of its supporting paragraph. That decomposition is what the strict
protocol needs, so a MuSiQue question maps onto the synthetic world's objects:

- each hop is a ``Relation`` of its own (named ``<question id>#<hop>``) whose
  sub-question is MuSiQue's, with the reference to the previous hop (``#k``)
  left open for the agent's bridge entity. A reference to an earlier hop (the
  non-chain shapes) is filled with that hop's gold answer, since the agent
  carries one bridge entity, and the sub-question form "X >> relation" reads
  "relation of X";
- the hop's certified fact (``HopGold``) is "the supporting paragraph, found
  by its title, names the hop's answer": its subject is that paragraph's
  title, its object the hop's answer;
- the agent starts from the first hop's supporting paragraph's title, and each
  gold bridge entity's own paragraph (``World.home``) is the supporting
  paragraph of the hop that starts from it;
- entities are the starts and the hop answers, typed ``number`` (digits only)
  or ``name``, which the interventions draw false objects and drifts from.

Each question keeps its own paragraphs (``World.contexts``, in the file's
order), the corpus the authors' agent searches; the pool of every selected
question's paragraphs (a paragraph repeated across questions with the same
title and text is kept once) is the corpus of ``corpus = "global"``. Both are
indexed with the same BM25. Selection follows the paper: questions with ``hops``
sub-questions (three in the paper) that are answerable, the first
``n_questions`` of them in file order (the paper does not say how its 80 were
drawn; file order is the reproducible choice). A MuSiQue answer is a string
with aliases; correctness uses the gold answer alone, as the synthetic world
does. The rule reader cannot read natural text: its cue never matches, so a
MuSiQue world needs the LLM reader.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.rag.relations import Relation
from rcakit.rag.world import HopGold, Paragraph, Question, World

SYNTHETIC = "synthetic"
NEVER = r"(?!)"  # a cue that matches no sentence: the rule reader reads nothing here
_REFERENCE = re.compile(r"#(\d+)")
_NUMERIC = re.compile(r"^[\d.,\s]+$")
_HOP_FIELDS = ("question", "answer", "paragraph_support_idx")
_PARAGRAPH_FIELDS = ("idx", "title", "paragraph_text")
WHERE = "parameter 'world'"  # how errors name the input: the chapters' parameter


@dataclass(frozen=True)
class Selection:
    """What the loader kept: questions read, with the right number of hops, answerable, selected."""

    read: int
    with_hops: int
    answerable: int
    selected: int
    uncertified_hops: int  # hops whose supporting paragraph does not name the hop's answer


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every line of a MuSiQue JSONL file as a dict; a malformed line is a one-line error naming it."""
    return [record for _, record in numbered_records(path)]


def numbered_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for every non-blank line of a MuSiQue JSONL file.

    A line that is not UTF-8, not JSON, or not a MuSiQue question (see
    :func:`_check`) is a one-line ``RcakitError`` naming the file and the line.
    Lines are split on ``\\n`` only: a JSON string may hold U+2028 and its kin.
    """
    try:
        lines = Path(path).read_bytes().split(b"\n")
    except OSError as err:
        raise RcakitError(f"{WHERE}: cannot read {path}: {err.strerror or err}") from None
    records = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
            _check(record)
        except UnicodeDecodeError as err:
            raise RcakitError(f"{WHERE}: {path}, line {number}: invalid UTF-8 at byte {err.start}") from None
        except RecursionError:
            raise RcakitError(f"{WHERE}: {path}, line {number}: not a MuSiQue question (nested too deeply)") from None
        except (ValueError, TypeError, KeyError) as err:
            why = err.args[0] if isinstance(err, KeyError) and err.args else err
            raise RcakitError(f"{WHERE}: {path}, line {number}: not a MuSiQue question ({why})") from None
        records.append((number, record))
    return records


def _check(record: dict[str, Any]) -> None:
    """What the world builder reads of a record, present and of the right shape (else ``KeyError``,
    ``TypeError`` or ``ValueError`` saying which field)."""
    if not isinstance(record, dict):
        raise TypeError(f"expected a JSON object, got {type(record).__name__}")
    for key in ("id", "question", "answer", "paragraphs", "question_decomposition"):
        if key not in record:
            raise KeyError(f"missing field {key!r}")
    steps, paragraphs = record["question_decomposition"], record["paragraphs"]
    if not isinstance(steps, list) or not steps:
        raise ValueError("question_decomposition is empty" if steps == [] else "question_decomposition is not a list")
    if not isinstance(paragraphs, list):
        raise TypeError("paragraphs is not a list")
    for i, paragraph in enumerate(paragraphs):
        for key in _PARAGRAPH_FIELDS:
            if not isinstance(paragraph, dict) or key not in paragraph:
                raise KeyError(f"paragraph {i} lacks {key!r}")
        if not isinstance(paragraph["title"], str) or not isinstance(paragraph["paragraph_text"], str):
            raise TypeError(f"paragraph {i}: title and paragraph_text must be strings")
    ids = {p["idx"] for p in paragraphs}
    for hop, step in enumerate(steps, start=1):
        missing = [k for k in _HOP_FIELDS if not isinstance(step, dict) or k not in step]
        if missing:
            raise KeyError(f"hop {hop} lacks {missing[0]!r}")
        if not isinstance(step["question"], str):
            raise TypeError(f"hop {hop}: question is not a string")
        if step["paragraph_support_idx"] not in ids:
            raise ValueError(f"paragraph_support_idx {step['paragraph_support_idx']} is not a paragraph idx")


def select(records: list[dict[str, Any]], hops: int, n_questions: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The paper's selection: ``hops`` sub-questions, answerable, the first ``n_questions`` in file order."""
    shaped = [r for r in records if len(r["question_decomposition"]) == hops]
    answerable = [r for r in shaped if r.get("answerable", True)]
    chosen = answerable[:n_questions]
    return chosen, {
        "read": len(records),
        "with_hops": len(shaped),
        "answerable": len(answerable),
        "selected": len(chosen),
    }


def entity_type(name: str) -> str:
    """``number`` for an answer of digits only (a year, a count), else ``name``."""
    return "number" if _NUMERIC.match(name) else "name"


def _words(text: str) -> str:
    """A sub-question as prose: MuSiQue's "X >> relation" form reads "relation of X"."""
    if ">>" in text:
        subject, _, relation = text.partition(">>")
        return f"{relation.strip()} of {subject.strip()}"
    return text.strip()


def hop_phrase(text: str, hop: int, answers: list[str], start: str) -> str:
    """Hop ``hop``'s sub-question as a format string with ``{}`` where the agent's bridge entity goes.

    ``#<hop-1>`` becomes the bridge; any other ``#j`` becomes hop j's gold answer;
    at hop 1 the start (a title, its parenthetical cut) becomes the slot if the
    sub-question names it.
    """
    text = _words(text).replace("{", "{{").replace("}", "}}")
    bridge = "\0"

    def fill(match: re.Match[str]) -> str:
        j = int(match.group(1))
        if j == hop - 1:
            return bridge
        if not 1 <= j < hop:
            raise RcakitError(f"hop {hop} refers to #{j}, which is not an earlier hop")
        return answers[j - 1].replace("{", "{{").replace("}", "}}")

    text = _REFERENCE.sub(fill, text)
    if hop == 1:
        topic = re.sub(r"\s*\(.*\)$", "", start).replace("{", "{{").replace("}", "}}")
        if topic and topic in text:
            text = text.replace(topic, bridge, 1)
    return text.replace(bridge, "{}")


def _relation(name: str, phrase: str, subject_type: str, object_type: str) -> Relation:
    ask = phrase if phrase.rstrip().endswith("?") else f"What is the {phrase}?"
    claim = ask.replace("{}", "{s}") + " The answer is {o}."
    return Relation(name, subject_type, object_type, phrase, NEVER, (claim,), ask)


def _names(text: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text) is not None


class _Builder:
    """Accumulates the pooled corpus, the entities and their facts while questions are added."""

    def __init__(self) -> None:
        self.corpus: list[Paragraph] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.types: dict[str, str] = {}
        self.facts: dict[str, dict[str, str]] = {}
        self.home: dict[str, int] = {}
        self.relations: dict[str, Relation] = {}
        self.contexts: dict[str, tuple[int, ...]] = {}
        self.uncertified = 0
        self.contexts: dict[str, tuple[int, ...]] = {}

    def paragraph(self, title: str, text: str) -> int:
        key = (title, text)
        if key not in self.seen:
            self.seen[key] = len(self.corpus)
            self.corpus.append(Paragraph(len(self.corpus), title, text))
        return self.seen[key]

    def question(self, record: dict[str, Any]) -> Question:
        ids = {p["idx"]: self.paragraph(p["title"], p["paragraph_text"]) for p in record["paragraphs"]}
        self.contexts[str(record["id"])] = tuple(dict.fromkeys(ids[p["idx"]] for p in record["paragraphs"]))
        self.contexts[str(record["id"])] = tuple(ids.values())
        steps = record["question_decomposition"]
        answers = [str(s["answer"]) for s in steps]
        start = self.corpus[ids[steps[0]["paragraph_support_idx"]]].title
        self.types.setdefault(start, "name")
        names, golds, bridge = [], [], start
        for hop, (step, answer) in enumerate(zip(steps, answers, strict=True), start=1):
            support = self.corpus[ids[step["paragraph_support_idx"]]]
            name = f"{record['id']}#{hop}"
            phrase = hop_phrase(step["question"], hop, answers, start)
            self.types.setdefault(answer, entity_type(answer))
            self.relations[name] = _relation(name, phrase, self.types[bridge], self.types[answer])
            self.facts.setdefault(bridge, {})[name] = answer
            self.home.setdefault(bridge, support.id)
            self.uncertified += not _names(support.text, answer)
            names.append(name)
            golds.append(HopGold(support.title, name, answer, support.id))
            bridge = answer
        answer = str(record["answer"])
        return Question(
            str(record["id"]), str(record["question"]), start, tuple(names), tuple(golds), answer, entity_type(answer)
        )


def build_musique_world(path: Path, n_questions: int, hops: int = 3) -> tuple[World, Selection]:
    """The MuSiQue world of the first ``n_questions`` answerable ``hops``-hop questions in ``path``.

    Every way the file can fail the builder is a one-line ``RcakitError``
    naming the file (and the line, for a bad record), so :func:`check_file`
    is this function run before a kernel starts.
    """
    numbered = numbered_records(path)
    line = {id(record): number for number, record in numbered}
    chosen, counts = select([record for _, record in numbered], hops, n_questions)
    if not chosen:
        raise RcakitError(
            f"{WHERE}: {path} holds no answerable {hops}-hop question "
            f"({counts['read']} read, {counts['with_hops']} with {hops} hops)"
        )
    build = _Builder()
    questions = []
    for record in chosen:
        try:
            questions.append(build.question(record))
        except RcakitError as err:  # a sub-question's #k reference that names no earlier hop
            raise RcakitError(f"{WHERE}: {path}, line {line[id(record)]}: question {record['id']!r}: {err}") from None
    for q in questions:
        build.types.setdefault(q.answer, q.answer_type)
    world = World(
        build.types,
        build.facts,
        build.corpus,
        questions,
        build.home,
        build.relations,
        "musique",
        contexts=build.contexts,
    )
    return world, Selection(**counts, uncertified_hops=build.uncertified)


def check_file(path: Path, n_questions: int, hops: int = 3) -> None:
    """``RcakitError`` (one line, naming the file and line) unless ``path`` builds a MuSiQue world.

    The check is the loader itself: every line parsed, the selection made and
    the selected questions' decompositions mapped, without a retriever or an
    agent, so it costs one pass over the file.
    """
    build_musique_world(path, n_questions, hops)


def resolve_world(value: str) -> Path | None:
    """The MuSiQue file a ``world`` parameter names (a registry name or a path); ``None`` if not fetched."""
    from rcakit.data import locate

    path = locate(value, "world")
    if path is not None and path.is_dir():
        raise RcakitError(f"parameter 'world': {path} is a folder; give a MuSiQue JSONL file")
    return path
