"""Drawing an execution DAG with a layout that does not depend on hash order.

networkx groups a ``multipartite_layout`` by node attribute into sets, whose
order follows ``PYTHONHASHSEED``; here the layers are explicit lists of
sorted node names and the drawn graph is rebuilt with sorted nodes and edges,
so the same case gives the same picture, byte for byte, in every process.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import networkx as nx

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
