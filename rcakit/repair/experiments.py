"""The experiments of GCJR §Experiments and the tables derived from them.

- the main comparison of GCJR and exhaustive search, per type too;
- the ablations (``search.ABLATIONS`` plus hidden edges) and the baselines;
- the hidden-edge sweep (GCJR §Limitations), the stochastic-replay sweep
  (beyond the paper) and the cost formula r(1+m+p) against the counted calls.

The sweeps return tidy DataFrames (one row per case and setting); the other
functions turn them into the tables and the results the chapter records, so
the chapter only calls, shows and plots.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from math import comb
from typing import NamedTuple

import networkx as nx
import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.repair.baselines import baseline_methods
from rcakit.repair.families import RepairResult
from rcakit.repair.graph import IN_SCOPE_KINDS, Case, Structure, failure_slice, hide_edges
from rcakit.repair.metrics import evaluate_method, per_kind, scoped, summarise, summary_table
from rcakit.repair.oracle import ReplayOracle
from rcakit.repair.search import GCJR, SearchConfig, ablation_configs, exhaustive, gcjr
from rcakit.repair.shared_seeds import THETA, Oracle, ThetaLike, threshold

Runs = Mapping[str, pd.DataFrame]  # method name -> ``evaluate_method`` frame


def _require(values: Sequence, name: str) -> None:
    if len(values) == 0:
        raise RcakitError(f"{name}: the sweep needs at least one value")


def theta_label(theta: ThetaLike) -> str:
    """θ as a short exact label for tables and results, e.g. ``"2/3"``."""
    return str(threshold(theta))


def _gcjr_hidden(
    case: Case, oracle: Oracle, *, fraction: float, seed: int, draw: int, config: SearchConfig = GCJR
) -> RepairResult:
    view = hide_edges(case.graph, fraction, np.random.default_rng([seed, case.seed, draw]))
    return gcjr(case, oracle, config, graph=view)


def hidden_edge_sweep(
    cases: list[Case],
    fractions: Sequence[float],
    *,
    draws: int,
    seed: int,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
) -> pd.DataFrame:
    """GCJR with a fraction of edges hidden from its view; the oracle keeps the true graph.

    Draw d hides a nested prefix of one random edge permutation per case, so
    the fractions are compared on the same hidden edges.
    """
    _require(fractions, "hidden_fractions")
    frames = []
    config = replace(GCJR, q=q)
    for draw in range(draws):
        for fraction in fractions:
            method = functools.partial(_gcjr_hidden, fraction=fraction, seed=seed, draw=draw, config=config)
            frame = evaluate_method(cases, method, q=q, r=r, theta=theta, schedules=(0,))
            frames.append(frame.assign(fraction=fraction, draw=draw))
    return pd.concat(frames, ignore_index=True)


def noise_sweep(
    cases: list[Case],
    *,
    noise_levels: Sequence[float],
    r_values: Sequence[int],
    theta_values: Sequence[ThetaLike],
    q: int = 2,
) -> pd.DataFrame:
    """GCJR and exhaustive search under per-seed replay noise, for each (noise, r, θ).

    Scored against the noiseless family. GCJR runs under all three schedules,
    so its ``sc`` measures schedule consistency where it can fail (the
    schedule decides which seeds a set sees); exhaustive search runs under the
    first only. ``agree`` marks cases where both return the same family on the
    first schedule (they see the same outcome for the same set, so they can
    only disagree through sets one of them does not replay).
    """
    for values, name in ((noise_levels, "noise_levels"), (r_values, "r_values"), (theta_values, "theta_values")):
        _require(values, name)
    methods = {
        "GCJR": (functools.partial(gcjr, config=replace(GCJR, q=q)), (0, 1, 2)),
        "exhaustive": (functools.partial(exhaustive, q=q), (0,)),
    }
    frames = []
    for noise, r, theta in itertools.product(noise_levels, r_values, theta_values):
        runs = {
            name: evaluate_method(cases, m, q=q, r=r, theta=theta, noise=noise, schedules=schedules)
            for name, (m, schedules) in methods.items()
        }
        agree = (runs["GCJR"]["family"] == runs["exhaustive"]["family"]).to_numpy()
        for name, frame in runs.items():
            frame = frame.assign(method=name, noise=noise, r=r, theta=theta_label(theta), agree=agree)
            frames.append(frame if name == "GCJR" else frame.assign(sc=np.nan))
    return pd.concat(frames, ignore_index=True)


class CostTerms(NamedTuple):
    """m and p of GCJR's cost r(1+m+p) (GCJR §Technical contribution)."""

    slice_candidates: int  # m
    admitted_sets: int  # p


