"""The RAG chapters' figures: each returns a matplotlib figure and draws no title (captions are the chapter's).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from rcakit.rag.diagnosers import BRANCHES
from rcakit.rag.metrics import branch_hit_shares, prediction_histogram
from rcakit.rag.text import OUTCOMES


def branch_shares(result: dict):
    """One panel per probe (the panel title names it): exact-hop accuracy by injected hop, stacked by the
    branch that named the hop (flip, continue, fallback)."""
    shares = branch_hit_shares(result)
    probes = sorted(shares["probe"].unique())
    fig, axes = plt.subplots(1, len(probes), figsize=(10, 3.2), sharey=True, squeeze=False)
    for ax, probe in zip(axes[0], probes, strict=True):
        grp = shares[shares["probe"] == probe]
        grp.pivot(index="depth", columns="branch", values="share")[list(BRANCHES[:3])].plot.bar(
            stacked=True, ax=ax, rot=0)
        ax.set_title(probe)
        ax.set_ylabel("exact-hop accuracy, by the branch that named the hop")
        ax.set_xlabel("injected hop")
    fig.tight_layout()
    return fig


def prediction_heatmaps(preds: pd.DataFrame, names: Sequence[str], depths: Iterable[int]):
    """One heatmap per diagnoser (the panel title names it): share of failed cases at each injected hop
    that it assigns to each predicted hop (0 = none)."""
    depths = list(depths)
    fig, axes = plt.subplots(1, len(names), figsize=(13, 3.2), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        hist = prediction_histogram(preds, name, depths).fillna(0.0)
        sns.heatmap(hist, ax=ax, annot=True, fmt=".2f", cbar=False, vmin=0, vmax=1, cmap="Blues")
        ax.set_title(name + (" (oracle)" if name.startswith("oracle") else ""))
        ax.set_xlabel("predicted hop (0 = none)")
        ax.set_ylabel("injected hop")
    fig.tight_layout()
    return fig


def outcome_bars(shares: pd.DataFrame):
    """Absorbed / resisted / derailed shares of the injected content cases, stacked, by corrupted hop."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    shares[list(OUTCOMES)].plot.bar(stacked=True, ax=ax, rot=0)
    ax.set_xlabel("corrupted hop")
    ax.set_ylabel("share of injected cases")
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig
