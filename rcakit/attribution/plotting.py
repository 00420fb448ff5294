"""Accuracy against replay cost, one marker per method, with the cost frontier drawn.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from rcakit.attribution.experiments import cost_frontier

MARKERS = "osD^vP*XhpH<>"
ZERO_AT = 0.5  # where a method that replays nothing is drawn on the log axis


def frontier_figure(points: pd.DataFrame, ax=None):
    """``points`` (index: method; columns: accuracy, cost) on a log cost axis, the frontier as a step line.

    A method with no replay is drawn at ``ZERO_AT`` replays (the axis label says so).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    shown = points.assign(cost=points["cost"].clip(lower=ZERO_AT))
    for i, (name, row) in enumerate(shown.iterrows()):
        ax.scatter(row["cost"], row["accuracy"], marker=MARKERS[i % len(MARKERS)], s=60, label=name, zorder=3)
    front = cost_frontier(shown)
    ax.step(front["cost"], front["accuracy"], where="post", color="grey", linestyle="--", zorder=2,
            label="cost frontier")
    ax.set_xscale("log")
    ax.set_xlabel(f"mean seed replays per case (log; none drawn at {ZERO_AT})")
    ax.set_ylabel("mean accuracy over fault types")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return ax.figure
