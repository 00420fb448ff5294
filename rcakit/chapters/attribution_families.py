"""The attribution-families chapter (``notebooks/attribution_families.md``): its sections, tables and figures.

:func:`rcakit.attribution.compare_methods` scores the chosen methods on the
three testbeds (:mod:`rcakit.attribution.scoring`: a fresh oracle per method
and case, one replay memo shared by all); each section of the chapter then
comes back as a :class:`rcakit.sections.Section`:

- :func:`families_section`: what each method can express and what it assumes;
- :func:`cases_section`: the cases per testbed and fault type;
- :func:`testbed_section`: one testbed's accuracies with 95% Wilson intervals
  beside the mean seed replays per case;
- :func:`findings_section`: the findings the chapter states, and the memo's figures;
- :func:`main_section`: methods x testbeds, mean accuracy beside mean replays.

The sections' tables name methods, testbeds and fault types for a reader
(:func:`named_table`); the numbers they record keep the ids.

:func:`testbed_figure` draws one testbed's accuracy against replay cost, one
marker per method, with the cost frontier (:func:`frontier_figure`). Each
family has its hue and each method its own shade and marker; the legend lists
the families, and every method is named beside its marker. Methods that land
on the same point share one label and are drawn side by side, so that none
hides another.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown
from matplotlib.lines import Line2D
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

from rcakit import tables
from rcakit.attribution.adapters import FAMILY_OF, METHOD_NAMES
from rcakit.attribution.oracle import ReplayMemo
from rcakit.attribution.scoring import MethodComparison
from rcakit.attribution.testbeds import FAULT_TYPE_NAMES, FAULT_TYPES, TESTBED_NAMES
from rcakit.plotting import BLUE, GREY, ORANGE, PURPLE, SKY, TEXT_WIDTH, VERMILION
from rcakit.sections import Section

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


READER_NAMES = {**METHOD_NAMES, **TESTBED_NAMES, **FAULT_TYPE_NAMES}  # id -> a reader's name, for tables


def named_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the method, testbed and fault-type ids in its index and columns given a reader's names.

    Ids without a name (a user's method) are kept; only labels change, never a value.
    """
    return table.rename(index=READER_NAMES, columns=READER_NAMES)


def _results_tree(table: pd.DataFrame) -> dict[str, Any]:
    """``{testbed: {fault type: {method: {n, accuracy, ci, mean_cost, mean_tokens, mean_memo_hits}}}}``."""
    tree: dict[str, Any] = {}
    for row in table.to_dict(orient="records"):
        tree.setdefault(row["testbed"], {}).setdefault(row["fault_type"], {})[row["method"]] = {
            "n": int(row["n"]),
            "accuracy": float(row["accuracy"]),
            "ci": [float(row["ci_lo"]), float(row["ci_hi"])],
            "mean_cost": float(row["mean_cost"]),
            "mean_tokens": float(row["mean_tokens"]),
            "mean_memo_hits": float(row["mean_memo_hits"]),
        }
    return tree


def accuracy_table(table: pd.DataFrame, testbed: str) -> pd.DataFrame:
    """One testbed's accuracies as "acc [lo, hi]" (methods x fault types), beside the mean replay cost."""
    part = table[table["testbed"] == testbed]
    cell = part.apply(lambda r: f"{r.accuracy:.2f} [{r.ci_lo:.2f}, {r.ci_hi:.2f}]", axis=1)
    wide = part.assign(cell=cell).pivot(index="method", columns="fault_type", values="cell")
    wide = wide[[t for t in FAULT_TYPES[testbed] if t in wide.columns]]
    cost = part.groupby("method", sort=False)["mean_cost"].mean().rename("mean replays")
    order = list(dict.fromkeys(part["method"]))
    return wide.join(cost).reindex(order)


def _cost_frontier(points: pd.DataFrame) -> pd.DataFrame:
    """The methods no other beats on both axes (lower cost, higher accuracy), cheapest first."""
    ranked = points.sort_values(["cost", "accuracy"], ascending=[True, False])
    best = -np.inf
    keep = []
    for label, accuracy in ranked["accuracy"].items():
        if accuracy > best:
            keep.append(label)
            best = accuracy
    return ranked.loc[keep]


