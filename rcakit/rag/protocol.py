"""The strict experiment protocol of AgenticRAG-FP §6: eligibility, injection, resumption, diagnosis.

A question is eligible at depth d only if its clean trace reaches hop d and
answers correctly. Each eligible (question, depth, intervention) case is
injected and resumed; a case that still answers correctly is *recovered* and
stays out of attribution. Each finished case is written to a ``CaseStore``
under the results folder, so a killed sweep resumes; the store is keyed by
the parameters and by the code of every module a case's value depends on.
With an LLM reader, each case records the reader usage it caused (counted
within the case alone, ``rcakit.llm.cache.case_usage``), so the agent's cost
is the same whether a case was computed or resumed, and whether the cases ran
one after another, on threads or on a Dask cluster (``rcakit.parallel``). The scoring
of the cases is in ``rcakit.rag.metrics``.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from rcakit import RcakitError
from rcakit.llm.accounting import COST, MethodUsage
from rcakit.llm.base import Provider
from rcakit.llm.cache import case_usage
from rcakit.parallel import Runner
from rcakit.progress import track
from rcakit.rag import diagnosers
from rcakit.rag.agent import Agent, AgentSettings
from rcakit.rag.interventions import (
    CONTAMINATION_RECALL,
    CONTENT,
    STAGE,
    Corruption,
    check_span_rule,
    check_style,
    corrupt_content,
    inject,
    intervention_kinds,
    query_contaminated,
)
from rcakit.rag.musique import SYNTHETIC, build_musique_world, resolve_world
from rcakit.rag.readers import HEED_WARNINGS, LLMReader, RuleReader
from rcakit.rag.retrieval import Corpora
from rcakit.rag.settings import AUTHORS
from rcakit.rag.text import classify_outcome
from rcakit.rag.trace import Hop, Trace
from rcakit.rag.world import Question, World, build_world
from rcakit.store import CaseStore, open_case_store

ARMS = ("structural", "content")
# The offline diagnosers, in the order the tables show them. Trace readers see only the final trace;
# continue_retrieving and the probes re-execute the agent; the controls are a constant and an oracle.
OFFLINE = {
    "coverage": lambda lab, trace, threshold: diagnosers.coverage(trace, threshold, lab.tokenizer),
    "rule_based": lambda lab, trace, threshold: diagnosers.rule_based(trace, lab.tokenizer),
    "fallback_rule": lambda lab, trace, threshold: diagnosers.fallback_rule(trace, lab.tokenizer),
    "continue_retrieving": lambda lab, trace, threshold: diagnosers.continue_retrieving(lab.agent, trace),
    "propagation_aware": lambda lab, trace, threshold: diagnosers.propagation_aware(lab.agent, trace, lab.max_probes),
    "suf_regen": lambda lab, trace, threshold: diagnosers.suf_regen(lab.agent, trace, lab.max_probes),
    "constant_hop1": lambda lab, trace, threshold: diagnosers.constant_hop1(trace),
    "oracle_gold_hop": lambda lab, trace, threshold: diagnosers.oracle_gold_hop(trace),
}
DIAGNOSERS = tuple(OFFLINE)
TRACE_READERS = DIAGNOSERS[:3]  # see only the final trace
PROBES = ("propagation_aware", "suf_regen")  # re-execute the agent; three branches each
# Every module whose code can change a stored case: the lab, the LLM reader, the store format, the scorers.
CASE_CODE = ("rcakit.rag", "rcakit.llm", "rcakit.stats", "rcakit.store")


@dataclass
class Lab:
    """A world, its retriever-backed agent, and the clean trace of every question (built by :meth:`build`)."""

    world: World
    agent: Agent
    seed: int
    interventions: str = AUTHORS.interventions  # the structural style (rcakit.rag.interventions.STYLES)
    intervention_set: str = AUTHORS.intervention_set  # the structural kinds a sweep injects (INTERVENTION_SETS)
    max_probes: int | None = None  # hops the probes repair, 1..max_probes (None: every hop, the authors' default)
    span_rule: str = AUTHORS.span_rule  # how a content corruption picks its span (SPAN_RULES)
    clean: dict[str, Trace] = field(default_factory=dict)
    clean_usage: dict[str, Any] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)  # a MuSiQue world's selection counts (empty if synthetic)

    @classmethod
    def build(
        cls,
        world: World,
        agent: Agent,
        seed: int,
        *,
        runner: Runner | None = None,
        interventions: str = AUTHORS.interventions,
        intervention_set: str = AUTHORS.intervention_set,
        max_probes: int | None = None,
        span_rule: str = AUTHORS.span_rule,
    ) -> Lab:
        """The lab with every question's clean trace run, and the LLM reader's usage for them.

        ``runner`` (``rcakit.parallel.Runner``, serial by default) runs the clean runs; their usage
        is counted per question and summed here, so it is the same for every setting.
        """
        intervention_kinds(intervention_set)
        lab = cls(
            world, agent, seed, check_style(interventions), intervention_set, max_probes, check_span_rule(span_rule)
        )
        done = (runner or Runner()).run([(q.id, q) for q in world.questions], CleanRun(agent))
        lab.clean = {q.id: trace for q, (trace, _) in zip(world.questions, done, strict=True)}
        if reader_usage(lab) is not None:
            lab.clean_usage = {k: sum(usage[k] for _, usage in done) for k in COST}
        return lab

    @property
    def tokenizer(self) -> str:
        """How BM25, coverage, the fallback and the grounding test split text (``rcakit.rag.text.TOKENIZERS``)."""
        return self.agent.corpora.tokenizer

    @property
    def kinds(self) -> tuple[str, ...]:
        """The structural kinds this lab's sweep injects."""
        return intervention_kinds(self.intervention_set)

    @property
    def clean_accuracy(self) -> float:
        """Share of questions the clean agent answers correctly."""
        return sum(t.correct for t in self.clean.values()) / len(self.clean)

    def eligible_questions(self, depths: Iterable[int]) -> dict[str, int]:
        """``{depth: questions eligible at that depth}``."""
        return {str(d): sum(eligible(t, d) for t in self.clean.values()) for d in depths}

    def short_traces(self, depths: Iterable[int]) -> dict[str, int]:
        """``{depth: correct clean traces skipped there for holding fewer hops}`` (the authors'
        ``n_skipped_short_trace_by_depth``; a model may answer early, the rule reader never does)."""
        return {str(d): sum(t.correct and len(t.hops) < d for t in self.clean.values()) for d in depths}


