"""What the two RAG chapters share (``notebooks/coverage_collapse.md``, ``notebooks/content_corruption.md``).

AgenticRAG-FP §6-7: one arm run end to end (:func:`run_arm` and its
:class:`ArmRun`: models, lab, case store, sweep, scores, the LLM judge), the
protocol's side-by-side runs (:func:`protocol_runs`, :func:`heed_runs`), the
protocol table and the world (:func:`setup_section`), and the sections both
pages show of exact-hop accuracy: the accuracy table with its bootstrap
intervals, the other views of the same cases, each probe's branches, the LLM
methods' cost, the LLM judge's verdicts and the LLM reader's replay fidelity.
A section that needs a language model the run did not have comes back
skipped, with the reason.

The authors' protocol (the authors' code, ``anote-ai/Research-AgenticRAG``) is a
set of choices, each a chapter parameter whose default is the authors'
setting; :func:`setup_section` says which this run used, which world produced
the numbers, and how the clean agent did, and
:func:`protocol_comparison_section` and :func:`heed_comparison_section` show
how much the protocol alone, or the rule reader's reaction to a warning, moves
each cell (AgenticRAG-FP §6).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError, prose
from rcakit.book import registry
from rcakit.claims import published
from rcakit.llm.accounting import cost_table
from rcakit.parallel import Runner, report_served
from rcakit.progress import track
from rcakit.rag import diagnosers, llm_methods
from rcakit.rag.embeddings import stack_versions
from rcakit.rag.fidelity import agent_action_match, match_record
from rcakit.rag.metrics import PROBE_CAPS, accuracy_points, attribution, capped_probes, failed_share, interval_pairs
from rcakit.rag.musique import SYNTHETIC
from rcakit.rag.outcomes import outcome_shares
from rcakit.rag.protocol import ARMS, DIAGNOSERS, PROBES, Lab, build_lab, case_store, sweep
from rcakit.rag.protocol import protocol_record as lab_protocol
from rcakit.rag.readers import HEED_WARNINGS
from rcakit.rag.settings import AUTHORS, EARLIER, JUDGE_CHOICES
from rcakit.rag.text import OUTCOMES
from rcakit.sections import Section

CHAPTERS = {"structural": "coverage-collapse", "content": "content-corruption"}  # the chapter of each arm
LAB_PARAMS = ("n_entities", "n_questions", "hops", "top_k", "reading_noise", "distractor_rate")
# The protocol's choices are rcakit.rag.settings' AUTHORS (the chapters' defaults; a parameter set without them,
# an older caller, runs the authors' protocol) and EARLIER (rcakit's targeted variant, for the side-by-side runs
# of the chapters' Explore sections).
BM25_COLUMN = "BM25 retriever"  # the Explore table's run with BM25 in place of the authors' dense retriever
RUN_ONLY = ("workers", "scheduler")  # where the cases run: never part of what a stored case means
Progress = Callable[..., Iterator[Any]] | None


@dataclass
class ArmRun:
    """An arm's lab, cases and scores, with the LLM judge's sample and costs when a model ran."""

    arm: str
    params: dict[str, Any]
    models: llm_methods.LLMPair
    lab: Lab
    cases: pd.DataFrame
    result: dict[str, Any]
    judged: pd.DataFrame | None = None
    same_cases: dict[str, Any] | None = None
    llm_cost: dict[str, Any] = field(default_factory=dict)
    runner: Runner = field(default_factory=Runner)
    replay: dict[str, Any] | None = None  # the LLM reader's replay action-match entry (rcakit.rag.fidelity)

    @property
    def depths(self) -> list[int]:
        """The injected depths, 1 to ``hops``."""
        return list(range(1, self.params["hops"] + 1))

    @cached_property
    def judge_summary(self) -> dict[str, Any] | None:
        """The judge's results entry (``llm_methods.judge_record``), or ``None`` without a judge."""
        if self.models.judge is None or self.judged is None or self.same_cases is None:
            return None
        return llm_methods.judge_record(self.models.judge, self.judged, self.same_cases, self.depths)

    def llm_numbers(self) -> dict[str, Any]:
        """The results entries of the LLM methods that ran: ``llm_cost``, ``llm_judge`` and
        ``replay_action_match`` (empty without a model)."""
        out = {}
        if self.llm_cost:
            out["llm_cost"] = self.llm_cost
        if self.judge_summary is not None:
            out["llm_judge"] = self.judge_summary
        if self.replay is not None:
            out["replay_action_match"] = self.replay
        return out

    def with_all_interventions(self, progress: Progress = track) -> ArmRun:
        """The structural run with all six interventions: this run itself when it ran them, else its parameters
        with ``intervention_set = "all"`` (its own case store; no LLM judge and no replay check, which the page's
        own run has)."""
        if self.params["intervention_set"] == "all":
            return self
        return run_arm(
            self.arm, {**self.params, "intervention_set": "all"}, progress=progress, replay=False, judge=False
        )

    def show_served(self) -> None:
        """Which hosts served the run's model calls (``rcakit.parallel.report_served``)."""
        report_served(self.runner)


def run_arm(
    arm: str,
    params: Mapping[str, Any],
    *,
    chapter_id: str | None = None,
    progress: Progress = track,
    replay: bool | None = None,
    judge: bool = True,
) -> ArmRun:
    """Run (or resume) arm ``arm`` with a chapter's checked ``params``; its store is named by ``chapter_id``
    (the arm's chapter by default) and lives in ``params["store"]`` under the results folder.

    ``params["workers"]`` and ``params["scheduler"]`` (``rcakit.parallel``) say where the cases and the
    judge's calls run. With an LLM reader and ``replay`` (by default for the structural arm), the clean
    runs of the first ``llm_max_cases`` questions are replayed read by read (``rcakit.rag.fidelity``, CAR §3).
    ``judge = False`` leaves the LLM judge out even with a model. A sweep in which no injected case failed
    is a valid run (every accuracy is "no such case"), not an error: a valid parameter never stops a page.
    """
    if arm not in ARMS:
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    params = {**authors_protocol(arm), **params}
    chapter_id = chapter_id or CHAPTERS[arm]
    bar = (lambda desc: partial(track, desc=desc)) if progress is track else (lambda desc: progress)
    models = llm_methods.models_from_params(
        params["provider"],
        params["judge_provider"],
        params["agent"],
        params["seed"],
        timeout=params["llm_timeout"],
        judge_hops=params["judge_hops"],
        judge_prompt=params["judge_prompt"],
        base_url=params.get("llm_base_url"),
    )
    runner = Runner(params.get("workers", 1), params.get("scheduler", ""))
    protocol = {k: params[k] for k in authors_protocol(arm) if k not in JUDGE_CHOICES and k not in LAB_PARAMS}
    lab = build_lab(
        params["seed"],
        **{k: params[k] for k in LAB_PARAMS},
        reader_chat=models.reader_chat,
        world=params.get("world", SYNTHETIC),
        runner=runner,
        **protocol,
    )
    depths = list(range(1, params["hops"] + 1))
    store = case_store(chapter_id, _stored(params), params["store"])
    cases = sweep(
        lab, arm, depths, store, threshold=params["coverage_threshold"], progress=bar(f"{arm} cases"), runner=runner
    )
    run = ArmRun(arm, params, models, lab, cases, attribution(cases, depths), runner=runner)
    judge_usage = None
    if models.judge is not None and judge:
        sample = llm_methods.judge_sample(cases, params["llm_max_cases"], params["seed"])
        run.judged, judge_usage = llm_methods.judge_cases(
            lab, sample, models.judge, progress=bar("llm judge"), runner=runner
        )
        run.same_cases = llm_methods.merge_judge(run.result, run.judged, depths)
    run.llm_cost = llm_methods.llm_cost(models, lab, cases, judge_usage=judge_usage)
    if models.reader_chat and (arm == "structural" if replay is None else replay):
        questions = lab.world.questions[: params["llm_max_cases"]]
        run.replay = match_record(agent_action_match(lab.agent, questions, runner=runner))
    return run


def authors_protocol(arm: str) -> dict[str, Any]:
    """The authors' protocol for ``arm`` (``rcakit.rag.settings.AUTHORS``, with the arm's retriever) and the rule
    reader's ``heed_warnings`` (``rcakit.rag.readers.HEED_WARNINGS``)."""
    return {**AUTHORS.as_params(arm), "heed_warnings": HEED_WARNINGS}


