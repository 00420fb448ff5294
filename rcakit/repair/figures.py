"""Drawing an execution DAG with a layout that does not depend on hash order.

networkx groups a ``multipartite_layout`` by node attribute into sets, whose
order follows ``PYTHONHASHSEED``; here the layers are explicit lists of
sorted node names and the drawn graph is rebuilt with sorted nodes and edges,
so the same case gives the same picture, byte for byte, in every process.
Nodes are coloured and named by what they are (a message, a tool observation,
a log line, the sink), with a legend. The two sweep figures draw the
summaries of ``rcakit.repair.experiments``.

Used in the chapters: `primer`, `gcjr-ablations`.
"""

from __future__ import annotations

import networkx as nx
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from rcakit import plotting
from rcakit.repair.graph import Case, failure_slice
from rcakit.repair.shared_seeds import threshold


def layered_layout(graph: nx.DiGraph) -> dict:
    """Positions by topological generation, each generation in sorted node order."""
    layers = {depth: sorted(generation) for depth, generation in enumerate(nx.topological_generations(graph))}
    return nx.multipartite_layout(graph, subset_key=layers)


NODE_KINDS = {  # what a node of an execution DAG is -> (legend text, colour)
    "fault": ("message with an injected error", plotting.VERMILION),
    "message": ("message (a candidate to replace)", plotting.BLUE),
    "tool": ("tool observation (cannot be replaced)", plotting.GREY),
    "log": ("log line nothing reads (off the failure slice)", plotting.SKY),
    "sink": ("failure sink", "#333333"),
}


def node_kind(case: Case, event: str) -> str:
    """``fault``, ``message``, ``tool``, ``log`` (an event outside the failure slice) or ``sink``."""
    data = case.graph.nodes[event]
    if event == case.sink:
        return "sink"
    if data["fault"]:
        return "fault"
    if not data["intervenable"]:
        return "tool"
    return "message" if event in failure_slice(case.graph, case.sink) else "log"


def event_label(case: Case, event: str) -> str:
    """A node's label: messages keep their name (agent letter, step), the others say what they are."""
    kind = node_kind(case, event)
    return {"tool": "tool", "log": f"{case.graph.nodes[event]['agent']} log", "sink": event}.get(kind, event)


def draw_case(case: Case, ax: Axes, *, legend: bool = True) -> Axes:
    """The case's DAG in layers, coloured by :data:`NODE_KINDS`, with a legend below it."""
    drawn = nx.DiGraph()
    drawn.add_nodes_from(sorted(case.graph.nodes))
    drawn.add_edges_from(sorted(case.graph.edges))
    kinds = [node_kind(case, v) for v in drawn]
    pos = layered_layout(drawn)
    nx.draw_networkx_edges(drawn, pos, ax=ax, arrowsize=10, node_size=700, edge_color="#555555")
    nx.draw_networkx_nodes(drawn, pos, ax=ax, node_size=700, node_color=[NODE_KINDS[k][1] for k in kinds])
    nx.draw_networkx_labels(
        drawn, pos, {v: event_label(case, v) for v in drawn}, ax=ax, font_size=8, font_color="white", font_weight="bold"
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


def hidden_edge_figure(by_draw: pd.DataFrame, paper_fem: float, ax: Axes) -> Axes:
    """In-scope FEM and recall against the hidden fraction (band: range over draws), the paper's 10% FEM as a cross."""
    long = by_draw.rename(columns={"fem": "FEM"}).melt(
        id_vars=["fraction", "draw"], value_vars=["FEM", "recall"], var_name="metric"
    )
    sns.lineplot(long, x="fraction", y="value", hue="metric", marker="o", errorbar=("pi", 100), ax=ax)
    ax.scatter([0.1], [paper_fem], marker="x", color="black", zorder=3, label="paper, 10%")
    ax.set_xlabel("fraction of edges hidden from GCJR")
    ax.set_ylabel("in-scope mean")
    ax.set_ylim(0, 1.05)
    ax.legend(frameon=False)
    return ax


def noise_figure(summary: pd.DataFrame) -> sns.FacetGrid:
    """FEM against the per-seed flip probability, one panel per θ in increasing order, one line per (r, method).

    Sized for the book's column: up to three panels in a row, the legend below them.
    """
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
    return grid
