"""The experiments of GCJR §Experiments, one :class:`~rcakit.sections.Section` per section of the chapter.

The runs (one tidy frame per method, one row per case and setting):

- GCJR and exhaustive search on the benchmark, under all three schedules;
- the ablations (``search.ABLATIONS`` plus hidden edges) and the baselines;
- the hidden-edge sweep (GCJR §Limitations) and the stochastic-replay sweep
  (beyond the paper).

The sections built from them, each with the table a reader sees, the numbers
the chapter records (:mod:`rcakit.repair.records`) and the facts its prose
quotes: the benchmark, the main comparison, per type with the control, the
ablations and baselines beside the paper's, the hidden-edge curve, noise and
schedule consistency, the cost formula against the counted calls
(:mod:`rcakit.repair.cost`), the four-agent pilot and the closed forms the
q-dependent identities take.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import Markdown

from rcakit import RcakitError, prose
from rcakit.llm.base import Provider
from rcakit.repair import records
from rcakit.repair.baselines import baseline_methods
from rcakit.repair.benchmark import benchmark_table
from rcakit.repair.cost import candidate_sets, cost_check, cost_summary, exhaustive_cost, pair_reasons
from rcakit.repair.families import RepairResult, minimal_sets
from rcakit.repair.graph import KIND_LABELS, Case, failure_slice, hide_edges
from rcakit.repair.metrics import evaluate_method, format_family, scoped, summarise, summary_table
from rcakit.repair.pilot.agents import Policy
from rcakit.repair.pilot.experiment import pilot_beside_paper, run_pilot
from rcakit.repair.search import GCJR, SearchConfig, ablation_configs, exhaustive, gcjr
from rcakit.repair.shared_seeds import THETA, Oracle, ThetaLike
from rcakit.repair.summaries import (
    METRIC_LABELS,
    PER_TYPE_FEM_LABELS,
    PER_TYPE_LABELS,
    Runs,
    ablation_beside_paper,
    ablation_table,
    hidden_edge_curve,
    main_table,
    per_kind_comparison,
    shapley_beside_paper,
    theta_label,
)
from rcakit.sections import Section

PAPER_HIDDEN_FRACTION = 0.1  # the hidden-edge ablation the paper prints (GCJR §Key results)
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


def _require(values: Sequence, name: str) -> None:
    if len(values) == 0:
        raise RcakitError(f"{name}: the sweep needs at least one value")


# --- the runs -----------------------------------------------------------------------------


def gcjr_and_exhaustive(
    cases: list[Case], *, q: int = 2, r: int = 3, theta: ThetaLike = THETA
) -> dict[str, pd.DataFrame]:
    """GCJR and exhaustive search on every case under all three schedules, noiseless (GCJR §Results)."""
    methods = {
        "GCJR": functools.partial(gcjr, config=replace(GCJR, q=q)),
        "exhaustive": functools.partial(exhaustive, q=q),
    }
    return {name: evaluate_method(cases, m, q=q, r=r, theta=theta) for name, m in methods.items()}


def scoped_cases(cases: list[Case], frame: pd.DataFrame) -> list[Case]:
    """The cases whose row in ``frame`` (an evaluation of ``cases``) is in scope."""
    inside = set(frame.loc[frame["in_scope"], "case_id"])
    return [case for case in cases if case.case_id in inside]


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
    """GCJR with a fraction of edges hidden from its view; the oracle keeps the true graph (GCJR §Limitations).

    The paper's 10% is always run, beside ``fractions``, in increasing order.
    Draw d hides a nested prefix of one random edge permutation per case, so
    the fractions are compared on the same hidden edges.
    """
    _require(fractions, "hidden_fractions")
    frames = []
    config = replace(GCJR, q=q)
    for draw in range(draws):
        for fraction in sorted({*fractions, PAPER_HIDDEN_FRACTION}):
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
        frames["hidden_edges_10"] = hidden_sweep[hidden_sweep["fraction"] == PAPER_HIDDEN_FRACTION]
    return frames


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


# --- the sections -------------------------------------------------------------------------


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


def main_section(runs: Runs, published: Mapping[str, Any]) -> Section:
    """GCJR against exhaustive search on the in-scope cases beside the paper's main table (GCJR §Key results).

    ``published`` is the paper's main block (method -> metric -> value); the
    reductions in the facts are percentages.
    """
    numbers = records.main_numbers(runs)
    facts = {
        "n_in_scope": numbers["n_in_scope"],
        "reduction": 100 * numbers["replay_reduction"],
        "paper_reduction": 100 * published["GCJR"]["reduction"],
        "paper_gcjr_replays": published["GCJR"]["mean_replays"],
        "paper_exhaustive_replays": published["exhaustive"]["mean_replays"],
    }
    labels = {**METRIC_LABELS, "reduction": "replay reduction"}
    return Section(table=main_table(runs, published).rename(columns=labels), numbers=numbers, facts=facts)


def per_type_section(runs: Runs) -> Section:
    """Per type, Sequential-Joint (outside GCJR's domain) as the control (GCJR §Experiments, §Limitations)."""
    comparison = per_kind_comparison(runs)
    table = comparison.rename(index=KIND_LABELS, columns=PER_TYPE_LABELS)
    return Section(table=table, numbers={"per_type": records.per_kind_numbers(comparison)})


def control_section(runs: Runs, n: int = 3) -> Section:
    """The first ``n`` Sequential-Joint cases: true family, GCJR's family and its replays (GCJR §Limitations)."""
    rows = runs["GCJR"].query("kind == 'sequential_joint'").head(n).reset_index(drop=True)
    columns = {"truth": "true family", "family": "GCJR family"}
    return Section(table=rows[["case_id", "truth", "family", "replays"]].rename(columns=columns))


def ablation_section(frames: Runs) -> Section:
    """Every ablation's in-scope FEM per type, FEM, macro FEM, MV and replays (GCJR §Key results, §Limitations).

    Facts: MV without minimality on Alternative-OR, on Single and in scope.
    """
    numbers = records.ablation_numbers(frames)
    no_min = numbers["no_minimality"]
    facts = {"mv_alt_or": no_min["mv_alt_or"], "mv_single": no_min["mv_single"], "mv_in_scope": float(no_min["mv"])}
    table = ablation_table(frames).rename(columns={**METRIC_LABELS, **PER_TYPE_FEM_LABELS})
    return Section(table=table, numbers={"ablation": numbers}, facts=facts)


def ablation_paper_section(frames: Runs, published: Mapping[str, Any]) -> Section:
    """The four ablation numbers the paper prints (``published``, its ablation block) beside ours."""
    facts = {"paper_mv": published["no_minimality_mv"], "paper_hidden": published["hidden_edges_10_fem"]}
    return Section(table=ablation_beside_paper(records.ablation_numbers(frames), published), facts=facts)


def baseline_section(frames: Runs, gcjr_frame: pd.DataFrame) -> Section:
    """The five baselines' in-scope means beside GCJR's (GCJR §Results); the recorded rows leave GCJR out."""
    table = summary_table({**frames, "GCJR": gcjr_frame})
    return Section(
        table=table[list(METRIC_LABELS)].rename(columns=METRIC_LABELS),
        numbers={"baselines": table.drop(index="GCJR").to_dict("index")},
        facts={"random_fem": table.loc["random_pairs", "fem"]},
    )


def shapley_section(frames: Runs, published: Mapping[str, Any]) -> Section:
    """Exact Shapley top-2 beside the paper's RS@1, macro FEM and MV (GCJR §Results), RS@1 read both ways."""
    shap = summarise(scoped(frames["shapley_top2"]))
    facts = {
        "shap_rs1": shap["rs1"],
        "shap_success1": shap["repair_success1"],
        "paper_shap_mv": published["mv"],
        "paper_shap_macro_fem": published["macro_fem"],
    }
    return Section(table=shapley_beside_paper(shap, published), facts=facts)


def hidden_edge_section(sweep: pd.DataFrame) -> Section:
    """In-scope FEM and recall against the hidden fraction: mean, min and max over draws (GCJR §Limitations)."""
    curve = hidden_edge_curve(sweep)[1]
    rows = records.hidden_curve_records(curve)
    fem = {row["fraction"]: float(row["fem"]) for row in rows}
    return Section(table=curve, numbers={"hidden_curve": rows}, facts={"hidden_fem_10": fem[PAPER_HIDDEN_FRACTION]})


def noise_section(summary: pd.DataFrame) -> Section:
    """FEM under stochastic replay per (θ, r) and (method, noise) of a ``noise_summary`` (beyond the paper)."""
    table = summary.pivot_table(index=["theta", "r"], columns=["method", "noise"], values="fem")
    return Section(table=table, numbers=records.noise_records(summary))


def largest_noise_section(summary: pd.DataFrame) -> Section:
    """FEM, replays and agreement of both methods per (θ, r) at the sweep's largest noise level."""
    rows = summary[summary["noise"] == summary["noise"].max()].rename(columns={"fem": "FEM", "replays": "mean replays"})
    return Section(
        table=rows.pivot_table(index=["theta", "r"], columns="method", values=["FEM", "mean replays", "agree"])
    )


def sc_reading(sc: Mapping[str, Any] | None, r: int, theta: ThetaLike) -> str:
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


def sc_section(summary: pd.DataFrame, *, r: int, theta: ThetaLike) -> Section:
    """GCJR's schedule consistency per (θ, r) and noise; recorded at the main (r, θ) when the sweep holds it.

    The fact ``sc_reading`` is a Markdown sentence, so the prose reads well
    whether or not the sweep covers the main run's setting.
    """
    table = summary.query("method == 'GCJR'").pivot_table(index=["theta", "r"], columns="noise", values="sc")
    sc = records.sc_under_noise(summary, r, theta)
    numbers = {} if sc is None else {"sc_under_noise": sc}
    return Section(table=table, numbers=numbers, facts={"sc_reading": Markdown(sc_reading(sc, r, theta))})


def cost_section(
    cases: list[Case], runs: Runs, published: Mapping[str, Any], *, r: int, theta: ThetaLike = THETA, q: int = 2
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


def slice_reading(case: Case) -> str:
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
        "slice_reading": Markdown(slice_reading(case)),
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
    policy: str | Policy = "scripted",
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
        facts={"pilot": numbers, "paper_pilot": published, "pilot_text": pilot_text(numbers)},
    )


def pilot_text(numbers: Mapping[str, Any]) -> dict[str, str]:
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
    """The values the q-dependent identities must take at this ``q`` (:func:`rcakit.repair.records.closed_forms`)."""
    return Section(numbers={"closed": records.closed_forms(q)})
