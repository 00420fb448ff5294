"""Interventions at hop h: the structural family and certified content corruption (AgenticRAG-FP §4).

Every intervention keeps hops 1..h-1, replaces hop h's evidence, query or
termination decision, marks the hop ``unread`` and lets the agent resume
from hop h+1, so the suffix is regenerated, not copied. Early termination
answers from the prefix. Content corruption rewrites one certified span in
a copy of hop h's documents; the corpus stays clean.

The structural family comes in two styles. ``generic`` (the default) is the
authors' (their code, ``anote-ai/Research-AgenticRAG``): fixed texts that name no wrong object; an
empty hop; three off-topic sentences; the hop's query plus unrelated words; a
notice that the entity does not exist, or that the reported value is
outdated, placed before the hop's own documents. Whether the agent fails then
comes from how its reader reacts (``RuleReader.heed_warnings``). ``targeted``
is rcakit's targeted family: a planted wrong object of the right type
(a false claim, an archived paragraph with another object), a drift to a
look-alike entity, and random corpus paragraphs as irrelevant evidence.

Which kinds a sweep injects is its intervention set (:data:`INTERVENTION_SETS`):
the authors' Table 2 runs four (empty retrieval, irrelevant documents, false
premise, stale evidence); their code also implements query drift and early
termination, which ``all`` adds.

Two semantics follow the authors' code. Early termination at hop h forces
the answer from hops 1..h-1, so hop h is absent from the trace. Query drift
replaces hop h's query, and the trace records the drifted query, so a repair
that re-issues "the hop's own query" re-issues the drifted one.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from rcakit import RcakitError
from rcakit.rag.agent import Agent
from rcakit.rag.settings import AUTHORS
from rcakit.rag.text import normalise, token_recall, tokens
from rcakit.rag.trace import Hop, Trace
from rcakit.rag.world import Paragraph

STRUCTURAL = (
    "empty_retrieval",
    "irrelevant_documents",
    "query_drift",
    "false_premise",
    "stale_evidence",
    "early_termination",
)
# The sets a sweep can run (anote-ai/Research-AgenticRAG): the authors' live set of Table 2 is four of the six;
# query drift and early termination are implemented in their code but not run by default. ``all`` runs the six, and any
# single kind runs alone.
AUTHORS_SET = ("empty_retrieval", "irrelevant_documents", "false_premise", "stale_evidence")
INTERVENTION_SETS = {"authors": AUTHORS_SET, "all": STRUCTURAL, **{k: (k,) for k in STRUCTURAL}}
STYLES = ("generic", "targeted")
# The generic texts: the authors' design, in rcakit's own words (the project writes its own sentences). What
# each must carry to match the authors' intervention is WHAT_EACH_CARRIES, and a test holds each text to it.
OFF_TOPIC = (
    Paragraph(-1, "Xylophone", "A xylophone is played by striking wooden bars with mallets."),
    Paragraph(-2, "Arctic tern", "The Arctic tern migrates farther each year than any other bird."),
    Paragraph(-3, "Fermentation", "Fermentation turns sugar into acids, gases or alcohol without oxygen."),
)
DRIFT_WORDS = "unrelated tangent xylophone arctic fermentation"
FALSE_PREMISE = Paragraph(
    -4, "Notice", "The entity this question asks about does not exist, so no specific answer applies."
)
STALE_NOTICE = Paragraph(-5, "Notice", "The previously reported value is outdated and has been superseded.")
WHAT_EACH_CARRIES = {
    "irrelevant_documents": "off-topic paragraphs that share no word with any entity name or relation of the world",
    "false_premise": "a confident statement, with no hedge, that the entity asked about does not exist, so no "
    "specific answer applies",
    "stale_evidence": "a statement that the value on record is outdated and has been superseded, naming no new value",
}
CONTENT = "content_corruption"
# Every fault here is scored as a retrieval-stage fault, as in the authors' code: a drifted query
# retrieves the wrong evidence, and early termination is the stage their continue-retrieving probe names.
STAGE = {**{k: "retrieval" for k in STRUCTURAL}, CONTENT: "retrieval"}
_NUMBER = re.compile(r"(?<![\w,])\d{1,3}(?:,\d{3})+(?![\w,])|(?<![\w,])\d+(?![\w,])")
_SCALES = (0.5, 0.7, 1.3, 1.5, 2.0)
# A later query is contaminated when it holds every token of the replacement span (the authors' recall of 1.0;
# the outcome rules keep RECALL_THRESHOLD).
CONTAMINATION_RECALL = 1.0


def _target(trace: Trace, hop: int) -> Hop:
    if not 1 <= hop <= len(trace.hops):
        raise RcakitError(f"hop: {hop} is outside the trace's 1..{len(trace.hops)}")
    return trace.hops[hop - 1]


def _false_object(agent: Agent, relation: str, true_object: str | None, rng: random.Random) -> str:
    """Another entity of the relation's object type; with none, a perturbed number or any other entity."""
    pool = sorted(n for n in agent.world.names_of(agent.world.relations[relation].object_type) if n != true_object)
    if pool:
        return rng.choice(pool)
    if true_object and _NUMBER.fullmatch(true_object):
        return perturb_number(true_object, rng)[1]
    return rng.choice(sorted(n for n in agent.world.types if n != true_object))


