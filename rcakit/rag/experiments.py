"""One arm of AgenticRAG-FP run end to end, as the two RAG chapters show it (§6-7).

``run_arm("structural" | "content", params)`` turns a chapter's parameters
into its models, lab and case store, runs (or resumes) the sweep, scores it,
and, when a language model is given, lets the LLM judge read its seeded
sample and scores every diagnoser on the same judged cases. The returned
``ArmRun`` holds everything the chapters display and record.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial

import pandas as pd

from rcakit import RcakitError
from rcakit.llm.accounting import cost_table
from rcakit.parallel import Runner, report_served
from rcakit.progress import track
from rcakit.rag import llm_methods as lm
from rcakit.rag import replay as rp
from rcakit.rag.metrics import attribution
from rcakit.rag.musique import SYNTHETIC
from rcakit.rag.protocol import ARMS, Lab, build_lab, case_store, sweep

CHAPTERS = {"structural": "coverage-collapse", "content": "content-corruption"}  # the chapter of each arm
LAB_PARAMS = ("n_entities", "n_questions", "hops", "top_k", "reading_noise", "distractor_rate")


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
        return list(range(1, self.params["hops"] + 1))

    @cached_property
    def judge_summary(self) -> dict | None:
        """The judge's results entry (``llm_methods.judge_record``), or ``None`` without a judge."""
        if self.models.judge is None:
            return None
        return lm.judge_record(self.models.judge, self.judged, self.same_cases, self.depths)

    def llm_numbers(self) -> dict:
        """The results entries of the LLM methods that ran: ``llm_cost`` and ``llm_judge`` (empty without a model)."""
        out = {}
        if self.llm_cost:
            out["llm_cost"] = self.llm_cost
        if self.judge_summary is not None:
            out["llm_judge"] = self.judge_summary
        if self.replay is not None:
            out["replay_action_match"] = self.replay
        return out


def run_arm(arm: str, params: Mapping, chapter_id: str | None = None,
            progress: Callable[..., Iterable] | None = track, replay: bool | None = None) -> ArmRun:
    """Run (or resume) arm ``arm`` with a chapter's checked ``params``; its store is named by ``chapter_id``
    (the arm's chapter by default) and lives in ``params["store"]`` under the results folder.

    ``params["workers"]`` and ``params["scheduler"]`` (``rcakit.parallel``) say where the cases and the
    judge's calls run. With an LLM reader and ``replay`` (by default for the structural arm), the clean
    runs of the first ``llm_max_cases`` questions are replayed read by read (``rcakit.rag.replay``, CAR §3).
    """
    if arm not in ARMS:
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    params = dict(params)
    chapter_id = chapter_id or CHAPTERS[arm]
    bar = (lambda desc: partial(progress, desc=desc)) if progress is track else (lambda desc: progress)
    models = lm.models_from_params(params["provider"], params["judge_provider"], params["agent"], params["seed"],
                                   timeout=params["llm_timeout"])
    runner = Runner(params.get("workers", 1), params.get("scheduler", ""))
    lab = build_lab(params["seed"], **{k: params[k] for k in LAB_PARAMS}, reader_chat=models.reader_chat,
                    world=params.get("world", SYNTHETIC), runner=runner)
    depths = list(range(1, params["hops"] + 1))
    store = case_store(chapter_id, _stored(params), params["store"])
    cases = sweep(lab, arm, depths, store, threshold=params["coverage_threshold"], progress=bar(f"{arm} cases"),
                  runner=runner)
    run = ArmRun(arm, params, models, lab, cases, attribution(cases, depths), runner=runner)
    judge_usage = None
    if models.judge is not None:
        sample = lm.judge_sample(cases, params["llm_max_cases"], params["seed"])
        run.judged, judge_usage = lm.judge_cases(lab, sample, models.judge, progress=bar("llm judge"), runner=runner)
        run.same_cases = lm.merge_judge(run.result, run.judged, depths)
    run.llm_cost = lm.llm_cost(models, lab, cases, judge_usage=judge_usage)
    if models.reader_chat and (arm == "structural" if replay is None else replay):
        questions = lab.world.questions[:params["llm_max_cases"]]
        run.replay = rp.match_record(rp.agent_action_match(lab.agent, questions, runner=runner))
    return run


RUN_ONLY = ("workers", "scheduler")  # where the cases run: never part of what a stored case means


def _stored(params: dict) -> dict:
    """The parameters that key the case store: all but :data:`RUN_ONLY`, so any setting resumes any other."""
    return {k: v for k, v in params.items() if k not in RUN_ONLY}


def show_cost(run: ArmRun) -> None:
    """Display the LLM methods' cost table; nothing without a language model."""
    from IPython.display import display

    if run.llm_cost:
        display(cost_table(run.llm_cost))


def show_served(run: ArmRun) -> None:
    """Which hosts served the run's model calls (``rcakit.parallel.report_served``)."""
    report_served(run.runner)


def describe_replay(run: ArmRun) -> str:
    """One line on the LLM reader's replay action-match rate (CAR §3), or why there is none."""
    if run.replay is None:
        return "replay action match: not measured (the agent's reader is the rule reader, which replays exactly)"
    r = run.replay
    return (f"replay action match: {r['matched']} of {r['n']} reads ({r['rate']:.3f}, "
            f"95% Wilson interval {r['ci'][0]:.3f} to {r['ci'][1]:.3f})")


def show_judge(run: ArmRun) -> None:
    """Print what the judge did and display its hop counts and the same-case table; nothing without a judge."""
    from IPython.display import display

    if run.judge_summary is None:
        return
    print(lm.describe_judge(run.judge_summary))
    counts = lm.hop_counts(run.judged, run.depths)
    display(counts.rename_axis(index="injected hop", columns="judge's hop (0 = empty trace or abstained)"))
    display(lm.same_case_table(run.same_cases, run.depths).round(2))




def world_record(lab: Lab) -> dict:
    """Which world produced the numbers: its name, and for MuSiQue the selection counts (§6)."""
    return {"name": lab.world.name, "questions": len(lab.world.questions), "paragraphs": len(lab.world.corpus),
            **lab.selection}


def describe_world(lab: Lab) -> str:
    """One line naming the world behind the chapter's numbers."""
    record = world_record(lab)
    if record["name"] == SYNTHETIC:
        return (f"world: synthetic (seeded, every hop fact certified by construction); {record['questions']} "
                f"questions, {record['paragraphs']} paragraphs")
    return (f"world: MuSiQue, {record['selected']} answerable questions with the chosen number of hops "
            f"(of {record['read']} read, {record['with_hops']} with that many hops, {record['answerable']} "
            f"of them answerable); {record['paragraphs']} pooled paragraphs; hops whose supporting paragraph "
            f"does not name the hop's answer: {record['uncertified_hops']}")
