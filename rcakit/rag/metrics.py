"""Scoring the protocol's cases (AgenticRAG-FP §6-7): exact-hop accuracy and its tables.

Exact-hop accuracy at depth d is over the failed cases injected at d only
(recovered cases stay out), with the authors' percentile bootstrap (B = 1000,
seed 42; ``rcakit.stats.bootstrap_accuracy_ci``). Beside it: stage accuracy,
mean absolute hop error, tokens spent, each probe's branches, the outcome
shares of content corruption (§7.3), and the derived measurements the two
chapters show (coverage's mechanism, the trace properties of failed cases,
the bridge-entity slice, query contamination).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np
import pandas as pd

from rcakit.rag import diagnosers as dg
from rcakit.rag.protocol import DIAGNOSERS, PROBES, TRACE_READERS, Lab, failed, live
from rcakit.rag.text import OUTCOMES, jaccard
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


def _ci(hits: Iterable[bool]) -> dict:
    point, lo, hi = bootstrap_accuracy_ci(list(hits), n_boot=1000, seed=42)
    return {"point": point, "lo": lo, "hi": hi}


def branch_record(grp: pd.DataFrame) -> dict:
    """One probe's failed cases at one depth, by branch: counts, each branch's accuracy among the cases it
    decided (``None`` when it decided none), and its share of all the probe's hits.
    """
    counts, accuracy, hits = {}, {}, {}
    for b in dg.BRANCHES:
        mine = grp[grp["branch"] == b]
        counts[b] = int(len(mine))
        accuracy[b] = float(mine["hit"].mean()) if len(mine) else None
        hits[b] = float(mine["hit"].sum() / len(grp)) if len(grp) else None
    return {"counts": counts, "accuracy": accuracy, "hit_share": hits}


def attribution(cases: pd.DataFrame, depths: Iterable[int]) -> dict:
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


def pooled_accuracy(preds: pd.DataFrame) -> dict:
    """Exact-hop accuracy with bootstrap CI per diagnoser over all rows of ``preds`` (a slice), plus its case count."""
    out: dict[str, dict | int] = {str(name): _ci(grp["hit"]) for name, grp in preds.groupby("diagnoser")}
    out["n"] = int(len(preds.drop_duplicates(["qid", "depth", "kind"])))
    return out


def interval_pairs(result: dict) -> dict:
    """``{diagnoser: {depth: [lo, hi]}}`` from ``attribution``'s accuracy cells (for claims' ``ci`` keys)."""
    return {name: {d: [c["lo"], c["hi"]] for d, c in cells.items()} for name, cells in result["accuracy"].items()}


def _cell(c: dict | None) -> str:
    """One accuracy cell as 'point [lo, hi]', or 'n/a'."""
    if c is None or np.isnan(c["point"]):
        return "n/a"
    return f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def accuracy_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """The Table-2-style frame: one row per diagnoser, 'point [lo, hi]' per depth, plus failed n."""
    keys = [str(d) for d in depths]
    names = sorted(result["accuracy"], key=lambda n: DIAGNOSERS.index(n) if n in DIAGNOSERS else len(DIAGNOSERS))
    rows = {name: {f"hop {d}": _cell(result["accuracy"][name].get(d)) for d in keys} for name in names}
    rows["failed n"] = {f"hop {d}": str(result["failed_n"][d]) for d in keys}
    if "llm_judged_n" in result:  # the LLM judge reads a sample of the failed cases
        rows["llm_judge n"] = {f"hop {d}": str(result["llm_judged_n"][d]) for d in keys}
    rows["recovery"] = {f"hop {d}": f"{result['recovery'][d]:.2f}" for d in keys}
    return pd.DataFrame(rows).T


def branch_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """Per probe and depth: failed cases per branch, each branch's accuracy on its cases, and the probe's
    accuracy with and without the fallback branch.
    """
    rows = {}
    for probe in PROBES:
        for d in map(str, depths):
            if d not in result["probe_branch"].get(probe, {}):
                continue
            row = {f"n {b}": result["probe_branch"][probe][d][b] for b in dg.BRANCHES}
            row.update({f"accuracy {b}": result["branch_accuracy"][probe][d][b] for b in dg.BRANCHES[:3]})
            row["accuracy"] = result["accuracy"][probe][d]["point"]
            row["without fallback"] = result["accuracy_without_fallback"][probe][d]["point"]
            rows[(probe, int(d))] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.names = ["probe", "depth"]
    return frame


def branches_by_intervention(cases: pd.DataFrame, probe: str) -> pd.DataFrame:
    """How often each branch of ``probe`` fired, and how often it named the injected hop, per (intervention, depth)."""
    preds = predictions(live(cases))
    preds = preds[preds["diagnoser"] == probe]
    counts = pd.crosstab([preds["kind"], preds["depth"]], preds["branch"]).reindex(
        columns=list(dg.BRANCHES), fill_value=0
    )
    named = preds[preds["hit"]]
    hits = pd.crosstab([named["kind"], named["depth"]], named["branch"]).reindex(
        index=counts.index, columns=list(dg.BRANCHES[:3]), fill_value=0
    )
    return counts.join(hits.add_suffix(" hits")).fillna(0).astype(int)


def failed_share(cases: pd.DataFrame, column: str, depths: Iterable[int]) -> dict:
    """``{depth: share}`` of failed, non-skipped cases whose boolean ``column`` holds."""
    wrong = failed(cases)
    out = {}
    for d in depths:
        at = wrong[wrong["depth"] == d]
        out[str(d)] = float(at[column].astype(bool).mean()) if len(at) else None
    return out


def trace_reader_reach(cases: pd.DataFrame, depths: Iterable[int], readers: Iterable[str] = TRACE_READERS) -> dict:
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


def share_predicting(preds: pd.DataFrame, diagnoser: str, hop: int, depths: Iterable[int], min_hops: int = 0) -> dict:
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


def predictions_with_hops(cases: pd.DataFrame) -> pd.DataFrame:
    """``predictions`` of the failed, non-skipped cases with each case's trace length joined as ``n_hops``."""
    ran = live(cases)
    lengths = ran.set_index(["qid", "depth", "kind"])["n_hops"]
    preds = predictions(ran)
    return preds.join(lengths, on=["qid", "depth", "kind"])


def hop_answer_jaccard(lab: Lab) -> pd.DataFrame:
    """Coverage's score, Jaccard(gold answer, joined documents), of every non-empty hop of every clean correct trace."""
    rows = [
        {"hop": h.index, "jaccard": jaccard(t.gold, " ".join(d.text for d in h.docs))}
        for t in lab.clean.values()
        if t.correct
        for h in t.hops
        if h.docs
    ]
    return pd.DataFrame(rows, columns=["hop", "jaccard"])


def per_intervention(cases: pd.DataFrame) -> pd.DataFrame:
    """Injected n, recovery and each diagnoser's exact-hop accuracy per (intervention, depth)."""
    ran = live(cases)
    base = ran.groupby(["kind", "depth"]).agg(injected=("correct", "size"), recovery=("correct", "mean"))
    preds = predictions(ran)
    acc = preds.pivot_table(index=["kind", "depth"], columns="diagnoser", values="hit", aggfunc="mean")
    return base.join(acc)


def outcome_shares(cases: pd.DataFrame, by: str = "depth") -> pd.DataFrame:
    """Absorbed / resisted / derailed shares and n over all injected, non-skipped content cases."""
    ran = live(cases)
    table = pd.crosstab(ran[by], ran["outcome"], normalize="index").reindex(columns=list(OUTCOMES), fill_value=0.0)
    table["n"] = ran.groupby(by).size()
    return table


def prediction_histogram(preds: pd.DataFrame, diagnoser: str, depths: Iterable[int]) -> pd.DataFrame:
    """Share of failed cases at each injected depth that ``diagnoser`` assigns to each hop."""
    sub = preds[preds["diagnoser"] == diagnoser]
    return pd.crosstab(sub["depth"], sub["pred_hop"], normalize="index").reindex(index=list(depths))


def outcome_counts(cases: pd.DataFrame, by: str) -> dict:
    """``{group: {absorbed, resisted, derailed, n}}`` counts over injected, non-skipped content cases."""
    ran = live(cases)
    table = pd.crosstab(ran[by], ran["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    return {str(k): {**{o: int(row[o]) for o in OUTCOMES}, "n": int(row.sum())} for k, row in table.iterrows()}


def accuracy_points(result: dict, names: Iterable[str] | None = None, view: str = "accuracy") -> dict:
    """``{diagnoser: {depth: point}}`` of ``attribution``'s interval cells in ``view`` (``accuracy`` or
    ``accuracy_without_fallback``), for ``names`` (every diagnoser in the view by default).
    """
    cells = result[view]
    return {
        name: {d: c["point"] for d, c in cells.get(name, {}).items()} for name in (cells if names is None else names)
    }


VIEWS = {"stage accuracy": "stage_accuracy", "mean |hop error|": "mae", "mean tokens": "mean_cost"}


def views_table(result: dict) -> pd.DataFrame:
    """Stage accuracy, mean absolute hop error and mean tokens spent, per diagnoser and depth, side by side."""
    return pd.concat({label: pd.DataFrame(result[key]).T for label, key in VIEWS.items()}, axis=1)


def branch_hit_shares(result: dict) -> pd.DataFrame:
    """Long frame (probe, depth, branch, share) of each probe's hit share per naming branch (``none`` left out)."""
    rows = [
        {"probe": p, "depth": int(d), "branch": b, "share": v}
        for p, cells in result["branch_hit_share"].items()
        for d, row in cells.items()
        for b, v in row.items()
        if b != "none"
    ]
    return pd.DataFrame(rows, columns=["probe", "depth", "branch", "share"])


def probe_on_kinds(by_kind: pd.DataFrame, depths: Iterable[int]) -> dict:
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
        out["et_failed"][str(d)] = cell("early_termination", d, list(dg.BRANCHES))
        out["drift_flip_hits"][str(d)] = cell("query_drift", d, ["flip hits"])
    return out


def hop_jaccard_summary(lab: Lab, threshold: float) -> pd.DataFrame:
    """Per hop of the clean correct traces: share of hops whose coverage score reaches ``threshold``,
    the largest score, and the number of hops (the measurement behind coverage's hop-1 prediction).
    """
    scores = hop_answer_jaccard(lab)
    above = scores.assign(above=scores["jaccard"] >= threshold).groupby("hop")
    return above.agg(share=("above", "mean"), largest=("jaccard", "max"), n=("above", "size"))


def coverage_mechanism(lab: Lab, cases: pd.DataFrame, threshold: float, depths: Iterable[int]) -> dict:
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


def trace_properties(cases: pd.DataFrame, depths: Iterable[int]) -> dict:
    """``{property: {depth: share of failed cases}}`` for the injected fact kept (anywhere, at its hop) and
    the downstream facts intact: what a trace reader could still find (read with the world's certified facts).
    """
    depths = list(depths)
    return {label: failed_share(cases, column, depths) for label, column in TRACE_PROPERTIES.items()}


def intervention_record(by_kind: pd.DataFrame) -> dict:
    """``{intervention: {depth: {injected, recovery}}}`` from ``per_intervention``."""
    out = {}
    for key, row in by_kind.iterrows():
        kind, d = cast(tuple[str, int], key)  # the (intervention, depth) index of per_intervention
        out.setdefault(kind, {})[str(d)] = {"injected": int(row["injected"]), "recovery": float(row["recovery"])}
    return out


def outcome_record(shares: pd.DataFrame) -> dict:
    """``{depth: {absorbed, resisted, derailed, n}}`` from ``outcome_shares``."""
    return {str(d): {o: float(r[o]) for o in OUTCOMES} | {"n": int(r["n"])} for d, r in shares.iterrows()}


def absorption(cases: pd.DataFrame) -> dict:
    """Absorbed content cases, how many of them were answer-fact corruptions (and their share), and the
    salient-entity corruptions absorbed out of all salient-entity corruptions (§7.3).
    """
    ran = live(cases)
    absorbed = ran[ran["outcome"] == "absorbed"]
    answer_fact = absorbed["strategy"] == "answer_fact"
    salient = ran[ran["strategy"] == "salient_entity"]
    return {
        "absorbed_n": int(len(absorbed)),
        "absorbed_answer_fact_n": int(answer_fact.sum()),
        "absorbed_answer_fact_share": float(answer_fact.mean()) if len(absorbed) else float("nan"),
        "salient_entity_absorbed": {"k": int((salient["outcome"] == "absorbed").sum()), "n": int(len(salient))},
    }


def outcomes_by_type(cases: pd.DataFrame) -> pd.DataFrame:
    """Outcome shares and n per (strategy, whether the replacement has the original's entity type)."""
    ran = live(cases)
    table = pd.crosstab([ran["strategy"], ran["same_type"]], ran["outcome"], normalize="index")
    table["n"] = ran.groupby(["strategy", "same_type"]).size()
    return table


def query_contamination(cases: pd.DataFrame) -> dict:
    """``{k, n, share}``: content cases with a later query (n) whose later query recalls the replacement (k)."""
    ran = live(cases)
    later = ran[ran["has_later_query"].astype(bool)]
    k, n = int(later["contaminated"].sum()), int(len(later))
    return {"k": k, "n": n, "share": k / n if n else None}


def bridge_slice(cases: pd.DataFrame) -> tuple[dict, dict]:
    """``pooled_accuracy`` of the failed bridge-entity corruptions (§7.2), pooled and ``{"hop d": ...}`` by depth."""
    preds = predictions(live(cases))
    bridge = preds[preds["strategy"] == "bridge_entity"]
    return pooled_accuracy(bridge), {f"hop {d}": pooled_accuracy(g) for d, g in bridge.groupby("depth")}


def bridge_table(pooled: dict, by_depth: dict) -> pd.DataFrame:
    """Each diagnoser's exact-hop accuracy on the bridge-entity slice, pooled then per depth, and the
    slice's failed cases (``failed n``).
    """
    columns = {"pooled": pooled, **by_depth}
    frame = pd.DataFrame({k: {m: c["point"] for m, c in v.items() if m != "n"} for k, v in columns.items()})
    frame.loc["failed n"] = [v["n"] for v in columns.values()]
    return frame


def interval_of(pooled: dict) -> dict:
    """``{diagnoser: [lo, hi]}`` of a ``pooled_accuracy`` result (for claims' ``ci`` keys)."""
    return {k: [v["lo"], v["hi"]] for k, v in pooled.items() if k != "n"}


def protocol_checks(cases: pd.DataFrame, hops: int) -> dict:
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


def paper_cells(published: dict) -> pd.DataFrame:
    """A published accuracy table (``{diagnoser: {"hop d": "p [lo, hi]"}}``) as a long frame
    (diagnoser, depth, point, lo, hi); rows that are not accuracies (``failed n``) are left out."""
    rows = []
    for name, cells in published.items():
        for hop, text in cells.items():
            parts = str(text).replace("[", " ").replace("]", " ").replace(",", " ").split()
            if len(parts) == 3:
                point, lo, hi = map(float, parts)
                rows.append({"diagnoser": name, "depth": int(hop.split()[-1]), "point": point, "lo": lo, "hi": hi})
    return pd.DataFrame(rows, columns=["diagnoser", "depth", "point", "lo", "hi"])


def workbench_cells(result: dict, names: Iterable[str]) -> pd.DataFrame:
    """``attribution``'s accuracy cells of ``names`` as a long frame (diagnoser, depth, point, lo, hi)."""
    rows = [{"diagnoser": n, "depth": int(d), **c} for n in names for d, c in result["accuracy"].get(n, {}).items()]
    return pd.DataFrame(rows, columns=["diagnoser", "depth", "point", "lo", "hi"])


def least_share_predicting(preds: pd.DataFrame, diagnoser: str, hop: int, depths: Iterable[int]) -> float | None:
    """The smallest, over ``depths``, of the share of ``diagnoser``'s failed cases in which it predicts ``hop``
    (``None`` when no depth has a failed case)."""
    shares = [v for v in share_predicting(preds, diagnoser, hop, depths).values() if v is not None]
    return min(shares) if shares else None


def slice_depth_share(cases: pd.DataFrame, strategy: str, depth: int) -> float | None:
    """Share of the failed content cases of ``strategy`` that were corrupted at ``depth`` (``None`` if none)."""
    wrong = failed(cases)
    sliced = wrong[wrong["strategy"] == strategy] if "strategy" in wrong else wrong.iloc[:0]
    return float((sliced["depth"] == depth).mean()) if len(sliced) else None


ORACLE_LABELS = {"oracle_gold_hop": "oracle_gold_hop (oracle)"}  # what reads the world's certified facts


def label_oracle(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every row or column of a diagnoser that reads the world's gold facts marked "(oracle)"."""
    return frame.rename(index=ORACLE_LABELS, columns=ORACLE_LABELS)


def gap(a: float | None, b: float | None) -> float | None:
    """``|a - b|``, or ``None`` when either is missing (an identity's check of two measured shares)."""
    return None if a is None or b is None else abs(float(a) - float(b))
