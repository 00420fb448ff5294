"""The coverage-collapse chapter (``notebooks/coverage_collapse.md``): the structural arm of AgenticRAG-FP (§7.1).

:func:`run` runs the structural arm end to end (``rcakit.chapters._rag.run_arm``:
models, lab, case store, sweep, scores, the LLM judge) and returns its
``ArmRun`` (``rcakit.chapters._rag``); the sections the two RAG chapters share
(the protocol table, exact-hop accuracy, the probes' branches, the LLM methods)
come from ``rcakit.chapters._rag`` and are re-exported here.

The chapter's own sections read an ``ArmRun`` of the structural arm and return
a :class:`rcakit.sections.Section` whose numbers go to
``results/coverage-collapse.json`` and whose facts the prose quotes: which
intervention each probe branch decides, two counted facts of the hop budget,
what no trace reader can name, recovery per intervention, why coverage names
hop 1, and what the failed traces still hold (an oracle).

The figures draw no title (the captions are the chapter's); colours come from
the book's one palette (``rcakit.plotting``): the paper in black, the
workbench in blue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from rcakit import prose
from rcakit.chapters._rag import (
    ArmRun,
    Progress,
    accuracy_section,
    branch_accuracy_section,
    branches_section,
    cost_section,
    heed_comparison_section,
    judge_section,
    label_oracle,
    probe_budget_section,
    protocol_comparison_section,
    published_section,
    replay_section,
    run_arm,
    setup_section,
    views_section,
)
from rcakit.plotting import BLUE, GREY, ORANGE, SKY, TEXT_WIDTH, no_case_figure
from rcakit.progress import track
from rcakit.rag.diagnosers import BRANCHES
from rcakit.rag.metrics import (
    branch_hit_shares,
    least_share_predicting,
    prediction_histogram,
    predictions_with_hops,
)
from rcakit.rag.propagation import (
    branches_by_intervention,
    coverage_mechanism,
    hop_jaccard_summary,
    intervention_record,
    per_intervention,
    probe_on_kinds,
    protocol_checks,
    trace_properties,
    trace_reader_reach,
)
from rcakit.sections import Section

__all__ = [
    "ArmRun",
    "BRANCH_COLOURS",
    "NO_FAILED",
    "ORACLE_KEYS",
    "accuracy_section",
    "branch_accuracy_section",
    "branch_kinds_section",
    "branch_shares_figure",
    "branches_section",
    "checks_section",
    "cost_section",
    "heed_comparison_section",
    "hop_scores_section",
    "intervention_section",
    "judge_section",
    "mechanism_section",
    "paper_beside_workbench_figure",
    "prediction_heatmaps_figure",
    "probe_budget_section",
    "protocol_comparison_section",
    "published_section",
    "reach_section",
    "replay_section",
    "run",
    "setup_section",
    "trace_section",
    "views_section",
]


def run(
    params: Mapping[str, Any],
    *,
    chapter_id: str | None = None,
    progress: Progress = track,
    replay: bool | None = None,
    judge: bool = True,
) -> ArmRun:
    """The structural arm run (or resumed) with the chapter's checked ``params`` (``rcakit.chapters._rag.run_arm``)."""
    return run_arm("structural", params, chapter_id=chapter_id, progress=progress, replay=replay, judge=judge)


def branch_kinds_section(run: ArmRun, probe: str = "propagation_aware") -> Section:
    """Per (intervention, injected hop): the failed cases each branch of ``probe`` decided, then how many of
    them it named correctly; quotes the early terminations named by the continue branch (``et_continue_<hop>``
    of ``et_failed_<hop>``) and the query drifts named by a flip (``drift_flip_hits_<hop>``)."""
    by_kind = branches_by_intervention(run.cases, probe)
    return Section(table=by_kind, facts=probe_on_kinds(by_kind, run.depths))


def checks_section(run: ArmRun) -> Section:
    """Two facts of the authors' hop budget counted over the run (``protocol_checks``), quoted as
    ``checks_<name>``."""
    checks = protocol_checks(run.cases, run.params["hops"])
    table = pd.Series(checks, name="cases").to_frame()
    return Section(table=table, numbers={"protocol_checks": checks}, facts={"checks": checks})


