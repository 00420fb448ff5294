"""The longrca-strata chapter (``notebooks/longrca_strata.md``): its sections, figures and prose facts.

In the chapter's order: the published Figure 6 (Tables 4, 7, 8 with Wilson
intervals, LongRCA §6.3), the Who&When logs (:class:`WhoAndWhenRun`), the
public LongRCA Bench release (:class:`ReleaseRun`), the synthetic long-horizon
benchmark (§5, Table 4; :class:`SyntheticRun`), the language-model locators on
every set (:class:`LLMRun`), and the Explore sweep. Every part the page shows
is a :class:`~rcakit.sections.Section`; the strata figures are
:func:`strata_figure` and :func:`published_strata_figure`.

The science is in :mod:`rcakit.trajectories`: reading and validating the logs
and records (:mod:`~rcakit.trajectories.loaders`,
:mod:`~rcakit.trajectories.release`), the generator
(:mod:`~rcakit.trajectories.synthetic`), scoring
(:mod:`~rcakit.trajectories.evaluation`) and the language models
(:mod:`~rcakit.trajectories.llm_evaluation`).

The Who&When sentences the prose glues (``who_sizes_md``, ``random_md``, ...)
are written here, not in the notebook: each one reads differently when the
folder lacks a subset, which a glued number cannot say.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown

from rcakit import RcakitError
from rcakit.plotting import TEXT_WIDTH
from rcakit.sections import Section
from rcakit.tables import column_label
from rcakit.trajectories.evaluation import (
    ScoredSet,
    beside_published,
    bin_spread,
    first_error_words,
    knob_sweep,
    official_denominators,
    planted_by_distance,
    score_subsets,
    score_synthetic,
    strata_long,
    strata_numbers,
    strata_table,
)
from rcakit.trajectories.llm_evaluation import compare_llm
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.release import differences, paper_source, release_checks, release_folder, release_shape
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA, nested_bins, published_strata, published_total, separated_pairs
from rcakit.trajectories.synthetic import GeneratorConfig, calibration_table, generate_benchmark, shape_statistics
from rcakit.trajectories.who_and_when_format import WHO_AND_WHEN_SUBSETS, read_who_and_when

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rcakit.llm import Accounting, Provider
    from rcakit.parallel import Runner

__all__ = [
    "LLMRun",
    "RELEASE_SET",
    "ReleaseRun",
    "SHORT",
    "SyntheticRun",
    "WhoAndWhenRun",
    "explore_section",
    "published_figure6_section",
    "published_strata_figure",
    "rcta_length_section",
    "separated_strata_section",
    "strata_figure",
    "table4_section",
]

SHORT = {"Hand-Crafted": "hand", "Algorithm-Generated": "algo"}  # the Who&When subsets' names in the glued facts
HAND, ALGO = WHO_AND_WHEN_SUBSETS
RELEASE_SET = "LongRCA Bench"  # the release's name in the tables and the LLM comparison


# -- the strata figure in the layout of LongRCA Figure 6


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


# -- Figure 6 from the published numbers (§6.3, Tables 4, 7, 8)


def table4_section(table: Mapping[str, Mapping[str, float]]) -> Section:
    """LongRCA Table 4 as printed (percent; MAE in steps), one row per method."""
    return Section(table=pd.DataFrame(table).T.rename_axis("method (N = 1,140)"), decimals=1)


def _published_bins(table7: Mapping[str, Any], table8: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 7 and 8 (percent per bin, bin counts) as whole numbers of trajectories with their 95%
    Wilson intervals: rows ``method, bin, acc, n, k, lo, hi`` by length and by root-to-end distance."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    distance = published_strata(table8["accuracy"], table8["counts"], STRATA["distance"][2])
    return length, distance


def published_strata_figure(table7: Mapping[str, Any], table8: Mapping[str, Any]) -> Figure:
    """LongRCA Figure 6 redrawn from Tables 7 and 8 (:func:`strata_figure`), with 95% Wilson intervals."""
    return strata_figure(*_published_bins(table7, table8))


def published_figure6_section(
    table4: Mapping[str, Any], table7: Mapping[str, Any], table8: Mapping[str, Any]
) -> Section:
    """Each method's bins summed back to a full-benchmark exact accuracy beside Table 4 (LongRCA §6.3,
    Appendix C); records the bins and the totals under ``published``."""
    length, distance = _published_bins(table7, table8)
    totals = pd.DataFrame(
        {
            "length bins": published_total(length),
            "distance bins": published_total(distance),
            "Table 4 exact": pd.DataFrame(table4).T["exact"] / 100,
        }
    )
    numbers = {
        "length_bins": nested_bins(length),
        "distance_bins": nested_bins(distance),
        "bins_total": {"length": totals["length bins"].to_dict(), "distance": totals["distance bins"].to_dict()},
    }
    return Section(table=totals, numbers={"published": numbers}, decimals=4)


def separated_strata_section(table7: Mapping[str, Any], table8: Mapping[str, Any]) -> Section:
    """Per method, the pairs of published bins whose 95% Wilson intervals are disjoint
    (:func:`~rcakit.trajectories.strata.separated_pairs`), with a ``stratum`` column (§6.3)."""
    length, distance = _published_bins(table7, table8)
    pairs = pd.concat(
        [separated_pairs(length).assign(stratum="length"), separated_pairs(distance).assign(stratum="distance")],
        ignore_index=True,
    )
    return Section(table=pairs)


def rcta_length_section(table7: Mapping[str, Any]) -> Section:
    """RCTA across the published length bins (§6.3, Table 7): the table shows each bin's hits, size,
    accuracy and 95% Wilson interval; the facts give the first three bins' accuracies (percent) and
    the ``>400`` bin's hits, size, interval width in points, and whether that interval holds every
    other bin's estimate."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    rcta = length.query("method == 'RCTA'").set_index("bin")
    last, acc = rcta.loc[">400"].to_dict(), rcta["acc"].to_dict()
    facts = {
        "rcta_length_le100": 100 * float(acc["<=100"]),
        "rcta_length_101_200": 100 * float(acc["101-200"]),
        "rcta_length_201_400": 100 * float(acc["201-400"]),
        "rcta_gt400_k": int(last["k"]),
        "rcta_gt400_n": int(last["n"]),
        "rcta_gt400_acc": float(last["acc"]),
        "rcta_gt400_lo": float(last["lo"]),
        "rcta_gt400_hi": float(last["hi"]),
        "rcta_gt400_width": float(100 * (last["hi"] - last["lo"])),
        "rcta_gt400_holds_others": bool(rcta.drop(index=">400")["acc"].between(last["lo"], last["hi"]).all()),
    }
    names = {"k": "hits", "n": "n", "acc": "accuracy", "lo": "95% low", "hi": "95% high"}
    table = rcta[list(names)].rename(columns=names).rename_axis("RCTA, length bin")
    return Section(table=table, facts=facts)


