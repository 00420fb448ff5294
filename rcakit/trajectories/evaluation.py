"""Run locators over trajectory sets and tabulate the LongRCA metrics and strata.

The reusable evaluation: the offline locators on each set (:func:`evaluate`,
:func:`score_real_logs`, :func:`score_synthetic`) with the tables and strata
of LongRCA §6, the published step accuracies beside the workbench's, and the
Explore sweep over the generator's knobs (:func:`knob_sweep`). The language
models' locators are evaluated in :mod:`rcakit.trajectories.llm_evaluation`,
the longrca-strata chapter's sections come from
``rcakit.chapters.longrca_strata``.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.trajectories.locators import OFFLINE_LOCATORS, Locator, error_word, expected_random_accuracy
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import (
    STRATA,
    bin_of,
    bins_dict,
    stratify,
)
from rcakit.trajectories.synthetic import GeneratorConfig, generate_benchmark, planted_features
from rcakit.trajectories.who_and_when_format import WHO_AND_WHEN_SIZES


def evaluate(locators: Iterable[Locator], trajectories: Sequence[Trajectory]) -> dict[str, pd.DataFrame]:
    """``{locator name: per-case scores}`` (see :func:`~rcakit.trajectories.metrics.score_cases`)."""
    return {loc.name: score_cases(trajectories, loc.locate_all(trajectories)) for loc in locators}


def overall_table(
    cases: dict[str, pd.DataFrame], official: bool = False, official_n: int | None = None
) -> pd.DataFrame:
    """One row per locator: role accuracy, exact, ±5, source-weighted MAE, N (and the official scores).

    With ``official``, Who&When's substring scorer for agent and step over
    ``official_n`` logs (the official denominator: a log that is not scored
    counts as a miss), by default the N scored here.
    """
    rows = {}
    for name, frame in cases.items():
        rows[name] = summarise(frame)
        if official:
            n = len(frame) if official_n is None else official_n
            if n < len(frame):
                raise RcakitError(f"official_n: {n} is fewer than the {len(frame)} logs scored")
            rows[name].update(
                agent_official=float(frame["agent_official"].sum() / n),
                exact_official=float(frame["exact_official"].sum() / n),
                n_official=n,
            )
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("locator")


def tracing_margins(table: pd.DataFrame, tracer: str = "handoff_trace") -> dict[str, Any]:
    """How the tracing locator stands (LongRCA Table 4's two comparisons): its exact accuracy
    minus the best other locator's, and its role accuracy minus its exact accuracy."""
    others = table.drop(index=tracer)["exact"].max()
    row = table.loc[tracer].to_dict()
    return {
        "handoff_trace_gain": float(row["exact"] - others),
        "handoff_trace_role_gap": float(row["role_acc"] - row["exact"]),
    }


def strata_long(cases: dict[str, pd.DataFrame], by: str, hit: str = "exact") -> pd.DataFrame:
    """Rows ``method, bin, acc, n, lo, hi`` for every locator (the figure's input)."""
    frames = [stratify(frame, by, hit).reset_index().assign(method=name) for name, frame in cases.items()]
    long = pd.concat(frames, ignore_index=True)[["method", "bin", "acc", "n", "lo", "hi"]]
    long["bin"] = pd.Categorical(long["bin"], categories=STRATA[by][2], ordered=True)
    return long


def strata_table(cases: dict[str, pd.DataFrame], by: str, hit: str = "exact") -> pd.DataFrame:
    """Locators by bins (labelled with their size) of the ``hit`` rate."""
    long = strata_long(cases, by, hit)
    sizes = long.drop_duplicates("bin").set_index("bin")["n"]
    table = long.pivot(index="method", columns="bin", values="acc").loc[list(cases)]
    table.columns = [f"{b} (n={sizes[b]})" for b in table.columns]
    return table.rename_axis(index="locator", columns=f"{by} bin")


def results_block(
    cases: dict[str, pd.DataFrame], strata: bool = True, official: bool = False, official_n: int | None = None
) -> dict[str, Any]:
    """``{locator: {overall, length_bins, distance_bins}}`` or, without strata, ``{locator: metrics}``."""
    table = overall_table(cases, official, official_n)
    out = {}
    for name, frame in cases.items():
        metrics = table.loc[name].to_dict()
        metrics["n"] = int(metrics["n"])
        if "n_official" in metrics:
            metrics["n_official"] = int(metrics["n_official"])
        if not strata:
            out[name] = metrics
            continue
        out[name] = {
            "overall": metrics,
            "length_bins": bins_dict(stratify(frame, "length")),
            "distance_bins": bins_dict(stratify(frame, "distance")),
        }
    return out


def strata_numbers(cases: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """``{locator: {length_bins, distance_bins}}`` of exact accuracy with Wilson intervals (§6.3)."""
    return {name: {f"{by}_bins": bins_dict(stratify(frame, by)) for by in STRATA} for name, frame in cases.items()}


def bin_spread(numbers: dict[str, Any]) -> dict[str, Any]:
    """Over the non-empty bins of :func:`strata_numbers`: fewest and most cases, narrowest interval."""
    bins = [b for per in numbers.values() for by in per.values() for b in by.values() if b["n"]]
    return {
        "bin_min": int(min(b["n"] for b in bins)),
        "bin_max": int(max(b["n"] for b in bins)),
        "min_width": float(min(b["hi"] - b["lo"] for b in bins)),
    }


# -- the offline locators on the real logs and on the synthetic benchmark


@dataclass(frozen=True)
class ScoredSet:
    """One trajectory set under the offline locators: per-case scores, the table shown, the numbers recorded."""

    trajectories: list[Any]
    cases: dict[str, Any]
    table: pd.DataFrame
    numbers: dict[str, Any]


def official_denominators(subsets: Mapping[str, Sequence[Trajectory]], complete: bool) -> dict[str, int]:
    """Who&When's official denominator per subset: the published size for the complete logs
    (a log that is not scored counts as a miss), else the number of logs read."""
    return {s: WHO_AND_WHEN_SIZES[s] if complete else len(ts) for s, ts in subsets.items()}


def score_real_logs(locators: Sequence[Locator], trajectories: Sequence[Trajectory], official_n: int) -> ScoredSet:
    """Who&When logs under the strict and the official scorer (Zhang et al. 2025 §4), with the
    random locator's analytic expectations (exact, ±5, role) and the tracing margins."""
    cases = evaluate(locators, trajectories)
    table = overall_table(cases, official=True, official_n=official_n)
    numbers = results_block(cases, strata=False, official=True, official_n=official_n)
    numbers.update(tracing_margins(table))
    if "random" in numbers:
        within5 = expected_random_accuracy(trajectories, k=5)
        random = numbers["random"]
        random.update(
            expected_exact=expected_random_accuracy(trajectories)["step"],
            expected_within5=within5["step"],
            expected_role=within5["role"],
        )
        # the tracer's role - step gap beyond a uniform pick's, which the label space alone gives
        uniform_gap = random["expected_role"] - random["expected_exact"]
        numbers["handoff_trace_role_gap_over_random"] = numbers["handoff_trace_role_gap"] - uniform_gap
    return ScoredSet(list(trajectories), cases, table, numbers)


def score_subsets(
    locators: Sequence[Locator], subsets: Mapping[str, Sequence[Trajectory]], official_n: Mapping[str, int]
) -> dict[str, ScoredSet]:
    """:func:`score_real_logs` for every Who&When subset."""
    return {s: score_real_logs(locators, ts, official_n[s]) for s, ts in subsets.items()}


def score_synthetic(locators: Sequence[Locator], bench: Sequence[Trajectory]) -> ScoredSet:
    """The synthetic benchmark: overall metrics and both strata per locator, tracing margins,
    the random locator's analytic expectation."""
    cases = evaluate(locators, bench)
    table = overall_table(cases)
    numbers = results_block(cases)
    numbers.update(tracing_margins(table))
    numbers["expected_random"] = expected_random_accuracy(bench)
    return ScoredSet(list(bench), cases, table, numbers)


def beside_published(published: Mapping[str, Mapping[str, Any]], scored: Mapping[str, ScoredSet]) -> pd.DataFrame:
    """Who&When step accuracy (percent), the published rows, then ours: each offline locator under
    the strict and the official scorer, the analytic random baseline and both denominators (the
    denominators stay integers: the columns hold objects, so a count never prints with decimals)."""
    table = pd.DataFrame(published)[[s for s in published if s in scored]]  # the subsets that were read
    subsets = list(table.columns)
    rows = {}
    for name in OFFLINE_LOCATORS:
        rows[f"{name} (strict)"] = [100 * scored[s].numbers[name]["exact"] for s in subsets]
        rows[f"{name} (official)"] = [100 * scored[s].numbers[name]["exact_official"] for s in subsets]
    rows["random (analytic, 1/T)"] = [100 * scored[s].numbers["random"]["expected_exact"] for s in subsets]
    counts = {
        "n (strict)": [len(scored[s].trajectories) for s in subsets],
        "n (official)": [int(scored[s].numbers["random"]["n_official"]) for s in subsets],
    }
    ours = pd.DataFrame.from_dict(rows, orient="index", columns=subsets)
    counted = pd.DataFrame.from_dict(counts, orient="index", columns=subsets)
    return pd.concat([table.astype(object), ours.astype(object), counted.astype(object)])


def first_error_words(trajectories: Sequence[Trajectory], cases: pd.DataFrame) -> pd.Series:
    """How often each first error word is the one a locator's predicted step carries."""
    steps = cases["step"].astype(int)
    words = [error_word(t.steps[s]) or "(no error word: last step)" for t, s in zip(trajectories, steps, strict=True)]
    return pd.Series(words).value_counts()


def planted_by_distance(bench: Sequence[Trajectory], hits: pd.Series) -> pd.DataFrame:
    """Per root-to-end bin: the share of runs with a quoted symptom, with a trap before the root,
    and the locator's ``hits`` (one boolean per trajectory of ``bench``)."""
    planted = planted_features(list(bench)).assign(
        hit=np.asarray(hits), distance_bin=lambda f: bin_of(f["root_to_end"], "distance")
    )
    return planted.groupby("distance_bin", observed=False)[["quoted_symptom", "trap_before_root", "hit"]].mean()


EXPLORE_KNOBS = (
    ("signal_clarity", 0.2),
    ("signal_clarity", 1.0),
    ("decoy_rate", 0.0),
    ("decoy_rate", 0.8),
    ("handoff_share", 0.0),
    ("handoff_share", 1.0),
    ("length_scale", 0.3),
)


def knob_sweep(
    locators: Sequence[Locator],
    base: GeneratorConfig,
    n: int,
    seed: int,
    *,
    knobs: Iterable[tuple[str, float]] = EXPLORE_KNOBS,
) -> pd.DataFrame:
    """Exact accuracy of every locator on ``n`` fresh trajectories per setting: ``base`` as it is
    ("chapter values"), then each ``(knob, value)`` changed alone. Each setting draws its
    benchmark with ``seed``, so settings differ only by the knob."""
    settings = {"chapter values": {}} | {f"{knob} = {value:g}": {knob: value} for knob, value in knobs}
    names = {f.name for f in dataclasses.fields(GeneratorConfig)} - {"n"}
    for change in settings.values():
        unknown = set(change) - names
        if unknown:
            known = ", ".join(sorted(names))
            raise RcakitError(f"knob_sweep: knobs: {sorted(unknown)[0]!r} is not a generator knob ({known})")
    rows = {}
    for label, change in settings.items():
        config = dataclasses.replace(base, n=n, **change)
        rows[label] = overall_table(evaluate(locators, generate_benchmark(seed, config)))["exact"]
    return pd.DataFrame(rows).T.rename_axis("setting")
