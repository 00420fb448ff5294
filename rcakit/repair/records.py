"""What the gcjr-ablations chapter records in ``results/gcjr-ablations.json``, section by section.

Each function turns one section's evaluations into the numbers that section
records, under the keys ``data/claims.yaml`` reads; the sections of
:mod:`rcakit.repair.experiments` carry them, and the chapter records their
union (:func:`rcakit.sections.collect`), so every key is named once, here.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pandas as pd

from rcakit.repair.metrics import per_kind, scoped, summarise
from rcakit.repair.shared_seeds import ThetaLike
from rcakit.repair.summaries import Runs, replay_reduction, theta_label


def main_numbers(runs: Runs) -> dict[str, Any]:
    """The main comparison (GCJR §Results): counts, both in-scope summaries and the replay reduction."""
    return {
        "n_cases": len(runs["GCJR"]),
        "n_in_scope": int(runs["GCJR"]["in_scope"].sum()),
        "gcjr": summarise(scoped(runs["GCJR"])),
        "exhaustive": summarise(scoped(runs["exhaustive"])),
        "replay_reduction": replay_reduction(runs),
    }


def per_kind_numbers(comparison: pd.DataFrame) -> dict[str, dict[str, float | int]]:
    """``per_kind_comparison`` as the chapter records it: type -> numbers, without the in-scope share."""
    rows = comparison.drop(columns="in_scope")
    return {
        kind: {**rows.loc[kind].astype(float).to_dict(), "gcjr_empty": int(rows["gcjr_empty"][kind])}
        for kind in rows.index
    }


def ablation_numbers(frames: Runs) -> dict[str, dict[str, Any]]:
    """The ablation results the chapter records: in-scope summaries, plus the per-type numbers the paper quotes."""
    numbers = {name: summarise(scoped(frame)) for name, frame in frames.items() if name != "gcjr"}
    singleton, no_minimality = per_kind(scoped(frames["singleton_only"])), per_kind(scoped(frames["no_minimality"]))
    numbers["singleton_only"]["fem_joint_and"] = float(singleton["fem"]["joint_and"])
    numbers["no_minimality"]["fem_alt_or"] = float(no_minimality["fem"]["alt_or"])
    numbers["no_minimality"]["mv_alt_or"] = float(no_minimality["mv"]["alt_or"])
    numbers["no_minimality"]["mv_single"] = float(no_minimality["mv"]["single"])
    return numbers


def closed_forms(q: int) -> dict[str, float]:
    """The values the chapter's q-dependent identities must take at search size ``q``, by argument, not by run.

    The four types come in equal numbers; at q = 1 no target holds a pair, so
    all four are in scope. Singleton-only Joint-AND FEM: 0 at q >= 2 (a
    singleton cannot express the pair), 1 at q = 1 (the target is empty too).
    No minimality, Alternative-OR FEM and MV: 0 and 1 at q >= 2 (the
    successful pair is returned; no triple is admissible), 1 and 0 at q = 1.
    Exact Shapley top-2 picks the planted events (symmetry, null player):
    macro FEM 1/3 at q >= 2 (right on Joint-AND only), 0 at q = 1; MV 2/3 at
    q >= 2 (Single, Alternative-OR), 1/2 at q = 1 (Sequential-Joint in scope).
    """
    pairs = q >= 2
    return {
        "singleton_only_fem_joint_and": 0.0 if pairs else 1.0,
        "no_minimality_fem_alt_or": 0.0 if pairs else 1.0,
        "no_minimality_mv_alt_or": 1.0 if pairs else 0.0,
        "shapley_top2_macro_fem": 1 / 3 if pairs else 0.0,
        "shapley_top2_mv": 2 / 3 if pairs else 0.5,
    }


def hidden_curve_records(curve: pd.DataFrame) -> list[dict[str, Any]]:
    """The mean hidden-edge curve as records ``{fraction, fem, recall}``, in fraction order (GCJR §Limitations)."""
    means = curve.xs("mean", axis=1, level=1)
    return [{"fraction": fraction, "fem": row["fem"], "recall": row["recall"]} for fraction, row in means.iterrows()]


def noise_records(summary: pd.DataFrame) -> dict[str, list[dict[Hashable, Any]]]:
    """The stochastic sweep as the chapter records it: GCJR rows, and exhaustive rows without SC."""
    by_method = {name: rows.drop(columns="method") for name, rows in summary.groupby("method")}
    return {
        "stochastic": by_method["GCJR"].to_dict("records"),
        "stochastic_exhaustive": by_method["exhaustive"].drop(columns="sc").to_dict("records"),
    }


def sc_under_noise(summary: pd.DataFrame, r: int, theta: ThetaLike) -> dict[str, Any] | None:
    """GCJR's schedule consistency at the main (r, θ), at the smallest and largest positive noise.

    None when the sweep has no positive noise level at that (r, θ).
    """
    label = theta_label(theta)
    rows = summary[(summary["method"] == "GCJR") & (summary["r"] == r) & (summary["theta"] == label)]
    sc = rows.set_index("noise")["sc"]
    levels = sorted(level for level in sc.index if level > 0)
    if not levels:
        return None
    return {
        "noise": float(levels[0]),
        "r": r,
        "theta": label,
        "gcjr": float(sc.loc[levels[0]]),
        "largest_noise": float(levels[-1]),
        "gcjr_largest_noise": float(sc.loc[levels[-1]]),
    }
