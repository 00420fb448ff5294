"""The two-panel strata figure in the layout of LongRCA Figure 6.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rcakit.plotting import TEXT_WIDTH

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _panel(ax: Axes, frame: pd.DataFrame, title: str) -> None:
    methods = list(dict.fromkeys(frame["method"]))
    bins = list(dict.fromkeys(frame["bin"]))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        rows = frame[frame["method"] == method].set_index("bin").loc[bins]
        x = np.arange(len(bins)) - 0.4 + width * (i + 0.5)
        acc, lo, hi = (100 * rows[c].to_numpy(dtype=float) for c in ("acc", "lo", "hi"))
        yerr = np.clip([acc - lo, hi - acc], 0, None)  # Wilson bounds can sit a rounding error inside 0 or 1
        ax.errorbar(x, acc, yerr=yerr, fmt="o", ms=4, capsize=2, label=method)
    counts = frame.drop_duplicates("bin").set_index("bin").loc[bins, "n"]
    ax.set_xticks(np.arange(len(bins)), [f"{b}\n(n={int(n)})" for b, n in counts.items()])
    ax.grid(axis="x", visible=False)
    ax.set_title(title)
    ax.set_xlabel("difficulty bin")


def strata_figure(length: pd.DataFrame, distance: pd.DataFrame, suptitle: str | None = None) -> Figure:
    """Exact accuracy (%) per bin and method with 95% Wilson bars: (a) length, (b) root-to-end.

    Both frames are long: one row per ``method, bin`` with ``acc, lo, hi, n``.
    The panels are labelled; a book figure carries its caption instead of a ``suptitle``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH, 3.4), sharey=True)
    _panel(axes[0], length, "(a) trajectory length")
    _panel(axes[1], distance, "(b) root-to-end distance")
    axes[0].set_ylabel("root-cause exact accuracy (%)")
    axes[1].legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig
