"""The tables of GCJR §Experiments, derived from the evaluations (one row per case and setting).

- the main table and the replay reduction, the per-type comparison;
- the ablation table and the ablation and Shapley numbers beside the paper's;
- the hidden-edge curve (GCJR §Limitations) and the stochastic-replay summary
  (beyond the paper);
- the labels a reader sees for the metric and type columns.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rcakit.repair.graph import IN_SCOPE_KINDS, KIND_LABELS
from rcakit.repair.metrics import per_kind, scoped, summarise, summary_table
from rcakit.repair.shared_seeds import ThetaLike, threshold

Runs = Mapping[str, pd.DataFrame]  # method name -> ``evaluate_method`` frame

METRIC_LABELS = {  # metric column -> what a table shows
    "fem": "FEM",
    "macro_fem": "macro FEM",
    "aj": "AJ",
    "rs1": "RS@1",
    "repair_success1": "RS@1 as success",
    "sc": "SC",
    "mv": "MV",
    "mean_replays": "mean replays",
}
PER_TYPE_FEM_LABELS = {f"fem_{kind}": f"FEM {label}" for kind, label in KIND_LABELS.items()}
PER_TYPE_LABELS = {  # column of ``per_kind_comparison`` -> what a table shows
    "gcjr_fem": "GCJR FEM",
    "exhaustive_fem": "exhaustive FEM",
    "gcjr_mean_replays": "GCJR mean replays",
    "exhaustive_mean_replays": "exhaustive mean replays",
    "gcjr_empty": "GCJR ∅",
    "in_scope": "in scope",
}


def theta_label(theta: ThetaLike) -> str:
    """θ as a short exact label for tables and results, e.g. ``"2/3"``."""
    return str(threshold(theta))


def replay_reduction(runs: Runs) -> float:
    """1 - GCJR / exhaustive mean replays on the in-scope cases (the paper's 55.1%)."""
    means = summary_table(runs)["mean_replays"]
    return 1 - means["GCJR"] / means["exhaustive"]


def main_table(runs: Runs, published: Mapping | None = None) -> pd.DataFrame:
    """The main table of GCJR §Results: in-scope means per method and the replay reduction.

    ``published`` (the paper's main table, method -> metric -> value) adds
    one "(paper)" row per method below ours.
    """
    table = summary_table(runs)
    table["reduction"] = [replay_reduction(runs), 0.0]
    table = table[["fem", "macro_fem", "aj", "rs1", "sc", "mv", "mean_replays", "reduction"]]
    if published is None:
        return table
    paper = pd.DataFrame(published).T.rename(index=lambda name: f"{name} (paper)")
    return pd.concat([table, paper[table.columns]])


def per_kind_comparison(runs: Runs) -> pd.DataFrame:
    """Per type: FEM and mean replays of both methods, GCJR's empty families and the in-scope share.

    Over every case of a type (Sequential-Joint, outside GCJR's domain, is the
    control of GCJR §Limitations).
    """
    gcjr_kinds, exhaustive_kinds = per_kind(runs["GCJR"]), per_kind(runs["exhaustive"])
    return pd.DataFrame(
        {
            "gcjr_fem": gcjr_kinds["fem"],
            "exhaustive_fem": exhaustive_kinds["fem"],
            "gcjr_mean_replays": gcjr_kinds["replays"],
            "exhaustive_mean_replays": exhaustive_kinds["replays"],
            "gcjr_empty": gcjr_kinds["empty"],
            "in_scope": gcjr_kinds["in_scope"],
        }
    )


def ablation_table(frames: Runs) -> pd.DataFrame:
    """One row per ablation: in-scope FEM per in-scope type, then FEM, macro FEM, MV and mean replays."""
    rows = {}
    for name, frame in frames.items():
        inside = scoped(frame)
        kinds = per_kind(inside)["fem"].reindex(list(IN_SCOPE_KINDS)).rename(lambda kind: f"fem_{kind}")
        summary = pd.Series(summarise(inside))[["fem", "macro_fem", "mv", "mean_replays"]]
        rows[name] = pd.concat([kinds, summary])
    return pd.DataFrame(rows).T


def ablation_beside_paper(numbers: Mapping, published: Mapping) -> pd.DataFrame:
    """The four ablation numbers the paper prints (``published``, its ablation block) beside ours.

    ``numbers`` is :func:`rcakit.repair.records.ablation_numbers` of the ablation runs.
    """
    rows = {
        "singleton-only: Joint-AND FEM": ("singleton_only_fem_joint_and", numbers["singleton_only"]["fem_joint_and"]),
        "no minimality: Alternative-OR FEM": ("no_minimality_fem_alt_or", numbers["no_minimality"]["fem_alt_or"]),
        "no minimality: MV (in scope)": ("no_minimality_mv", numbers["no_minimality"]["mv"]),
        "10% hidden edges: FEM (in scope)": ("hidden_edges_10_fem", numbers["hidden_edges_10"]["fem"]),
    }
    return pd.DataFrame(
        {
            "paper": {k: published[key] for k, (key, _) in rows.items()},
            "workbench": {k: value for k, (_, value) in rows.items()},
        }
    )


def shapley_beside_paper(summary: Mapping, published: Mapping) -> pd.DataFrame:
    """Exact Shapley top-2 beside the paper's RS@1, macro FEM and MV, with RS@1 read both ways."""
    return pd.DataFrame(
        {
            "paper": [published["rs1"], published["macro_fem"], published["mv"]],
            "workbench": [summary["rs1"], summary["macro_fem"], summary["mv"]],
            "workbench, RS@1 as repair success": [summary["repair_success1"], None, None],
        },
        index=["RS@1", "macro FEM", "MV"],
    )


def hidden_edge_draws(sweep: pd.DataFrame) -> pd.DataFrame:
    """In-scope FEM and recall per (fraction, draw) of a hidden-edge sweep (GCJR §Limitations)."""
    return scoped(sweep).groupby(["fraction", "draw"])[["fem", "recall"]].mean().reset_index()


def hidden_edge_curve(sweep: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """In-scope FEM and recall per (fraction, draw), and their mean, min and max over draws per fraction."""
    by_draw = hidden_edge_draws(sweep)
    return by_draw, by_draw.groupby("fraction")[["fem", "recall"]].agg(["mean", "min", "max"])


def noise_summary(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean FEM, SC, MV, replays and agreement per (method, θ, r, noise) of a ``noise_sweep``."""
    columns = ["fem", "sc", "mv", "replays", "agree"]
    return sweep.groupby(["method", "theta", "r", "noise"])[columns].mean().reset_index()