def gcjr_cost_terms(
    case: Case, *, r: int = 3, theta: ThetaLike = THETA, noise: float = 0.0, schedule: int = 0, q: int = 2
) -> CostTerms:
    """m and p of GCJR's cost r(1+m+p), read from the graph, not from a search.

    m: intervenable events in the failure slice B(o). p: sets of 2..q slice
    events that are pairwise admissible (cliques of the admissible-pair graph)
    and contain no successful smaller set; at q = 2, the admissible pairs
    without a successful singleton. The outcomes come from a separate oracle
    with the same settings (same outcomes, by common random numbers), whose
    count is discarded.
    """
    structure = Structure(case.graph)
    keep = failure_slice(case.graph, case.sink)
    scope = sorted(v for v in case.candidates if v in keep)
    pairs = nx.Graph()
    pairs.add_nodes_from(scope)
    pairs.add_edges_from((u, v) for u, v in itertools.combinations(scope, 2) if structure.admissible(u, v))
    referee = ReplayOracle(case, r=r, theta=theta, noise=noise, schedule=schedule)
    succeeds = functools.lru_cache(maxsize=None)(lambda s: referee.h(s))
    p = 0
    for clique in nx.enumerate_all_cliques(pairs):
        if len(clique) > q:
            break
        if len(clique) >= 2 and not any(
            succeeds(frozenset(t)) for k in range(1, len(clique)) for t in itertools.combinations(clique, k)
        ):
            p += 1
    return CostTerms(len(scope), p)


def cost_check(
    cases: list[Case],
    gcjr_frame: pd.DataFrame,
    exhaustive_frame: pd.DataFrame,
    *,
    r: int,
    theta: ThetaLike = THETA,
    q: int = 2,
) -> pd.DataFrame:
    """The oracle's counted calls beside r(1+m+p) for GCJR and r(1 + Σ_{k<=q} C(n,k)) for exhaustive search.

    At q = 2 the second is the paper's r(1+n+C(n,2)). Both frames come from
    ``evaluate_method`` on ``cases`` with GCJR's default switches, noiseless, first
    schedule; m and p come from ``gcjr_cost_terms``.
    """
    terms = [gcjr_cost_terms(case, r=r, theta=theta, q=q) for case in cases]
    frame = pd.DataFrame(
        {
            "case_id": [case.case_id for case in cases],
            "kind": [case.kind for case in cases],
            "n": [len(case.candidates) for case in cases],
            "m": [m for m, _ in terms],
            "p": [p for _, p in terms],
        }
    )
    frame["in_scope"] = gcjr_frame.set_index("case_id").loc[frame["case_id"], "in_scope"].to_numpy()
    frame["gcjr_counted"] = gcjr_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["gcjr_formula"] = r * (1 + frame["m"] + frame["p"])
    frame["exhaustive_counted"] = exhaustive_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["exhaustive_formula"] = [exhaustive_cost(len(case.candidates), r, q) for case in cases]
    frame["gcjr_match"] = frame["gcjr_counted"] == frame["gcjr_formula"]
    frame["exhaustive_match"] = frame["exhaustive_counted"] == frame["exhaustive_formula"]
    return frame


def exhaustive_cost(n: int, r: int = 3, q: int = 2) -> int:
    """r(1 + Σ_{k<=q} C(n, k)): exhaustive search's replays on n candidates (r(1+n+C(n,2)) at q = 2)."""
    return r * (1 + sum(comb(n, k) for k in range(1, q + 1)))


def cost_summary(cost: pd.DataFrame, r: int) -> dict:
    """The cost section's numbers: formula matches over all cases, means and minima over the in-scope ones.

    ``*_sets`` are calls / r, the number of replayed sets. ``formula_reduction``
    is 1 - mean r(1+m+p) / mean r(1 + Σ_{k<=q} C(n,k)) over the in-scope
    cases: what the cost formulas alone say the replay reduction is, computed
    as :func:`replay_reduction` computes the counted one.
    """
    inside = cost[cost["in_scope"]]
    gcjr_formula, exhaustive_formula = inside["gcjr_formula"].mean(), inside["exhaustive_formula"].mean()
    return {
        "gcjr_formula_match": float(cost["gcjr_match"].mean()),
        "exhaustive_formula_match": float(cost["exhaustive_match"].mean()),
        "n": inside["n"].mean(),
        "m": inside["m"].mean(),
        "p": inside["p"].mean(),
        "gcjr_calls": inside["gcjr_counted"].mean(),
        "exhaustive_calls": inside["exhaustive_counted"].mean(),
        "gcjr_sets": inside["gcjr_counted"].mean() / r,
        "exhaustive_sets": inside["exhaustive_counted"].mean() / r,
        "smallest_exhaustive_calls": int(inside["exhaustive_formula"].min()),
        "smallest_n": int(inside["n"].min()),
        "formula_reduction": 1 - gcjr_formula / exhaustive_formula,
    }


# --- the main comparison (GCJR §Results) ------------------------------------------------


