"""The primer's figures: a run as a causal graph, the minimal repair family of a small DAG, and
estimates beside their closed forms.

In the graphs, nodes are text boxes, so a label always fits its node and no node is clipped
at the edge of the axes; arrows end at the boxes' borders. The colours come from the book's
palette (:mod:`rcakit.plotting`), and the captions name them by
``rcakit.plotting.COLOUR_NAMES``: a fault is vermilion, a sound step blue,
the outcome grey, a repair set green; closed forms and bounds are black crosses.

Used in the chapters: `primer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from rcakit.plotting import BLUE, GREEN, GREY, ORANGE, TEXT_WIDTH, ci_errorbar, colour
from rcakit.primer import BOUND_COLUMN, J_COLUMN
from rcakit.repair import Case, format_family

if TYPE_CHECKING:
    from rcakit.primer import FourEventRepairs
    from rcakit.sections import Section

SOUND = BLUE  # a step or event without an injected error
FAULT = colour("fault")  # vermilion: the step or events that carry the error
OUTCOME = GREY  # the outcome, or the event where the failure shows
REPAIR = GREEN  # the outline of one minimal repair set
REFERENCE = colour("paper")  # black crosses: a closed form or a bound
BARS = (BLUE, GREEN)  # the columns of a bar chart, in order

Position = tuple[float, float]


def draw_graph(
    ax: Axes,
    edges: Iterable[tuple[str, str]],
    pos: Mapping[str, Position],
    colours: Mapping[str, str],
    *,
    fontsize: float = 10,
) -> dict[str, Text]:
    """Nodes as coloured boxes at ``pos``, arrows between their borders; returns the boxes by node.

    The axes' limits are set from the positions with a margin, and the boxes
    are never clipped, so the whole graph is drawn whatever the figure size.
    """
    boxes = {
        node: ax.text(
            x,
            y,
            node,
            ha="center",
            va="center",
            color="white",
            fontsize=fontsize,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.5", "facecolor": colours[node], "edgecolor": "none"},
        )
        for node, (x, y) in pos.items()
    }
    for tail, head in edges:
        ax.annotate(
            "",
            xy=(0.5, 0.5),
            xycoords=boxes[head],
            xytext=(0.5, 0.5),
            textcoords=boxes[tail],
            arrowprops={
                "arrowstyle": "-|>",
                "color": "black",
                "lw": 1,
                "shrinkA": 2,
                "shrinkB": 2,
                "patchA": boxes[tail].get_bbox_patch(),
                "patchB": boxes[head].get_bbox_patch(),
            },
        )
    xs, ys = zip(*pos.values(), strict=True)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.set_axis_off()
    return boxes


def run_graph_figure(
    edges: Iterable[tuple[str, str]], pos: Mapping[str, Position], faulty: Iterable[str], outcome: str = "Y"
) -> Figure:
    """A run as a structural causal model (CAR §2): ``faulty`` steps vermilion, ``outcome`` grey, the rest blue."""
    faulty = set(faulty)
    colours = {n: FAULT if n in faulty else OUTCOME if n == outcome else SOUND for n in pos}
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    draw_graph(ax, edges, pos, colours)
    return fig


def _box_extent(box: Text) -> Bbox:
    """The display extent of a node's box (a patch's extent needs no renderer)."""
    patch = box.get_bbox_patch()
    assert patch is not None  # draw_graph gives every node a box
    return patch.get_window_extent()


def _outline(ax: Axes, boxes: Iterable[Text]) -> None:
    """A dashed green outline around ``boxes``: one repair set. Call it once the figure is laid out and drawn."""
    extent = Bbox.union([_box_extent(box) for box in boxes])
    (x0, y0), (x1, y1) = ax.transData.inverted().transform(extent.get_points())
    pad = 0.07
    ax.add_patch(
        FancyBboxPatch(
            (x0 - pad, y0 - pad),
            x1 - x0 + 2 * pad,
            y1 - y0 + 2 * pad,
            boxstyle="round,pad=0.03",
            fill=False,
            edgecolor=REPAIR,
            lw=2,
            ls="--",
            zorder=4,
        )
    )


def repair_family_figure(
    cases: Mapping[str, Case],
    families: Mapping[str, Iterable[frozenset]],
    pos: Mapping[str, Position],
    rules: Mapping[str, str],
) -> Figure:
    """One panel per case: its DAG with each set of its minimal repair family outlined (GCJR §Methodology).

    Faulty events are vermilion, the failure sink grey, the other events blue.
    Each set of ``families[name]`` gets its own dashed green outline, so a
    jointly necessary pair is one outline around two events and two
    alternative repairs are two outlines. ``rules[name]`` is the title's second
    line: how the sink's inputs corrupt it.
    """
    fig, axes = plt.subplots(1, len(cases), figsize=(min(3.4 * len(cases), TEXT_WIDTH), 3.2), squeeze=False)
    drawn = []
    for ax, (name, case) in zip(axes[0], cases.items(), strict=True):
        graph = case.graph
        colours = {n: FAULT if graph.nodes[n]["fault"] else OUTCOME if n == case.sink else SOUND for n in pos}
        boxes = draw_graph(ax, sorted(graph.edges), pos, colours)
        ax.set_title(f"{name}: F = {format_family(families[name])}\n{rules[name]}", fontsize=10)
        drawn.append((ax, boxes, families[name]))
    fig.tight_layout()
    fig.canvas.draw()  # places the boxes, whose extents the outlines read
    for ax, boxes, family in drawn:
        for members in family:
            _outline(ax, [boxes[m] for m in sorted(members)])
    return fig


def _centre(patch: Patch) -> float:
    """The x of a bar's centre."""
    assert isinstance(patch, Rectangle)  # a bar chart draws rectangles
    return patch.get_x() + patch.get_width() / 2


