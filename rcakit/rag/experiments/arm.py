"""One arm of AgenticRAG-FP run end to end (§6-7): models, lab, case store, sweep, scores, the LLM judge.

``run_arm("structural" | "content", params)`` turns a chapter's parameters
into its models, lab and case store, runs (or resumes) the sweep, scores it,
and, when a language model is given, lets the LLM judge read its seeded
sample and scores every diagnoser on the same judged cases. The returned
:class:`ArmRun` is what every section of the two chapters reads.
:func:`protocol_runs` and :func:`heed_runs` rerun an arm under other protocol
settings for the chapters' Explore sections.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import pandas as pd

from rcakit import RcakitError
from rcakit.parallel import Runner, report_served
from rcakit.progress import track
from rcakit.rag import llm_methods as lm
from rcakit.rag import replay as rp
from rcakit.rag.embeddings import stack_versions
from rcakit.rag.metrics import attribution
from rcakit.rag.musique import SYNTHETIC
from rcakit.rag.protocol import ARMS, Lab, build_lab, case_store, sweep

CHAPTERS = {"structural": "coverage-collapse", "content": "content-corruption"}  # the chapter of each arm
LAB_PARAMS = ("n_entities", "n_questions", "hops", "top_k", "reading_noise", "distractor_rate")
# The protocol's choices, each with the authors' setting (anote-ai/Research-AgenticRAG) as its default; a parameter
# set without them (an older caller) runs the authors' protocol.
PROTOCOL_DEFAULTS = {
    "corpus": "question",
    "empty_search": "first_two",
    "spare_hops": 0,
    "reformulate": False,
    "interventions": "generic",
    "intervention_set": "authors",
    "max_probes": 0,  # 0: the probes repair every hop
    "tokenizer": "authors",
    "heed_warnings": 0.5,
    "judge_hops": "any",
    "judge_prompt": "authors",
    "span_rule": "authors",
}
# The authors' retriever differs by arm (the authors' code, anote-ai/Research-AgenticRAG): Table 2's structural
# sweep is dense (all-MiniLM-L6-v2), the content-corruption runs behind Tables 3-4 are BM25.
AUTHORS_RETRIEVER = {"structural": "dense", "content": "bm25"}
# rcakit's targeted variant of the protocol, for the side-by-side run of the chapters' Explore sections.
EARLIER_PROTOCOL = {
    "corpus": "global",
    "empty_search": "nothing",
    "spare_hops": 1,
    "reformulate": True,
    "interventions": "targeted",
    "intervention_set": "all",
    "tokenizer": "normalised",
    "top_k": 3,
    "judge_hops": "trace",
    "judge_prompt": "rcakit",
    "span_rule": "first_mention",
    "retriever": "bm25",
}
JUDGE_CHOICES = ("judge_hops", "judge_prompt")  # the judge's, not the lab's
RUN_ONLY = ("workers", "scheduler")  # where the cases run: never part of what a stored case means
Progress = Callable[..., Iterator] | None


@dataclass
class ArmRun:
    """An arm's lab, cases and scores, with the LLM judge's sample and costs when a model ran."""

    arm: str
    params: dict
    models: lm.Models
    lab: Lab
    cases: pd.DataFrame
    result: dict
    judged: pd.DataFrame | None = None
    same_cases: dict | None = None
    llm_cost: dict = field(default_factory=dict)
    runner: Runner = field(default_factory=Runner)
    replay: dict | None = None  # the LLM reader's replay action-match entry (rcakit.rag.replay)

    @property
    def depths(self) -> list[int]:
        """The injected depths, 1 to ``hops``."""
        return list(range(1, self.params["hops"] + 1))

    @cached_property
    def judge_summary(self) -> dict | None:
        """The judge's results entry (``llm_methods.judge_record``), or ``None`` without a judge."""
        if self.models.judge is None or self.judged is None or self.same_cases is None:
            return None
        return lm.judge_record(self.models.judge, self.judged, self.same_cases, self.depths)

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
    runs of the first ``llm_max_cases`` questions are replayed read by read (``rcakit.rag.replay``, CAR §3).
    ``judge = False`` leaves the LLM judge out even with a model. A sweep in which no injected case failed
    is a valid run (every accuracy is "no such case"), not an error: a valid parameter never stops a page.
    """
    if arm not in ARMS:
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    params = {**authors_protocol(arm), **params}
    chapter_id = chapter_id or CHAPTERS[arm]
    bar = (lambda desc: partial(track, desc=desc)) if progress is track else (lambda desc: progress)
    models = lm.models_from_params(
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
    protocol = {k: params[k] for k in authors_protocol(arm) if k not in JUDGE_CHOICES}
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
        sample = lm.judge_sample(cases, params["llm_max_cases"], params["seed"])
        run.judged, judge_usage = lm.judge_cases(lab, sample, models.judge, progress=bar("llm judge"), runner=runner)
        run.same_cases = lm.merge_judge(run.result, run.judged, depths)
    run.llm_cost = lm.llm_cost(models, lab, cases, judge_usage=judge_usage)
    if models.reader_chat and (arm == "structural" if replay is None else replay):
        questions = lab.world.questions[: params["llm_max_cases"]]
        run.replay = rp.match_record(rp.agent_action_match(lab.agent, questions, runner=runner))
    return run


def with_all_interventions(run: ArmRun, progress: Progress = track) -> ArmRun:
    """The structural ``run`` with all six interventions: ``run`` itself when it ran them, else its parameters
    with ``intervention_set = "all"`` (its own case store; no LLM judge and no replay check, which the page's
    own run has)."""
    if run.params["intervention_set"] == "all":
        return run
    return run_arm(run.arm, {**run.params, "intervention_set": "all"}, progress=progress, replay=False, judge=False)


def authors_protocol(arm: str) -> dict[str, Any]:
    """The authors' protocol for ``arm``: :data:`PROTOCOL_DEFAULTS` and the arm's retriever."""
    return {**PROTOCOL_DEFAULTS, "retriever": AUTHORS_RETRIEVER[arm]}


def _stored(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that key the case store: all but :data:`RUN_ONLY`, so any setting resumes any other;
    with the dense retriever, also the versions of the packages that compute its embeddings."""
    stored = {k: v for k, v in params.items() if k not in RUN_ONLY}
    if params.get("retriever") == "dense":
        stored["embedding_stack"] = stack_versions()
    return stored


def show_served(run: ArmRun) -> None:
    """Which hosts served the run's model calls (``rcakit.parallel.report_served``)."""
    report_served(run.runner)


def _offline(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the rule reader on the synthetic world and no model."""
    return {**params, "provider": "none", "judge_provider": "none", "agent": "rule", "world": SYNTHETIC}


def _authors(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` under the authors' protocol, the rule reader's ``heed_warnings`` and the retriever kept (a run
    without one gets the arm's own in :func:`run_arm`), so no side-by-side run needs a retriever the page's
    does not."""
    return {**params, **{k: v for k, v in PROTOCOL_DEFAULTS.items() if k != "heed_warnings"}, "top_k": 5}


def protocol_runs(arm: str, params: Mapping[str, Any], progress: Progress = track) -> dict[str, ArmRun]:
    """The arm under the authors' protocol, for the structural arm with all six interventions, and under the
    targeted variant (:data:`EARLIER_PROTOCOL`, six targeted interventions), each with the rule reader
    on the synthetic world at ``params``' sizes and reader settings, so only the protocol differs; each has
    its own case store (a rerun resumes them)."""
    base, chapter = _offline(params), CHAPTERS[arm]
    runs = {"authors' protocol": run_arm(arm, _authors(base), chapter_id=chapter, progress=progress)}
    if arm == "structural":  # the six kinds the authors implement, on their protocol otherwise
        six = {**_authors(base), "intervention_set": "all"}
        runs["all six interventions"] = run_arm(arm, six, chapter_id=chapter, progress=progress)
    runs["targeted variant"] = run_arm(arm, {**base, **EARLIER_PROTOCOL}, chapter_id=chapter, progress=progress)
    return runs


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
