"""Accuracy against replay cost, one marker per method, with the cost frontier drawn.

Each family has its hue and each method its own shade and marker; the legend
lists the families, and every method is named beside its marker. Methods that
land on the same point share one label and are drawn side by side, so that
none hides another.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

from rcakit.attribution.experiments import READER_NAMES, Comparison, cost_frontier, families_table, testbed_points
from rcakit.plotting import TEXT_WIDTH

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

MARKERS = "osD^vP*XhpH<>"
ZERO_AT = 0.5  # where a method that replays nothing is drawn on the log axis
SPREAD = 1.12  # factor between side-by-side markers of methods on the same point (log axis)
FAMILY_HUES = {  # one colour map per family; its methods get distinct shades of it, a user's methods oranges
    "post-hoc reader": "Greys",
    "single-intervention probe": "Blues",
    "contrastive resampling": "Purples",
    "Shapley": "Greens",
    "repair-family search": "Reds",
}
OTHER = "Oranges"
MARKER_SIZE = 60  # points squared
# where a label may go, in points from its markers: right, left, above, below, then further out
_NUDGES = [
    (7, 0, "left"),
    (-7, 0, "right"),
    (0, 10, "center"),
    (0, -10, "center"),
    (7, 10, "left"),
    (7, -10, "left"),
    (-7, 10, "right"),
    (-7, -10, "right"),
    (0, 20, "center"),
    (0, -20, "center"),
]


def frontier_figure(points: pd.DataFrame, ax: Axes | None = None) -> Figure | SubFigure:
    """``points`` (index: method; columns: accuracy, cost, optionally family) on a log cost axis.

    The cost frontier is a dashed step line. A method with no replay is drawn at
    ``ZERO_AT`` replays (the axis label says so). Each method gets a shade of
    its ``family``'s hue (``FAMILY_HUES``; oranges for a user's method, and for
    every method when no family is given) and its own marker; the legend lists
    the families, and each point carries the names of its methods, placed where
    no marker or other label is.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(TEXT_WIDTH - 1.2, 3.8))
    shown = points.assign(cost=points["cost"].clip(lower=ZERO_AT))
    family = shown["family"] if "family" in shown else pd.Series("method", index=shown.index)
    colour = shades(family)
    labels, markers = [], []
    position = {name: i for i, name in enumerate(shown.index)}  # the index is the methods, each once
    for key, group in shown.groupby(["cost", "accuracy"], sort=False):
        cost, accuracy = cast(tuple[float, float], key)  # pandas-stubs types a two-column group key as Hashable
        factors = [SPREAD ** (i - (len(group) - 1) / 2) for i in range(len(group))]
        for factor, name in zip(factors, group.index, strict=True):
            ax.scatter(
                cost * factor,
                accuracy,
                marker=MARKERS[position[name] % len(MARKERS)],
                s=MARKER_SIZE,
                color=colour[name],
                edgecolor="black",
                linewidth=0.5,
                zorder=3,
            )
            markers.append((cost * factor, accuracy))
        labels.append((", ".join(group.index), cost * factors[-1], cost * factors[0], accuracy))
    front = cost_frontier(shown)
    ax.step(front["cost"], front["accuracy"], where="post", color="grey", linestyle="--", zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(ZERO_AT / 4, shown["cost"].max() * 8)  # room for labels left of the cheapest, right of the costliest
    ax.set_ylim(-0.06, 1.1)
    ax.set_xlabel(f"mean seed replays per case (log; none drawn at {ZERO_AT})")
    ax.set_ylabel("mean accuracy over fault types")
    _place_labels(ax, labels, markers)
    present = [*[f for f in FAMILY_HUES if f in set(family)], *sorted(set(family) - set(FAMILY_HUES))]
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=plt.get_cmap(FAMILY_HUES.get(f, OTHER))(0.7),
            markeredgecolor="black",
            markeredgewidth=0.5,
            label=f,
        )
        for f in present
    ]
    handles.append(Line2D([], [], color="grey", linestyle="--", label="cost frontier"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return ax.figure


def shades(family: pd.Series) -> pd.Series:
    """A colour per method (the index of ``family``): its family's colour map, from dark to light in order."""
    colours = {}
    for name, members in family.groupby(family, sort=False):
        cmap = plt.get_cmap(FAMILY_HUES.get(name, OTHER))
        steps = len(members) - 1
        for i, method in enumerate(members.index):
            colours[method] = cmap(0.85 - 0.45 * i / steps if steps else 0.7)
    return pd.Series(colours).reindex(family.index)


def _place_labels(ax: Axes, labels: list[tuple[str, float, float, float]], markers: list[tuple[float, float]]) -> None:
    """Each ``(text, right x, left x, y)`` beside its markers, at the first place (``_NUDGES``) inside the
    axes (so off the legend beside them) that covers no marker (at ``markers``) and no label placed before;
    right of the markers when every place is taken."""
    # an Agg canvas (the book's backend) has get_renderer; FigureCanvasBase does not declare it
    renderer = ax.figure.canvas.get_renderer()  # pyright: ignore[reportAttributeAccessIssue]
    half = MARKER_SIZE**0.5 / 2 * ax.figure.dpi / 72  # a marker's half width, in pixels
    taken = [Bbox.from_extents(x - half, y - half, x + half, y + half) for x, y in ax.transData.transform(markers)]
    frame = ax.get_window_extent(renderer)
    for text, right, left, y in sorted(labels, key=lambda item: (-item[3], item[1])):
        for nudge in _NUDGES:
            label = _label(ax, text, right, left, y, *nudge)
            extent = label.get_window_extent(renderer)
            if _within(extent, frame) and not any(extent.overlaps(other) for other in taken):
                break
            label.remove()
        else:
            label = _label(ax, text, right, left, y, *_NUDGES[0])
            extent = label.get_window_extent(renderer)
        taken.append(extent)


def _within(inner: Bbox, outer: Bbox) -> bool:
    """Whether ``inner`` lies wholly inside ``outer`` (both in display pixels)."""
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


def _label(ax: Axes, text: str, right: float, left: float, y: float, dx: float, dy: float, ha: str) -> Annotation:
    """``text`` offset by ``(dx, dy)`` points from the right edge, the left edge or the middle of its markers."""
    anchor = right if dx > 0 else left if dx < 0 else (right * left) ** 0.5
    return ax.annotate(
        text,
        (anchor, y),
        xytext=(dx, dy),
        textcoords="offset points",
        va="center",
        ha=ha,
        fontsize=7,
        zorder=2.5,
        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
    )


def testbed_figure(comparison: Comparison, testbed: str) -> Figure | SubFigure:
    """One testbed of ``comparison``: each method's mean accuracy over the fault types against its mean replays.

    Methods are coloured by family (:func:`families_table`) and named for a
    reader (``READER_NAMES``). When no method applies to the testbed, the axes
    say so instead.
    """
    points = testbed_points(comparison.summary, testbed)
    if points.empty:
        fig, ax = plt.subplots(figsize=(6.4, 2.0))
        ax.text(0.5, 0.5, f"no chosen method applies to {READER_NAMES.get(testbed, testbed)}", ha="center", va="center")
        ax.set_axis_off()
        return fig
    return frontier_figure(points.join(families_table(points.index)["family"]).rename(index=READER_NAMES))