def intervention_kinds(name: str) -> tuple[str, ...]:
    """The structural kinds of the intervention set ``name`` (:data:`INTERVENTION_SETS`), else a one-line error."""
    if name not in INTERVENTION_SETS:
        raise RcakitError(f"intervention_set: expected one of {', '.join(INTERVENTION_SETS)}, got {name!r}")
    return INTERVENTION_SETS[name]


def check_style(style: str) -> str:
    """``style`` if it names an intervention style, else a one-line error."""
    if style not in STYLES:
        raise RcakitError(f"interventions: expected one of {', '.join(STYLES)}, got {style!r}")
    return style


def generic_hop(agent: Agent, trace: Trace, hop: int, kind: str) -> Hop:
    """Hop ``hop`` after the authors' generic intervention ``kind`` (not early termination).

    empty_retrieval: the query kept, no documents. irrelevant_documents: the
    three fixed off-topic sentences. query_drift: the hop's query plus
    ``DRIFT_WORDS``, retrieved again. false_premise and stale_evidence: the
    fixed notice placed before the hop's own documents, which are kept.
    """
    target, q = _target(trace, hop), trace.question
    if kind == "empty_retrieval":
        docs = ()
    elif kind == "irrelevant_documents":
        docs = OFF_TOPIC
    elif kind == "query_drift":
        query = f"{target.query} {DRIFT_WORDS}"
        return replace(
            target, query=query, queries=(query,), docs=agent.fetch(q, query), entity=None, mode="unread", label=kind
        )
    elif kind == "false_premise":
        docs = (FALSE_PREMISE,) + target.docs
    elif kind == "stale_evidence":
        docs = (STALE_NOTICE,) + target.docs
    else:
        raise RcakitError(f"intervention: unknown kind {kind!r}; known: {', '.join(STRUCTURAL + (CONTENT,))}")
    return replace(target, docs=docs, entity=None, mode="unread", label=kind)


def changed_hop(agent: Agent, trace: Trace, hop: int, kind: str, rng: random.Random, style: str = "generic") -> Hop:
    """Hop ``hop`` of ``trace`` after structural intervention ``kind`` (Table 1; not early termination).

    ``generic``: :func:`generic_hop`. ``targeted``: empty_retrieval: no documents.
    irrelevant_documents: top_k random paragraphs
    that never name the subject. query_drift: the sub-query names a same-type
    entity sharing a name token, and its results replace the evidence.
    false_premise: a paragraph claiming a wrong object is placed first, the
    true evidence kept. stale_evidence: the subject's paragraph is replaced by
    an archived version with a different object.
    """
    if check_style(style) == "generic":
        return generic_hop(agent, trace, hop, kind)
    target, q = _target(trace, hop), trace.question
    relation = q.relations[target.relation]
    true_object = agent.world.facts.get(target.subject, {}).get(relation)
    if kind == "empty_retrieval":
        docs = ()
    elif kind == "irrelevant_documents":
        docs = _irrelevant(agent, target, rng)
    elif kind == "query_drift":
        drifted = _drift(agent, target.subject, rng)
        query = agent.query_for(relation, drifted)
        return replace(
            target, query=query, queries=(query,), docs=agent.fetch(q, query), entity=None, mode="unread", label=kind
        )
    elif kind == "false_premise":
        claim = (
            agent.world.relations[relation]
            .templates[0]
            .format(
                s=target.subject,
                o=_false_object(agent, relation, true_object, rng),
                y=rng.randint(1890, 2020),
                p="they",
                p_cap="They",
            )
        )
        fake = Paragraph(-1, target.subject, f"A widely shared post claims: {claim}")
        docs = (fake,) + target.docs
    elif kind == "stale_evidence":
        docs = _stale(agent, target, relation, true_object, rng)
    else:
        raise RcakitError(f"intervention: unknown kind {kind!r}; known: {', '.join(STRUCTURAL + (CONTENT,))}")
    return replace(target, docs=docs, entity=None, mode="unread", label=kind)


