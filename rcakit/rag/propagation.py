"""How a structural fault shows after suffix resumption (AgenticRAG-FP §7.1): what each reader can reach.

The coverage-collapse chapter's measurements beyond exact-hop accuracy: why
coverage names hop 1 (its Jaccard score of each clean hop against the final
answer), what the failed traces still hold (read with the world's certified
facts: an oracle), which failed cases no trace reader names, how each probe's
branches split per intervention, recovery per intervention, and two counted
facts of the authors' hop budget.

Used in the chapters: `coverage-collapse`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import pandas as pd

from rcakit.rag import diagnosers
from rcakit.rag.metrics import failed_share, predictions, predictions_with_hops, share_predicting
from rcakit.rag.protocol import PROBES, TRACE_READERS, Lab, failed, live


def trace_reader_reach(
    cases: pd.DataFrame, depths: Iterable[int], readers: Iterable[str] = TRACE_READERS
) -> dict[str, Any]:
    """Per depth: failed cases, those whose injected hop is absent from the trace (an early termination's
    hop was never run), and those that none of ``readers`` names.
    """
    wrong = failed(cases)
    preds = predictions(wrong)
    named = preds[preds["diagnoser"].isin(list(readers)) & preds["hit"]]
    named_keys = set(zip(named["qid"], named["depth"], named["kind"], strict=True))
    out = {}
    for d in depths:
        at = wrong[wrong["depth"] == d]
        keys = list(zip(at["qid"], at["depth"], at["kind"], strict=True))
        out[str(d)] = {
            "failed": int(len(at)),
            "hop_absent": int((at["n_hops"] < d).sum()),
            "named_by_none": int(sum(k not in named_keys for k in keys)),
        }
    return out


def hop_answer_jaccard(lab: Lab) -> pd.DataFrame:
    """Coverage's score, Jaccard(gold answer, joined documents), of every non-empty hop of every clean correct trace."""
    rows = [
        {"hop": h.index, "jaccard": diagnosers.coverage_score(t.gold, h.docs, lab.tokenizer)}
        for t in lab.clean.values()
        if t.correct
        for h in t.hops
        if h.docs
    ]
    return pd.DataFrame(rows, columns=["hop", "jaccard"])


def hop_jaccard_summary(lab: Lab, threshold: float) -> pd.DataFrame:
    """Per hop of the clean correct traces: share of hops whose coverage score reaches ``threshold``,
    the largest score, and the number of hops (the measurement behind coverage's hop-1 prediction).
    """
    scores = hop_answer_jaccard(lab)
    above = scores.assign(above=scores["jaccard"] >= threshold).groupby("hop")
    return above.agg(share=("above", "mean"), largest=("jaccard", "max"), n=("above", "size"))


def coverage_mechanism(lab: Lab, cases: pd.DataFrame, threshold: float, depths: Iterable[int]) -> dict[str, Any]:
    """Why coverage is a constant hop-1 predictor: the clean hop scores against ``threshold``, and the
    share of failed cases in which coverage predicts hop 1 (all of them, and those whose trace has a hop 1).
    """
    depths = list(depths)
    summary = hop_jaccard_summary(lab, threshold)
    preds = predictions_with_hops(cases)
    return {
        "hop_scores": summary,
        "hop1_above_share": float(summary["share"].get(1, 0.0)),
        "coverage_predicts_hop1": share_predicting(preds, "coverage", 1, depths),
        "coverage_predicts_hop1_with_hop1": share_predicting(preds, "coverage", 1, depths, min_hops=1),
        "predictions": preds,
    }


TRACE_PROPERTIES = {
    "fact anywhere in the trace": "fact_in_trace",
    "fact at the injected hop": "fact_at_hop",
    "downstream facts intact": "downstream_intact",
}


def trace_properties(cases: pd.DataFrame, depths: Iterable[int]) -> dict[str, Any]:
    """``{property: {depth: share of failed cases}}`` for the injected fact kept (anywhere, at its hop) and
    the downstream facts intact: what a trace reader could still find (read with the world's certified facts).
    """
    depths = list(depths)
    return {label: failed_share(cases, column, depths) for label, column in TRACE_PROPERTIES.items()}