@dataclass
class CleanRun:
    """``work(question)``: the agent's clean trace of one question and the reader usage it caused."""

    agent: Agent

    def __call__(self, question: Question) -> tuple[Trace, dict[str, Any]]:
        chat = getattr(self.agent.reader, "chat", None)
        with case_usage() as scope:
            trace = self.agent.run(question)
        return trace, scope.totals(chat) if chat is not None else {}


def build_lab(
    seed: int,
    *,
    n_entities: int = 2400,
    n_questions: int = 120,
    hops: int = 3,
    top_k: int = AUTHORS.top_k,
    reading_noise: float = 0.2,
    distractor_rate: float = 0.3,
    spare_hops: int = AUTHORS.spare_hops,
    reader_chat: Provider | None = None,
    world: str = SYNTHETIC,
    runner: Runner | None = None,
    corpus: str = AUTHORS.corpus,
    empty_search: str = AUTHORS.empty_search,
    retriever: str = AUTHORS.retriever_for("content"),
    reformulate: bool = AUTHORS.reformulate,
    interventions: str = AUTHORS.interventions,
    heed_warnings: float = HEED_WARNINGS,
    intervention_set: str = AUTHORS.intervention_set,
    max_probes: int | None = AUTHORS.max_probes,
    tokenizer: str = AUTHORS.tokenizer,
    span_rule: str = AUTHORS.span_rule,
) -> Lab:
    """World, corpora, agent and clean traces, all from ``seed``; the authors' protocol by default
    (``rcakit.rag.settings.AUTHORS``; the retriever is BM25, their content arm's, as the dense one needs torch).

    The protocol's choices (the authors' code, ``anote-ai/Research-AgenticRAG``): ``corpus`` (``question``: each
    question's own paragraphs; ``global``: one index over the world),
    ``empty_search`` (``first_two`` or ``nothing``), ``retriever`` (``bm25``, the
    authors' for the content-corruption runs, or ``dense``, all-MiniLM-L6-v2, the
    authors' for Table 2; ``rcakit.rag.retrieval``), ``top_k``, ``spare_hops``
    and ``reformulate`` (the hop budget and retrievals per hop,
    ``AgentSettings``), ``interventions`` (``generic`` or ``targeted``), the
    ``intervention_set`` a sweep injects (``authors``: their four; ``all``: the
    six; or one kind), ``max_probes`` (the probes repair hops 1..max_probes;
    ``None`` or 0 for every hop), the ``tokenizer`` of BM25, coverage, the
    fallback and the grounding test (``authors``: ``lower().split()`` over
    "title: text"; ``normalised``: the answer normaliser), the content corruption's ``span_rule`` (``authors``:
    gold, bridge, then the most salient span of all the hop's documents, any number perturbed, invented names
    when no answer fits; ``first_mention``: the earlier rule) and the rule reader's ``heed_warnings`` (how
    often it abstains on a warning text).

    ``world`` is ``synthetic`` (the seeded world of ``rcakit.rag.world``) or a
    MuSiQue file: a registry name (``musique``) or a path
    (``rcakit.rag.musique``; ``n_entities`` and ``distractor_rate`` do not apply
    there, and it needs ``reader_chat``). The reader is the ``RuleReader``, or
    an ``LLMReader`` over ``reader_chat`` (a cached provider) with the rule
    reader as its fallback. ``runner`` runs the clean runs (:meth:`Lab.build`).
    """
    selection = {}
    if world == SYNTHETIC:
        made = build_world(
            seed, n_entities=n_entities, n_questions=n_questions, hops=hops, distractor_rate=distractor_rate
        )
    else:
        made, selection = _musique(world, n_questions, hops, reader_chat)
    reader = RuleReader(made, reading_noise, seed, heed_warnings)
    if reader_chat:
        reader = LLMReader(reader_chat, reader, seed)
    settings = AgentSettings(top_k=top_k, spare_hops=spare_hops, reformulate=reformulate)
    check_style(interventions)
    agent = Agent(made, Corpora(made, corpus, empty_search, retriever, tokenizer), reader, settings)
    lab = Lab.build(
        made,
        agent,
        seed,
        runner=runner,
        interventions=interventions,
        intervention_set=intervention_set,
        max_probes=max_probes or None,
        span_rule=span_rule,
    )
    lab.selection = selection
    return lab


