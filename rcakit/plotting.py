"""One figure theme and the few plots that several chapters share."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


def set_theme() -> None:
    """The book's look: seaborn whitegrid, colorblind palette, compact figures."""
    sns.set_theme(style="whitegrid", palette="colorblind", context="notebook")
    plt.rcParams.update({"figure.figsize": (6.4, 3.6), "figure.dpi": 100, "axes.titlesize": "medium"})


def ci_errorbar(
    ax: plt.Axes,
    labels: Sequence[str],
    point: Sequence[float],
    lo: Sequence[float],
    hi: Sequence[float],
    reference: Sequence[float] | None = None,
    reference_label: str = "reference",
    label: str = "estimate",
) -> plt.Axes:
    """Points with asymmetric interval bars per label, optionally beside reference values."""
    x = np.arange(len(labels))
    point, lo, hi = (np.asarray(a, dtype=float) for a in (point, lo, hi))
    ax.errorbar(x, point, yerr=[point - lo, hi - point], fmt="o", capsize=4, label=label)
    if reference is not None:
        ax.scatter(x, reference, marker="x", color="black", zorder=3, label=reference_label)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, labels)
    ax.legend(loc="best", frameon=False)
    return ax