# -- the Who&When failure logs under the offline locators (Zhang et al. 2025 §4)


@dataclass(frozen=True)
class WhoAndWhenRun:
    """The Who&When section: what was read (``report``), the subsets (``sets``), and its parts.

    The logs of both subsets (Hand-Crafted, Algorithm-Generated) are read with
    :func:`~rcakit.trajectories.read_who_and_when`, scored under the strict and
    the official scorer, set beside the published GPT-4o step accuracies, and
    the Hand-Crafted logs stratified as in LongRCA §6.3 (:meth:`read`).

    ``scores``: per subset the offline locators' table, the recorded numbers
    (``who_and_when``, ``who_and_when_details``) and the facts the prose
    quotes; ``beside``: the published step accuracies beside ours;
    ``error_words`` and ``strata``: the Hand-Crafted first error words and
    strata. Without the logs every part is skipped with the same reason; a
    folder without one subset gives that subset's sentences as Markdown that
    says so, and the Hand-Crafted parts as skipped sections, so the page never
    quotes a number that was not computed.
    """

    report: str
    sets: Mapping[str, list[Trajectory]]
    scores: Section
    beside: Section
    error_words: Section
    strata: Section

    @classmethod
    def read(
        cls,
        value: str,
        locators: Sequence[Locator],
        printed: Mapping[str, Mapping[str, float]],
        param: str = "who_and_when_path",
    ) -> WhoAndWhenRun:
        """Read the logs ``value`` names (a data set name or a path), score ``locators`` on each subset and
        build the section's parts; ``printed`` is the published step-accuracy table (percent).

        A data set that is not fetched gives a :class:`WhoAndWhenRun` whose parts
        are skipped with the fetch hint; a path that does not exist is an
        ``RcakitError`` naming ``param`` (:func:`rcakit.data.locate`).
        """
        from rcakit import data

        path = data.locate(value, param)
        if path is None:
            hint = data.fetch_hint(value, param)
            return cls(hint, {}, *(Section.skip(hint) for _ in range(4)))
        loaded = read_who_and_when(path)
        sets = {s: ts for s, ts in loaded.by_source(WHO_AND_WHEN_SUBSETS).items() if ts}
        scored = score_subsets(locators, sets, official_denominators(sets, complete=_complete_copy(path)))
        sizes = ", ".join(f"{s}: {len(ts)}" for s, ts in sets.items()) or "no logs"
        report = f"{loaded.report(path, shown_as=value)}\nscored: {sizes}"
        hand = scored.get(HAND)
        no_hand = Section.skip(f"this folder holds no {HAND} logs")
        return cls(
            report,
            sets,
            _scores_section(scored, printed, rejected=len(loaded.errors)),
            Section(table=beside_published(printed, scored), decimals=2),
            Section(table=first_error_words(hand.trajectories, hand.cases["first_error_signal"]).to_frame("logs"))
            if hand
            else no_hand,
            Section(table=pd.concat({by: strata_table(hand.cases, by) for by in STRATA}, axis=1)) if hand else no_hand,
        )


