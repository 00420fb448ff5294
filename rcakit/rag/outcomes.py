"""What content corruption does to the answer (AgenticRAG-FP §4, §7.2-7.3): outcomes, strategies, the bridge slice.

Each injected content case ends resisted, absorbed or derailed
(``rcakit.rag.text.classify_outcome``); these functions count the outcomes by
depth and by corruption strategy, the absorbed cases' strategies, query
contamination, and the diagnosers' pooled accuracy on the bridge-entity slice.

Used in the chapters: `content-corruption`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rcakit.rag.metrics import pooled_accuracy, predictions
from rcakit.rag.protocol import failed, live
from rcakit.rag.text import OUTCOMES
from rcakit.stats import wilson_ci


def outcome_shares(cases: pd.DataFrame, by: str = "depth") -> pd.DataFrame:
    """Absorbed / resisted / derailed shares and n over all injected, non-skipped content cases."""
    ran = live(cases)
    table = pd.crosstab(ran[by], ran["outcome"], normalize="index").reindex(columns=list(OUTCOMES), fill_value=0.0)
    table["n"] = ran.groupby(by).size()
    return table


def outcome_counts(cases: pd.DataFrame, by: str) -> dict[str, Any]:
    """``{group: {absorbed, resisted, derailed, n}}`` counts over injected, non-skipped content cases."""
    ran = live(cases)
    table = pd.crosstab(ran[by], ran["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    return {str(k): {**{o: int(row[o]) for o in OUTCOMES}, "n": int(row.sum())} for k, row in table.iterrows()}


def outcome_record(shares: pd.DataFrame) -> dict[str, Any]:
    """``{depth: {absorbed, resisted, derailed, n}}`` from ``outcome_shares``."""
    return {str(d): {o: float(r[o]) for o in OUTCOMES} | {"n": int(r["n"])} for d, r in shares.iterrows()}


def absorption(cases: pd.DataFrame) -> dict[str, Any]:
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


def query_contamination(cases: pd.DataFrame) -> dict[str, Any]:
    """``{k, n, share, ci}``: content cases with a later query (n) whose later query recalls the replacement
    (k), and the share's Wilson 95% interval (``None`` when no case has a later query)."""
    ran = live(cases)
    later = ran[ran["has_later_query"].astype(bool)]
    k, n = int(later["contaminated"].sum()), int(len(later))
    return {"k": k, "n": n, "share": k / n if n else None, "ci": list(wilson_ci(k, n)) if n else None}


def bridge_slice(cases: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """``pooled_accuracy`` of the failed bridge-entity corruptions (§7.2), pooled and ``{"hop d": ...}`` by depth."""
    preds = predictions(live(cases))
    bridge = preds[preds["strategy"] == "bridge_entity"]
    return pooled_accuracy(bridge), {f"hop {d}": pooled_accuracy(g) for d, g in bridge.groupby("depth")}


def slice_depth_share(cases: pd.DataFrame, strategy: str, depth: int) -> float | None:
    """Share of the failed content cases of ``strategy`` that were corrupted at ``depth`` (``None`` if none)."""
    wrong = failed(cases)
    sliced = wrong[wrong["strategy"] == strategy] if "strategy" in wrong else wrong.iloc[:0]
    return float((sliced["depth"] == depth).mean()) if len(sliced) else None


def worked_case(cases: pd.DataFrame) -> pd.Series | None:
    """The case the chapter follows by hand: the first failed bridge-entity corruption, else the first failed
    case, else the first injected one; ``None`` when no corruption certified."""
    ran, wrong = live(cases), failed(cases)
    if not len(ran):
        return None
    bridge = wrong[wrong["strategy"] == "bridge_entity"]
    return next(pool.iloc[0] for pool in (bridge, wrong, ran) if len(pool))
