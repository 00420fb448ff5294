"""The RAG chapters' figures: each returns a matplotlib figure and draws no title (captions are the chapter's).

Colours come from the book's one palette (``rcakit.plotting``): the paper in
black, the workbench in blue, outcomes in their outcome colours.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from rcakit.plotting import BLUE, GREY, ORANGE, SKY, TEXT_WIDTH, colour, no_case_figure
from rcakit.rag.diagnosers import BRANCHES
from rcakit.rag.metrics import branch_hit_shares, prediction_histogram, predictions_with_hops
from rcakit.rag.outcomes import outcome_shares
from rcakit.rag.text import OUTCOMES


def paper_cells(published: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
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


NO_FAILED = "no injected case failed"  # what an empty sweep's figure says

BRANCH_COLOURS = {"flip": BLUE, "continue": SKY, "fallback": ORANGE, "none": GREY}


def branch_shares(result: dict) -> Figure:
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


def prediction_heatmaps(cases: pd.DataFrame, names: Sequence[str], depths: Iterable[int]) -> Figure:
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


def paper_beside_workbench(published: Mapping[str, Mapping[str, str]], result: dict, names: Sequence[str]) -> Figure:
    """One panel per diagnoser of ``names``: exact-hop accuracy by injected hop with its 95% interval, the
    paper's (``published``, as ``paper_cells`` reads it; black) beside the workbench's (``result``, an
    ``attribution``; blue); a panel without the workbench's cells shows the paper's alone."""
    paper, workbench = paper_cells(published), workbench_cells(result, names)
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


def outcome_bars(cases: pd.DataFrame, paper: Mapping[str, Mapping[str, float]] | None = None) -> Figure:
    """Absorbed / resisted / derailed shares of the injected content ``cases`` by corrupted hop, stacked;
    with ``paper`` (Table 4: ``{"hop d": {outcome: share}}``) each hop shows the paper's bar beside the
    workbench's."""
    shares = outcome_shares(cases)
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    bars: list[tuple[str, Mapping | pd.Series]] = []
    for d, row in shares.iterrows():
        if paper and f"hop {d}" in paper:
            bars.append((f"hop {d}\npaper", paper[f"hop {d}"]))
        bars.append((f"hop {d}\nhere" if paper else f"hop {d}", row))
    frame = pd.DataFrame(
        [{o: float(values[o]) for o in OUTCOMES} for _, values in bars], index=[label for label, _ in bars]
    )
    frame.plot.bar(stacked=True, ax=ax, rot=0, width=0.7, color=[colour(o) for o in OUTCOMES])
    ax.set_xlabel("corrupted hop")
    ax.set_ylabel("share of injected cases")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
    fig.tight_layout()
    return fig
