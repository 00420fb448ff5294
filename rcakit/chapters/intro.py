"""The landing page (``notebooks/intro.md``): the book's findings at a glance.

Its one figure counts the claims of :mod:`rcakit.claims` by verdict, per paper:
the mechanism claims (the reproductions) apart from the identity checks, which
reproduce nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rcakit.plotting import TEXT_WIDTH, VERDICT_COLOURS

HEADLINE_VERDICTS = ["agrees", "differs", "too few cases", "not measured", "other parameters"]
CHECK_VERDICTS = ["holds", "fails"]


def headline_figure(counts: pd.DataFrame, figsize: tuple[float, float] = (TEXT_WIDTH, 3.2)) -> Figure:
    """The book's findings at a glance: per row (a paper), mechanism claims by verdict, identity checks apart.

    ``counts`` is :func:`rcakit.claims.headline_counts` (:func:`rcakit.claims.tally`): the
    reproductions by verdict in the left panel (the claims that test a number a
    paper printed); rcakit's own claims and the identity checks, which
    reproduce nothing, in the right panel.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, sharey=True, width_ratios=[3, 1.3])
    rows = list(counts.index)[::-1]
    y = np.arange(len(rows))
    _stacked(left, y, counts.loc[rows], HEADLINE_VERDICTS, HEADLINE_VERDICTS)
    left.set_title("reproductions (a printed number tested)")
    checks = counts.loc[rows].assign(
        held=counts["own claims hold"] + counts["identities hold"],
        failed=counts["own claims fail"] + counts["identities fail"],
    )
    _stacked(right, y, checks, ["held", "failed"], CHECK_VERDICTS)
    right.set_title("own claims and checks")
    left.set_yticks(y, rows)
    for ax in (left, right):
        ax.set_xlabel("claims")
        ax.grid(axis="y", visible=False)
        ax.xaxis.get_major_locator().set_params(integer=True)
    shown = HEADLINE_VERDICTS + CHECK_VERDICTS
    handles = [Rectangle((0, 0), 1, 1, color=VERDICT_COLOURS[v]) for v in shown]
    fig.legend(
        handles,
        shown,
        loc="lower center",
        ncol=4,
        frameon=False,
        bbox_to_anchor=(0.5, -0.02),
    )
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig


def _stacked(ax: Axes, y: np.ndarray, counts: pd.DataFrame, columns: Sequence[str], verdicts: Sequence[str]) -> None:
    """Horizontal stacked bars, each segment labelled with its count when there is room."""
    left = np.zeros(len(y))
    for column, verdict in zip(columns, verdicts, strict=True):
        values = counts[column].to_numpy(dtype=float)
        ax.barh(y, values, left=left, color=VERDICT_COLOURS[verdict], height=0.6)
        for yi, start, width in zip(y, left, values, strict=True):
            if width:
                ax.text(
                    start + width / 2,
                    yi,
                    str(int(width)),
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if verdict in ("agrees", "differs", "holds", "fails") else "black",
                )
        left += values