def _testbed_points(table: pd.DataFrame, testbed: str) -> pd.DataFrame:
    """Per method on one testbed: mean accuracy over its fault types and mean replay cost."""
    part = table[table["testbed"] == testbed]
    return part.groupby("method", sort=False).agg(accuracy=("accuracy", "mean"), cost=("mean_cost", "mean"))


def families_table(methods: Iterable[str]) -> pd.DataFrame:
    """What each built-in method can express and what it assumes."""
    assumes = {
        "post-hoc reader": "the recorded trace (or graph) only; no replay",
        "single-intervention probe": "a replayable prefix and a clean counterpart of one unit at a time",
        "contrastive resampling": "a stochastic policy to resample from each step on (an SCM)",
        "Shapley": "replay of arbitrary coalitions; a value to share (no joint/alternative distinction)",
        "repair-family search": "replay of sets with clean counterparts; GCJR also a dependency graph",
    }
    expresses = {
        "coverage": "point",
        "rule_based": "point",
        "centrality": "point",
        "propagation_aware": "point",
        "suf_regen": "point",
        "singleton_replay": "family (singletons)",
        "contrastive": "point",
        "shapley_exact": "ranking",
        "shapley_mc": "ranking",
        "shapley_rollouts": "ranking",
        "shapley_top2": "family (one pair)",
        "gcjr": "family",
        "exhaustive": "family",
    }
    rows = [
        {
            "method": m,
            "family": FAMILY_OF.get(m, "user method"),
            "expresses": expresses.get(m, "any"),
            "assumes": assumes.get(FAMILY_OF.get(m, ""), "what its author states"),
        }
        for m in methods
    ]
    return pd.DataFrame(rows).set_index("method")


def _memo_figures(memo: ReplayMemo, scores: pd.DataFrame) -> dict[str, Any]:
    """Seed replays charged to the methods, those the memo answered, and those actually computed."""
    return {
        "charged": int(scores["replays"].sum()),
        "memo_hits": int(scores["memo_hits"].sum()),
        "computed": int(memo.computed),
    }


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else float("nan")


def _findings(scores: pd.DataFrame) -> dict[str, Any]:
    """The measured findings the chapter states (each could have come out the other way).

    - ``gcjr_equals_singleton_rag``: share of RAG cases where GCJR returns the
      same family as singleton replay (pairs of hops are comparable, so GCJR's
      admission screens every pair out);
    - ``exhaustive_joint_rag`` / ``gcjr_joint_rag``: their accuracy on the
      jointly necessary RAG pairs;
    - ``top2_pair_on_either``: share of either-suffices cases (RAG
      double_either, Controlled-DAG alt_or) where Shapley top-2 returns the
      two repairs as one joint pair;
    - ``ranking_on_either``: share of the same cases where exact Shapley puts
      both repairs on top (the ranking, read as players, is right);
    - ``locus_share``: per support-agent variant, the share of cases whose
      contrastive locus falls on each step, and ``locus_later_double`` the
      share of double-injection cases whose locus is the later injected step;
    - ``probe_minus_reader_rag_single``: Propagation-Aware's accuracy minus
      coverage's on single RAG faults;
    - ``mc_minus_exact_dag``: Monte-Carlo Shapley's accuracy minus exact
      Shapley's, over every Controlled-DAG case;
    - ``exhaustive_support_double``: exhaustive search on the support agent's
      two injections, replayed with finitely many rollouts.
    """

    def rows(method: str, testbed: str | None = None, fault_types: Sequence[str] | None = None) -> pd.DataFrame:
        part = scores[scores["method"] == method]
        if testbed is not None:
            part = part[part["testbed"] == testbed]
        if fault_types is not None:
            part = part[part["fault_type"].isin(fault_types)]
        return part.set_index(["testbed", "case_id"])

    g, s = rows("gcjr", "rag_hops"), rows("singleton_replay", "rag_hops")
    either = ("double_either", "alt_or")
    top2, exact = rows("shapley_top2", fault_types=either), rows("shapley_exact", fault_types=either)
    pair = top2["answer"] == top2["truth"].str.replace("} | {", ", ", regex=False)
    contrast = scores[(scores["method"] == "contrastive") & (scores["testbed"] == "support_agent")]
    locus = {
        t: part["answer"].value_counts(normalize=True).sort_index().to_dict()
        for t, part in contrast.groupby("fault_type", sort=False)
    }
    return {
        "gcjr_equals_singleton_rag": _share(g["answer"] == s["answer"].reindex(g.index)),
        "gcjr_joint_rag": _share(rows("gcjr", "rag_hops", ["double_joint"])["correct"]),
        "exhaustive_joint_rag": _share(rows("exhaustive", "rag_hops", ["double_joint"])["correct"]),
        "top2_pair_on_either": _share(pair),
        "ranking_on_either": _share(exact["correct"]),
        "locus_share": locus,
        "locus_later_double": _share(contrast.loc[contrast["fault_type"] == "double", "answer"] == "lookup_order"),
        "probe_minus_reader_rag_single": _accuracy(scores, "propagation_aware", "rag_hops", "single")
        - _accuracy(scores, "coverage", "rag_hops", "single"),
        "mc_minus_exact_dag": _accuracy(scores, "shapley_mc", "controlled_dag")
        - _accuracy(scores, "shapley_exact", "controlled_dag"),
        "rollouts_minus_exact_dag": _accuracy(scores, "shapley_rollouts", "controlled_dag")
        - _accuracy(scores, "shapley_exact", "controlled_dag"),
        "exhaustive_support_double": _accuracy(scores, "exhaustive", "support_agent", "double"),
    }


