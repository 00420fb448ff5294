"""One figure theme, one palette for verdicts and outcomes, and the few plots that several chapters share.

Used in the chapters: every chapter calls :func:`set_theme` and colours
verdicts and outcomes from :data:`VERDICT_COLOURS` and :data:`OUTCOME_COLOURS`
(captions name them with :func:`colour_name`); ``car-shapley`` draws
:func:`contrastive_figure` (on :func:`ci_errorbar`), :func:`lineplot_panels`
and :func:`support_report_figure`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

# One palette for verdicts and outcomes, on every page (Okabe & Ito's colour-blind safe set). Captions name a
# colour with COLOUR_NAMES, so the text says "vermilion" where the figure shows vermilion.
GREEN, VERMILION, ORANGE, BLUE, SKY, GREY, PURPLE = (
    "#009E73",
    "#D55E00",
    "#E69F00",
    "#0072B2",
    "#56B4E9",
    "#999999",
    "#CC79A7",
)
COLOUR_NAMES = {
    GREEN: "green",
    VERMILION: "vermilion",
    ORANGE: "orange",
    BLUE: "blue",
    SKY: "sky blue",
    GREY: "grey",
    PURPLE: "purple",
}
VERDICT_COLOURS = {
    "agrees": GREEN,
    "differs": VERMILION,
    "not measured": GREY,
    "other parameters": ORANGE,
    "reported": BLUE,
}
OUTCOME_COLOURS = {
    "good": GREEN,
    "correct": GREEN,
    "resisted": GREEN,
    "repaired": GREEN,
    "bad": VERMILION,
    "wrong": VERMILION,
    "derailed": VERMILION,
    "fault": VERMILION,
    "absorbed": ORANGE,
    "abstained": GREY,
    "clean": BLUE,
    "paper": "black",
}


# The colour cycle C0..C9 of every figure: seaborn's colour-blind order, on the same colours as above, so "C3"
# is VERMILION and "C2" GREEN wherever a chapter uses the cycle.
CYCLE = [BLUE, ORANGE, GREEN, VERMILION, PURPLE, "#CA9161", "#FBAFE4", GREY, "#F0E442", SKY]
TEXT_WIDTH = 6.8  # inches: the book's text column at 100 dpi, the widest a figure is drawn
# A figure's PNG records its smallest text, in CSS pixels at its display size, under this key (a PNG text
# chunk): the browser test scales it by the size the page shows the image at and fails text under 9 px.
SMALLEST_TEXT_KEY = "rcakit smallest text px"


def colour(key: str) -> str:
    """The colour of a verdict or an outcome (``"agrees"``, ``"derailed"``, ``"fault"``)."""
    try:
        return VERDICT_COLOURS.get(key) or OUTCOME_COLOURS[key]
    except KeyError:
        known = ", ".join(sorted({*VERDICT_COLOURS, *OUTCOME_COLOURS}))
        raise KeyError(f"no colour for {key!r}; known: {known}") from None


def colour_name(key: str) -> str:
    """The word a caption uses for the colour of ``key`` (``colour_name("fault") == "vermilion"``)."""
    value = colour(key)
    return COLOUR_NAMES.get(value, value)


def tint(hex_colour: str, amount: float = 0.82) -> str:
    """``hex_colour`` mixed with white (``amount`` of white), for a light background behind dark text."""
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


def set_theme() -> None:
    """The book's look: seaborn whitegrid, the colour-blind :data:`CYCLE`, compact figures."""
    sns.set_theme(style="whitegrid", palette=CYCLE, context="notebook")
    plt.rcParams.update({"figure.figsize": (6.4, 3.6), "figure.dpi": 100, "axes.titlesize": "medium"})
    _retina()


def _retina() -> None:
    """In a kernel, figures as PNG at twice the pixels with their display size in the output's metadata,
    so they are sharp on a HiDPI screen and shown at :data:`TEXT_WIDTH` at most (myst-nb reads the size);
    each PNG records its :func:`smallest_text_px` under :data:`SMALLEST_TEXT_KEY`."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        if "inline" in str(plt.rcParams["backend"]):
            # The inline backend sets its own PNG formatter when its module is first imported (at the first
            # figure); import it now, so that the formatter set below is the one that stays.
            import matplotlib_inline.backend_inline  # noqa: F401 - the import configures the shell
        shell.run_line_magic("config", "InlineBackend.figure_formats = ['retina']")
        shell.display_formatter.formatters["image/png"].for_type(Figure, retina_png)


def retina_png(fig: Figure) -> tuple[bytes | str, dict[str, int]] | None:
    """IPython's retina PNG of ``fig`` (cropped to its content) with its smallest text recorded."""
    from IPython.core.pylabtools import retina_figure

    smallest = {SMALLEST_TEXT_KEY: f"{smallest_text_px(fig):.2f}"}
    return retina_figure(fig, base64=False, bbox_inches="tight", metadata=smallest)


