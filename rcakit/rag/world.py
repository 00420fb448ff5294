"""A seeded synthetic multi-hop world that stands in for MuSiQue / HotpotQA.

The ``World``, ``Question`` and ``HopGold`` objects here are also what
``rcakit.rag.musique`` builds from MuSiQue's own decompositions, so the agent,
interventions, diagnosers and scoring run unchanged on either world.

Fictional entities of six types are linked by relations; every entity has one
paragraph that states its facts in varied templates, next to filler sentences
with years and numbers, and a share of "mention" paragraphs adds token-sharing
noise. Names are drawn from small token pools, so many entities share name
tokens with others (the distractors that make BM25 imperfect). Questions walk
2-4 relations from a start entity; each hop's gold fact and supporting
paragraph are known exactly (the certification the paper gets by construction
of its injections, AgenticRAG-FP §4).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from rcakit import RcakitError
from rcakit.rag.text import tokens


@dataclass(frozen=True)
class Relation:
    """A relation: subject and object types, its noun phrase, cue words and sentence templates."""

    name: str
    subject_type: str
    object_type: str
    phrase: str  # "the director of {}"
    cue: str  # regex fragment a sentence stating the relation contains
    templates: tuple[str, ...]  # with {s} subject, {o} object, {p} pronoun, {y} year
    ask: str = ""  # the sub-question with {} for the subject; empty: "what is <phrase>?"

    def sub_question(self, subject: str) -> str:
        """The hop's sub-question for ``subject``, as a reader is asked it."""
        return self.ask.format(subject) if self.ask else f"what is {self.phrase.format(subject)}?"


RELATIONS = {
    r.name: r
    for r in [
        Relation(
            "directed_by",
            "film",
            "person",
            "the director of {}",
            r"direct",
            (
                "{s} was directed by {o} and premiered in {y}.",
                "{o} directed {s} on a modest budget.",
                "The film's director was {o}.",
            ),
        ),
        Relation(
            "produced_by",
            "film",
            "company",
            "the studio that produced {}",
            r"produc",
            ("{s} was produced by {o}.", "Production of {s} was handled by {o} in {y}.", "{o} produced the picture."),
        ),
        Relation(
            "born_in",
            "person",
            "city",
            "the birthplace of {}",
            r"\bborn\b",
            (
                "{s} was born in {o} in {y}.",
                "Born in {o}, {p} moved abroad at the age of 19.",
                "{p_cap} was born and raised in {o}.",
            ),
        ),
        Relation(
            "educated_at",
            "person",
            "university",
            "the university attended by {}",
            r"studied|graduated",
            ("{s} studied at {o}.", "{p_cap} graduated from {o} in {y}.", "After school, {s} studied law at {o}."),
        ),
        Relation(
            "founded_by",
            "company",
            "person",
            "the founder of {}",
            r"founded|established",
            ("{s} was founded by {o} in {y}.", "{o} established {s} in {y}.", "The company was founded by {o}."),
        ),
        Relation(
            "headquartered_in",
            "company",
            "city",
            "the headquarters city of {}",
            r"headquarter|offices",
            (
                "{s} is headquartered in {o}.",
                "The main offices of {s} are in {o}.",
                "Its headquarters moved to {o} in {y}.",
            ),
        ),
        Relation(
            "located_in",
            "university",
            "city",
            "the city where {} is located",
            r"located|campus",
            ("{s} is located in {o}.", "The campus of {s} lies in {o}.", "Its main campus is located in {o}."),
        ),
        Relation(
            "in_country",
            "city",
            "country",
            "the country of {}",
            r"city in|part of|province",
            (
                "{s} is a city in {o}.",
                "Administratively, {s} is part of {o}.",
                "{s} is a province capital and a city in {o}.",
            ),
        ),
    ]
}

TYPE_COUNTS = {"person": 0.36, "film": 0.22, "company": 0.13, "university": 0.08, "city": 0.17, "country": 0.04}

_ROOTS = (
    "Vel",
    "Kar",
    "Ost",
    "Mira",
    "Tan",
    "Bel",
    "Dor",
    "Esk",
    "Lum",
    "Quar",
    "Ren",
    "Sal",
    "Tor",
    "Ul",
    "Var",
    "Wen",
    "Ys",
    "Zar",
    "Hal",
    "Jun",
    "Kel",
    "Nor",
    "Pel",
    "Riv",
)
_ENDS = ("ane", "ith", "ora", "und", "ess", "ark", "ion", "ova", "ell", "ada", "urn", "ix")
_FIRST = (
    "Ada",
    "Bram",
    "Cora",
    "Dane",
    "Elin",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lev",
    "Mara",
    "Niko",
    "Olga",
    "Pavel",
    "Rosa",
    "Sven",
    "Tia",
    "Umar",
    "Vera",
    "Wim",
    "Yara",
    "Zeno",
)
_ADJ = (
    "Silver",
    "Quiet",
    "Last",
    "Broken",
    "Golden",
    "Hidden",
    "Northern",
    "Crimson",
    "Endless",
    "Paper",
    "Distant",
    "Iron",
    "Glass",
    "Burning",
    "Hollow",
    "Winter",
)
_NOUN = (
    "Harbor",
    "Garden",
    "River",
    "Crown",
    "Signal",
    "Orchard",
    "Bridge",
    "Mirror",
    "Letter",
    "Season",
    "Tower",
    "Voyage",
    "Lantern",
    "Circle",
    "Frontier",
    "Echo",
)
_FIRM = ("Pictures", "Industries", "Systems", "Holdings", "Works", "Studios", "Group", "Labs")
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


def _name(kind: str, rng: random.Random) -> str:
    root = lambda: rng.choice(_ROOTS) + rng.choice(_ENDS)  # noqa: E731
    if kind == "person":
        return f"{rng.choice(_FIRST)} {root()}"
    if kind == "film":
        return rng.choice([f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)}", f"{rng.choice(_ADJ)} {rng.choice(_NOUN)}s"])
    if kind == "company":
        return f"{root()} {rng.choice(_FIRM)}"
    if kind == "university":
        return rng.choice([f"University of {root()}", f"{root()} Institute"])
    if kind == "city":
        return rng.choice([root(), f"Port {root()}", f"{root()} Falls", f"New {root()}"])
    return rng.choice([f"{root()}ia", f"Republic of {root()}", f"{root()}land"])


def _entities(n_entities: int, rng: random.Random) -> dict[str, str]:
    types: dict[str, str] = {}
    for kind, share in TYPE_COUNTS.items():
        target, tries = max(3, round(share * n_entities)), 0
        while sum(t == kind for t in types.values()) < target and tries < 50 * target:
            tries += 1
            name = _name(kind, rng)
            types.setdefault(name, kind)
    return types


_VARIANT = {
    "person": "Jr",
    "film": "Returns",
    "company": "International",
    "university": "Annex",
    "city": "Heights",
    "country": "Territories",
}


def _distractors(types: dict[str, str], rate: float, rng: random.Random) -> dict[str, str]:
    """``name -> original`` for look-alike entities whose names contain every token of an original."""
    chosen = [n for n in sorted(types) if rng.random() < rate]
    return {f"{n} {_VARIANT[types[n]]}": n for n in chosen if f"{n} {_VARIANT[types[n]]}" not in types}


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


def question_context(q: Question, corpus: list[Paragraph], vocab: list[frozenset], size: int) -> tuple[int, ...]:
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
    types = _entities(n_entities, rng)
    lookalikes = _distractors(types, distractor_rate, rng)
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
