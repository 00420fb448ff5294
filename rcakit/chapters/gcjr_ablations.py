"""The gcjr-ablations chapter (``notebooks/gcjr_ablations.md``): its sections, what they record, and its figures.

The runs it reads are :mod:`rcakit.repair.sweeps`' (one tidy frame per
method, one row per case and setting): GCJR and exhaustive search under all
three schedules, the ablations and baselines, the hidden-edge sweep (GCJR
§Limitations) and the stochastic-replay sweep (beyond the paper).

One function per section of the chapter, each returning one
:class:`~rcakit.sections.Section`: the table a reader sees, the facts its
prose quotes and the numbers the chapter records in
``results/gcjr-ablations.json`` under the keys ``data/claims.yaml`` reads.

- :func:`benchmark_section`: the Controlled-DAG benchmark per type;
- :func:`candidate_sets_section`: GCJR's candidate sets on one case, the worked example;
- :func:`main_section`, :func:`per_type_section` and :func:`control_section`: the main
  comparison, per type with the Sequential-Joint control;
- :func:`ablation_section` and :func:`ablation_paper_section`: the ablations beside the paper's;
- :func:`baseline_section` and :func:`shapley_section`: the baselines beside the paper's;
- :func:`hidden_edge_section`: the hidden-edge curve;
- :func:`noise_section`, :func:`largest_noise_section` and :func:`sc_section`: FEM and
  schedule consistency under stochastic replay, from the noise sweep, summarised here;
- :func:`cost_section`: the cost formula against the counted calls (:mod:`rcakit.repair.cost`);
- :func:`pilot_section`: the four-agent pilot;
- :func:`closed_forms_section`: the values the q-dependent identities take.

What each section records is built by one private function (``_main_numbers``,
``_ablation_numbers``, ...), so every key is named once, here; the chapter
records their union (:func:`rcakit.sections.collect`).

The figures: :func:`dag_figure` (one execution DAG, drawn with a layout that
does not depend on hash order), :func:`hidden_edge_figure` (FEM and recall
against the hidden fraction) and :func:`noise_figure` (FEM under stochastic
replay). networkx groups a ``multipartite_layout`` by node attribute into
sets, whose order follows ``PYTHONHASHSEED``; here the layers are explicit
lists of sorted node names and the drawn graph is rebuilt with sorted nodes
and edges, so the same case gives the same picture, byte for byte, in every
process.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import matplotlib.pyplot as plt
import networkx as nx
import pandas as pd
import seaborn as sns
from IPython.display import Markdown
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rcakit import plotting, prose
from rcakit.llm.base import Provider
from rcakit.repair.benchmark import benchmark_table
from rcakit.repair.cost import candidate_sets, cost_check, cost_summary, exhaustive_cost, pair_reasons
from rcakit.repair.families import minimal_sets
from rcakit.repair.graph import IN_SCOPE_KINDS, KIND_LABELS, Case, failure_slice
from rcakit.repair.metrics import (
    format_family,
    per_kind,
    replay_reduction,
    scoped,
    summarise,
    summary_table,
    theta_label,
)
from rcakit.repair.oracle import THETA, ThetaLike, threshold
from rcakit.repair.pilot.agents import AgentPolicy
from rcakit.repair.pilot.experiment import pilot_beside_paper, run_pilot
from rcakit.repair.sweeps import PAPER_HIDDEN_FRACTION
from rcakit.sections import Section

_Runs = Mapping[str, pd.DataFrame]  # method name -> ``evaluate_method`` frame

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

PER_TYPE_LABELS = {  # column of ``_per_kind_comparison`` -> what a table shows
    "gcjr_fem": "GCJR FEM",
    "exhaustive_fem": "exhaustive FEM",
    "gcjr_mean_replays": "GCJR mean replays",
    "exhaustive_mean_replays": "exhaustive mean replays",
    "gcjr_empty": "GCJR ∅",
    "in_scope": "in scope",
}

COST_LABELS = {  # key of ``cost_summary`` -> the row a reader sees
    "gcjr_formula_match": "GCJR's calls equal \\(r(1 + m + p)\\), share of all cases",
    "exhaustive_formula_match": "exhaustive calls equal its formula, share of all cases",
    "n": "\\(n\\), candidates, in-scope mean",
    "m": "\\(m\\), slice candidates, in-scope mean",
    "p": "\\(p\\), pairs GCJR replays, in-scope mean",
    "gcjr_calls": "GCJR calls, in-scope mean",
    "exhaustive_calls": "exhaustive calls, in-scope mean",
    "gcjr_sets": "GCJR sets (calls / \\(r\\)), in-scope mean",
    "exhaustive_sets": "exhaustive sets (calls / \\(r\\)), in-scope mean",
    "smallest_exhaustive_calls": "smallest exhaustive calls in scope",
    "smallest_n": "smallest \\(n\\) in scope",
    "formula_reduction": "replay reduction by the formulas, in scope",
}

NODE_KINDS = {  # what a node of an execution DAG is -> (legend text, colour)
    "fault": ("message with an injected error", plotting.VERMILION),
    "message": ("message (a candidate to replace)", plotting.BLUE),
    "tool": ("tool observation (cannot be replaced)", plotting.GREY),
    "log": ("log line nothing reads (off the failure slice)", plotting.SKY),
    "sink": ("failure sink", "#333333"),
}

# --- the tables (what a section shows) ------------------------------------------------


def _main_table(runs: _Runs, published: Mapping[str, Any] | None = None) -> pd.DataFrame:
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


def _per_kind_comparison(runs: _Runs) -> pd.DataFrame:
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


def _ablation_table(frames: _Runs) -> pd.DataFrame:
    """One row per ablation: in-scope FEM per in-scope type, then FEM, macro FEM, MV and mean replays."""
    rows = {}
    for name, frame in frames.items():
        inside = scoped(frame)
        kinds = per_kind(inside)["fem"].reindex(list(IN_SCOPE_KINDS)).rename(lambda kind: f"fem_{kind}")
        summary = pd.Series(summarise(inside))[["fem", "macro_fem", "mv", "mean_replays"]]
        rows[name] = pd.concat([kinds, summary])
    return pd.DataFrame(rows).T


def _ablation_beside_paper(numbers: Mapping[str, Any], published: Mapping[str, Any]) -> pd.DataFrame:
    """The four ablation numbers the paper prints (``published``, its ablation block) beside ours.

    ``numbers`` is ``_ablation_numbers`` of the ablation runs.
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


