"""A seeded synthetic multi-hop world that stands in for MuSiQue / HotpotQA.

The ``World``, ``Question``, ``HopGold`` and ``Paragraph`` objects here (and
``rcakit.rag.relations.Relation``) are also what ``rcakit.rag.musique``
builds from MuSiQue's own decompositions, so the agent, interventions,
diagnosers and scoring run unchanged on either world.

Fictional entities of six types (``rcakit.rag.entities``) are linked by the
relations of ``rcakit.rag.relations``; every entity has one paragraph that
states its facts in varied templates, next to filler sentences with years and
numbers, and a share of "mention" paragraphs adds token-sharing noise. Names
are drawn from small token pools, so many entities share name tokens with
others (the distractors that make BM25 imperfect). Questions walk 2-4
relations from a start entity; each hop's gold fact and supporting paragraph
are known exactly (the certification the paper gets by construction of its
injections, AgenticRAG-FP §4).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rcakit import RcakitError
from rcakit.rag.entities import TYPE_COUNTS, draw_entities, draw_lookalikes
from rcakit.rag.relations import RELATIONS, Relation
from rcakit.rag.text import tokens

_JOBS = ("painter", "engineer", "novelist", "economist", "composer", "architect", "journalist", "chemist")


@dataclass(frozen=True)
class Paragraph:
    """One corpus document: a title and its text."""

    id: int
    title: str
    text: str


@dataclass(frozen=True)
class HopGold:
    """The certified fact of one hop: subject, relation, object, and its supporting paragraph."""

    subject: str
    relation: str
    object: str
    paragraph_id: int


@dataclass(frozen=True)
class Question:
    """A compositional question with its gold decomposition and answer."""

    id: str
    text: str
    start: str
    relations: tuple[str, ...]
    hops: tuple[HopGold, ...]
    answer: str
    answer_type: str


@dataclass
class World:
    """Entities (name -> type), their facts, the corpus and the questions.

    ``relations`` maps each relation name a question uses to its ``Relation``
    (the synthetic world's eight; a MuSiQue world has one per question and hop);
    ``name`` says which world it is (``synthetic`` or ``musique``).
    """

    types: dict[str, str]
    facts: dict[str, dict[str, str]]
    corpus: list[Paragraph]
    questions: list[Question]
    home: dict[str, int] = field(default_factory=dict)  # entity name -> its own paragraph id
    relations: dict[str, Relation] = field(default_factory=lambda: dict(RELATIONS))
    name: str = "synthetic"
    contexts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # question id -> its own paragraph ids

    def names_of(self, kind: str) -> list[str]:
        return [n for n, t in self.types.items() if t == kind]

    def context(self, q: Question) -> list[Paragraph]:
        """Question ``q``'s own paragraphs, in their order (supporting and distractor, as MuSiQue has them)."""
        if q.id not in self.contexts:
            raise RcakitError(f"world: question {q.id} has no paragraphs of its own")
        return [self.corpus[i] for i in self.contexts[q.id]]


def _facts(types: dict[str, str], rng: random.Random) -> dict[str, dict[str, str]]:
    by_type = {k: sorted(n for n, t in types.items() if t == k) for k in TYPE_COUNTS}
    facts: dict[str, dict[str, str]] = {n: {} for n in types}
    for name, kind in types.items():
        for rel in RELATIONS.values():
            if rel.subject_type == kind:
                facts[name][rel.name] = rng.choice(by_type[rel.object_type])
    return facts


def _filler(name: str, kind: str, others: list[str], rng: random.Random) -> list[str]:
    year, num = rng.randint(1890, 2020), rng.randint(2, 90)
    other = rng.choice(others)
    pool = {
        "person": [
            f"{name} is a {rng.choice(_JOBS)} whose work is often compared with that of {other}.",
            f"In {year}, {name} received {num} votes in a regional poll.",
        ],
        "film": [
            f"{name} runs {rng.randint(80, 170)} minutes and sold {rng.randint(10, 900) * 1000:,} tickets.",
            f"Critics compared it with {other} in {year}.",
        ],
        "company": [
            f"{name} employed {rng.randint(50, 40000):,} people in {year}.",
            f"It competes with {other} in {num} markets.",
        ],
        "university": [
            f"{name} enrolls {rng.randint(2000, 60000):,} students across {num} faculties.",
            f"Its library was rebuilt in {year}.",
        ],
        "city": [
            f"{name} has a population of {rng.randint(5000, 3000000):,}.",
            f"It was twinned with {other} in {year}.",
        ],
        "country": [
            f"{name} covers {rng.randint(1000, 900000):,} square kilometres.",
            f"Its constitution dates from {year} and names {num} regions.",
        ],
    }[kind]
    return rng.sample(pool, k=rng.randint(1, 2))


def _paragraph(
    pid: int,
    name: str,
    kind: str,
    facts: dict[str, str],
    others: list[str],
    rng: random.Random,
    lookalike: str | None = None,
) -> Paragraph:
    pron = rng.choice(["she", "he"])
    sentences = [f"{name} is not to be confused with {lookalike}."] if lookalike else []
    for rel_name, obj in facts.items():
        rel = RELATIONS[rel_name]
        tpl = rng.choice(rel.templates)
        sentences.append(tpl.format(s=name, o=obj, p=pron, p_cap=pron.capitalize(), y=rng.randint(1890, 2020)))
    sentences += _filler(name, kind, others, rng)
    rng.shuffle(sentences)
    sentences.insert(0, f"{name} is a {kind} described in this entry.")
    return Paragraph(pid, name, " ".join(sentences))


def _mention(pid: int, names: list[str], rng: random.Random) -> Paragraph:
    a, b, c = rng.sample(names, 3)
    year = rng.randint(1900, 2020)
    text = (
        f"The {year} almanac lists {a} next to {b}. A survey of {rng.randint(100, 9000):,} readers "
        f"ranked {c} {rng.randint(1, 40)}th. {a} and {c} appear together in {rng.randint(2, 30)} archives."
    )
    return Paragraph(pid, f"Almanac {year} notes on {a.split()[-1]}", text)


def _question(
    qid: str,
    start: str,
    relations: list[str],
    world_facts: Mapping[str, Mapping[str, str]],
    home: Mapping[str, int],
    rng: random.Random,
) -> Question:
    hops, subject = [], start
    for rel in relations:
        obj = world_facts[subject][rel]
        hops.append(HopGold(subject, rel, obj, home[subject]))
        subject = obj
    phrase = start
    for rel in relations:
        phrase = RELATIONS[rel].phrase.format(phrase)
    opener = rng.choice(["What is {}?", "Can you name {}?", "Identify {}."])
    return Question(
        qid, opener.format(phrase), start, tuple(relations), tuple(hops), subject, RELATIONS[relations[-1]].object_type
    )


def _chain(start_type: str, hops: int, rng: random.Random) -> list[str] | None:
    chain, kind = [], start_type
    for _ in range(hops):
        options = [r.name for r in RELATIONS.values() if r.subject_type == kind]
        if not options:
            return None
        rel = rng.choice(options)
        chain.append(rel)
        kind = RELATIONS[rel].object_type
    return chain


CONTEXT_SIZE = 20  # paragraphs per question, as MuSiQue gives each question (supporting plus distractors)


def question_context(q: Question, corpus: list[Paragraph], vocab: list[frozenset[Any]], size: int) -> tuple[int, ...]:
    """Question ``q``'s own paragraphs: its supporting paragraphs plus the hardest distractors, shuffled.

    The supporting paragraph of each hop is the hop subject's own paragraph.
    Distractors are the other paragraphs that share the most name tokens with
    the chain's entities (look-alikes, namesakes, almanac notes naming them),
    ties broken by paragraph id; MuSiQue's distractors are likewise retrieved
    by similarity to the question's parts. The order is shuffled with a
    generator keyed by the question, so which paragraphs come first (the
    agent's empty-search fallback reads the first two) is not the support.
    """
    support = list(dict.fromkeys(h.paragraph_id for h in q.hops))
    names = set()
    for h in q.hops:
        names |= set(tokens(h.subject)) | set(tokens(h.object))
    ranked = sorted((i for i in range(len(corpus)) if i not in support), key=lambda i: (-len(names & vocab[i]), i))
    chosen = support + ranked[: max(0, size - len(support))]
    random.Random(f"context:{q.id}").shuffle(chosen)
    return tuple(chosen)


def build_world(
    seed: int,
    *,
    n_entities: int = 2400,
    n_questions: int = 120,
    hops: int = 3,
    mention_share: float = 0.25,
    distractor_rate: float = 0.3,
    context_size: int = CONTEXT_SIZE,
) -> World:
    """A seeded world: about ``n_entities`` entity paragraphs plus ``mention_share`` as many noise paragraphs.

    A share ``distractor_rate`` of entities gets a look-alike ("Mara Junova Jr")
    whose paragraph names the original, so BM25 ranks it close to the original.
    Questions start at a random entity, follow ``hops`` random relations, and
    never repeat a start entity. Each question also gets its own ``context_size``
    paragraphs (``question_context``), the corpus the authors' agent searches.
    Same arguments give the same world.
    """
    if not 2 <= hops <= 4:
        raise RcakitError(f"hops: expected 2-4, got {hops}")
    if n_entities < 60 or n_questions < 1:
        raise RcakitError(f"n_entities/n_questions: too small ({n_entities}, {n_questions})")
    if not 0.0 <= distractor_rate <= 1.0:
        raise RcakitError(f"distractor_rate: expected a share in [0, 1], got {distractor_rate}")
    rng = random.Random(f"world:{seed}")
    types = draw_entities(n_entities, rng)
    lookalikes = draw_lookalikes(types, distractor_rate, rng)
    types.update({n: types[orig] for n, orig in lookalikes.items()})
    facts = _facts(types, rng)
    names = sorted(types)
    corpus, home = [], {}
    for name in names:
        home[name] = len(corpus)
        corpus.append(_paragraph(len(corpus), name, types[name], facts[name], names, rng, lookalikes.get(name)))
    for _ in range(round(mention_share * len(names))):
        corpus.append(_mention(len(corpus), names, rng))
    questions, used = [], set()
    starters = [n for n in names if types[n] in ("film", "company", "person", "university") and n not in lookalikes]
    while len(questions) < n_questions and len(used) < len(starters):
        start = rng.choice(starters)
        if start in used:
            continue
        used.add(start)
        chain = _chain(types[start], hops, rng)
        if chain:
            questions.append(_question(f"q{len(questions):04d}", start, chain, facts, home, rng))
    vocab = [frozenset(tokens(f"{p.title} {p.text}")) for p in corpus]
    contexts = {q.id: question_context(q, corpus, vocab, context_size) for q in questions}
    return World(types, facts, corpus, questions, home, contexts=contexts)