def _scores_section(
    scored: Mapping[str, ScoredSet], printed: Mapping[str, Mapping[str, float]], rejected: int
) -> Section:
    """The offline locators on every subset read: the table, what the chapter records (every subset's
    numbers, the rejected logs, the Hand-Crafted strata) and the facts and sentences the prose quotes."""
    details: dict[str, Any] = {"rejected": rejected}
    if HAND in scored:
        details["hand_crafted_strata"] = strata_numbers(scored[HAND].cases)
    numbers = {"who_and_when": {s: sc.numbers for s, sc in scored.items()}, "who_and_when_details": details}
    facts = _who_and_when_facts(scored)
    empty = pd.DataFrame(index=pd.Index([], name="locator"))  # no log passed validation: the report says why
    table = pd.concat({s: sc.table for s, sc in scored.items()}) if scored else empty
    return Section(table=table, numbers=numbers, facts=facts | _sentences(scored, facts, printed))


def _who_and_when_facts(scored: Mapping[str, ScoredSet]) -> dict[str, Any]:
    """The numbers the chapter's prose quotes about the Who&When logs, for the subsets that were read:
    set sizes and official denominators, the analytic random baseline and the tracing lead (percent),
    how many Hand-Crafted roots lie within 10 steps of the end (percent) and the longest log, how
    many first error words sit at step 2 or earlier, the Hand-Crafted bins' fewest and most logs and
    narrowest interval (:func:`~rcakit.trajectories.evaluation.bin_spread`), how many
    Algorithm-Generated roots are at 0 and 1."""
    facts: dict[str, Any] = {}
    for subset, key in SHORT.items():
        if subset not in scored:
            continue
        numbers = scored[subset].numbers
        facts[f"who_n_{key}"] = len(scored[subset].trajectories)
        facts[f"who_official_{key}"] = numbers["random"]["n_official"]
        facts[f"random_analytic_{key}"] = 100 * numbers["random"]["expected_exact"]
        facts[f"gain_{key}"] = 100 * numbers["handoff_trace_gain"]
    if ALGO in scored:
        algo_roots = pd.Series([t.label.step for t in scored[ALGO].trajectories])
        facts |= {"algo_root0": int((algo_roots == 0).sum()), "algo_root1": int((algo_roots == 1).sum())}
    if HAND not in scored:
        return facts
    spread = bin_spread(strata_numbers(scored[HAND].cases))
    hand = scored[HAND].cases["terminal"]
    return facts | {
        "hand_bin_min": spread["bin_min"],
        "hand_bin_max": spread["bin_max"],
        "hand_min_width": 100 * spread["min_width"],
        "hand_near_end": 100 * float((hand["root_to_end"] <= 10).mean()),
        "hand_max_length": int(hand["length"].max()),
        "hand_early_error": int((scored[HAND].cases["first_error_signal"]["step"] <= 2).sum()),
    }


