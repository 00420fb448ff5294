"""The two-panel strata figure in the layout of LongRCA Figure 6.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rcakit.plotting import TEXT_WIDTH
from rcakit.tables import column_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _panel(ax: Axes, frame: pd.DataFrame, title: str, xlabel: str) -> None:
    methods = list(dict.fromkeys(frame["method"]))
    bins = list(dict.fromkeys(frame["bin"]))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        rows = frame[frame["method"] == method].set_index("bin").loc[bins]
        x = np.arange(len(bins)) - 0.4 + width * (i + 0.5)
        acc, lo, hi = (100 * rows[c].to_numpy(dtype=float) for c in ("acc", "lo", "hi"))
        yerr = np.clip([acc - lo, hi - acc], 0, None)  # Wilson bounds can sit a rounding error inside 0 or 1
        ax.errorbar(x, acc, yerr=yerr, fmt="o", ms=4, capsize=2, label=column_label(method))
    counts = frame.drop_duplicates("bin").set_index("bin").loc[bins, "n"]
    ax.set_xticks(np.arange(len(bins)), [f"{b}\n(n={int(n)})" for b, n in counts.items()])
    ax.grid(axis="x", visible=False)
    ax.set_title(title)
    ax.set_xlabel(xlabel)


def strata_figure(length: pd.DataFrame, distance: pd.DataFrame, suptitle: str | None = None) -> Figure:
    """Exact accuracy (%) per bin and method with 95% Wilson bars: (a) length, (b) root-to-end.

    Both frames are long: one row per ``method, bin`` with ``acc, lo, hi, n``.
    The panels are labelled and the legend sits under them, method names in words; a book figure
    carries its caption instead of a ``suptitle``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH, 4.0), sharey=True)
    _panel(axes[0], length, "(a) trajectory length", "recorded steps")
    _panel(axes[1], distance, "(b) root-to-end distance", "steps after the root")
    axes[0].set_ylabel("exact root accuracy (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    columns = len(labels) if len(labels) <= 4 else -(-len(labels) // 2)  # one row, or two balanced rows
    fig.legend(handles, labels, frameon=False, fontsize="small", loc="lower center", ncol=columns)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout(rect=(0, 0.12 if len(labels) > 4 else 0.07, 1, 1))  # room for the legend under the panels
    return fig
