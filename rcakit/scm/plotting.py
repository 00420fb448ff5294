"""Figures of the SCM chapter's own results: interval coverage of Monte-Carlo Shapley (CAR §4).

Used in the chapter ``car-shapley``.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rcakit.plotting import BLUE, TEXT_WIDTH

STEP_MARKERS = ("o", "s", "^", "D", "v")  # player 0, 1, 2, ... (the caption names them)


def coverage_figure(study: pd.DataFrame, level: float = 0.95, panel_height: float = 2.6) -> Figure:
    """One panel per setting of :func:`rcakit.scm.coverage_study`: the share of reruns whose
    interval held the analytic value, per interval and step, with 95% Wilson intervals, and
    the nominal ``level`` as a dashed line. The panels are stacked, each the text column wide, so
    that the interval names fit under their points; the legend sits right of the first panel."""
    settings = list(dict.fromkeys(study["setting"]))
    figsize = (TEXT_WIDTH, panel_height * len(settings))
    fig, axes = plt.subplots(len(settings), 1, figsize=figsize, sharex=True, squeeze=False)
    for ax, setting in zip(axes[:, 0], settings, strict=True):
        rows = study[study["setting"] == setting]
        labels = list(dict.fromkeys(rows["interval"]))
        steps = sorted(rows["step"].unique())
        for j, step in enumerate(steps):
            part = rows[rows["step"] == step].set_index("interval").loc[labels]
            x = np.arange(len(labels)) + (j - (len(steps) - 1) / 2) * 0.18
            y = part["coverage"].to_numpy(dtype=float)
            below, above = (
                np.clip(d.to_numpy(dtype=float), 0, None)  # Wilson at 1 is 1 - 1e-16
                for d in (y - part["Wilson low"], part["Wilson high"] - y)
            )
            ax.errorbar(x, y, yerr=[below, above], fmt=STEP_MARKERS[j % 5], color=BLUE, capsize=3, label=f"φ{step}")
        ax.axhline(level, color="black", ls="--", lw=1, label=f"nominal {level:.0%}")
        ax.set_xticks(np.arange(len(labels)), [textwrap.fill(t, 22) for t in labels], fontsize=9)
        ax.set_ylim(0, 1.04)
        first = rows.iloc[0]
        ax.set_title(
            f"{int(first['permutations'])} permutations × {int(first['rollouts per v(S)'])} rollouts, "
            f"{int(first['reruns'])} reruns",
            fontsize=10,
        )
        ax.set_ylabel("share holding φ")
    axes[0][0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