def _sentences(
    scored: Mapping[str, ScoredSet], facts: Mapping[str, Any], printed: Mapping[str, Mapping[str, float]]
) -> dict[str, Markdown]:
    """The prose's sentences that quote a subset, as Markdown: for a subset the folder lacks, a
    sentence saying so instead of a number that was not computed."""

    def absent(subset: str) -> str:
        return f"this folder holds no {subset} logs"

    def per_subset(write: Callable[[str, str], str], sep: str = "; ", missing: Callable[[str], str] = absent) -> str:
        return sep.join(write(s, SHORT[s]) if s in scored else missing(s) for s in WHO_AND_WHEN_SUBSETS)

    def one(subset: str, write: Callable[[], str]) -> str:
        return write() if subset in scored else _sentence(absent(subset))

    def random_baseline(s: str, k: str) -> str:
        analytic, shown = facts[f"random_analytic_{k}"], printed[s]["Random (printed)"]
        n = facts[f"who_n_{k}"]
        gap = f"{round(analytic - shown, 2) + 0.0:+.2f} points from the printed {shown:.2f}%"  # never -0.00
        return f"for {s} the mean of 1/T over its {n} logs is {analytic:.2f}%, {gap}"

    text = {
        "who_sizes_md": _sentence(
            per_subset(
                lambda s, k: (
                    f"{s} is scored on {facts[f'who_n_{k}']} logs and its official columns divide by "
                    f"{facts[f'who_official_{k}']}"
                )
            )
        ),
        "random_md": _sentence(per_subset(random_baseline)),
        "gain_md": per_subset(
            lambda s, k: f"{facts[f'gain_{k}']:.1f} points on {s}", sep=", ", missing=lambda s: f"not measured on {s}"
        ),
        "hand_terminal_md": one(HAND, lambda: _terminal_sentence(scored[HAND], facts, printed[HAND])),
        "algo_best_md": one(
            ALGO,
            lambda: (
                f"On the short {ALGO} logs the best offline locator scores "
                f"{100 * scored[ALGO].table['exact'].max():.1f}% strict, against GPT-4o's step-by-step "
                f"{printed[ALGO]['Step-by-step (GPT-4o)']:.1f}%."
            ),
        ),
        "hand_early_md": one(
            HAND,
            lambda: (
                f"In {facts['hand_early_error']} of the {facts['who_n_hand']} {HAND} logs the first error word "
                "sits at step 2 or earlier, and there `first_error_signal` and `handoff_trace` look first."
            ),
        ),
        "hand_longest_md": one(
            HAND,
            lambda: (
                f"The longest {HAND} log has {facts['hand_max_length']} steps, so every length bin above that is empty."
            ),
        ),
        "hand_bins_md": one(
            HAND,
            lambda: (
                f"With {facts['hand_bin_min']} to {facts['hand_bin_max']} logs per non-empty bin, every "
                f"Wilson interval spans {facts['hand_min_width']:.0f} points or more (the intervals are in the "
                "results file)."
            ),
        ),
        "algo_roots_md": one(
            ALGO,
            lambda: (
                f"On the short {ALGO} logs a fixed early answer scores by position alone: "
                f"{facts['algo_root0']} of the {facts['who_n_algo']} roots are at step 0 and "
                f"{facts['algo_root1']} at step 1."
            ),
        ),
    }
    return {name: Markdown(value) for name, value in text.items()}


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop."""
    return text[:1].upper() + text[1:] + "."


def _terminal_sentence(hand: ScoredSet, facts: Mapping[str, Any], printed: Mapping[str, float]) -> str:
    """How blaming the last step fares on Hand-Crafted against the best published GPT-4o method."""
    best = max(v for k, v in printed.items() if "GPT-4o" in k)
    strict, official = (100 * hand.numbers["terminal"][k] for k in ("exact", "exact_official"))
    if min(strict, official) > best:
        verdict = "beats every published GPT-4o method under either scorer"
    elif max(strict, official) <= best:
        verdict = "beats no published GPT-4o method under either scorer"
    else:
        verdict = "beats the best published GPT-4o method under one scorer only"
    return (
        f"On {HAND}, blaming the last step (`terminal`, {strict:.1f}% strict, {official:.1f}% official) {verdict} "
        f"(best {best:.2f}%), and {facts['hand_near_end']:.0f}% of the roots lie within 10 steps of the end."
    )


def _complete_copy(path: Path) -> bool:
    """Whether ``path`` is the registry's fetched copy of the logs (``rcakit data fetch who-and-when``,
    every file checked against its pinned sha256): then the official denominators are the published sizes."""
    from rcakit import data

    return path == data.locate("who-and-when", "who_and_when_path")


# -- the public LongRCA Bench release under the offline locators (§3, §6)


@dataclass(frozen=True)
class ReleaseRun:
    """LongRCA Bench records under the offline locators (§3, §6).

    ``report``: what was read (or why the section is skipped); ``checks``:
    :func:`~rcakit.trajectories.release_checks` as a section that records the
    ``longrca`` numbers; ``scores``: the labelled records' table; ``scored``:
    their per-case scores, strata included (``None`` when skipped).
    """

    report: str
    checks: Section
    scores: Section
    scored: ScoredSet | None = None

    @property
    def sets(self) -> dict[str, list[Trajectory]]:
        """``{"LongRCA Bench": the labelled records}``, or nothing when the section is skipped."""
        return {} if self.scored is None else {RELEASE_SET: self.scored.trajectories}

    def strata(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The length and root-to-end rows of every locator (the release's own Figure 6)."""
        if self.scored is None:
            raise RcakitError(f"LongRCA Bench: no records were scored ({self.report})")
        return tuple(strata_long(self.scored.cases, by) for by in STRATA)  # type: ignore[return-value]

    @classmethod
    def read(
        cls, value: str, locators: Sequence[Locator], paper: Mapping[str, Any], param: str = "longrca"
    ) -> ReleaseRun:
        """Read the records ``value`` names (``none``, a data set name or a path), check them against the
        paper's description ``paper`` and score the offline locators on the labelled ones.

        Each record's source becomes the paper's name for it
        (:func:`~rcakit.trajectories.paper_source`), so the MAE is weighted by
        the five sources of Table 6. A rejected record is one line of the
        report; no labelled record at all is an ``RcakitError`` naming ``param``.
        """
        from rcakit import data
        from rcakit.trajectories.longrca_format import read_longrca

        if value == "none":
            return cls._skipped(
                f"LongRCA Bench: not run ({param} = none; 'rcakit data fetch longrca-bench', "
                f"then -p {param} longrca-bench, or -p {param} PATH to a record file or folder)."
            )
        path = data.locate(value, param)
        if path is None:
            return cls._skipped(data.fetch_hint(value, param))
        loaded = read_longrca(release_folder(path))
        labelled = [dataclasses.replace(t, source=paper_source(t)) for t in loaded.trajectories if t.label]
        if not labelled:
            raise RcakitError(f"parameter {param!r}: {value} holds no labelled LongRCA record")
        checks = release_checks(release_shape(loaded.trajectories), paper)
        differ = differences(checks)
        verdict = (
            f"differs from the paper's description on {len(differ)} of {len(checks)} checks"
            if differ
            else f"matches the paper's description on all {len(checks)} checks"
        )
        unlabelled = len(loaded.trajectories) - len(labelled)
        lines = [loaded.report(path, shown_as=value), f"{value}: {verdict}"]
        lines += [f"{value}: {unlabelled} unlabelled records are checked but not scored"] if unlabelled else []
        scored = score_synthetic(locators, labelled)
        numbers = {
            **scored.numbers,
            "n": len(labelled),
            "rejected": len(loaded.errors),
            "differs": differ,
            "checks": checks.to_dict(orient="index"),
        }
        return cls(
            "\n".join(lines), Section(table=checks, numbers={"longrca": numbers}), Section(table=scored.table), scored
        )

    @classmethod
    def _skipped(cls, reason: str) -> ReleaseRun:
        return cls(reason, Section.skip(reason), Section.skip(reason))