def _irrelevant(agent: Agent, target: Hop, rng: random.Random) -> tuple[Paragraph, ...]:
    """top_k random paragraphs that never name the hop's subject (all of them in a corpus with fewer)."""
    usable = [p for p in agent.world.corpus if target.subject not in p.text and p not in target.docs]
    if len(usable) <= agent.top_k:
        return tuple(usable)
    picked: list[Paragraph] = []
    while len(picked) < agent.top_k:
        p = agent.world.corpus[rng.randrange(len(agent.world.corpus))]
        if target.subject not in p.text and p not in target.docs and p not in picked:
            picked.append(p)
    return tuple(picked)


def _drift(agent: Agent, subject: str, rng: random.Random) -> str:
    """A same-type entity sharing a name token with ``subject`` (any same-type entity if none does).

    A subject the world does not type (a language model's free reading) drifts to any entity.
    """
    kind, toks = agent.world.types.get(subject), set(tokens(subject))
    names = agent.world.names_of(kind) if kind else agent.world.types
    same = sorted(n for n in names if n != subject)
    sharing = [n for n in same if toks & set(tokens(n))]
    return rng.choice(sharing or same)


def _stale(
    agent: Agent, target: Hop, relation: str, true_object: str | None, rng: random.Random
) -> tuple[Paragraph, ...]:
    old = _false_object(agent, relation, true_object, rng)
    year = rng.randint(1950, 1995)
    own = [d for d in target.docs if d.title == target.subject]
    home = agent.world.home.get(target.subject)
    base = own[0] if own else agent.world.corpus[home] if home is not None else None
    if base is None:  # a subject with no paragraph of its own: the top document goes stale
        if not target.docs:
            return ()
        base = target.docs[0]
    text = base.text.replace(true_object, old) if true_object else base.text
    stale = Paragraph(base.id, base.title, f"Archived entry ({year}). {text}")
    return (stale,) + tuple(d for d in target.docs if d != base)


def inject(
    agent: Agent, trace: Trace, hop: int, kind: str, rng: random.Random, style: str = AUTHORS.interventions
) -> Trace:
    """The trace after intervention ``kind`` (in ``style``) at ``hop``: the prefix kept, the suffix regenerated."""
    prefix = trace.hops[: hop - 1]
    _target(trace, hop)
    check_style(style)
    if kind == "early_termination":
        return agent.force_answer(trace.question, prefix)
    changed = changed_hop(agent, trace, hop, kind, rng, style)
    return agent.resume_from(trace.question, prefix + (changed,), hop + 1)


@dataclass(frozen=True)
class Corruption:
    """A certified content corruption: which span changed into what, and why it was chosen."""

    hop: int
    strategy: str
    kind: str  # entity, year, small_int or number
    original: str
    replacement: str


def _span_re(span: str) -> re.Pattern[str]:
    """``span`` as a whole word, matched case-insensitively (the authors' matching)."""
    return re.compile(r"(?<![\w])" + re.escape(span) + r"(?![\w])", re.IGNORECASE)


def span_present(span: str, docs: Iterable[Paragraph]) -> bool:
    """Whether ``span`` occurs as a whole word in a title or text of ``docs``."""
    pattern = _span_re(span)
    return any(pattern.search(d.title) or pattern.search(d.text) for d in docs)