def _shapley_beside_paper(summary: Mapping[str, Any], published: Mapping[str, Any]) -> pd.DataFrame:
    """Exact Shapley top-2 beside the paper's RS@1, macro FEM and MV, with RS@1 read both ways."""
    return pd.DataFrame(
        {
            "paper": [published["rs1"], published["macro_fem"], published["mv"]],
            "workbench": [summary["rs1"], summary["macro_fem"], summary["mv"]],
            "workbench, RS@1 as repair success": [summary["repair_success1"], None, None],
        },
        index=["RS@1", "macro FEM", "MV"],
    )


def _hidden_edge_draws(sweep: pd.DataFrame) -> pd.DataFrame:
    """In-scope FEM and recall per (fraction, draw) of a hidden-edge sweep (GCJR §Limitations)."""
    return scoped(sweep).groupby(["fraction", "draw"])[["fem", "recall"]].mean().reset_index()


def _hidden_edge_curve(sweep: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """In-scope FEM and recall per (fraction, draw), and their mean, min and max over draws per fraction."""
    by_draw = _hidden_edge_draws(sweep)
    return by_draw, by_draw.groupby("fraction")[["fem", "recall"]].agg(["mean", "min", "max"])


def _noise_summary(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean FEM, SC, MV, replays and agreement per (method, θ, r, noise) of a noise sweep."""
    columns = ["fem", "sc", "mv", "replays", "agree"]
    return sweep.groupby(["method", "theta", "r", "noise"])[columns].mean().reset_index()


# --- what the sections record --------------------------------------------------------


def _main_numbers(runs: _Runs) -> dict[str, Any]:
    """The main comparison (GCJR §Results): counts, both in-scope summaries and the replay reduction."""
    return {
        "n_cases": len(runs["GCJR"]),
        "n_in_scope": int(runs["GCJR"]["in_scope"].sum()),
        "gcjr": summarise(scoped(runs["GCJR"])),
        "exhaustive": summarise(scoped(runs["exhaustive"])),
        "replay_reduction": replay_reduction(runs),
    }


def _per_kind_numbers(comparison: pd.DataFrame) -> dict[str, dict[str, float | int]]:
    """``_per_kind_comparison`` as the chapter records it: type -> numbers, without the in-scope share."""
    rows = comparison.drop(columns="in_scope")
    return {
        kind: {**rows.loc[kind].astype(float).to_dict(), "gcjr_empty": int(rows["gcjr_empty"][kind])}
        for kind in rows.index
    }


def _ablation_numbers(frames: _Runs) -> dict[str, dict[str, Any]]:
    """The ablation results the chapter records: in-scope summaries, plus the per-type numbers the paper quotes."""
    numbers = {name: summarise(scoped(frame)) for name, frame in frames.items() if name != "gcjr"}
    singleton, no_minimality = per_kind(scoped(frames["singleton_only"])), per_kind(scoped(frames["no_minimality"]))
    numbers["singleton_only"]["fem_joint_and"] = float(singleton["fem"]["joint_and"])
    numbers["no_minimality"]["fem_alt_or"] = float(no_minimality["fem"]["alt_or"])
    numbers["no_minimality"]["mv_alt_or"] = float(no_minimality["mv"]["alt_or"])
    numbers["no_minimality"]["mv_single"] = float(no_minimality["mv"]["single"])
    return numbers


def _closed_forms(q: int) -> dict[str, float]:
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


def _hidden_curve_records(curve: pd.DataFrame) -> list[dict[str, Any]]:
    """The mean hidden-edge curve as records ``{fraction, fem, recall}``, in fraction order (GCJR §Limitations)."""
    means = curve.xs("mean", axis=1, level=1)
    return [{"fraction": fraction, "fem": row["fem"], "recall": row["recall"]} for fraction, row in means.iterrows()]


def _noise_records(summary: pd.DataFrame) -> dict[str, list[dict[Hashable, Any]]]:
    """The stochastic sweep as the chapter records it: GCJR rows, and exhaustive rows without SC."""
    by_method = {name: rows.drop(columns="method") for name, rows in summary.groupby("method")}
    return {
        "stochastic": by_method["GCJR"].to_dict("records"),
        "stochastic_exhaustive": by_method["exhaustive"].drop(columns="sc").to_dict("records"),
    }


def _sc_under_noise(summary: pd.DataFrame, r: int, theta: ThetaLike) -> dict[str, Any] | None:
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


# --- the sections --------------------------------------------------------------------


def benchmark_section(cases: list[Case]) -> Section:
    """The Controlled-DAG benchmark per type (GCJR §Experiments); facts: the range of mean edges, the schedules."""
    overview = benchmark_table(cases)
    edges = overview["edges (mean)"]
    facts = {
        "edges_lo": edges.min(),
        "edges_hi": edges.max(),
        "distinct_schedules": overview["distinct schedules"].sum(),
    }
    return Section(table=overview.rename(index=KIND_LABELS), facts=facts, decimals=2)


def main_section(runs: _Runs, published: Mapping[str, Any]) -> Section:
    """GCJR against exhaustive search on the in-scope cases beside the paper's main table (GCJR §Key results).

    ``published`` is the paper's main block (method -> metric -> value); the
    reductions in the facts are percentages.
    """
    numbers = _main_numbers(runs)
    facts = {
        "n_in_scope": numbers["n_in_scope"],
        "reduction": 100 * numbers["replay_reduction"],
        "paper_reduction": 100 * published["GCJR"]["reduction"],
        "paper_gcjr_replays": published["GCJR"]["mean_replays"],
        "paper_exhaustive_replays": published["exhaustive"]["mean_replays"],
    }
    labels = {**METRIC_LABELS, "reduction": "replay reduction"}
    return Section(table=_main_table(runs, published).rename(columns=labels), numbers=numbers, facts=facts)


def per_type_section(runs: _Runs) -> Section:
    """Per type, Sequential-Joint (outside GCJR's domain) as the control (GCJR §Experiments, §Limitations)."""
    comparison = _per_kind_comparison(runs)
    table = comparison.rename(index=KIND_LABELS, columns=PER_TYPE_LABELS)
    return Section(table=table, numbers={"per_type": _per_kind_numbers(comparison)})


def control_section(runs: _Runs, n: int = 3) -> Section:
    """The first ``n`` Sequential-Joint cases: true family, GCJR's family and its replays (GCJR §Limitations)."""
    rows = runs["GCJR"].query("kind == 'sequential_joint'").head(n).reset_index(drop=True)
    columns = {"truth": "true family", "family": "GCJR family"}
    return Section(table=rows[["case_id", "truth", "family", "replays"]].rename(columns=columns))


def ablation_section(frames: _Runs) -> Section:
    """Every ablation's in-scope FEM per type, FEM, macro FEM, MV and replays (GCJR §Key results, §Limitations).

    Facts: MV without minimality on Alternative-OR, on Single and in scope.
    """
    numbers = _ablation_numbers(frames)
    no_min = numbers["no_minimality"]
    facts = {"mv_alt_or": no_min["mv_alt_or"], "mv_single": no_min["mv_single"], "mv_in_scope": float(no_min["mv"])}
    table = _ablation_table(frames).rename(columns={**METRIC_LABELS, **PER_TYPE_FEM_LABELS})
    return Section(table=table, numbers={"ablation": numbers}, facts=facts)


def ablation_paper_section(frames: _Runs, published: Mapping[str, Any]) -> Section:
    """The four ablation numbers the paper prints (``published``, its ablation block) beside ours."""
    facts = {"paper_mv": published["no_minimality_mv"], "paper_hidden": published["hidden_edges_10_fem"]}
    return Section(table=_ablation_beside_paper(_ablation_numbers(frames), published), facts=facts)


def baseline_section(frames: _Runs, gcjr_frame: pd.DataFrame) -> Section:
    """The five baselines' in-scope means beside GCJR's (GCJR §Results); the recorded rows leave GCJR out."""
    table = summary_table({**frames, "GCJR": gcjr_frame})
    return Section(
        table=table[list(METRIC_LABELS)].rename(columns=METRIC_LABELS, index={"shapley_top2": "Shapley top-2"}),
        numbers={"baselines": table.drop(index="GCJR").to_dict("index")},
        facts={"random_fem": table.loc["random_pairs", "fem"]},
    )


def shapley_section(frames: _Runs, published: Mapping[str, Any]) -> Section:
    """Exact Shapley top-2 beside the paper's RS@1, macro FEM and MV (GCJR §Results), RS@1 read both ways."""
    shap = summarise(scoped(frames["shapley_top2"]))
    facts = {
        "shap_rs1": shap["rs1"],
        "shap_success1": shap["repair_success1"],
        "paper_shap_mv": published["mv"],
        "paper_shap_macro_fem": published["macro_fem"],
    }
    return Section(table=_shapley_beside_paper(shap, published), facts=facts)


def hidden_edge_section(sweep: pd.DataFrame) -> Section:
    """In-scope FEM and recall against the hidden fraction: mean, min and max over draws (GCJR §Limitations)."""
    curve = _hidden_edge_curve(sweep)[1]
    rows = _hidden_curve_records(curve)
    fem = {row["fraction"]: float(row["fem"]) for row in rows}
    shown = curve.rename(columns={"fem": "FEM"}, level=0).rename_axis("hidden fraction")
    return Section(table=shown, numbers={"hidden_curve": rows}, facts={"hidden_fem_10": fem[PAPER_HIDDEN_FRACTION]})


def noise_section(sweep: pd.DataFrame) -> Section:
    """FEM under stochastic replay per (θ, r) and (method, noise) of a noise sweep (beyond the paper).

    ``sweep`` is :func:`rcakit.repair.sweeps.noise_sweep`'s frame, summarised
    here per (method, θ, r, noise).
    """
    summary = _noise_summary(sweep)
    table = summary.pivot_table(index=["theta", "r"], columns=["method", "noise"], values="fem")
    return Section(table=table, numbers=_noise_records(summary))


def largest_noise_section(sweep: pd.DataFrame) -> Section:
    """FEM, replays and agreement of both methods per (θ, r) at a noise sweep's largest noise level."""
    summary = _noise_summary(sweep)
    rows = summary[summary["noise"] == summary["noise"].max()].rename(columns={"fem": "FEM", "replays": "mean replays"})
    return Section(
        table=rows.pivot_table(index=["theta", "r"], columns="method", values=["FEM", "mean replays", "agree"])
    )


def _sc_reading(sc: Mapping[str, Any] | None, r: int, theta: ThetaLike) -> str:
    """One sentence on GCJR's schedule consistency under noise at the main (r, θ), or why it was not measured."""
    setting = f"r = {r} and θ = {theta_label(theta)}"
    if sc is None:
        return (
            f"The sweep has no positive flip probability at the main run's {setting} "
            "(`noise_levels`, `r_values` and `theta_values` would need them), so it is not measured here."
        )
    text = (
        f"With the main run's {setting}, GCJR returns the same family under all three schedules in a share "
        f"{sc['gcjr']:.3f} of the cases at flip probability {sc['noise']:.2f}"
    )
    if sc["largest_noise"] == sc["noise"]:
        return text + "."
    return text + f", and {sc['gcjr_largest_noise']:.3f} at {sc['largest_noise']:.2f}."


def sc_section(sweep: pd.DataFrame, *, r: int, theta: ThetaLike) -> Section:
    """GCJR's schedule consistency per (θ, r) and noise of a noise sweep; recorded at the main (r, θ) when
    the sweep holds it.

    The fact ``sc_reading`` is a Markdown sentence, so the prose reads well
    whether or not the sweep covers the main run's setting.
    """
    summary = _noise_summary(sweep)
    table = summary.query("method == 'GCJR'").pivot_table(index=["theta", "r"], columns="noise", values="sc")
    sc = _sc_under_noise(summary, r, theta)
    numbers = {} if sc is None else {"sc_under_noise": sc}
    return Section(table=table, numbers=numbers, facts={"sc_reading": Markdown(_sc_reading(sc, r, theta))})


def cost_section(
    cases: list[Case], runs: _Runs, published: Mapping[str, Any], *, r: int, theta: ThetaLike = THETA, q: int = 2
) -> Section:
    """The counted calls against r(1+m+p) and r(1+n+C(n,2)) (GCJR §Technical contribution).

    ``published`` is the paper's setting block: ``paper_floor`` is the
    exhaustive cost at its smallest candidate count and its r.
    """
    summary = cost_summary(cost_check(cases, runs["GCJR"], runs["exhaustive"], r=r, theta=theta, q=q), r)
    paper_floor = exhaustive_cost(min(published["candidates"]), r=published["r"])
    return Section(
        table=pd.Series(summary, dtype=object).rename(COST_LABELS).to_frame("value"),  # object: counts stay whole
        numbers={"cost": summary},
        facts={"cost": summary, "paper_floor": paper_floor},
        decimals=2,
    )


def _slice_reading(case: Case) -> str:
    """One sentence on the candidates the failure slice of ``case`` leaves out (none, one, or several)."""
    keep = failure_slice(case.graph, case.sink)
    off = [v for v in case.order() if v not in keep]
    if not off:
        return "Every one of them has a path to the sink, so the failure slice holds them all."
    names = " and ".join([", ".join(off[:-1]), off[-1]] if len(off) > 1 else off)
    drawn = " and ".join(f"“{case.graph.nodes[v]['agent']} log”" for v in off)
    verb = "is a log line" if len(off) == 1 else "are log lines"
    return (
        f"{names} (drawn as {drawn}) {verb} that nothing reads: no path leads from "
        f"{'it' if len(off) == 1 else 'them'} to the sink, so the failure slice leaves "
        f"{'it' if len(off) == 1 else 'them'} out."
    )


def candidate_sets_section(case: Case, *, r: int = 3, theta: ThetaLike = THETA) -> Section:
    """GCJR's candidate sets on one case (GCJR §Methodology, q = 2, noiseless): the chapter's worked example.

    The table is :func:`rcakit.repair.cost.candidate_sets`; the facts (under
    ``example``) are the counts the worked example quotes: n, m, the slice
    pairs by :func:`rcakit.repair.cost.pair_reasons`, p, the replayed sets and
    calls of GCJR and of exhaustive search, and the family GCJR keeps.
    """
    table = candidate_sets(case, r=r, theta=theta)
    reasons = pair_reasons(case)
    keep = failure_slice(case.graph, case.sink)
    n, m = len(case.candidates), sum(v in keep for v in case.candidates)
    size = table["events"].map(len)
    pairs, replayed = table[size == 2], table[table["replayed by GCJR"]]
    p = int(pairs["replayed by GCJR"].sum())
    facts = {
        "case_id": case.case_id,
        "r": r,
        "n": n,
        "m": m,
        "slice_reading": Markdown(_slice_reading(case)),
        "slice_pairs": m * (m - 1) // 2,
        "same_agent": reasons["same agent"],
        "comparable": reasons["comparable"],
        "admissible": len(pairs),
        "admissible_pairs": ", ".join(pairs["candidate set"]),
        "p": p,
        "successful_singletons": int(table.loc[size == 1, "succeeds"].sum()),
        "family": format_family(minimal_sets(replayed.loc[replayed["succeeds"], "events"])),
        "gcjr_sets": 1 + m + p,
        "gcjr_calls": r * (1 + m + p),
        "exhaustive_sets": exhaustive_cost(n, r=1),
        "exhaustive_calls": exhaustive_cost(n, r=r),
    }
    return Section(table=table.drop(columns="events"), facts={"example": facts})


def pilot_section(
    published: Mapping[str, Any],
    *,
    n_cases: int = 24,
    seed: int = 0,
    policy: str | AgentPolicy = "scripted",
    provider: str | Provider | None = None,
    r: int = 3,
    theta: ThetaLike = THETA,
    timeout: float | None = None,
    base_url: str | None = None,
) -> Section:
    """The four-agent pilot (GCJR §Key results, DualSolve-MAS) beside the paper's ``published`` pilot block;
    ``timeout`` and ``base_url`` (the chapter's ``llm_timeout`` and ``llm_base_url``) reach the provider."""
    numbers = run_pilot(
        n_cases=n_cases,
        seed=seed,
        policy=policy,
        provider=provider,
        r=r,
        theta=theta,
        timeout=timeout,
        base_url=base_url,
    )
    return Section(
        table=pilot_beside_paper(numbers, published),
        numbers={"pilot": numbers},
        facts={"pilot": numbers, "paper_pilot": published, "pilot_text": _pilot_text(numbers)},
    )


def _pilot_text(numbers: Mapping[str, Any]) -> dict[str, str]:
    """The pilot's quoted numbers as prose text (``pilot_text_*``): a language-model pilot whose every case
    was set apart has no FEM or calls to average, and reads :data:`rcakit.prose.NO_CASE` there instead of
    a value a format spec cannot take."""
    return {
        "gcjr_fem": prose.number(numbers["gcjr"]["fem"], 3),
        "gcjr_mean_calls": prose.number(numbers["gcjr"]["mean_calls"], 1),
        "exhaustive_mean_calls": prose.number(numbers["exhaustive"]["mean_calls"], 1),
        "saving": prose.number(numbers["saving"], 3),
    }


def closed_forms_section(q: int) -> Section:
    """The values the q-dependent identities must take at this ``q`` (``_closed_forms``)."""
    return Section(numbers={"closed": _closed_forms(q)})


# --- the figures ---------------------------------------------------------------------


def _layered_layout(graph: nx.DiGraph[Any]) -> dict[str, Any]:
    """Positions by topological generation, each generation in sorted node order."""
    layers = {depth: sorted(generation) for depth, generation in enumerate(nx.topological_generations(graph))}
    return nx.multipartite_layout(graph, subset_key=layers)


def _node_kind(case: Case, event: str) -> str:
    """``fault``, ``message``, ``tool``, ``log`` (an event outside the failure slice) or ``sink``."""
    data = case.graph.nodes[event]
    if event == case.sink:
        return "sink"
    if data["fault"]:
        return "fault"
    if not data["intervenable"]:
        return "tool"
    return "message" if event in failure_slice(case.graph, case.sink) else "log"


def _event_label(case: Case, event: str) -> str:
    """A node's label: messages keep their name (agent letter, step), the others say what they are."""
    kind = _node_kind(case, event)
    return {"tool": "tool", "log": f"{case.graph.nodes[event]['agent']} log", "sink": event}.get(kind, event)


def _draw_case(case: Case, ax: Axes, *, legend: bool = True) -> Axes:
    """The case's DAG in layers, coloured by :data:`NODE_KINDS`, with a legend below it."""
    drawn = nx.DiGraph()
    drawn.add_nodes_from(sorted(case.graph.nodes))
    drawn.add_edges_from(sorted(case.graph.edges))
    kinds = [_node_kind(case, v) for v in drawn]
    pos = _layered_layout(drawn)
    nx.draw_networkx_edges(drawn, pos, ax=ax, arrowsize=10, node_size=700, edge_color="#555555")
    nx.draw_networkx_nodes(drawn, pos, ax=ax, node_size=700, node_color=[NODE_KINDS[k][1] for k in kinds])
    nx.draw_networkx_labels(
        drawn,
        pos,
        {v: _event_label(case, v) for v in drawn},
        ax=ax,
        font_size=8,
        font_color="white",
        font_weight="bold",
    )
    if legend:
        present = [k for k in NODE_KINDS if k in kinds]
        handles = [
            Line2D([], [], marker="o", linestyle="", markersize=9, color=NODE_KINDS[k][1], label=NODE_KINDS[k][0])
            for k in present
        ]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, frameon=False, fontsize=9)
    ax.margins(0.06)
    ax.axis("off")
    return ax


def dag_figure(case: Case, *, figsize: tuple[float, float] = (plotting.TEXT_WIDTH, 3.6), legend: bool = True) -> Figure:
    """One execution DAG in layers, coloured by :data:`NODE_KINDS`, with a legend below it (the same bytes in
    every process)."""
    fig, ax = plt.subplots(figsize=figsize)
    _draw_case(case, ax, legend=legend)
    return fig


def hidden_edge_figure(sweep: pd.DataFrame, paper_fem: float) -> Figure:
    """In-scope FEM and recall of a hidden-edge sweep against the hidden fraction (band: range over draws), the
    paper's 10% FEM as a cross."""
    fig, ax = plt.subplots()
    by_draw = _hidden_edge_draws(sweep)
    long = by_draw.rename(columns={"fem": "FEM"}).melt(
        id_vars=["fraction", "draw"], value_vars=["FEM", "recall"], var_name="metric"
    )
    sns.lineplot(long, x="fraction", y="value", hue="metric", marker="o", errorbar=("pi", 100), ax=ax)
    ax.scatter([0.1], [paper_fem], marker="x", color="black", zorder=3, label="paper, 10%")
    ax.set_xlabel("fraction of edges hidden from GCJR")
    ax.set_ylabel("in-scope mean")
    ax.set_ylim(0, 1.05)
    ax.legend(frameon=False)
    return fig


def noise_figure(sweep: pd.DataFrame) -> Figure:
    """FEM of a noise sweep against the per-seed flip probability, one panel per θ in increasing order, one line
    per (r, method).

    Sized for the book's column: up to three panels in a row, the legend below them.
    """
    summary = _noise_summary(sweep)
    thetas = sorted(summary["theta"].unique(), key=threshold)
    rs = sorted(summary["r"].unique())
    data = summary.assign(seeds=summary["r"].map(lambda r: f"r = {r}"))
    palette = dict(zip((f"r = {r}" for r in rs), sns.color_palette("rocket", len(rs) + 1)[: len(rs)], strict=True))
    grid = sns.relplot(
        data,
        x="noise",
        y="fem",
        hue="seeds",
        hue_order=list(palette),
        style="method",
        col="theta",
        col_order=thetas,
        kind="line",
        marker="o",
        palette=palette,
        height=2.5,
        aspect=0.95,
        col_wrap=min(len(thetas), 3),
        facet_kws={"legend_out": False},
    )
    grid.set_titles("θ = {col_name}")
    grid.set_axis_labels("", "FEM (in scope)")
    grid.axes.flat[min(len(thetas), 3) // 2].set_xlabel("per-seed flip probability")
    grid.set(ylim=(-0.03, 1.05))
    sns.move_legend(
        grid,
        "upper center",
        bbox_to_anchor=(0.5, 0.02),
        ncol=len(rs) + 4,
        frameon=False,
        title=None,
        columnspacing=1.0,
        handlelength=1.6,
    )
    grid.figure.tight_layout()
    return grid.figure