# -- the synthetic long horizon (§5, Table 4)


@dataclass(frozen=True)
class SyntheticRun:
    """The seeded synthetic benchmark under the offline locators, and the sections the chapter shows.

    ``calibration``: the generator's shape beside LongRCA's; ``scores``: the
    overall table, recorded under ``synthetic`` with the calibration, and the
    tracing locator's lead and role gap (points); ``strata``: exact accuracy
    by length and by root-to-end bin; ``planted``: what was planted, per
    root-to-end bin, beside the tracing locator's hits.
    """

    bench: list[Trajectory]
    scored: ScoredSet
    calibration: Section
    scores: Section
    strata: Section
    planted: Section

    def strata_rows(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The length and root-to-end rows of every locator (the synthetic Figure 6)."""
        return strata_long(self.scored.cases, "length"), strata_long(self.scored.cases, "distance")

    @staticmethod
    def generator(params: Mapping[str, Any]) -> GeneratorConfig:
        """The generator the chapter's parameters describe: ``n_trajectories`` and every knob of
        :class:`~rcakit.trajectories.synthetic.GeneratorConfig` the parameters name."""
        knobs = {f.name: params[f.name] for f in dataclasses.fields(GeneratorConfig) if f.name in params}
        return GeneratorConfig(**{**knobs, "n": params["n_trajectories"]})

    @classmethod
    def generate(cls, locators: Sequence[Locator], seed: int, config: GeneratorConfig) -> SyntheticRun:
        """Generate the benchmark (``seed``, ``config``) and score ``locators`` on it (LongRCA §5, §6.3)."""
        bench = generate_benchmark(seed, config)
        scored = score_synthetic(locators, bench)
        facts = {
            "syn_gain": 100 * scored.numbers["handoff_trace_gain"],
            "syn_role_gap": 100 * scored.numbers["handoff_trace_role_gap"],
        }
        numbers = {"synthetic": {**scored.numbers, "calibration": shape_statistics(bench)}}
        strata = pd.concat({by: strata_table(scored.cases, by) for by in ("length", "distance")}, axis=1)
        return cls(
            bench,
            scored,
            Section(table=calibration_table(bench), decimals=1),
            Section(table=scored.table, numbers=numbers, facts=facts),
            Section(table=strata),
            Section(table=planted_by_distance(bench, scored.cases["handoff_trace"]["exact"])),
        )


# -- the language-model locators on every set


@dataclass(frozen=True)
class LLMRun:
    """The LLM locators on a seeded subset of each set (:func:`~rcakit.trajectories.llm_evaluation.compare_llm`).

    ``costs``: per set, the offline locators then each LLM locator's accuracy
    and cost, recorded under ``llm``; ``spread``: per set and method, the
    distribution of the predicted steps. Both skipped without a model.
    """

    costs: Section
    spread: Section

    @classmethod
    def compare(
        cls,
        provider: Provider | None,
        sets: Mapping[str, Sequence[Trajectory]],
        offline: Sequence[Locator],
        accounting: Accounting,
        *,
        max_cases: int,
        seed: int = 0,
        prompt_tokens: int | None = None,
        max_questions: int | None = None,
        runner: Runner | None = None,
    ) -> LLMRun:
        """:func:`~rcakit.trajectories.llm_evaluation.compare_llm` on every set with ``provider``;
        both sections skipped when there is no provider (``provider = none``)."""
        if not provider:
            reason = "no language model was given (provider = none)"
            return cls(Section.skip(reason), Section.skip(reason))
        compared = compare_llm(
            provider,
            sets,
            offline,
            accounting,
            max_cases=max_cases,
            seed=seed,
            prompt_tokens=prompt_tokens,
            max_questions=max_questions,
            runner=runner,
        )
        return cls(Section(table=compared.table, numbers={"llm": compared.numbers}), Section(table=compared.spread))


# -- Explore


def explore_section(locators: Sequence[Locator], base: GeneratorConfig, n: int, seed: int) -> Section:
    """:func:`~rcakit.trajectories.evaluation.knob_sweep`: exact accuracy of every locator with one
    knob changed at a time, recorded under ``explore`` with ``n``."""
    sweep = knob_sweep(locators, base, n, seed)
    return Section(table=sweep, numbers={"explore": {"exact": sweep.to_dict(orient="index"), "n": n}})