def _accuracy(scores: pd.DataFrame, method: str, testbed: str, fault_type: str | None = None) -> float:
    part = scores[(scores["method"] == method) & (scores["testbed"] == testbed)]
    if fault_type is not None:
        part = part[part["fault_type"] == fault_type]
    return _share(part["correct"])


def main_table(table: pd.DataFrame) -> pd.DataFrame:
    """Methods x testbeds: mean accuracy over the fault types, and mean seed replays per case."""
    acc = table.pivot_table(index="method", columns="testbed", values="accuracy", aggfunc="mean", sort=False)
    cost = table.pivot_table(index="method", columns="testbed", values="mean_cost", aggfunc="mean", sort=False)
    both = pd.concat({"accuracy": acc, "replays per case": cost}, axis=1)
    return both.reindex(list(dict.fromkeys(table["method"])))


def families_section(methods: Iterable[str]) -> Section:
    """What each chosen method can express (point, ranking, family) and what it assumes (:func:`families_table`)."""
    return Section(table=named_table(families_table(methods)))


def _case_counts(scores: pd.DataFrame) -> dict[str, dict[str, int]]:
    """``{testbed: {fault type: cases}}`` among the cases some method was scored on."""
    counts = scores.drop_duplicates(["testbed", "case_id"]).groupby(["testbed", "fault_type"]).size()
    return {str(bed): {str(t): int(n) for t, n in part.droplevel(0).items()} for bed, part in counts.groupby(level=0)}


def cases_section(comparison: MethodComparison) -> Section:
    """The cases per testbed and fault type, recorded under ``cases``."""
    cases = comparison.scores.drop_duplicates(["testbed", "case_id"])
    table = cases.groupby(["testbed", "fault_type"], sort=False).size().rename("cases").to_frame()
    return Section(table=named_table(table), numbers={"cases": _case_counts(comparison.scores)})


def testbed_section(comparison: MethodComparison, testbed: str) -> Section:
    """One testbed's accuracies as "acc [lo, hi]" beside mean replays (:func:`accuracy_table`).

    Recorded under the testbed's name as :func:`_results_tree`'s branch; skipped
    when no chosen method applies to the testbed.
    """
    part = comparison.summary[comparison.summary["testbed"] == testbed]
    if part.empty:
        return Section.skip(f"no chosen method applies to the {TESTBED_NAMES.get(testbed, testbed)} testbed.")
    table = named_table(accuracy_table(comparison.summary, testbed))
    return Section(table=table, numbers={testbed: _results_tree(part)[testbed]}, decimals=1)


NOT_MEASURED = (
    "A dash marks a finding this run could not measure: a method it reads was not among the chosen ones, "
    "or no case of its kind was drawn."
)


def findings_section(comparison: MethodComparison) -> Section:
    """The chapter's findings (:func:`_findings`) and the memo's figures (:func:`_memo_figures`), recorded and quoted.

    The prose quotes each share as Markdown with two decimals, or a dash when
    the run could not measure it (``findings_note`` then says why), so a run
    with any choice of methods renders.
    """
    found = _findings(comparison.scores)
    memo = _memo_figures(comparison.memo, comparison.scores)
    shares = {k: v for k, v in found.items() if isinstance(v, float)}
    quoted = {k: Markdown(tables.DASH if math.isnan(v) else f"{v:.2f}") for k, v in shares.items()}
    note = NOT_MEASURED if any(math.isnan(v) for v in shares.values()) else ""
    facts = {"findings": {**found, **quoted, "note": Markdown(note)}, "memo": memo}
    return Section(numbers={"findings": found, "memo": memo}, facts=facts)


