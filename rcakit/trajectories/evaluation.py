"""Run locators over a trajectory set and tabulate the LongRCA metrics and strata."""

from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from rcakit import RcakitError

from rcakit.trajectories.locators import Locator
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA, bins_dict, stratify


def evaluate(locators: Iterable[Locator], trajectories: Sequence[Trajectory]) -> dict[str, pd.DataFrame]:
    """``{locator name: per-case scores}`` (see :func:`~rcakit.trajectories.metrics.score_cases`)."""
    return {loc.name: score_cases(trajectories, loc.locate_all(trajectories)) for loc in locators}


def overall_table(cases: dict[str, pd.DataFrame], official: bool = False, official_n: int | None = None) -> pd.DataFrame:
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


def tracing_margins(table: pd.DataFrame, tracer: str = "handoff_trace") -> dict:
    """How the tracing locator stands: its exact accuracy minus the best other locator's, and its role minus exact accuracy."""
    others = table.drop(index=tracer)["exact"].max()
    row = table.loc[tracer]
    return {"handoff_trace_gain": float(row["exact"] - others), "handoff_trace_role_gap": float(row["role_acc"] - row["exact"])}


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
) -> dict:
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
