"""The LLM reader and the LLM judge, wired from chapter parameters (AgenticRAG-FP §5-6).

Chapters turn these parameters into models: ``provider`` (the agent's model,
and the judge's unless ``judge_provider`` names another, for cross-family
judging), ``agent`` (``rule`` or ``llm``), ``llm_timeout`` (seconds a model
server may take per reply) and ``llm_base_url`` (an OpenAI-compatible
server's URL, for ``openai:`` specs). The LLM judge sees a seeded
sample of at most ``llm_max_cases`` failed cases per depth, their traces
rebuilt from the cases' seeds. The cost of each LLM method (cost columns
only: calls, tokens, abstentions, cases) is counted per case
(``rcakit.llm.cache.case_usage``) and summed in the driver, so it reads the
same on a cold and a warm run, and whether the cases ran one after another,
on threads or on a Dask cluster (``rcakit.parallel``).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Accounting, LLMSettings, Provider, cached, model_for
from rcakit.llm.accounting import COST
from rcakit.llm.cache import case_usage
from rcakit.parallel import Progress, Runner
from rcakit.progress import track
from rcakit.rag.diagnosers import LLMJudge, check_judge_prompt
from rcakit.rag.metrics import attribution, predictions
from rcakit.rag.protocol import Lab, failed, injected_trace
from rcakit.rag.settings import AUTHORS

AGENTS = ("rule", "llm")
JUDGE = "llm_judge"
READER = "llm_reader"


@dataclass
class LLMPair:
    """The chat the LLM reader uses (``None`` for the rule agent), the judge (``None`` without a model), their costs."""

    accounting: Accounting
    reader_chat: Provider | None
    judge: LLMJudge | None


def models_from_params(
    provider: str,
    judge_provider: str,
    agent: str,
    seed: int,
    *,
    timeout: float | None = None,
    judge_hops: str = AUTHORS.judge_hops,
    judge_prompt: str = AUTHORS.judge_prompt,
    base_url: str | None = None,
) -> LLMPair:
    """Providers from the chapter parameters; ``judge_provider = "none"`` means the judge uses ``provider``.

    ``timeout`` (the chapters' ``llm_timeout``) bounds each model reply, in seconds; ``judge_hops``
    (``any`` or ``trace``) is the hop range the judge may name and ``judge_prompt`` (``authors`` or
    ``rcakit``) whose prompt it reads (``LLMJudge``); ``base_url`` (the
    chapters' ``llm_base_url``) is the server of an ``openai:`` spec.
    """
    if agent not in AGENTS:
        raise RcakitError(f"agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
    accounting = Accounting()
    settings = LLMSettings(provider, judge_provider, timeout, base_url)
    main = model_for(settings)
    if agent == "llm" and not main:
        raise RcakitError("agent: llm needs a language model; set provider (e.g. llamacpp:smollm2)")
    backend = main if judge_provider == "none" else model_for(settings, "judge_provider")
    reader_chat = cached(main, accounting=accounting[READER]) if agent == "llm" else None
    check_judge_prompt(judge_prompt)  # a bad value fails without a model too
    chat = cached(backend, accounting=accounting[JUDGE]) if backend else None
    judge = LLMJudge(chat, seed, hops=judge_hops, prompt=judge_prompt) if chat is not None else None
    return LLMPair(accounting, reader_chat, judge)


def judge_sample(cases: pd.DataFrame, per_depth: int, seed: int) -> pd.DataFrame:
    """At most ``per_depth`` failed, non-skipped cases per depth, drawn with ``seed``, in sweep order."""
    if per_depth < 1:
        raise RcakitError(f"llm_max_cases: expected >= 1, got {per_depth}")
    wrong = failed(cases)
    parts = [g.sample(n=min(per_depth, len(g)), random_state=seed) for _, g in wrong.groupby("depth")]
    return pd.concat(parts).sort_index() if parts else wrong


@dataclass
class JudgeCase:
    """``work(case)`` of the judge's pass: its verdict, the documents it cut and the usage it caused."""

    lab: Lab
    judge: LLMJudge

    def __call__(self, case: dict[str, Any]) -> dict[str, Any]:
        with case_usage() as scope:
            key = f"{case['kind']}:{case['qid']}:{case['depth']}"
            found, cut = self.judge.diagnose(injected_trace(self.lab, case), key)
        return {
            "verdict": [found.stage, found.hop, found.cost, found.branch],
            "cut": cut,
            "usage": scope.totals(self.judge.chat),
        }


def judge_cases(
    lab: Lab, sample: pd.DataFrame, judge: LLMJudge, *, progress: Progress | None = track, runner: Runner | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``sample`` with the judge's ``[stage, hop, cost, branch]`` added to each case's diagnoses (branch ``none``),
    and the judge's usage summed over the cases (in the driver, so a cluster's calls count too).

    ``progress`` wraps the cases (a terminal bar by default; ``None`` for none); ``runner``
    (``rcakit.parallel.Runner``, serial by default) runs them serially, on threads or on a cluster.
    The documents the judge cut are added to ``judge.truncated_docs``.
    """
    records = sample.to_dict("records")
    items = [(f"{case['kind']}:{case['qid']}:{case['depth']}", case) for case in records]
    done = (runner or Runner()).run(items, JudgeCase(lab, judge), progress=progress)
    judge.count_truncated(sum(d["cut"] for d in done))
    usage = {k: sum(d["usage"][k] for d in done) for k in COST}
    rows = [
        {**case, "diagnoses": {**case["diagnoses"], JUDGE: d["verdict"]}} for case, d in zip(records, done, strict=True)
    ]
    return pd.DataFrame(rows, columns=sample.columns), usage


def merge_judge(result: dict[str, Any], judged: pd.DataFrame, depths: Sequence[int]) -> dict[str, Any]:
    """Add the judge's cells to ``attribution``'s ``result``; return the attribution of the judged cases alone.

    The judge's cells cover only its sample, so ``result["llm_judged_n"]``
    gives their denominators; the returned attribution scores every
    diagnoser on the same judged cases, for a like-for-like comparison.
    """
    same = attribution(judged, depths)
    for view in ("accuracy", "stage_accuracy", "mae", "mean_cost"):
        if JUDGE in same[view]:
            result[view][JUDGE] = same[view][JUDGE]
    result["llm_judged_n"] = {str(d): int((judged["depth"] == d).sum()) for d in depths}
    return same


def same_case_table(same: dict[str, Any], depths: Sequence[int]) -> pd.DataFrame:
    """Exact-hop accuracy of every diagnoser on the judged cases, with their n."""
    rows = {
        name: {f"hop {d}": cells[str(d)]["point"] if str(d) in cells else float("nan") for d in depths}
        for name, cells in same["accuracy"].items()
    }
    rows["judged n"] = {f"hop {d}": same["failed_n"][str(d)] for d in depths}
    return pd.DataFrame(rows).T


def hop_counts(judged: pd.DataFrame, depths: Iterable[int]) -> pd.DataFrame:
    """How many judged cases at each injected depth the judge assigned to each hop (0 = abstained or no hop)."""
    preds = predictions(judged)
    preds = preds[preds["diagnoser"] == JUDGE]
    return pd.crosstab(preds["depth"], preds["pred_hop"]).reindex(index=list(depths), fill_value=0)


def verdict_summary(judged: pd.DataFrame) -> dict[str, Any]:
    """Judged cases, those with an empty trace left unsent (the ``trace`` judge makes no call on them; the
    authors' judge reads them and may name hop 1), abstentions, verdicts, and the hop named most often."""
    judge = [d[JUDGE] for d in judged["diagnoses"]]
    hops = pd.Series([j[1] for j in judge], index=judged.index)
    unsent = pd.Series([list(j[:3]) == ["answer", 0, 0] for j in judge], index=judged.index)
    empty = (judged["n_hops"] == 0) & unsent
    abstained = pd.Series([j[0] == "none" for j in judge], index=judged.index)
    verdicts = hops[~empty & ~abstained]
    counts = verdicts.value_counts().sort_index(kind="stable")
    modal = int(cast(int, counts.idxmax())) if len(counts) else None  # the judge's hops are ints
    return {
        "judged": int(len(judged)),
        "empty_traces": int(empty.sum()),
        "abstained": int(abstained.sum()),
        "verdicts": int(len(verdicts)),
        "modal_hop": modal,
        "modal_count": int(counts.max()) if len(counts) else 0,
    }


def judge_record(judge: LLMJudge, judged: pd.DataFrame, same: dict[str, Any], depths: Iterable[int]) -> dict[str, Any]:
    """The judge's results entry: verdict summary, hop counts, documents cut, same-case accuracy."""
    return {
        **verdict_summary(judged),
        "hop_counts": {
            str(d): {str(h): int(n) for h, n in row.items()} for d, row in hop_counts(judged, depths).iterrows()
        },
        "truncated_docs": judge.truncated_docs,
        "same_cases": {name: {d: c["point"] for d, c in cells.items()} for name, cells in same["accuracy"].items()},
    }


def reader_cost(lab: Lab, *case_frames: pd.DataFrame) -> dict[str, Any]:
    """The LLM reader's cost: its clean runs plus the usage each stored case recorded (one case per agent run)."""
    total = {k: 0 for k in COST}
    total.update({k: v for k, v in lab.clean_usage.items() if k in COST})
    total["cases"] = len(lab.clean)
    for frame in case_frames:
        for usage in frame.get("reader_usage", pd.Series(dtype=object)):
            if isinstance(usage, dict):
                total["cases"] += 1
                for k, v in usage.items():
                    if k in COST:
                        total[k] += v
    return total


def llm_cost(
    models: LLMPair, lab: Lab, *case_frames: pd.DataFrame, judge_usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``{method: {cases, calls, input_tokens, output_tokens, abstentions}}`` for the methods that ran.

    ``judge_usage`` is the judge's usage summed over its cases (:func:`judge_cases`); without it, the
    shared accounting's (which a Dask cluster's calls never reach).
    """
    out = {}
    if models.reader_chat:
        out[READER] = reader_cost(lab, *case_frames)
    if models.judge is not None:
        out[JUDGE] = judge_usage if judge_usage is not None else models.accounting[JUDGE].totals()
    return out
