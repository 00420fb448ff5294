"""Run locators over a trajectory set and tabulate the LongRCA metrics and strata."""

from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from rcakit.trajectories.locators import Locator
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA, bins_dict, stratify


def evaluate(locators: Iterable[Locator], trajectories: Sequence[Trajectory]) -> dict[str, pd.DataFrame]:
    """``{locator name: per-case scores}`` (see :func:`~rcakit.trajectories.metrics.score_cases`)."""
    return {loc.name: score_cases(trajectories, loc.locate_all(trajectories)) for loc in locators}


def overall_table(cases: dict[str, pd.DataFrame], official: bool = False) -> pd.DataFrame:
    """One row per locator: role accuracy, exact, ±5, source-weighted MAE, N (and the official exact)."""
    rows = {}
    for name, frame in cases.items():
        rows[name] = summarise(frame)
        if official:
            rows[name]["exact_official"] = float(frame["exact_official"].mean())
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("locator")


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


def results_block(cases: dict[str, pd.DataFrame], strata: bool = True, official: bool = False) -> dict:
    """``{locator: {overall, length_bins, distance_bins}}`` or, without strata, ``{locator: metrics}``."""
    table = overall_table(cases, official)
    out = {}
    for name, frame in cases.items():
        metrics = table.loc[name].to_dict()
        metrics["n"] = int(metrics["n"])
        if not strata:
            out[name] = metrics
            continue
        out[name] = {
            "overall": metrics,
            "length_bins": bins_dict(stratify(frame, "length")),
            "distance_bins": bins_dict(stratify(frame, "distance")),
        }
    return out
