"""Scoring the protocol's cases (AgenticRAG-FP §6-7): exact-hop accuracy, its intervals and shares.

Exact-hop accuracy at depth d is over the failed cases injected at d only
(recovered cases stay out), with the authors' percentile bootstrap (B = 1000,
seed 42; ``rcakit.stats.bootstrap_accuracy_ci``). Beside it: stage accuracy,
mean absolute hop error, tokens spent and each probe's branches
(:func:`attribution`), pooled accuracy over a slice of cases, and the shares
of failed cases in which a diagnoser predicts a hop. What the two chapters
measure on top of these lives in :mod:`rcakit.rag.propagation` (structural
faults) and :mod:`rcakit.rag.outcomes` (content corruption).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from rcakit.rag import diagnosers
from rcakit.rag.protocol import PROBES, failed, live
from rcakit.stats import bootstrap_accuracy_ci

PREDICTION_COLUMNS = [
    "qid",
    "depth",
    "kind",
    "strategy",
    "diagnoser",
    "pred_hop",
    "branch",
    "hit",
    "stage_hit",
    "hop_error",
    "cost",
]


def predictions(cases: pd.DataFrame) -> pd.DataFrame:
    """Long table of failed, non-skipped cases: one row per (case, diagnoser) with hit, branch and errors."""
    rows = []
    for case in cases.to_dict("records"):
        for name, (stage, hop, cost, branch) in (case.get("diagnoses") or {}).items():
            rows.append(
                {
                    "qid": case["qid"],
                    "depth": case["depth"],
                    "kind": case["kind"],
                    "strategy": case.get("strategy"),
                    "diagnoser": name,
                    "pred_hop": hop,
                    "branch": branch,
                    "hit": hop == case["depth"],
                    "stage_hit": stage == case["true_stage"],
                    "hop_error": abs(hop - case["depth"]),
                    "cost": cost,
                }
            )
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def _ci(hits: Iterable[bool]) -> dict[str, Any]:
    point, lo, hi = bootstrap_accuracy_ci(list(hits), n_boot=1000, seed=42)
    return {"point": point, "lo": lo, "hi": hi}


def branch_record(grp: pd.DataFrame) -> dict[str, Any]:
    """One probe's failed cases at one depth, by branch: counts, each branch's accuracy among the cases it
    decided (``None`` when it decided none), and its share of all the probe's hits.
    """
    counts, accuracy, hits = {}, {}, {}
    for b in diagnosers.BRANCHES:
        mine = grp[grp["branch"] == b]
        counts[b] = int(len(mine))
        accuracy[b] = float(mine["hit"].mean()) if len(mine) else None
        hits[b] = float(mine["hit"].sum() / len(grp)) if len(grp) else None
    return {"counts": counts, "accuracy": accuracy, "hit_share": hits}


def attribution(cases: pd.DataFrame, depths: Iterable[int]) -> dict[str, Any]:
    """Exact-hop accuracy with bootstrap CI, stage accuracy, MAE, failed n, eligible n and recovery by depth.

    For each probe it adds ``probe_branch`` (failed cases per branch),
    ``branch_accuracy`` (each branch's accuracy on the cases it decided),
    ``branch_hit_share`` (the share of all failed cases each branch named
    correctly; these sum to the probe's accuracy) and
    ``accuracy_without_fallback`` (flip and continue only, with CI).
    """
    ran = live(cases)
    preds = predictions(ran)
    out = {
        k: {}
        for k in (
            "accuracy",
            "stage_accuracy",
            "mae",
            "mean_cost",
            "probe_branch",
            "branch_accuracy",
            "branch_hit_share",
            "accuracy_without_fallback",
        )
    }
    out.update(failed_n={}, eligible_n={}, recovery={})
    for d in depths:
        at = ran[ran["depth"] == d]
        key = str(d)
        out["eligible_n"][key] = int(len(at))
        out["failed_n"][key] = int((~at["correct"].astype(bool)).sum()) if len(at) else 0
        out["recovery"][key] = float(at["correct"].mean()) if len(at) else float("nan")
        for name, grp in preds[preds["depth"] == d].groupby("diagnoser"):
            out["accuracy"].setdefault(name, {})[key] = _ci(grp["hit"])
            out["stage_accuracy"].setdefault(name, {})[key] = float(grp["stage_hit"].mean())
            out["mae"].setdefault(name, {})[key] = float(grp["hop_error"].mean())
            out["mean_cost"].setdefault(name, {})[key] = float(grp["cost"].mean())
            if name in PROBES:
                record = branch_record(grp)
                out["probe_branch"].setdefault(name, {})[key] = record["counts"]
                out["branch_accuracy"].setdefault(name, {})[key] = record["accuracy"]
                out["branch_hit_share"].setdefault(name, {})[key] = record["hit_share"]
                counterfactual = grp["hit"] & (grp["branch"] != "fallback")
                out["accuracy_without_fallback"].setdefault(name, {})[key] = _ci(counterfactual)
    return out


# The probes' caps of the authors' strict runs: dense Table 2, BM25 structural (anote-ai/Research-AgenticRAG).
PROBE_CAPS = (4, 2)


def _capped(diagnoses: dict[str, Any], cap: int) -> dict[str, Any]:
    """One case's diagnoses with each probe as ``max_probes = cap`` would have left it (:func:`capped_probes`)."""
    out = dict(diagnoses)
    resumed, fallback = diagnoses.get("continue_retrieving"), diagnoses.get("fallback_rule")
    for name in PROBES:
        if name not in diagnoses:
            continue
        _, hop, cost, branch = diagnoses[name]
        if branch == "flip" and hop <= cap:
            continue
        if resumed is None or fallback is None:
            raise ValueError("a capped probe needs the case's continue_retrieving and fallback_rule diagnoses")
        later = resumed if resumed[3] == "continue" else fallback
        out[name] = [later[0], later[1], cost, later[3]]
    return out


def capped_probes(cases: pd.DataFrame, cap: int) -> pd.DataFrame:
    """``cases`` with Propagation-Aware's and Suf-Regen's diagnoses as a run with ``max_probes = cap`` gives.

    Capping changes branch (1) alone: a flip at hop <= ``cap`` stands; any
    other case goes to branch (2), then (3), which are the same calls as the
    ``continue_retrieving`` and ``fallback_rule`` diagnosers the case
    records, so their diagnoses are taken (§5; the costs stay as recorded).
    Exact for any cap no larger than the run's own.
    """
    out = cases.copy()
    out["diagnoses"] = pd.Series([_capped(d, cap) if d else d for d in cases["diagnoses"]], index=cases.index)
    return out


def pooled_accuracy(preds: pd.DataFrame) -> dict[str, Any]:
    """Exact-hop accuracy with bootstrap CI per diagnoser over all rows of ``preds`` (a slice), plus its case count."""
    out: dict[str, dict[str, Any] | int] = {str(name): _ci(grp["hit"]) for name, grp in preds.groupby("diagnoser")}
    out["n"] = int(len(preds.drop_duplicates(["qid", "depth", "kind"])))
    return out


def interval_pairs(result: dict[str, Any]) -> dict[str, Any]:
    """``{diagnoser: {depth: [lo, hi]}}`` from ``attribution``'s accuracy cells (for claims' ``ci`` keys)."""
    return {name: {d: [c["lo"], c["hi"]] for d, c in cells.items()} for name, cells in result["accuracy"].items()}


def interval_of(pooled: dict[str, Any]) -> dict[str, Any]:
    """``{diagnoser: [lo, hi]}`` of a ``pooled_accuracy`` result (for claims' ``ci`` keys)."""
    return {k: [v["lo"], v["hi"]] for k, v in pooled.items() if k != "n"}


def accuracy_points(
    result: dict[str, Any], names: Iterable[str] | None = None, view: str = "accuracy"
) -> dict[str, Any]:
    """``{diagnoser: {depth: point}}`` of ``attribution``'s interval cells in ``view`` (``accuracy`` or
    ``accuracy_without_fallback``), for ``names`` (every diagnoser in the view by default).
    """
    cells = result[view]
    return {
        name: {d: c["point"] for d, c in cells.get(name, {}).items()} for name in (cells if names is None else names)
    }


def failed_share(cases: pd.DataFrame, column: str, depths: Iterable[int]) -> dict[str, Any]:
    """``{depth: share}`` of failed, non-skipped cases whose boolean ``column`` holds."""
    wrong = failed(cases)
    out = {}
    for d in depths:
        at = wrong[wrong["depth"] == d]
        out[str(d)] = float(at[column].astype(bool).mean()) if len(at) else None
    return out


def share_predicting(
    preds: pd.DataFrame, diagnoser: str, hop: int, depths: Iterable[int], *, min_hops: int = 0
) -> dict[str, Any]:
    """``{depth: share}`` of ``diagnoser``'s failed cases in which it predicts ``hop``.

    ``min_hops`` keeps only cases whose trace has at least that many hops
    (``preds`` must then carry ``n_hops``; see ``predictions_with_hops``).
    """
    sub = preds[preds["diagnoser"] == diagnoser]
    if min_hops:
        sub = sub[sub["n_hops"] >= min_hops]
    return {
        str(d): float((sub[sub["depth"] == d]["pred_hop"] == hop).mean()) if (sub["depth"] == d).any() else None
        for d in depths
    }


def least_share_predicting(preds: pd.DataFrame, diagnoser: str, hop: int, depths: Iterable[int]) -> float | None:
    """The smallest, over ``depths``, of the share of ``diagnoser``'s failed cases in which it predicts ``hop``
    (``None`` when no depth has a failed case)."""
    shares = [v for v in share_predicting(preds, diagnoser, hop, depths).values() if v is not None]
    return min(shares) if shares else None


def predictions_with_hops(cases: pd.DataFrame) -> pd.DataFrame:
    """``predictions`` of the failed, non-skipped cases with each case's trace length joined as ``n_hops``."""
    ran = live(cases)
    lengths = ran.set_index(["qid", "depth", "kind"])["n_hops"]
    preds = predictions(ran)
    return preds.join(lengths, on=["qid", "depth", "kind"])


def prediction_histogram(preds: pd.DataFrame, diagnoser: str, depths: Iterable[int]) -> pd.DataFrame:
    """Share of failed cases at each injected depth that ``diagnoser`` assigns to each hop."""
    sub = preds[preds["diagnoser"] == diagnoser]
    return pd.crosstab(sub["depth"], sub["pred_hop"], normalize="index").reindex(index=list(depths))


def branch_hit_shares(result: dict[str, Any]) -> pd.DataFrame:
    """Long frame (probe, depth, branch, share) of each probe's hit share per naming branch (``none`` left out)."""
    rows = [
        {"probe": p, "depth": int(d), "branch": b, "share": v}
        for p, cells in result["branch_hit_share"].items()
        for d, row in cells.items()
        for b, v in row.items()
        if b != "none"
    ]
    return pd.DataFrame(rows, columns=["probe", "depth", "branch", "share"])


def gap(a: float | None, b: float | None) -> float | None:
    """``|a - b|``, or ``None`` when either is missing (an identity's check of two measured shares)."""
    return None if a is None or b is None else abs(float(a) - float(b))