# The rules a run follows that are not parameters yet, recorded with every run so a results file says which it
# ran; where rcakit's differs from the authors' (anote-ai/Research-AgenticRAG), the value says so.
RUN_RULES = {
    "bootstrap": "random.Random(42).choices, B = 1000, percentile 2.5/97.5 (the authors')",
    "contamination_recall": CONTAMINATION_RECALL,  # every token of the replacement in a later query (the authors')
    "grounding": "Jaccard(answer, retrieved documents) < 0.05 over the tokenizer's tokens (the authors')",
}


def protocol_record(lab: Lab) -> dict[str, Any]:
    """The protocol a lab ran, for the results: corpus kind and paragraphs per question, retriever, hop
    budget, retrievals per hop, top_k, empty-search rule, intervention style and set, the probes' cap, the
    reader's reaction, and the rules that are not parameters (:data:`RUN_RULES`)."""
    agent, questions = lab.agent, lab.world.questions
    sizes = sorted(agent.corpora.size(q) for q in questions)
    budgets = sorted({agent.settings.budget(q) for q in questions})
    return {
        "corpus": agent.corpora.kind,
        "paragraphs_per_question": {"min": sizes[0], "median": sizes[len(sizes) // 2], "max": sizes[-1]},
        "retriever": agent.corpora.retriever,
        "hop_budget": budgets[0] if len(budgets) == 1 else budgets,
        "retrievals_per_hop": 2 if agent.settings.reformulate else 1,
        "top_k": agent.top_k,
        "empty_search": agent.corpora.empty_search,
        "interventions": lab.interventions,
        "intervention_set_name": lab.intervention_set,
        "intervention_set": list(lab.kinds),
        "max_probes": lab.max_probes,
        "tokenizer": lab.tokenizer,
        "span_rule": lab.span_rule,
        "heed_warnings": getattr(agent.reader, "heed_warnings", None),
        **RUN_RULES,
    }


def _musique(world: str, n_questions: int, hops: int, reader_chat: Provider | None) -> tuple[World, dict[str, Any]]:
    if not reader_chat:
        raise RcakitError(
            f"world {world!r}: the rule reader cannot read natural text; "
            "set agent llm and a provider (e.g. -p agent llm -p provider ollama:MODEL)"
        )
    path = resolve_world(world)
    if path is None:
        raise RcakitError(f"world {world!r}: the data set is not fetched (run 'rcakit data fetch {world}')")
    made, selection = build_musique_world(path, n_questions, hops)
    return made, asdict(selection)


def reader_usage(lab: Lab) -> MethodUsage | None:
    """The LLM reader's ``MethodUsage``, or ``None`` for the rule reader."""
    return getattr(getattr(lab.agent.reader, "chat", None), "accounting", None)


def eligible(trace: Trace, depth: int) -> bool:
    """Strict eligibility: the clean trace reaches hop ``depth`` and answers correctly."""
    return len(trace.hops) >= depth and trace.correct


def live(cases: pd.DataFrame) -> pd.DataFrame:
    """The cases that ran: content cases with no certifiable span are marked skipped and dropped here."""
    return cases[~cases["skipped"].astype(bool)]


def failed(cases: pd.DataFrame) -> pd.DataFrame:
    """The live cases whose answer the injection made wrong: the denominators of attribution (§6)."""
    ran = live(cases)
    return ran[~ran["correct"].astype(bool)]


def diagnose(lab: Lab, trace: Trace, threshold: float) -> dict[str, list[Any]]:
    """Every offline diagnoser's [stage, hop, cost, branch] on one failed trace."""
    found = {name: run(lab, trace, threshold) for name, run in OFFLINE.items()}
    return {name: [d.stage, d.hop, d.cost, d.branch] for name, d in found.items()}


def downstream_intact(trace: Trace, depth: int) -> bool:
    """Whether the trace's pooled evidence still states every certified fact of the hops after ``depth``.

    Frozen-hop repair can only flip an answer when this holds (it never re-retrieves later hops).
    """
    pooled = [d for hop in trace.hops for d in hop.docs]
    return all(diagnosers.states_fact(pooled, g.subject, g.object) for g in trace.question.hops[depth:])


def injected_fact_kept(trace: Trace, depth: int, at_hop: bool = False) -> bool:
    """Whether the trace still states the injected hop's certified fact: anywhere in its evidence, or
    (``at_hop``) in hop ``depth``'s own evidence. A property of the trace, read with the world's gold facts.
    """
    gold = trace.question.hops[depth - 1]
    if at_hop:
        docs = trace.hops[depth - 1].docs if depth <= len(trace.hops) else ()
    else:
        docs = [d for hop in trace.hops for d in hop.docs]
    return diagnosers.states_fact(docs, gold.subject, gold.object)


def _finish(lab: Lab, case: dict[str, Any], injected: Trace, threshold: float) -> dict[str, Any]:
    depth = case["depth"]
    case.update(
        correct=injected.correct,
        answer=injected.answer,
        word_cost=injected.word_cost,
        n_hops=len(injected.hops),
        downstream_intact=downstream_intact(injected, depth),
        fact_in_trace=injected_fact_kept(injected, depth),
        fact_at_hop=injected_fact_kept(injected, depth, at_hop=True),
    )
    case["diagnoses"] = {} if injected.correct else diagnose(lab, injected, threshold)
    return case


def _structural(lab: Lab, qid: str, depth: int, kind: str) -> Trace:
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{kind}")
    return inject(lab.agent, lab.clean[qid], depth, kind, rng, lab.interventions)


def _corruption(lab: Lab, qid: str, depth: int) -> tuple[Corruption, Hop] | None:
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{CONTENT}")
    return corrupt_content(
        lab.agent, lab.clean[qid], depth, [q.answer for q in lab.world.questions], rng, lab.span_rule
    )


def _resumed(lab: Lab, qid: str, depth: int, hop: Hop) -> Trace:
    clean = lab.clean[qid]
    return lab.agent.resume_from(clean.question, clean.hops[: depth - 1] + (hop,), depth + 1)


def injected_trace(lab: Lab, case: dict[str, Any]) -> Trace:
    """The failed (or recovered) trace of a stored, non-skipped case, rebuilt from its seeds."""
    qid, depth, kind = case["qid"], int(case["depth"]), case["kind"]
    if kind != CONTENT:
        return _structural(lab, qid, depth, kind)
    made = _corruption(lab, qid, depth)
    if made is None:
        raise RcakitError(f"case {kind}:{qid}:{depth}: skipped, it has no trace")
    return _resumed(lab, qid, depth, made[1])


def structural_case(lab: Lab, qid: str, depth: int, kind: str, *, threshold: float = 0.05) -> dict[str, Any]:
    """Inject ``kind`` at ``depth`` into question ``qid``'s clean trace, resume, diagnose if it fails."""
    injected = _structural(lab, qid, depth, kind)
    case = {"qid": qid, "depth": depth, "kind": kind, "true_stage": STAGE[kind], "skipped": False}
    return _finish(lab, case, injected, threshold)


def content_case(lab: Lab, qid: str, depth: int, threshold: float = 0.05) -> dict[str, Any]:
    """Certified content corruption at ``depth``; a case with no certifiable span is marked skipped."""
    made = _corruption(lab, qid, depth)
    case = {"qid": qid, "depth": depth, "kind": CONTENT, "true_stage": STAGE[CONTENT], "skipped": made is None}
    if made is None:
        return case
    corruption, hop = made
    injected = _resumed(lab, qid, depth, hop)
    case.update(
        strategy=corruption.strategy,
        replacement_kind=corruption.kind,
        original=corruption.original,
        replacement=corruption.replacement,
        same_type=lab.world.types.get(corruption.replacement) == lab.world.types.get(corruption.original),
        outcome=classify_outcome(injected.answer, injected.gold, corruption.replacement),
        has_later_query=len(injected.hops) > depth,
        contaminated=query_contaminated(injected, corruption),
    )
    return _finish(lab, case, injected, threshold)


def case_store(chapter_id: str, params: dict[str, Any], folder: str | os.PathLike[str] | None = None) -> CaseStore:
    """The chapter's case store: ``<results folder>/cases`` unless ``folder`` says otherwise (a relative
    ``folder`` is taken from the results folder), keyed by the parameters and the code of ``CASE_CODE``.
    """
    return open_case_store(chapter_id, params, CASE_CODE, folder)


def _case_items(lab: Lab, arm: str, depths: list[int]) -> list[tuple[str, tuple[str, int, str]]]:
    kinds = lab.kinds if arm == "structural" else (CONTENT,)
    items = [
        (f"{arm}:{qid}:{d}:{k}", (qid, d, k))
        for d in depths
        for qid, tr in lab.clean.items()
        if eligible(tr, d)
        for k in kinds
    ]
    if not items:
        raise RcakitError(
            f"{arm} sweep: no eligible case at depths {depths}: the clean agent answered no "
            "question correctly (a weak LLM reader?); use more questions or another reader"
        )
    return items


@dataclass
class SweepCase:
    """``work(item)`` of a sweep: one case of ``arm`` with, for an LLM reader, the usage it caused.

    A plain object (not a closure) so that it pickles to a Dask worker with its lab.
    """

    lab: Lab
    arm: str
    threshold: float

    def __call__(self, item: tuple[str, int, str]) -> dict[str, Any]:
        qid, d, k = item  # the sweep's items are (question id, depth, kind)
        chat = getattr(self.lab.agent.reader, "chat", None)
        with case_usage() as scope:
            if self.arm == "structural":
                out = structural_case(self.lab, qid, d, k, threshold=self.threshold)
            else:
                out = content_case(self.lab, qid, d, self.threshold)
        if reader_usage(self.lab) is not None and chat is not None:
            out["reader_usage"] = {k: v for k, v in scope.totals(chat).items() if k != "cases"}
        return out


def sweep(
    lab: Lab,
    arm: str,
    depths: Iterable[int],
    store: CaseStore,
    *,
    threshold: float = 0.05,
    progress: Callable[[Iterable[Any]], Iterator[Any]] | None = track,
    runner: Runner | None = None,
) -> pd.DataFrame:
    """Run (or resume) every eligible case of ``arm`` ("structural" or "content"); one row per case.

    ``progress`` wraps the cases still to run (a terminal bar by default; ``None`` for none);
    ``runner`` (``rcakit.parallel.Runner``, serial by default) runs them serially, on threads or on a cluster.
    """
    if arm not in ARMS:
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    items = _case_items(lab, arm, list(depths))
    return pd.DataFrame(store.run(items, SweepCase(lab, arm, threshold), progress, runner=runner))