def gcjr_and_exhaustive(
    cases: list[Case], *, q: int = 2, r: int = 3, theta: ThetaLike = THETA
) -> dict[str, pd.DataFrame]:
    """GCJR and exhaustive search on every case under all three schedules, noiseless."""
    methods = {
        "GCJR": functools.partial(gcjr, config=replace(GCJR, q=q)),
        "exhaustive": functools.partial(exhaustive, q=q),
    }
    return {name: evaluate_method(cases, m, q=q, r=r, theta=theta) for name, m in methods.items()}


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


def main_numbers(runs: Runs) -> dict:
    """The main comparison as the chapter records it: counts, both in-scope summaries, the reduction, per type."""
    return {
        "n_cases": len(runs["GCJR"]),
        "n_in_scope": int(runs["GCJR"]["in_scope"].sum()),
        "gcjr": summarise(scoped(runs["GCJR"])),
        "exhaustive": summarise(scoped(runs["exhaustive"])),
        "replay_reduction": replay_reduction(runs),
        "per_type": per_kind_numbers(per_kind_comparison(runs)),
    }


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


def per_kind_numbers(comparison: pd.DataFrame) -> dict:
    """``per_kind_comparison`` as the chapter records it: type -> numbers, without the in-scope share."""
    rows = comparison.drop(columns="in_scope")
    return {
        kind: {**rows.loc[kind].astype(float).to_dict(), "gcjr_empty": int(rows["gcjr_empty"][kind])}
        for kind in rows.index
    }


def scoped_cases(cases: list[Case], frame: pd.DataFrame) -> list[Case]:
    """The cases whose row in ``frame`` (an evaluation of ``cases``) is in scope."""
    inside = set(frame.loc[frame["in_scope"], "case_id"])
    return [case for case in cases if case.case_id in inside]


# --- ablations and baselines (GCJR §Experiments, §Limitations) --------------------------


def ablation_runs(
    cases: list[Case],
    hidden_sweep: pd.DataFrame | None,
    *,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
    reference: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """Each ablation of ``search.ABLATIONS`` on every case (first schedule), plus 10% hidden edges.

    ``reference`` is an existing GCJR evaluation reused as the ``gcjr`` row;
    ``hidden_edges_10`` is the 0.1 slice of ``hidden_sweep`` (every draw),
    left out when ``hidden_sweep`` is None.
    """
    frames = {
        name: evaluate_method(cases, functools.partial(gcjr, config=cfg), q=q, r=r, theta=theta, schedules=(0,))
        for name, cfg in ablation_configs(q).items()
        if not (name == "gcjr" and reference is not None)
    }
    if reference is not None:
        frames = {"gcjr": reference, **frames}
    if hidden_sweep is not None:
        frames["hidden_edges_10"] = hidden_sweep[hidden_sweep["fraction"] == 0.1]
    return frames


def ablation_table(frames: Runs) -> pd.DataFrame:
    """One row per ablation: in-scope FEM per in-scope type, then FEM, macro FEM, MV and mean replays."""
    rows = {}
    for name, frame in frames.items():
        inside = scoped(frame)
        kinds = per_kind(inside)["fem"].reindex(list(IN_SCOPE_KINDS)).rename(lambda kind: f"fem_{kind}")
        summary = pd.Series(summarise(inside))[["fem", "macro_fem", "mv", "mean_replays"]]
        rows[name] = pd.concat([kinds, summary])
    return pd.DataFrame(rows).T


def ablation_numbers(frames: Runs) -> dict:
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


def ablation_beside_paper(numbers: Mapping, published: Mapping) -> pd.DataFrame:
    """The four ablation numbers the paper prints (``published``, its ablation block) beside ours."""
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


def baseline_runs(
    cases: list[Case],
    gcjr_frame: pd.DataFrame,
    *,
    seed: int,
    window: int = 4,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
) -> dict[str, pd.DataFrame]:
    """The five baselines on every case under all three schedules; random pairs gets GCJR's replays per case."""
    budgets = dict(zip(gcjr_frame["case_id"], gcjr_frame["replays"], strict=True))
    methods = baseline_methods(budgets, seed, w=window, q=q)
    return {name: evaluate_method(cases, method, q=q, r=r, theta=theta) for name, method in methods.items()}


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


# --- the hidden-edge and stochastic-replay sweeps, summarised ---------------------------


def hidden_edge_curve(sweep: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """In-scope FEM and recall per (fraction, draw), and their mean, min and max over draws per fraction."""
    by_draw = scoped(sweep).groupby(["fraction", "draw"])[["fem", "recall"]].mean().reset_index()
    return by_draw, by_draw.groupby("fraction")[["fem", "recall"]].agg(["mean", "min", "max"])


def noise_summary(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean FEM, SC, MV, replays and agreement per (method, θ, r, noise) of a ``noise_sweep``."""
    columns = ["fem", "sc", "mv", "replays", "agree"]
    return sweep.groupby(["method", "theta", "r", "noise"])[columns].mean().reset_index()


def sc_under_noise(summary: pd.DataFrame, r: int, theta: ThetaLike) -> dict | None:
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