def perturb_number(text: str, rng: random.Random) -> tuple[str, str]:
    """(kind, new text) for a number: years +-2..5, integers below 10 +1..3, others scaled (§4 and the
    authors' code)."""
    value = int(text.replace(",", ""))
    if len(text) == 4 and 1000 <= value <= 2100:
        kind, new = "year", value + rng.choice([-1, 1]) * rng.randint(2, 5)
    elif value < 10:
        kind, new = "small_int", value + rng.randint(1, 3)
    else:
        kind, new = "number", max(1, round(value * rng.choice(_SCALES)))
    return kind, (f"{new:,}" if "," in text else str(new))


SPAN_RULES = ("authors", "first_mention")  # how a content corruption picks its span (anote-ai/Research-AgenticRAG)
# Invented names for a replacement when no other question's answer fits (the authors keep such a list too).
FALLBACK_NAMES = (
    "Brennor Quay",
    "Calloway Hythe",
    "Dunmarrow Fen",
    "Esker Pollard",
    "Firthwick Abbey",
    "Gannet Ridge",
    "Hollis Tremaine",
    "Larkspur Cross",
)


def check_span_rule(rule: str) -> str:
    """``rule`` if it names a span rule (:data:`SPAN_RULES`), else a one-line error."""
    if rule not in SPAN_RULES:
        raise RcakitError(f"span_rule: expected one of {', '.join(SPAN_RULES)}, got {rule!r}")
    return rule


def _later_queries(trace: Trace, hop: int) -> list[str]:
    return [q for h in trace.hops[hop:] for q in h.queries]


def _first_mention_span(agent: Agent, trace: Trace, hop: int) -> tuple[str, str] | None:
    """rcakit's alternative rule: the answer if present, the first mention carried into a later query,
    else the first entity or number of the hop's top document."""
    target, q = trace.hops[hop - 1], trace.question
    if span_present(q.answer, target.docs):
        return "answer_fact", q.answer
    later = " ".join(_later_queries(trace, hop))
    mentions = [m for d in target.docs for m in agent.reader.mentions(f"{d.title}. {d.text}")]
    for m in mentions:
        if _span_re(m).search(later) and not _span_re(m).search(q.text):
            return "bridge_entity", m
    if not target.docs:
        return None
    top = target.docs[0].text
    numbers = [(mt.start(), mt.group(), "salient_number") for mt in _NUMBER.finditer(top)]
    names = [
        (top.find(m), m, "salient_entity")
        for m in agent.reader.mentions(top)
        if m != target.subject and not _span_re(m).search(q.text)
    ]
    candidates = sorted(numbers + names)
    return (candidates[0][2], candidates[0][1]) if candidates else None


def candidate_spans(agent: Agent, docs: Iterable[Paragraph]) -> dict[str, int]:
    """Every entity mention and number in ``docs`` (titles and texts), with its number of occurrences.

    The authors find names with a capitalised-phrase pattern; the synthetic
    world knows its names, so the reader's mentions stand in for it.
    """
    counts: dict[str, int] = {}
    for d in docs:
        for part in (d.title, d.text):
            for span in agent.reader.mentions(part) + [m.group() for m in _NUMBER.finditer(part)]:
                counts[span] = counts.get(span, 0) + 1
    return counts


def salience(span: str, count: int) -> tuple[int, int, int, str]:
    """A candidate's rank, highest first: tokens, then occurrences, then characters, then the text itself."""
    return len(span.split()), count, len(span), span


def bridge_spans(counts: dict[str, int], trace: Trace, hop: int) -> dict[str, int]:
    """The candidates of ``counts`` (:func:`candidate_spans` of hop ``hop``) that a later query of ``trace``
    recalls in full and its question does not: the bridge entities of the authors' rule (§4)."""
    later = _later_queries(trace, hop)
    question = trace.question.text
    return {
        s: c
        for s, c in counts.items()
        if any(token_recall(s, query) >= 1.0 for query in later) and token_recall(s, question) < 1.0
    }