def reach_section(run: ArmRun) -> Section:
    """Per injected hop: failed cases, those whose hop is absent from the trace, and those no trace reader
    names (``trace_reader_reach``), quoted as ``reach_<hop>_<name>``."""
    reach = trace_reader_reach(run.cases, run.depths)
    table = pd.DataFrame(reach).T.rename_axis("injected hop")
    return Section(table=table, numbers={"trace_reader_reach": reach}, facts={"reach": reach})


def intervention_section(run: ArmRun, names: Sequence[str] | None = None) -> Section:
    """Injected cases, recovery and the exact-hop accuracy of ``names`` (every diagnoser by default) per
    (intervention, injected hop); quotes recovery as ``recovery_<intervention>_<hop>_recovery``."""
    by_kind = per_intervention(run.cases)
    record = intervention_record(by_kind)
    shown = by_kind if names is None else by_kind.reindex(columns=["injected", "recovery", *names])
    table = label_oracle(shown.rename_axis(["intervention", "injected hop"]))
    return Section(table=table, numbers={"per_intervention": record}, facts={"recovery": record}, decimals=2)


def hop_scores_section(run: ArmRun) -> Section:
    """Per hop of the clean, correct traces: the share whose coverage score reaches the threshold, the
    largest score and the number of hops; quotes hop 1's share as ``hop1_above_share``."""
    summary = hop_jaccard_summary(run.lab, run.params["coverage_threshold"])
    return Section(table=summary, facts={"hop1_above_share": float(summary["share"].get(1, 0.0))})


def mechanism_section(run: ArmRun) -> Section:
    """Per injected hop, the share of failed cases in which coverage predicts hop 1 (all of them, and those
    whose trace has a hop 1), quoted as ``coverage_hop1_share_<hop>``; records both and Suf-Regen's least
    share of hop-1 predictions over the depths. The quoted shares are text (:func:`rcakit.prose.by_depth`)."""
    mechanism = coverage_mechanism(run.lab, run.cases, run.params["coverage_threshold"], run.depths)
    all_cases, with_hop1 = mechanism["coverage_predicts_hop1"], mechanism["coverage_predicts_hop1_with_hop1"]
    numbers = {
        "coverage_predicts_hop1": all_cases,
        "coverage_predicts_hop1_with_hop1": with_hop1,
        "suf_regen_hop1_share_min": least_share_predicting(mechanism["predictions"], "suf_regen", 1, run.depths),
    }
    table = pd.DataFrame({"all failed cases": all_cases, "failed cases with a hop 1": with_hop1})
    shares = prose.by_depth(with_hop1, run.depths, prose.percent)  # a depth may have no such case
    return Section(table=table, numbers=numbers, facts={"coverage_hop1_share": shares})


ORACLE_KEYS = {  # what the failed traces still hold, read with the world's certified facts
    "fact anywhere in the trace": ("oracle_injected_fact_in_trace", "fact_in_trace"),
    "fact at the injected hop": ("oracle_injected_fact_at_hop", None),
    "downstream facts intact": ("oracle_downstream_intact", "downstream_intact"),
}


def trace_section(run: ArmRun) -> Section:
    """Per injected hop, the share of failed cases whose trace still states the injected hop's fact
    (anywhere, at its own hop) and every later hop's fact: oracle measurements, recorded with an
    ``oracle_`` prefix and quoted as text (:func:`rcakit.prose.by_depth`) as ``fact_in_trace_<hop>`` and
    ``downstream_intact_<hop>``."""
    kept = trace_properties(run.cases, run.depths)
    numbers = {key: kept[label] for label, (key, _) in ORACLE_KEYS.items()}
    facts = {fact: prose.by_depth(kept[label], run.depths) for label, (_, fact) in ORACLE_KEYS.items() if fact}
    table = pd.DataFrame(kept).rename(columns=lambda c: f"{c} (oracle)").rename_axis("injected hop")
    return Section(table=table, numbers=numbers, facts=facts)