def per_intervention(cases: pd.DataFrame) -> pd.DataFrame:
    """Injected n, recovery and each diagnoser's exact-hop accuracy per (intervention, depth)."""
    ran = live(cases)
    base = ran.groupby(["kind", "depth"]).agg(injected=("correct", "size"), recovery=("correct", "mean"))
    preds = predictions(ran)
    acc = preds.pivot_table(index=["kind", "depth"], columns="diagnoser", values="hit", aggfunc="mean")
    return base.join(acc)


def intervention_record(by_kind: pd.DataFrame) -> dict[str, Any]:
    """``{intervention: {depth: {injected, recovery}}}`` from ``per_intervention``."""
    out = {}
    for key, row in by_kind.iterrows():
        kind, d = cast(tuple[str, int], key)  # the (intervention, depth) index of per_intervention
        out.setdefault(kind, {})[str(d)] = {"injected": int(row["injected"]), "recovery": float(row["recovery"])}
    return out


def branches_by_intervention(cases: pd.DataFrame, probe: str) -> pd.DataFrame:
    """How often each branch of ``probe`` fired, and how often it named the injected hop, per (intervention, depth)."""
    preds = predictions(live(cases))
    preds = preds[preds["diagnoser"] == probe]
    counts = pd.crosstab([preds["kind"], preds["depth"]], preds["branch"]).reindex(
        columns=list(diagnosers.BRANCHES), fill_value=0
    )
    named = preds[preds["hit"].astype(bool)]  # an empty object column would select columns, not rows
    hits = pd.crosstab([named["kind"], named["depth"]], named["branch"]).reindex(
        index=counts.index, columns=list(diagnosers.BRANCHES[:3]), fill_value=0
    )
    return counts.join(hits.add_suffix(" hits")).fillna(0).astype(int)


def probe_on_kinds(by_kind: pd.DataFrame, depths: Iterable[int]) -> dict[str, Any]:
    """From ``branches_by_intervention``: per depth, early terminations named by the continue branch, failed
    early terminations, and query drifts named by a flip.
    A (kind, depth) with no failed case (a small sweep) counts 0.
    """
    out = {"et_continue": {}, "et_failed": {}, "drift_flip_hits": {}}

    def cell(kind: str, d: int, columns: list[str]) -> int:
        if (kind, d) not in by_kind.index:
            return 0
        row = by_kind[columns].loc[(kind, d)]
        assert isinstance(row, pd.Series)  # a full (intervention, depth) key names one row of the grouped frame
        return int(row.sum())

    for d in depths:
        out["et_continue"][str(d)] = cell("early_termination", d, ["continue hits"])
        out["et_failed"][str(d)] = cell("early_termination", d, list(diagnosers.BRANCHES))
        out["drift_flip_hits"][str(d)] = cell("query_drift", d, ["flip hits"])
    return out


def protocol_checks(cases: pd.DataFrame, hops: int) -> dict[str, Any]:
    """Two facts of the hop budget, counted over the run's cases (AgenticRAG-FP, the authors' agent).

    ``continue_on_full_trace``: failed cases whose trace holds all ``hops`` hops and that a probe's
    continue branch named (under the authors' budget a full trace cannot retrieve again, so 0).
    ``empty_last_hop_extra_retrievals``: empty-retrieval cases at the last hop whose trace retrieved
    beyond it (under the authors' budget the agent must answer from its evidence, so 0).
    """
    wrong = failed(cases)
    preds = predictions_with_hops(wrong) if len(wrong) else pd.DataFrame(columns=["n_hops", "branch", "diagnoser"])
    full = preds[(preds["n_hops"] >= hops) & preds["diagnoser"].isin(list(PROBES))]
    ran = live(cases)
    empty_last = ran[(ran["kind"] == "empty_retrieval") & (ran["depth"] == hops)]
    return {
        "continue_on_full_trace": int((full["branch"] == "continue").sum()),
        "empty_last_hop_cases": int(len(empty_last)),
        "empty_last_hop_extra_retrievals": int((empty_last["n_hops"] > hops).sum()),
    }