def bars_with_reference(
    bars: pd.DataFrame,
    reference: pd.Series,
    *,
    ylabel: str,
    reference_label: str = "closed form",
    interval: tuple[str, float, float] | None = None,
    line: tuple[float, str] | None = None,
) -> Figure:
    """One bar per row and column of ``bars`` (blue, then green), ``reference`` as black crosses.

    The crosses sit over the first column's bars. ``interval`` is ``(row, lo, hi)``,
    an error bar drawn on that row's first bar; ``line`` is ``(value, label)``, a
    dashed horizontal line (a threshold).
    """
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    bars.plot.bar(ax=ax, rot=0, color=list(BARS[: bars.shape[1]]), legend=False)
    first = {row: _centre(patch) for row, patch in zip(bars.index, ax.patches, strict=False)}
    ax.scatter(
        [first[row] for row in reference.index],
        reference,
        marker="x",
        s=80,
        color=REFERENCE,
        zorder=3,
        label=reference_label,
    )
    if interval is not None:
        row, lo, hi = interval
        value = bars.iloc[:, 0][row]
        yerr = [[max(value - lo, 0.0)], [max(hi - value, 0.0)]]  # an interval computed apart may round past the bar
        ax.errorbar([first[row]], [value], yerr=yerr, color="black", capsize=5, zorder=4)
    if line is not None:
        ax.axhline(line[0], color="black", ls="--", lw=1, label=line[1])
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig


def effects_figure(table: pd.DataFrame, locus: int | None, closed: pd.Series) -> Figure:
    """Contrastive effects with their intervals beside the closed forms, the locus shaded orange (CAR §4).

    ``table`` and ``locus`` are those of :func:`rcakit.scm.contrastive_effects`.
    """
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    if locus is not None:
        ax.axvspan(locus - 0.4, locus + 0.4, color=ORANGE, alpha=0.2)
    effect = table["effect"]  # a percentile interval may, rarely, miss its own estimate: widen it to hold it
    lo, hi = table["effect_lo"].clip(upper=effect), table["effect_hi"].clip(lower=effect)
    ci_errorbar(
        ax,
        table["name"].tolist(),
        effect.tolist(),
        lo.tolist(),
        hi.tolist(),
        reference=closed.tolist(),
        reference_label="closed form",
        label="replayed",
    )
    ax.set_ylabel("effect on P(bad)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig


# --- the primer's figures, drawn from what its sections computed (rcakit.primer) ---

REFUND_RUN_EDGES = (("lookup", "issue_refund"), ("issue_refund", "final"), ("issue_refund", "Y"), ("lookup", "final"))
REFUND_RUN_POS = {"lookup": (0, 0), "issue_refund": (1, 0.5), "final": (2, 0), "Y": (2, 1)}
FOUR_EVENT_POS = {"plan": (0, 0), "lookup": (1, 0.6), "check": (1, -0.6), "answer": (2, 0)}
JOIN_RULES = {"AND": "answer corrupted if any input is", "OR": "answer corrupted only if every input is"}


def refund_run_figure() -> Figure:
    """The three-step refund run (CAR §2): only the refund decision reaches the outcome."""
    return run_graph_figure(REFUND_RUN_EDGES, REFUND_RUN_POS, faulty=["issue_refund"])


def interventions_figure(section: Section) -> Figure:
    """Replayed P(bad) per intervention, with the resampled one's interval, beside the closed forms.

    ``section`` is :func:`rcakit.primer.interventions_section`'s.
    """
    table = section.table
    assert table is not None, "the interventions section has a table"
    interval = ("do(resample 1)", *section.numbers["do"]["resample_ci"])
    return bars_with_reference(table[["replayed"]], table["closed form"], ylabel="P(bad)", interval=interval)


def commitment_figure(section: Section) -> Figure:
    """The contrastive effects of :func:`rcakit.primer.commitment_section` beside their closed forms, locus shaded."""
    table = section.table
    assert table is not None, "the commitment section has a table"
    return effects_figure(table.reset_index(), section.numbers["contrastive"]["locus"], table["closed_form"])


def shapley_figure(section: Section) -> Figure:
    """φ0 and φ1 of the AND and OR games and runs (:func:`rcakit.primer.shapley_section`) beside the closed forms."""
    table = section.table
    assert table is not None, "the Shapley section has a table"
    return bars_with_reference(table[["φ0", "φ1"]], table["closed_form"], ylabel="Shapley value")


def four_event_figure(repairs: FourEventRepairs) -> Figure:
    """The AND and OR cases of :func:`rcakit.primer.four_event_repairs`, each with GCJR's family outlined."""
    joins = list(repairs.cases)
    return repair_family_figure(
        {f"{join} join": repairs.cases[join] for join in joins},
        {f"{join} join": repairs.found[join].family for join in joins},
        pos=FOUR_EVENT_POS,
        rules={f"{join} join": JOIN_RULES[join] for join in joins},
    )


def coverage_figure(section: Section) -> Figure:
    """J(a, D_h) per hop (:func:`rcakit.primer.coverage_section`) with its bound and the threshold γ."""
    table = section.table
    assert table is not None, "the coverage section has a table"
    return bars_with_reference(
        table[[J_COLUMN]].rename(columns={J_COLUMN: "$J(a, D_h)$"}),
        table[BOUND_COLUMN],
        ylabel="$J(a, D_h)$",
        reference_label="bound $|a| / |D_h|$",
        line=(section.facts["gamma"], "threshold γ"),
    )