def main_section(comparison: MethodComparison) -> Section:
    """Methods x testbeds: mean accuracy over the fault types beside mean seed replays per case (:func:`main_table`)."""
    return Section(table=named_table(main_table(comparison.summary)), decimals=2)


# --- figures: accuracy against replay cost --------------------------------------------------------

MARKERS = "osD^vP*XhpH<>"
ZERO_AT = 0.5  # where a method that replays nothing is drawn on the log axis
SPREAD = 1.12  # factor between side-by-side markers of methods on the same point (log axis)
FAMILY_COLOURS = {  # one Okabe-Ito colour per family (rcakit.plotting); its methods differ by marker
    "post-hoc reader": GREY,
    "single-intervention probe": SKY,
    "contrastive resampling": PURPLE,
    "Shapley": BLUE,
    "repair-family search": VERMILION,
}
OTHER = ORANGE  # a user's method
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
    (14, 20, "left"),
    (14, -20, "left"),
    (-14, 20, "right"),
    (-14, -20, "right"),
    (0, 30, "center"),
    (0, -30, "center"),
]
LABEL_SIZE = 9  # points: at the figure's width (the text column) about 12 px, over the book's minimum


def frontier_figure(points: pd.DataFrame) -> Figure:
    """``points`` (index: method; columns: accuracy, cost, optionally family) on a log cost axis, as a new figure.

    The cost frontier is a dashed step line. A method with no replay is drawn at
    ``ZERO_AT`` replays (the axis label says so). Each method gets a shade of
    its ``family``'s colour (``FAMILY_COLOURS``; orange for a user's method, and for
    every method when no family is given) and its own marker; the legend under the
    axes lists the families, and each point carries the names of its methods, placed
    where no marker or other label is.
    """
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 4.2))
    shown = points.assign(cost=points["cost"].clip(lower=ZERO_AT))
    family = shown["family"] if "family" in shown else pd.Series("method", index=shown.index)
    colour = {name: FAMILY_COLOURS.get(str(f), OTHER) for name, f in family.items()}
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
    front = _cost_frontier(shown)
    ax.step(front["cost"], front["accuracy"], where="post", color="grey", linestyle="--", zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(ZERO_AT / 4, shown["cost"].max() * 8)  # room for labels left of the cheapest, right of the costliest
    ax.set_ylim(-0.06, 1.1)
    ax.set_xlabel(f"mean seed replays per case (log; none drawn at {ZERO_AT})")
    ax.set_ylabel("mean accuracy over fault types")
    _place_labels(ax, labels, markers)
    present = [*[f for f in FAMILY_COLOURS if f in set(family)], *sorted(set(family) - set(FAMILY_COLOURS))]
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=FAMILY_COLOURS.get(f, OTHER),
            markeredgecolor="black",
            markeredgewidth=0.5,
            label=f,
        )
        for f in present
    ]
    handles.append(Line2D([], [], color="grey", linestyle="--", label="cost frontier"))
    ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=LABEL_SIZE, frameon=False
    )
    return fig


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
        fontsize=LABEL_SIZE,
        zorder=2.5,
        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
    )


def testbed_figure(comparison: MethodComparison, testbed: str) -> Figure:
    """One testbed of ``comparison``: each method's mean accuracy over the fault types against its mean replays.

    Methods are coloured by family (:func:`families_table`) and named for a
    reader (``READER_NAMES``). When no method applies to the testbed, the axes
    say so instead.
    """
    points = _testbed_points(comparison.summary, testbed)
    if points.empty:
        fig, ax = plt.subplots(figsize=(6.4, 2.0))
        ax.text(0.5, 0.5, f"no chosen method applies to {READER_NAMES.get(testbed, testbed)}", ha="center", va="center")
        ax.set_axis_off()
        return fig
    fig = frontier_figure(points.join(families_table(points.index)["family"]).rename(index=READER_NAMES))
    fig.axes[0].set_title(READER_NAMES.get(testbed, testbed))
    return fig
