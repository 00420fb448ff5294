"""One figure theme, one palette for verdicts and outcomes, and the few plots that several chapters share.

Used in the chapters: every chapter calls :func:`set_theme` and colours
verdicts and outcomes from :data:`VERDICT_COLOURS` and :data:`OUTCOME_COLOURS`
(captions name them with :func:`colour_name`); ``primer`` and ``car-shapley``
draw their effects on :func:`ci_errorbar`; a sweep that leaves nothing to draw
shows :func:`no_case_figure`. Each chapter's own figures live in its module,
``rcakit/chapters/<stem>.py``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
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
    "too few cases": SKY,
    "holds": BLUE,
    "fails": VERMILION,
    "not measured": GREY,
    "other parameters": ORANGE,
    "reported": PURPLE,
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
# ... and whether it draws bars that are all of zero height ("yes" or "no"): such a figure shows nothing of
# what its caption describes, and the browser test fails it.
FLAT_BARS_KEY = "rcakit bars all zero-height"


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

    recorded = {
        SMALLEST_TEXT_KEY: f"{smallest_text_px(fig):.2f}",
        FLAT_BARS_KEY: "yes" if bars_all_flat(fig) else "no",
    }
    return retina_figure(fig, base64=False, bbox_inches="tight", metadata=recorded)


def smallest_text_px(fig: Figure) -> float:
    """The size of ``fig``'s smallest visible text in pixels at one pixel per figure dot: points × dpi / 72."""
    from matplotlib.text import Text

    sizes = [float(t.get_fontsize()) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=72.0) * fig.dpi / 72


def bars_all_flat(fig: Figure) -> bool:
    """``fig`` draws bars (a bar chart of any of its axes) and every one of them has zero length: the
    marks its caption describes are invisible."""
    from matplotlib.container import BarContainer

    lengths = [
        patch.get_height() if getattr(bars, "orientation", "vertical") == "vertical" else patch.get_width()
        for ax in fig.axes
        for bars in ax.containers
        if isinstance(bars, BarContainer)
        for patch in bars.patches
    ]
    return bool(lengths) and all(abs(float(n)) < 1e-12 or np.isnan(n) for n in lengths)


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
