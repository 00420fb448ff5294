"""One arm of AgenticRAG-FP run end to end, as the two RAG chapters show it (§6-7).

``run_arm("structural" | "content", params)`` turns a chapter's parameters
into its models, lab and case store, runs (or resumes) the sweep, scores it,
and, when a language model is given, lets the LLM judge read its seeded
sample and scores every diagnoser on the same judged cases. The returned
``ArmRun`` holds everything the chapters display and record.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
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
from rcakit.rag.protocol import protocol_record as protocol_record_of

CHAPTERS = {"structural": "coverage-collapse", "content": "content-corruption"}  # the chapter of each arm
LAB_PARAMS = ("n_entities", "n_questions", "hops", "top_k", "reading_noise", "distractor_rate")
# The protocol's choices, each with the authors' setting (papers/README.md) as its default; a parameter
# set without them (an older caller) runs the authors' protocol.
PROTOCOL_DEFAULTS = {
    "corpus": "question",
    "empty_search": "first_two",
    "spare_hops": 0,
    "reformulate": False,
    "interventions": "generic",
    "heed_warnings": 0.5,
    "judge_hops": "any",
}
# The workbench's earlier protocol, for the side-by-side run of the chapters' Explore sections.
EARLIER_PROTOCOL = {
    "corpus": "global",
    "empty_search": "nothing",
    "spare_hops": 1,
    "reformulate": True,
    "interventions": "targeted",
    "top_k": 3,
    "judge_hops": "trace",
}


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
        if self.models.judge is None or self.judged is None or self.same_cases is None:
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


def run_arm(
    arm: str,
    params: Mapping,
    chapter_id: str | None = None,
    progress: Callable[..., Iterator] | None = track,
    replay: bool | None = None,
) -> ArmRun:
    """Run (or resume) arm ``arm`` with a chapter's checked ``params``; its store is named by ``chapter_id``
    (the arm's chapter by default) and lives in ``params["store"]`` under the results folder.

    ``params["workers"]`` and ``params["scheduler"]`` (``rcakit.parallel``) say where the cases and the
    judge's calls run. With an LLM reader and ``replay`` (by default for the structural arm), the clean
    runs of the first ``llm_max_cases`` questions are replayed read by read (``rcakit.rag.replay``, CAR §3).
    """
    if arm not in ARMS:
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    params = {**PROTOCOL_DEFAULTS, **params}
    chapter_id = chapter_id or CHAPTERS[arm]
    bar = (lambda desc: partial(track, desc=desc)) if progress is track else (lambda desc: progress)
    models = lm.models_from_params(
        params["provider"],
        params["judge_provider"],
        params["agent"],
        params["seed"],
        timeout=params["llm_timeout"],
        judge_hops=params["judge_hops"],
    )
    runner = Runner(params.get("workers", 1), params.get("scheduler", ""))
    protocol = {k: params[k] for k in PROTOCOL_DEFAULTS if k != "judge_hops"}
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
    if models.judge is not None:
        sample = lm.judge_sample(cases, params["llm_max_cases"], params["seed"])
        run.judged, judge_usage = lm.judge_cases(lab, sample, models.judge, progress=bar("llm judge"), runner=runner)
        run.same_cases = lm.merge_judge(run.result, run.judged, depths)
    run.llm_cost = lm.llm_cost(models, lab, cases, judge_usage=judge_usage)
    if models.reader_chat and (arm == "structural" if replay is None else replay):
        questions = lab.world.questions[: params["llm_max_cases"]]
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
    return (
        f"replay action match: {r['matched']} of {r['n']} reads ({r['rate']:.3f}, "
        f"95% Wilson interval {r['ci'][0]:.3f} to {r['ci'][1]:.3f})"
    )


def show_judge(run: ArmRun) -> None:
    """Print what the judge did and display its hop counts and the same-case table; nothing without a judge."""
    from IPython.display import display

    if run.judge_summary is None or run.judged is None or run.same_cases is None:
        return
    print(lm.describe_judge(run.judge_summary))
    counts = lm.hop_counts(run.judged, run.depths)
    display(counts.rename_axis(index="injected hop", columns="judge's hop (0 = none or abstained)"))
    display(lm.same_case_table(run.same_cases, run.depths).round(2))


def protocol_record(run: ArmRun) -> dict:
    """The protocol the run used (``rcakit.rag.protocol.protocol_record``) and the judge's hop range."""
    return {**protocol_record_of(run.lab), "judge_hops": run.params["judge_hops"]}


def world_record(lab: Lab) -> dict:
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


# What the authors' protocol is, per choice (papers/README.md): label, parameter, the authors' setting, its
# value here (None: no parameter of the authors' to match), and what the parameter's other values do.
PROTOCOL_ROWS = (
    (
        "corpus",
        "corpus",
        "each question's own paragraphs (MuSiQue's 20)",
        "question",
        "global searches one index over the whole world",
    ),
    (
        "hop budget",
        "spare_hops",
        "3 hops for a 3-hop question, then a forced answer",
        0,
        "the budget is the question's hops plus spare_hops",
    ),
    (
        "retrievals per hop",
        "reformulate",
        "one; no reformulation inside a hop",
        False,
        "reformulate adds a second search after a failed read",
    ),
    ("top_k", "top_k", "5", 5, "paragraphs per retrieval"),
    (
        "search where nothing scores",
        "empty_search",
        "the corpus's first two paragraphs",
        "first_two",
        "nothing returns no paragraph",
    ),
    (
        "structural interventions",
        "interventions",
        "six generic texts that name no wrong object",
        "generic",
        "targeted plants a wrong object of the right type and drifts to a look-alike",
    ),
    (
        "continue-retrieving probe",
        "spare_hops",
        "resumes at hop n+1 within the budget",
        0,
        "on a full trace it is a plain re-answer",
    ),
    ("LLM judge's hops", "judge_hops", "any hop >= 0, n+1 included", "any", "trace keeps the judge to hops 1..n"),
    (
        "reader's reaction to a warning",
        "heed_warnings",
        "the language model's own",
        None,
        "the rule reader cannot read a warning; it abstains on one with this probability, chosen once (0.5) "
        "before any attribution number was seen",
    ),
    (
        "agent's reader",
        "agent",
        "a language model",
        None,
        "no model is reachable offline: the rule reader, or agent llm with a provider",
    ),
    (
        "questions",
        "world",
        "answerable 3-hop MuSiQue questions",
        None,
        "MuSiQue is not reachable here: a synthetic world with certified hop facts (world musique when fetched)",
    ),
)


def _setting_text(value: object) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


STRUCTURAL_ONLY = ("interventions", "heed_warnings")  # choices that only the structural arm meets


def protocol_table(params: Mapping, arm: str = "structural") -> pd.DataFrame:
    """The chapter's protocol table: per choice, the authors' setting, this run's (its parameter and value)
    and why; a run that departs from the authors' says so. The content arm leaves out the structural
    interventions and the reader's reaction to their warnings."""
    params = {**PROTOCOL_DEFAULTS, "agent": "rule", "world": SYNTHETIC, **params}
    rows = []
    for label, name, authors, default, note in PROTOCOL_ROWS:
        if arm != "structural" and name in STRUCTURAL_ONLY:
            continue
        value = params.get(name)
        if default is None:
            why = note
        elif value == default:
            why = f"the authors' setting; {note}"
        else:
            why = f"departs from the authors' ({_setting_text(default)}); {note}"
        rows.append(
            {
                "choice": label,
                "authors' protocol": authors,
                "this chapter": f"{name} = {_setting_text(value)}",
                "why": why,
            }
        )
    return pd.DataFrame(rows).set_index("choice")


def protocol_cells(runs: Mapping[str, ArmRun], names: Sequence[str]) -> pd.DataFrame:
    """Per injected hop (rows): exact-hop accuracy of ``names``, failed n and recovery, each under every
    protocol run (``runs``: label -> run; columns ``(quantity, label)``), so a reader sees how much the
    protocol alone moves each cell."""
    columns = {}
    for label, run in runs.items():
        for name in names:
            cells = run.result["accuracy"].get(name, {})
            columns[(name, label)] = {d: cells.get(str(d), {}).get("point") for d in run.depths}
        columns[("failed n", label)] = {d: run.result["failed_n"][str(d)] for d in run.depths}
        columns[("recovery", label)] = {d: run.result["recovery"][str(d)] for d in run.depths}
    frame = pd.DataFrame(columns)
    frame = frame[[c for q in [*names, "failed n", "recovery"] for c in frame.columns if c[0] == q]]
    return frame.rename_axis("injected hop")


def protocol_runs(arm: str, params: Mapping, progress: Callable[..., Iterator] | None = track) -> dict[str, ArmRun]:
    """The arm under the authors' protocol and under the workbench's earlier one (:data:`EARLIER_PROTOCOL`),
    both with the rule reader on the synthetic world at ``params``' sizes and reader settings, so only the
    protocol differs; each has its own case store (a rerun resumes both)."""
    base = {**params, "provider": "none", "judge_provider": "none", "agent": "rule", "world": SYNTHETIC}
    authors = {**base, **{k: v for k, v in PROTOCOL_DEFAULTS.items() if k != "heed_warnings"}, "top_k": 5}
    earlier = {**base, **EARLIER_PROTOCOL}
    return {
        "authors' protocol": run_arm(arm, authors, CHAPTERS[arm], progress),
        "earlier workbench": run_arm(arm, earlier, CHAPTERS[arm], progress),
    }


def heed_runs(
    params: Mapping, values: Sequence[float] = (0.0, 0.5, 1.0), progress: Callable[..., Iterator] | None = track
) -> dict[str, ArmRun]:
    """The structural arm under the authors' protocol for each rule-reader ``heed_warnings`` in ``values``
    (the reader's reaction to the generic warning texts), at ``params``' sizes; each has its own case store."""
    base = {
        **params,
        "provider": "none",
        "judge_provider": "none",
        "agent": "rule",
        "world": SYNTHETIC,
        **{k: v for k, v in PROTOCOL_DEFAULTS.items() if k != "heed_warnings"},
        "top_k": 5,
    }
    return {
        f"heed {v:g}": run_arm("structural", {**base, "heed_warnings": float(v)}, CHAPTERS["structural"], progress)
        for v in values
    }