def _stored(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that key the case store: all but :data:`RUN_ONLY`, so any setting resumes any other;
    with the dense retriever, also the versions of the packages that compute its embeddings."""
    stored = {k: v for k, v in params.items() if k not in RUN_ONLY}
    if params.get("retriever") == "dense":
        stored["embedding_stack"] = stack_versions()
    return stored


def _offline(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the rule reader on the synthetic world and no model."""
    return {**params, "provider": "none", "judge_provider": "none", "agent": "rule", "world": SYNTHETIC}


def _authors(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` under the authors' protocol, the rule reader's ``heed_warnings`` and the retriever kept (a run
    without one gets the arm's own in :func:`run_arm`), so no side-by-side run needs a retriever the page's
    does not."""
    return {**params, **AUTHORS.as_params()}  # the authors' retriever differs by arm: as_params leaves it out


def protocol_runs(arm: str, params: Mapping[str, Any], progress: Progress = track) -> dict[str, ArmRun]:
    """The arm under the authors' protocol (for the structural arm also with all six interventions, and, when
    the page runs the authors' dense retriever, with BM25 in its place) and under the targeted variant
    (``rcakit.rag.settings.EARLIER``, six targeted interventions), each with the rule reader on the synthetic
    world at ``params``' sizes and reader settings, so only the protocol differs; each has its own case store
    (a rerun resumes them)."""
    base, chapter = _offline(params), CHAPTERS[arm]
    runs = {"authors' protocol": run_arm(arm, _authors(base), chapter_id=chapter, progress=progress)}
    if arm == "structural":  # the six kinds the authors implement, on their protocol otherwise
        six = {**_authors(base), "intervention_set": "all"}
        runs["all six interventions"] = run_arm(arm, six, chapter_id=chapter, progress=progress)
        if base.get("retriever") == "dense":  # the retriever's effect, beside the authors' dense run
            runs[BM25_COLUMN] = bm25_run(arm, _authors(base), progress)
    runs["targeted variant"] = run_arm(arm, {**base, **EARLIER.as_params()}, chapter_id=chapter, progress=progress)
    return runs


def bm25_run(arm: str, params: Mapping[str, Any], progress: Progress = track) -> ArmRun:
    """The arm at ``params`` with BM25 in place of the dense retriever, in its own case store (a rerun
    resumes it): the Explore table's column and the protocol table's measured effect of the retriever."""
    return run_arm(arm, {**params, "retriever": "bm25"}, chapter_id=CHAPTERS[arm], progress=progress)


def heed_runs(
    params: Mapping[str, Any], values: Sequence[float] = (0.0, 0.5, 1.0), progress: Progress = track
) -> dict[str, ArmRun]:
    """The structural arm under the authors' protocol for each rule-reader ``heed_warnings`` in ``values``
    (the reader's reaction to the generic warning texts), at ``params``' sizes; each has its own case store."""
    base = _authors(_offline(params))
    chapter = CHAPTERS["structural"]
    return {
        f"heed {v:g}": run_arm("structural", {**base, "heed_warnings": float(v)}, chapter_id=chapter, progress=progress)
        for v in values
    }


def protocol_facts(run: ArmRun) -> dict[str, Any]:
    """The protocol the run used (``rcakit.rag.protocol.protocol_record``), the judge's hop range and prompt."""
    return {**lab_protocol(run.lab), **{k: run.params[k] for k in JUDGE_CHOICES}}


def world_record(lab: Lab) -> dict[str, Any]:
    """Which world produced the numbers: its name, and for MuSiQue the selection counts (§6)."""
    return {
        "name": lab.world.name,
        "questions": len(lab.world.questions),
        "paragraphs": len(lab.world.corpus),
        **lab.selection,
    }


def describe_world(lab: Lab) -> str:
    """One sentence naming the world behind the chapter's numbers."""
    record = world_record(lab)
    if record["name"] == SYNTHETIC:
        return (
            f"The synthetic world (seeded, every hop fact certified by construction) holds "
            f"{record['questions']} questions and {record['paragraphs']:,} paragraphs"
        )
    return (
        f"The MuSiQue world holds {record['selected']} answerable questions with the chosen number of hops "
        f"(of {record['read']} read, {record['with_hops']} with that many hops, {record['answerable']} "
        f"of them answerable) and {record['paragraphs']:,} paragraphs; hops whose supporting paragraph "
        f"does not name the hop's answer: {record['uncertified_hops']}"
    )


@dataclass(frozen=True)
class ProtocolRow:
    """One choice of the authors' protocol (anote-ai/Research-AgenticRAG): its label, the chapter parameter,
    the authors' setting, the parameter's value that matches it (``None``: no parameter of the authors' to
    match; a dict by arm: it differs by arm), what the other values do, and where the page
    measures the effect of departing."""

    label: str
    name: str
    authors: str | dict[str, str]
    default: object
    note: str
    effect: str


TARGETED = "the Explore table's 'targeted variant' column, with the variant's other choices"
RERUN = "not measured on this page; rerun with another value"
PROTOCOL_ROWS = (
    ProtocolRow(
        "corpus",
        "corpus",
        "each question's own paragraphs (MuSiQue's 20)",
        AUTHORS.corpus,
        "global searches one index over the whole world",
        TARGETED,
    ),
    ProtocolRow(
        "retriever",
        "retriever",
        {
            "structural": "dense: all-MiniLM-L6-v2 cosine, the sweep behind Table 2",
            "content": "BM25: the four runs behind Tables 3 and 4",
        },
        {arm: AUTHORS.retriever_for(arm) for arm in ARMS},
        "bm25 ranks by Okapi BM25; dense by the cosine of all-MiniLM-L6-v2 embeddings of 'title: text', "
        "clamped at 0, so the first-two fallback almost never fires",
        "the Explore table's 'BM25 retriever' column, beside a dense run (the quick run takes BM25, so it "
        "shows no such column)",
    ),
    ProtocolRow(
        "hop budget",
        "spare_hops",
        "3 hops for a 3-hop question, then a forced answer",
        AUTHORS.spare_hops,
        "the budget is the question's hops plus spare_hops",
        TARGETED,
    ),
    ProtocolRow(
        "retrievals per hop",
        "reformulate",
        "one; no reformulation inside a hop",
        AUTHORS.reformulate,
        "reformulate adds a second search after a failed read",
        TARGETED,
    ),
    ProtocolRow("top_k", "top_k", str(AUTHORS.top_k), AUTHORS.top_k, "paragraphs per retrieval", TARGETED),
    ProtocolRow(
        "search where nothing scores",
        "empty_search",
        "the corpus's first two paragraphs",
        AUTHORS.empty_search,
        "nothing returns no paragraph",
        TARGETED,
    ),
    ProtocolRow(
        "structural interventions",
        "interventions",
        "generic texts that name no wrong object",
        AUTHORS.interventions,
        "rcakit words the generic texts itself: off-topic paragraphs, a confident notice that the entity does "
        "not exist, a notice that the value on record is outdated and superseded; targeted plants a wrong "
        "object of the right type and drifts to a look-alike",
        TARGETED + "; the wording reaches only a language model (agent llm), not the rule reader",
    ),
    ProtocolRow(
        "intervention set",
        "intervention_set",
        "four: empty retrieval, irrelevant documents, false premise, stale evidence (Table 2's live set)",
        AUTHORS.intervention_set,
        "all adds query drift and early termination, which the authors implement but do not run by default; "
        "a single kind runs alone",
        "the Explore table's 'all six interventions' column",
    ),
    ProtocolRow(
        "probe budget",
        "max_probes",
        "no cap in the content runs; 4 in the dense Table 2 runs, 2 in the BM25 structural runs",
        AUTHORS.max_probes,
        "0 probes every hop; a cap k repairs hops 1..k only, so with 2 hop 3 is never probed",
        "the probe-budget table (the authors' caps, derived from this run's cases)",
    ),
    ProtocolRow(
        "tokens",
        "tokenizer",
        "lower().split() over 'title: text' for BM25, coverage and the fallback; Jaccard < 0.05 grounding",
        AUTHORS.tokenizer,
        "normalised splits with the answer normaliser (articles and punctuation dropped), coverage and the "
        "fallback over the text alone",
        TARGETED,
    ),
    ProtocolRow(
        "continue-retrieving probe",
        "spare_hops",
        "resumes at hop n+1 within the budget",
        AUTHORS.spare_hops,
        "on a full trace it is a plain re-answer",
        TARGETED,
    ),
    ProtocolRow(
        "LLM judge's hops",
        "judge_hops",
        "any hop from 0 up, n+1 included",
        AUTHORS.judge_hops,
        "trace keeps the judge to hops 1..n",
        "not measurable offline: the judge is a language model",
    ),
    ProtocolRow(
        "LLM judge's sample",
        "llm_max_cases",
        "every failed case of each depth",
        None,
        "rcakit's judge reads a seeded sample of at most llm_max_cases failed cases per depth, so a run with a "
        "model stays short; a value above the failed count reads them all",
        "not measurable offline: the judge is a language model",
    ),
    ProtocolRow(
        "LLM judge's prompt",
        "judge_prompt",
        "asks for the earliest wrong hop (stage retrieval, answer_generation or none; hop from 1, or 0), every "
        "document in full, up to 256 tokens",
        AUTHORS.judge_prompt,
        "rcakit's says the answer is wrong, offers hop n+1 in words, cuts documents at 600 characters and "
        "replies in 32 tokens",
        "not measurable offline: the judge is a language model",
    ),
    ProtocolRow(
        "content span",
        "span_rule",
        "the gold answer if present (not yes/no or under 3 characters), else a bridge entity, else the most "
        "salient span, ranked by tokens, occurrences and length over all the hop's documents; any number is "
        "perturbed; invented names when no other answer fits",
        AUTHORS.span_rule,
        "first_mention takes the first bridge mention and a salient span of the top document only, perturbs "
        "only salient numbers and skips a case no answer fits",
        "the span-rule table below (both rules on the same cases)",
    ),
    ProtocolRow(
        "reader's reaction to a warning",
        "heed_warnings",
        "the language model's own",
        None,
        "the rule reader cannot read a warning; it abstains on one with this probability, chosen once "
        f"({HEED_WARNINGS:g}) before any attribution number was seen",
        "the Explore section's heed_warnings sweep",
    ),
    ProtocolRow(
        "agent's reader",
        "agent",
        "a language model that may answer before its budget is spent",
        None,
        "no model is reachable offline: the rule reader, which always takes every hop, or agent llm with a "
        "provider (traces too short for a depth are skipped there and counted)",
        "not measurable offline: the agent is a language model",
    ),
    ProtocolRow(
        "questions",
        "world",
        "answerable 3-hop MuSiQue questions",
        None,
        "MuSiQue is not reachable here: a synthetic world with certified hop facts (world musique when fetched)",
        "not measurable offline: MuSiQue needs agent llm",
    ),
)


def _setting_text(value: object) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


STRUCTURAL_ONLY = ("interventions", "intervention_set", "heed_warnings")  # choices only the structural arm meets
CONTENT_ONLY = ("span_rule",)  # a choice only the content arm meets


@dataclass(frozen=True)
class ProtocolChoice:
    """One choice of the protocol as this run made it: the row, the authors' setting, this run's value and
    its parameter's default (None when rcakit cannot take the authors' setting), and where a departure's
    effect is measured."""

    row: ProtocolRow
    authors: str
    value: Any
    default: Any
    effect: str

    @property
    def why(self) -> str:
        """The row's note, after whether the value is the authors' setting or departs from it."""
        if self.default is None:
            return self.row.note
        if self.value == self.default:
            return f"the authors' setting; {self.row.note}"
        return f"departs from the authors' ({_setting_text(self.default)}); {self.row.note}"


def protocol_choices(
    params: Mapping[str, Any], arm: str = "structural", effects: Mapping[str, str] | None = None
) -> list[ProtocolChoice]:
    """The protocol's choices for an arm, as ``params`` make them (the authors' defaults filled in);
    ``effects``, by parameter name, gives a measured effect in place of where it is measured. The content
    arm leaves out the structural interventions and the reader's reaction to their warnings."""
    params = {**authors_protocol(arm), "agent": "rule", "world": SYNTHETIC, **params}
    choices = []
    for row in PROTOCOL_ROWS:
        authors, default = row.authors, row.default
        if isinstance(authors, dict) and isinstance(default, dict):  # an authors' setting that differs by arm
            authors, default = authors[arm], default[arm]
        if (arm != "structural" and row.name in STRUCTURAL_ONLY) or (arm != "content" and row.name in CONTENT_ONLY):
            continue
        effect = (effects or {}).get(row.name, row.effect)
        choices.append(ProtocolChoice(row, str(authors), params.get(row.name), default, effect))
    return choices


def protocol_table(
    params: Mapping[str, Any], arm: str = "structural", effects: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """The chapter's protocol table (:func:`protocol_choices`): per choice, the authors' setting, this run's
    (its parameter and value), why, and where the effect of a departure is measured; a run that departs
    from the authors' says so."""
    return _table_of(protocol_choices(params, arm, effects))


def _table_of(choices: Sequence[ProtocolChoice]) -> pd.DataFrame:
    rows = [
        {
            "choice": c.row.label,
            "authors' protocol": c.authors,
            "this chapter": f"{c.row.name} = {_setting_text(c.value)}",
            "why": c.why,
            "effect measured in": c.effect,
        }
        for c in choices
    ]
    return pd.DataFrame(rows).set_index("choice")


def protocol_list(choices: Sequence[ProtocolChoice]) -> str:
    """The protocol as a reader takes it in (Markdown): one line per choice, the authors' setting, this
    run's and the alternatives, then each place a departure's effect is measured with the choices it
    covers, said once instead of on every row."""
    lines = ["**Each choice: the authors' setting, this run's, and the alternatives.**", ""]
    for c in choices:
        here = f"`{c.row.name} = {_setting_text(c.value)}`"
        if c.default is None:
            status = f"here {here}, as close as rcakit gets offline"
        elif c.value == c.default:
            status = f"here {here}, the authors' setting"
        else:
            status = f"here {here}, **a departure** (the authors': `{_setting_text(c.default)}`)"
        lines.append(f"- **{c.row.label}**: {c.authors}; {status} ({c.row.note}).")
    lines += ["", "**Where a departure's effect is measured.**", ""]
    by_effect: dict[str, list[str]] = {}
    for c in choices:
        by_effect.setdefault(c.effect, []).append(c.row.label)
    lines += [f"- **{', '.join(labels)}**: {effect}." for effect, labels in by_effect.items()]
    return "\n".join(lines)


def protocol_cells(runs: Mapping[str, ArmRun], names: Sequence[str], level: str = "protocol") -> pd.DataFrame:
    """Per injected hop and protocol run (rows ``(injected hop, level)``; ``runs``: label -> run): exact-hop
    accuracy of ``names``, failed n and recovery, so a reader sees how much the protocol alone moves each
    cell, in a table as narrow as the text column."""
    rows = {}
    for label, run in runs.items():
        for d in run.depths:
            cells = {name: run.result["accuracy"].get(name, {}).get(str(d), {}).get("point") for name in names}
            rows[(d, label)] = {
                **cells,
                "failed n": run.result["failed_n"][str(d)],
                "recovery": run.result["recovery"][str(d)],
            }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(list(rows), names=["injected hop", level])
    return frame.sort_index(level=0, sort_remaining=False)


def setup_section(run: ArmRun) -> Section:
    """The protocol table (the authors' setting, this run's, and why), with the protocol, the world and the
    clean agent's accuracy recorded and quoted; the structural arm records its eligible questions per depth
    and the correct clean traces skipped there for being too short (an LLM agent that answered early),
    the content arm the injected cases and those skipped for want of a certifiable span. The facts also
    hold the arm's chapter's ``quick`` values (``quick_<name>``), which the page's setting note quotes."""
    lab, cases = run.lab, run.cases
    protocol = protocol_facts(run)
    numbers: dict[str, Any] = {"protocol": protocol, "clean_accuracy": lab.clean_accuracy, "world": world_record(lab)}
    facts: dict[str, Any] = {"protocol": protocol, "clean_accuracy": lab.clean_accuracy}
    facts["world_description"] = describe_world(lab)
    facts["quick"] = registry.get(CHAPTERS[run.arm]).quick  # the values the page's setting note names
    if run.arm == "structural":
        numbers["eligible_questions"] = lab.eligible_questions(run.depths)
        numbers["short_traces_skipped"] = lab.short_traces(run.depths)
    else:
        numbers["skipped"] = facts["skipped"] = int(cases["skipped"].sum())
        facts["injected"] = int(len(cases))
    effects = {}
    if run.arm == "structural" and run.params.get("retriever") == "dense":
        effect = retriever_effect(run)
        effects["retriever"] = effect["text"]
        numbers["retriever_effect"] = {k: v for k, v in effect.items() if k != "text"}
    choices = protocol_choices(run.params, arm=run.arm, effects=effects)
    return Section(table=_table_of(choices), numbers=numbers, facts=facts, listing=protocol_list(choices))


def retriever_effect(run: ArmRun, names: Sequence[str] = ("propagation_aware",)) -> dict[str, Any]:
    """What BM25 in place of the authors' dense retriever does to the run (its own case store; the Explore
    table's 'BM25 retriever' column): failed n, recovery and ``names``' exact-hop accuracy per depth, dense
    then BM25, and the same in words for the protocol table."""
    bm25 = bm25_run(run.arm, _offline(run.params))

    def per_depth(result: Mapping[str, Any], key: str, name: str | None = None) -> list[Any]:
        block = result[key] if name is None else result[key].get(name, {})
        return [block.get(str(d)) if name is None else block.get(str(d), {}).get("point") for d in run.depths]

    numbers: dict[str, Any] = {}
    for label, key, name in [("failed n", "failed_n", None), ("recovery", "recovery", None)] + [
        (n.replace("_", " "), "accuracy", n) for n in names
    ]:
        numbers[label] = {"dense": per_depth(run.result, key, name), "bm25": per_depth(bm25.result, key, name)}

    def text(values: list[Any]) -> str:
        return "/".join("n/a" if v is None else (f"{v:.2f}" if isinstance(v, float) else f"{v}") for v in values)

    words = "; ".join(f"{label} {text(v['dense'])} → {text(v['bm25'])}" for label, v in numbers.items())
    return {**numbers, "text": f"measured, BM25 in place of dense at these sizes (hops 1/2/3): {words}"}


def protocol_comparison_section(arm: str, params: Mapping[str, Any], names: Sequence[str]) -> Section:
    """The arm under the authors' protocol beside rcakit's targeted variant (:func:`protocol_runs`): per
    injected hop, exact-hop accuracy of ``names``, failed n and recovery, and for the content arm the outcome
    shares first, in place of the recovery (which is the resisted share: a resisted answer is a correct one)."""
    runs = protocol_runs(arm, params)
    frame = protocol_cells(runs, names)
    if arm == "content":
        frame = frame.drop(columns="recovery")
        shares = pd.concat({label: outcome_shares(r.cases)[list(OUTCOMES)] for label, r in runs.items()})
        assert isinstance(shares.index, pd.MultiIndex), "one level per protocol run"
        shares.index = shares.index.swaplevel().set_names(frame.index.names)
        frame = pd.concat([shares, frame], axis=1).loc[frame.index].rename_axis(["corrupted hop", "protocol"])
    return Section(table=frame, decimals=2)


def heed_comparison_section(params: Mapping[str, Any], names: Sequence[str]) -> Section:
    """The structural arm under the authors' protocol at three rule-reader ``heed_warnings`` values
    (:func:`heed_runs`), per injected hop: exact-hop accuracy of ``names``, failed n and recovery."""
    return Section(table=protocol_cells(heed_runs(params), names, level="heed warnings"), decimals=2)


NO_MODEL = "no language model ran (provider = none)"


def _cell(c: dict[str, Any] | None) -> str:
    """One accuracy cell as 'point [lo, hi]', or 'n/a'."""
    if c is None or np.isnan(c["point"]):
        return "n/a"
    return f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def accuracy_table(result: dict[str, Any], depths: Iterable[int]) -> pd.DataFrame:
    """The Table-2-style frame: one row per diagnoser, 'point [lo, hi]' per depth, plus failed n."""
    keys = [str(d) for d in depths]
    names = sorted(result["accuracy"], key=lambda n: DIAGNOSERS.index(n) if n in DIAGNOSERS else len(DIAGNOSERS))
    rows = {name: {f"hop {d}": _cell(result["accuracy"][name].get(d)) for d in keys} for name in names}
    rows["failed n"] = {f"hop {d}": str(result["failed_n"][d]) for d in keys}
    if "llm_judged_n" in result:  # the LLM judge reads a sample of the failed cases
        rows["llm_judge n"] = {f"hop {d}": str(result["llm_judged_n"][d]) for d in keys}
    rows["recovery"] = {f"hop {d}": f"{result['recovery'][d]:.2f}" for d in keys}
    return pd.DataFrame(rows).T


CASES, PROBE_ACCURACY = "failed cases by branch", "probe accuracy"  # branch_table's column groups
BRANCH_ACCURACY = "branch accuracy"


def branch_table(result: dict[str, Any], depths: Iterable[int]) -> pd.DataFrame:
    """Per probe and depth: failed cases per branch, each branch's accuracy on its cases, and the probe's
    accuracy with and without the fallback branch.
    """
    rows = {}
    for probe in PROBES:
        for d in map(str, depths):
            if d not in result["probe_branch"].get(probe, {}):
                continue
            row = {(CASES, b): result["probe_branch"][probe][d][b] for b in diagnosers.BRANCHES}
            row.update({(BRANCH_ACCURACY, b): result["branch_accuracy"][probe][d][b] for b in diagnosers.BRANCHES[:3]})
            row[(PROBE_ACCURACY, "all")] = result["accuracy"][probe][d]["point"]
            row[(PROBE_ACCURACY, "without fallback")] = result["accuracy_without_fallback"][probe][d]["point"]
            rows[(probe, int(d))] = row
    index = pd.MultiIndex.from_tuples(list(rows), names=["probe", "depth"])  # empty when no case failed
    columns = pd.MultiIndex.from_tuples(
        [(CASES, b) for b in diagnosers.BRANCHES]
        + [(BRANCH_ACCURACY, b) for b in diagnosers.BRANCHES[:3]]
        + [(PROBE_ACCURACY, "all"), (PROBE_ACCURACY, "without fallback")]
    )
    return pd.DataFrame(list(rows.values()), index=index, columns=columns)


VIEWS = {"stage accuracy": "stage_accuracy", "mean |hop error|": "mae", "mean tokens": "mean_cost"}


def views_table(result: dict[str, Any]) -> pd.DataFrame:
    """Stage accuracy, mean absolute hop error and mean tokens spent, per diagnoser and depth, side by side."""
    return pd.concat({label: pd.DataFrame(result[key]).T for label, key in VIEWS.items()}, axis=1)


ORACLE_LABELS = {"oracle_gold_hop": "oracle_gold_hop (oracle)"}  # what reads the world's certified facts


def label_oracle(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every row or column of a diagnoser that reads the world's gold facts marked "(oracle)"."""
    return frame.rename(index=ORACLE_LABELS, columns=ORACLE_LABELS)


def accuracy_section(run: ArmRun, names: Sequence[str]) -> Section:
    """Exact-hop accuracy of every diagnoser by injected hop, 'point [lo, hi]' with failed n and recovery,
    the oracle marked; records the run's scores with their intervals and quotes the points of ``names``
    (``acc_<name>_<hop>``, text: a depth with no failed case reads :data:`~rcakit.prose.NO_CASE`) and the
    failed counts (``failed_<hop>``)."""
    result = run.result
    numbers = {**result, "accuracy_ci": interval_pairs(dict(result))}
    facts = {"acc": _quoted_points(result, run.depths, names), "failed": result["failed_n"]}
    return Section(table=label_oracle(accuracy_table(result, run.depths)), numbers=numbers, facts=facts)


def _quoted_points(
    result: dict[str, Any], depths: Iterable[int], names: Iterable[str] | None = None, view: str = "accuracy"
) -> dict[str, dict[str, str]]:
    """:func:`~rcakit.rag.metrics.accuracy_points` as prose text for every depth (:func:`rcakit.prose.by_depth`)."""
    return {name: prose.by_depth(p, depths) for name, p in accuracy_points(result, names, view).items()}


def _every_depth(counts: dict[str, dict[str, int]], depths: Iterable[int]) -> dict[str, dict[str, int]]:
    """Branch counts for every depth: a depth with no failed case decided no case by any branch."""
    return {str(d): counts.get(str(d), dict.fromkeys(diagnosers.BRANCHES, 0)) for d in depths}


def published_section(chapter_id: str, table: str) -> Section:
    """The paper's own table ``table`` of ``chapter_id`` (``data/claims.yaml``), one row per diagnoser."""
    return Section(table=pd.DataFrame(published(chapter_id, table)).T)


def views_section(run: ArmRun) -> Section:
    """Stage accuracy, mean absolute hop error and mean tokens spent, per diagnoser and injected hop."""
    return Section(table=label_oracle(views_table(run.result)), decimals=2)


def branches_section(run: ArmRun, *, downstream: bool = False) -> Section:
    """Per probe and injected hop: the failed cases each branch decided (their accuracies are
    :func:`branch_accuracy_section`'s table); quotes the counts (``branch_n_...``, 0 at a depth with no failed
    case), the accuracy without the fallback (``without_fallback_...``, text as in :func:`accuracy_section`)
    and each branch's hit share (``hit_share_...``).

    ``downstream`` adds the oracle column (the share of failed cases whose evidence still states every later
    hop's fact), records it as ``oracle_downstream_intact`` and quotes it (``downstream_intact_<hop>``).
    """
    result = run.result
    facts: dict[str, Any] = {
        "without_fallback": _quoted_points(result, run.depths, PROBES, view="accuracy_without_fallback"),
        "branch_n": {name: _every_depth(result["probe_branch"].get(name, {}), run.depths) for name in PROBES},
        "hit_share": result["branch_hit_share"],
    }
    table = branch_table(result, run.depths)[[CASES]].copy()
    if not downstream:
        return Section(table=table, facts=facts, decimals=2)
    intact = failed_share(run.cases, "downstream_intact", run.depths)
    table[("oracle", "downstream facts intact")] = [intact[str(d)] for _, d in table.index]
    facts["downstream_intact"] = prose.by_depth(intact, run.depths)
    return Section(table=table, numbers={"oracle_downstream_intact": intact}, facts=facts, decimals=2)


def branch_accuracy_section(run: ArmRun) -> Section:
    """Per probe and injected hop: each branch's exact-hop accuracy on the failed cases it decided, and the
    probe's accuracy with and without its fallback branch (the counts are :func:`branches_section`'s)."""
    table = branch_table(run.result, run.depths)
    return Section(table=table[[BRANCH_ACCURACY, PROBE_ACCURACY]], decimals=2)


def probe_budget_section(run: ArmRun) -> Section:
    """Propagation-Aware's and Suf-Regen's exact-hop accuracy per injected hop at this run's probe budget and
    at each of the authors' strict caps (:data:`~rcakit.rag.metrics.PROBE_CAPS`) below it, derived from the
    run's own cases (:func:`~rcakit.rag.metrics.capped_probes`); records ``probe_budget`` and quotes
    ``probe_cap_<cap>_<probe>_<hop>`` (text, as in :func:`accuracy_section`)."""
    own = run.lab.max_probes
    caps = [c for c in PROBE_CAPS if own is None or c < own]
    views = {f"max_probes = {own or 0} (this run)": run.result}
    views |= {f"max_probes = {c}": attribution(capped_probes(run.cases, c), run.depths) for c in caps}
    points = {label: accuracy_points(result, PROBES) for label, result in views.items()}
    table = pd.DataFrame(
        {
            (name, label): {f"hop {d}": p[name].get(str(d)) for d in run.depths}
            for label, p in points.items()
            for name in PROBES
        }
    )
    table = table[[c for name in PROBES for c in table.columns if c[0] == name]]
    quoted = {str(c): _quoted_points(views[f"max_probes = {c}"], run.depths, PROBES) for c in caps}
    numbers = {"probe_budget": {str(c): points[f"max_probes = {c}"] for c in caps}}
    return Section(table=table, numbers=numbers, facts={"probe_cap": quoted}, decimals=2)


def cost_section(run: ArmRun) -> Section:
    """The LLM methods' calls, tokens and abstentions, in total and per case (``rcakit.llm.accounting``)."""
    if not run.llm_cost:
        return Section.skip(f"{NO_MODEL}, so no model call was made")
    return Section(table=cost_table(run.llm_cost), numbers={"llm_cost": run.llm_cost})


def judge_section(run: ArmRun) -> Section:
    """Per injected hop of the judged cases: how many the LLM judge assigned to each hop (0 = none or
    abstained), then every diagnoser's exact-hop accuracy on those same cases; quotes the judge's summary
    (``judge_judged``, ``judge_abstained``, ``judge_modal_hop``, ...)."""
    summary = run.judge_summary
    if summary is None or run.judged is None or run.same_cases is None:
        return Section.skip(f"{NO_MODEL}, so no LLM judge read the failed cases")
    counts = llm_methods.hop_counts(run.judged, run.depths).rename(index="hop {}".format)
    same = llm_methods.same_case_table(run.same_cases, run.depths).T
    table = pd.concat({"judge's hop (0 = none or abstained)": counts, "accuracy on the judged cases": same}, axis=1)
    facts = {"judge": {k: v for k, v in summary.items() if k not in ("hop_counts", "same_cases")}}
    return Section(table=table.rename_axis("injected hop"), numbers={"llm_judge": summary}, facts=facts, decimals=2)


def replay_section(run: ArmRun) -> Section:
    """The LLM reader's replay action-match rate with its 95% Wilson interval (CAR §3)."""
    if run.replay is None:
        return Section.skip("the agent's reader is the rule reader, which replays exactly by construction")
    r = run.replay
    row = {"reads": r["n"], "matched": r["matched"], "rate": r["rate"], "95% low": r["ci"][0], "95% high": r["ci"][1]}
    table = pd.DataFrame([row], index=pd.Index(["llm_reader"], name="reader"))
    return Section(table=table, numbers={"replay_action_match": r})