def smallest_text_px(fig: Figure) -> float:
    """The size of ``fig``'s smallest visible text in pixels at one pixel per figure dot: points × dpi / 72."""
    from matplotlib.text import Text

    sizes = [float(t.get_fontsize()) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=72.0) * fig.dpi / 72


def no_case_figure(what: str, figsize: tuple[float, float] = (TEXT_WIDTH, 2.2)) -> Figure:
    """A figure that says in words that it has nothing to draw (``what``, for example "no injected case
    failed"), so a valid parameter that leaves a sweep empty still gives a page, not a crash."""
    fig, ax = plt.subplots(figsize=figsize)
    ax.text(0.5, 0.5, f"{what} at these parameters: nothing to plot", ha="center", va="center", color=GREY)
    ax.set_axis_off()
    return fig


def ci_errorbar(
    ax: Axes,
    labels: ArrayLike,
    point: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
    reference: ArrayLike | None = None,
    reference_label: str = "reference",
    label: str = "estimate",
) -> Axes:
    """Points with asymmetric interval bars per label, optionally beside reference values."""
    names = [str(label) for label in np.asarray(labels)]
    x = np.arange(len(names))
    mid, low, high = (np.asarray(a, dtype=float) for a in (point, lo, hi))
    ax.errorbar(x, mid, yerr=[mid - low, high - mid], fmt="o", capsize=4, label=label)
    if reference is not None:
        ax.scatter(x, reference, marker="x", color="black", zorder=3, label=reference_label)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, names)
    ax.legend(loc="best", frameon=False)
    return ax


def contrastive_figure(table: pd.DataFrame, locus: int | None) -> Figure:
    """Contrastive effects per step with their intervals, the point-of-commitment locus shaded (CAR §4).

    ``table`` and ``locus`` are those of :func:`rcakit.scm.contrastive_effects`.
    """
    fig, ax = plt.subplots()
    ci_errorbar(
        ax, table["name"], table["effect"], table["effect_lo"], table["effect_hi"], label="effect, 95% bootstrap CI"
    )
    if locus is not None:
        ax.axvspan(locus - 0.3, locus + 0.3, color=ORANGE, alpha=0.2, label="locus")
    ax.set_ylabel("P(bad | do) − P(bad | observed)")
    ax.legend(frameon=False)
    return fig


def lineplot_panels(
    data: pd.DataFrame,
    x: str,
    ys: Sequence[str],
    hue: str,
    seed: int,
    log_xticks: Sequence[float] | None = None,
    figsize: tuple[float, float] = (TEXT_WIDTH, 3.2),
) -> Figure:
    """One line plot per column of ``ys``, side by side, each panel labelled by its column.

    Lines are the mean over repeated rows per ``x`` and ``hue``, with a 95%
    bootstrap band that seaborn draws from ``seed`` (so the figure does not
    change between runs). ``log_xticks``: a log x axis ticked at these values.
    """
    fig, axes = plt.subplots(1, len(ys), figsize=figsize, sharex=True, squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        sns.lineplot(data, x=x, y=y, hue=hue, marker="o", ax=ax, errorbar=("ci", 95), seed=seed)
        if log_xticks is not None:
            ax.set_xscale("log")
            ax.set_xticks(log_xticks, [str(t) for t in log_xticks], rotation=45)
            ax.minorticks_off()
        ax.set_title(y)
    fig.tight_layout()
    return fig


def support_report_figure(
    trajectory: pd.DataFrame,
    table: pd.DataFrame,
    locus: int | None,
    context_lines: Sequence[tuple[str, bool]],
    figsize: tuple[float, float] = (TEXT_WIDTH, 9.2),
) -> Figure:
    """CAR's incident report (Figure 1) in four panels.

    At the text column's width, top to bottom: the factual trajectory
    (``trajectory``: columns ``name`` and ``action``), the locus row marked;
    the locus's decision context (``context_lines``: text and whether it
    carries the injection, boxed in red); then side by side, the outcome
    distribution under resampling from each step (``p_bad_do`` with its
    Wilson interval ``p_lo``, ``p_hi``) and the per-step effects with their
    intervals, the locus shaded. Legends sit under their panels, off the data.
    ``table`` and ``locus`` are those of :func:`rcakit.scm.contrastive_effects`.
    """
    fig = plt.figure(figsize=figsize)
    grid = fig.add_gridspec(3, 2, height_ratios=[0.5, 1.0, 1.5], hspace=0.35, wspace=0.45)
    _trajectory_panel(fig.add_subplot(grid[0, :]), trajectory, locus)
    _context_panel(fig.add_subplot(grid[1, :]), context_lines, locus, trajectory)
    _outcome_panel(fig.add_subplot(grid[2, 0]), table)
    effects = fig.add_subplot(grid[2, 1])
    ci_errorbar(
        effects,
        table["name"],
        table["effect"],
        table["effect_lo"],
        table["effect_hi"],
        label="effect, 95% bootstrap CI",
    )
    if locus is not None:
        effects.axvspan(locus - 0.3, locus + 0.3, color=OUTCOME_COLOURS["bad"], alpha=0.15, label="locus")
    effects.set_ylabel("P(bad | do) − P(bad | observed)")
    _labels_below(effects)
    effects.set_title("(d) per-step effects")
    return fig


def _labels_below(ax: Axes) -> None:
    """Step names slanted so that they never overlap, and the legend under the panel, off the data."""
    ax.tick_params(axis="x", labelrotation=30)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize=8, frameon=False)