def _authors_span(agent: Agent, trace: Trace, hop: int) -> tuple[str, str] | None:
    """The authors' rule: the gold answer if the hop's documents hold it (not a yes/no or a gold of fewer
    than 3 characters); else the most salient candidate fully recalled by a later query but not by the
    question (a bridge entity); else the most salient candidate of all the hop's documents."""
    target, q = trace.hops[hop - 1], trace.question
    gold = normalise(q.answer)
    if len(gold) >= 3 and gold not in ("yes", "no") and span_present(q.answer, target.docs):
        return "answer_fact", q.answer
    counts = candidate_spans(agent, target.docs)
    if not counts:
        return None
    bridges = bridge_spans(counts, trace, hop)
    strategy, pool = ("bridge_entity", bridges) if bridges else ("salient_entity", counts)
    return strategy, max(pool, key=lambda s: salience(s, pool[s]))


def choose_span(agent: Agent, trace: Trace, hop: int, rule: str = "authors") -> tuple[str, str] | None:
    """(strategy, span) that a content corruption at ``hop`` rewrites under ``rule`` (:data:`SPAN_RULES`), or
    ``None`` when the hop's documents hold no candidate (§4)."""
    return (_authors_span if check_span_rule(rule) == "authors" else _first_mention_span)(agent, trace, hop)


def _usable(name: str, span: str, docs: tuple[Paragraph, ...]) -> bool:
    """A replacement entity: at least 3 characters, not a number, no token shared with ``span``, absent from
    ``docs`` (the authors' exclusions)."""
    return (
        len(normalise(name)) >= 3
        and not _NUMBER.fullmatch(name)
        and not set(tokens(name)) & set(tokens(span))
        and not span_present(name, docs)
    )


def _replacement(
    span: str,
    strategy: str,
    answers: list[str],
    rng: random.Random,
    docs: tuple[Paragraph, ...] = (),
    rule: str = "authors",
    gold: str = "",
) -> tuple[str, str] | None:
    """(kind, replacement) of ``span``: a perturbed number, or another question's (not ``gold``) answer that passes
    :func:`_usable`. The authors' rule perturbs any numeric span and, when no answer fits, draws from
    :data:`FALLBACK_NAMES`; the earlier rule perturbs only salient numbers and skips the case instead."""
    numeric = _NUMBER.fullmatch(span) is not None if rule == "authors" else strategy == "salient_number"
    if numeric:
        return perturb_number(span, rng)
    pool = sorted({a for a in answers if a != gold and _usable(a, span, docs)})
    if not pool and rule == "authors":
        pool = [n for n in FALLBACK_NAMES if _usable(n, span, docs)] or list(FALLBACK_NAMES)
    return ("entity", rng.choice(pool)) if pool else None


def corrupt_content(
    agent: Agent, trace: Trace, hop: int, answers: list[str], rng: random.Random, span_rule: str = AUTHORS.span_rule
) -> tuple[Corruption, Hop] | None:
    """Certified corruption of hop ``hop``'s documents, or ``None`` when no span certifies.

    The span is chosen by ``span_rule`` (:func:`choose_span`). Entities are
    replaced by another question's gold answer with zero token overlap that
    the hop's documents do not already contain, whatever its type (the
    authors' rule, :func:`_replacement`); numbers are perturbed (years +-2..5, integers below 10
    +1..3, others scaled). Spans match as whole words, ignoring case. Every occurrence in the
    hop's documents is replaced; the span must be present before and absent
    after, or the case is skipped.
    """
    target = _target(trace, hop)
    chosen = choose_span(agent, trace, hop, span_rule)
    if chosen is None:
        return None
    strategy, span = chosen
    picked = _replacement(span, strategy, answers, rng, target.docs, span_rule, trace.gold)
    if picked is None:
        return None
    kind, new = picked
    pattern = _span_re(span)
    docs = tuple(Paragraph(d.id, pattern.sub(new, d.title), pattern.sub(new, d.text)) for d in target.docs)
    if span_present(span, docs) or not span_present(new, docs):
        return None
    corruption = Corruption(hop, strategy, kind, span, new)
    return corruption, replace(target, docs=docs, entity=None, mode="unread", label=CONTENT)


def query_contaminated(trace: Trace, corruption: Corruption) -> bool:
    """Whether the replacement span reaches a later hop's query: every one of its tokens is in the query
    (token recall >= :data:`CONTAMINATION_RECALL`, 1.0 as in the authors' code, §7.3)."""
    later = [q for h in trace.hops[corruption.hop :] for q in h.queries]
    return any(token_recall(corruption.replacement, q) >= CONTAMINATION_RECALL for q in later)
