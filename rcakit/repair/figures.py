"""Drawing an execution DAG with a layout that does not depend on hash order.

networkx groups a ``multipartite_layout`` by node attribute into sets, whose
order follows ``PYTHONHASHSEED``; here the layers are explicit lists of
sorted node names and the drawn graph is rebuilt with sorted nodes and edges,
so the same case gives the same picture, byte for byte, in every process.
The two sweep figures draw the summaries of ``rcakit.repair.experiments``.

Used in the chapters: `primer`, `gcjr-ablations`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import networkx as nx
import pandas as pd
import seaborn as sns

from rcakit.repair.graph import Case


def layered_layout(graph: nx.DiGraph) -> dict:
    """Positions by topological generation, each generation in sorted node order."""
    layers = {depth: sorted(generation) for depth, generation in enumerate(nx.topological_generations(graph))}
    return nx.multipartite_layout(graph, subset_key=layers)


def draw_case(case: Case, ax: plt.Axes) -> plt.Axes:
    """The case's DAG: injected errors in red, non-intervenable events in grey, the rest blue."""
    drawn = nx.DiGraph()
    drawn.add_nodes_from(sorted(case.graph.nodes(data=True)))
    drawn.add_edges_from(sorted(case.graph.edges))
    colors = ["C3" if d["fault"] else ("C0" if d["intervenable"] else "C7") for _, d in drawn.nodes(data=True)]
    nx.draw_networkx(drawn, layered_layout(drawn), ax=ax, node_color=colors, node_size=380, font_size=7,
                     font_color="white", arrowsize=8)
    ax.axis("off")
    return ax


def hidden_edge_figure(by_draw: pd.DataFrame, paper_fem: float, ax: plt.Axes) -> plt.Axes:
    """In-scope FEM and recall against the hidden fraction (band: range over draws), the paper's 10% FEM as a cross."""
    long = by_draw.melt(id_vars=["fraction", "draw"], value_vars=["fem", "recall"], var_name="metric")
    sns.lineplot(long, x="fraction", y="value", hue="metric", marker="o", errorbar=("pi", 100), ax=ax)
    ax.scatter([0.1], [paper_fem], marker="x", color="black", zorder=3, label="paper, 10%")
    ax.set_xlabel("fraction of edges hidden from GCJR")
    ax.set_ylabel("in-scope mean (band: range over draws)")
    ax.set_ylim(0, 1.05)
    ax.legend(frameon=False)
    return ax


def noise_figure(summary: pd.DataFrame) -> sns.FacetGrid:
    """FEM against the per-seed flip probability, one panel per θ, one line per (r, method)."""
    grid = sns.relplot(summary, x="noise", y="fem", hue="r", style="method", col="theta", kind="line",
                       marker="o", palette="viridis", height=3.0, aspect=1.0)
    grid.set_axis_labels("per-seed flip probability", "FEM (in scope)")
    return grid