def _paper_cells(published: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
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


def _workbench_cells(result: dict[str, Any], names: Iterable[str]) -> pd.DataFrame:
    """``attribution``'s accuracy cells of ``names`` as a long frame (diagnoser, depth, point, lo, hi)."""
    rows = [{"diagnoser": n, "depth": int(d), **c} for n in names for d, c in result["accuracy"].get(n, {}).items()]
    return pd.DataFrame(rows, columns=["diagnoser", "depth", "point", "lo", "hi"])


NO_FAILED = "no injected case failed"  # what an empty sweep's figure says

BRANCH_COLOURS = {"flip": BLUE, "continue": SKY, "fallback": ORANGE, "none": GREY}


def branch_shares_figure(result: dict[str, Any]) -> Figure:
    """One panel per probe (the panel title names it): exact-hop accuracy by injected hop, stacked by the
    branch that named the hop (flip, continue, fallback)."""
    shares = branch_hit_shares(result)
    probes = sorted(shares["probe"].unique())
    if not probes:
        return no_case_figure(NO_FAILED)
    fig, axes = plt.subplots(1, len(probes), figsize=(TEXT_WIDTH - 0.8, 3.0), sharey=True, squeeze=False)
    for ax, probe in zip(axes[0], probes, strict=True):
        grp = shares[shares["probe"] == probe]
        table = grp.pivot(index="depth", columns="branch", values="share").reindex(columns=list(BRANCHES[:3]))
        table.fillna(0.0).plot.bar(
            stacked=True, ax=ax, rot=0, width=0.7, legend=False, color=[BRANCH_COLOURS[b] for b in BRANCHES[:3]]
        )
        ax.set_title(probe.replace("_", " "))
        ax.set_xlabel("injected hop")
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("exact-hop accuracy")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title="branch", loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def prediction_heatmaps_figure(cases: pd.DataFrame, names: Sequence[str], depths: Iterable[int]) -> Figure:
    """One heatmap per diagnoser (the panel title names it), two per row: share of the failed ``cases`` at
    each injected hop that it assigns to each predicted hop (0 = none), the same columns in every panel."""
    depths = list(depths)
    preds = predictions_with_hops(cases)
    columns = list(range(0, max(depths) + 2))  # hop 0 (none) to n+1 (an early termination's missing hop)
    rows = (len(names) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(TEXT_WIDTH, 2.8 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        hist = prediction_histogram(preds, name, depths).reindex(columns=columns).fillna(0.0)
        sns.heatmap(
            hist,
            ax=ax,
            annot=True,
            fmt=".2f",
            cbar=False,
            vmin=0,
            vmax=1,
            cmap="Blues",
            annot_kws={"size": 11},
            linewidths=0.5,
            linecolor="white",
        )
        ax.set_title(name.replace("_", " ") + (" (oracle)" if name.startswith("oracle") else ""))
        ax.set_xlabel("predicted hop (0 = none)")
        ax.set_ylabel("injected hop")
        ax.tick_params(axis="y", rotation=0)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def paper_beside_workbench_figure(
    published: Mapping[str, Mapping[str, str]], result: dict[str, Any], names: Sequence[str]
) -> Figure:
    """One panel per diagnoser of ``names``: exact-hop accuracy by injected hop with its 95% interval, the
    paper's (``published``, as ``_paper_cells`` reads it; black) beside the workbench's (``result``, an
    ``attribution``; blue); a panel without the workbench's cells shows the paper's alone."""
    paper, workbench = _paper_cells(published), _workbench_cells(result, names)
    fig, axes = plt.subplots(
        1, len(names), figsize=(min(3.0 * len(names), TEXT_WIDTH - 0.8), 3.0), sharey=True, squeeze=False
    )
    for ax, name in zip(axes[0], names, strict=True):
        for frame, shift, who in ((paper, -0.12, "paper"), (workbench, 0.12, "workbench")):
            cells = frame[frame["diagnoser"] == name].sort_values("depth")
            if not len(cells):
                continue
            err = [cells["point"] - cells["lo"], cells["hi"] - cells["point"]]
            ax.errorbar(
                cells["depth"] + shift,
                cells["point"],
                yerr=err,
                fmt="o",
                capsize=3,
                label=who,
                color="black" if who == "paper" else BLUE,
            )
        ax.set_title(name.replace("_", " "))
        ax.set_xticks(sorted(set(paper["depth"]) | set(workbench["depth"])))
        ax.set_xlabel("injected hop")
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel("exact-hop accuracy")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return fig