def _trajectory_panel(ax: Axes, trajectory: pd.DataFrame, locus: int | None) -> None:
    ax.set_axis_off()
    ax.set_title("(a) factual trajectory")
    n = len(trajectory)
    for i, row in enumerate(trajectory.itertuples()):
        y = 1 - (i + 0.5) / n
        is_locus = i == locus
        ax.text(
            0.02,
            y,
            f"{i}  {row.name}",
            va="center",
            fontsize=10,
            weight="bold" if is_locus else "normal",
            transform=ax.transAxes,
        )
        ax.text(
            0.3,
            y,
            f"→ {row.action}",
            va="center",
            fontsize=10,
            transform=ax.transAxes,
            bbox={"facecolor": VERMILION, "alpha": 0.15, "edgecolor": VERMILION} if is_locus else None,
        )
    if locus is not None:
        ax.text(0.02, -0.08, "bold, shaded: the causal locus", fontsize=8, color="dimgrey", transform=ax.transAxes)


def _context_panel(ax: Axes, lines: Sequence[tuple[str, bool]], locus: int | None, trajectory: pd.DataFrame) -> None:
    ax.set_axis_off()
    name = trajectory["name"].iloc[locus] if locus is not None else "no locus"
    ax.set_title(f"(b) decision context of the locus, {name}")
    line = 8.5 * 1.3 * ax.figure.dpi / 72 / ax.bbox.height  # a text line of 8.5 pt, in axes units
    y = 0.97
    for text, injected in lines:
        wrapped = textwrap.fill(text, width=58)
        style = (
            {
                "color": "tab:red",
                "weight": "bold",
                "bbox": {"facecolor": "tab:red", "alpha": 0.12, "edgecolor": "tab:red"},
            }
            if injected
            else {}
        )
        ax.text(0.01, y, wrapped, va="top", fontsize=8.5, family="monospace", transform=ax.transAxes, **style)
        y -= line * (wrapped.count("\n") + 1) + line / 2
    if any(injected for _, injected in lines):
        ax.text(
            0.01,
            max(y - line, 0.0),
            "boxed in red: the injected instruction",
            fontsize=8,
            color="tab:red",
            transform=ax.transAxes,
        )


def _outcome_panel(ax: Axes, table: pd.DataFrame) -> None:
    x = np.arange(len(table))
    bad = table["p_bad_do"].to_numpy(dtype=float)
    ax.bar(x, bad, color=OUTCOME_COLOURS["bad"], alpha=0.7, label="bad: refund against policy")
    ax.bar(x, 1 - bad, bottom=bad, color=OUTCOME_COLOURS["good"], alpha=0.5, label="good")
    below, above = (np.clip(d, 0, None) for d in (bad - table["p_lo"], table["p_hi"] - bad))  # Wilson at 1: 1 - 1e-16
    ax.errorbar(x, bad, yerr=[below, above], fmt="none", color="black", capsize=4)
    ax.set_xticks(x, list(table["name"]))
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of rollouts (95% Wilson CI)")
    _labels_below(ax)
    ax.set_title("(c) resampling from each step")
