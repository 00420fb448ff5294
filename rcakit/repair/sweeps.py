"""The runs of GCJR §Experiments: each method evaluated on every case, one tidy frame per method.

One row per case and setting (:func:`rcakit.repair.evaluate_method`):

- :func:`gcjr_and_exhaustive`: GCJR and exhaustive search on the benchmark,
  under all three schedules (GCJR §Results);
- :func:`ablation_runs` and :func:`baseline_runs`: the ablations
  (``search.ABLATIONS`` plus hidden edges) and the five baselines;
- :func:`hidden_edge_sweep`: GCJR with a fraction of the edges hidden from
  its view (GCJR §Limitations);
- :func:`noise_sweep`: GCJR and exhaustive search under per-seed replay
  noise, for each (noise, r, θ) (beyond the paper);
- :func:`scoped_cases`: the cases an evaluation found in scope.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.repair.baselines import baseline_methods
from rcakit.repair.families import RepairResult
from rcakit.repair.graph import Case, hide_edges
from rcakit.repair.metrics import evaluate_method, theta_label
from rcakit.repair.oracle import THETA, Oracle, ThetaLike
from rcakit.repair.search import GCJR, SearchConfig, ablation_configs, exhaustive, gcjr

PAPER_HIDDEN_FRACTION = 0.1  # the hidden-edge ablation the paper prints (GCJR §Key results)


def _require(values: Sequence[Any], name: str) -> None:
    if len(values) == 0:
        raise RcakitError(f"{name}: the sweep needs at least one value")


def gcjr_and_exhaustive(
    cases: list[Case], *, q: int = 2, r: int = 3, theta: ThetaLike = THETA
) -> dict[str, pd.DataFrame]:
    """GCJR and exhaustive search on every case under all three schedules, noiseless (GCJR §Results)."""
    methods = {
        "GCJR": functools.partial(gcjr, config=replace(GCJR, q=q)),
        "exhaustive": functools.partial(exhaustive, q=q),
    }
    return {name: evaluate_method(cases, m, q=q, r=r, theta=theta) for name, m in methods.items()}


def scoped_cases(cases: list[Case], frame: pd.DataFrame) -> list[Case]:
    """The cases whose row in ``frame`` (an evaluation of ``cases``) is in scope."""
    inside = set(frame.loc[frame["in_scope"], "case_id"])
    return [case for case in cases if case.case_id in inside]


def _gcjr_hidden(
    case: Case, oracle: Oracle, *, fraction: float, seed: int, draw: int, config: SearchConfig = GCJR
) -> RepairResult:
    view = hide_edges(case.graph, fraction, np.random.default_rng([seed, case.seed, draw]))
    return gcjr(case, oracle, config, graph=view)


def hidden_edge_sweep(
    cases: list[Case],
    fractions: Sequence[float],
    *,
    draws: int,
    seed: int,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
) -> pd.DataFrame:
    """GCJR with a fraction of edges hidden from its view; the oracle keeps the true graph (GCJR §Limitations).

    The paper's 10% is always run, beside ``fractions``, in increasing order.
    Draw d hides a nested prefix of one random edge permutation per case, so
    the fractions are compared on the same hidden edges.
    """
    _require(fractions, "hidden_fractions")
    frames = []
    config = replace(GCJR, q=q)
    for draw in range(draws):
        for fraction in sorted({*fractions, PAPER_HIDDEN_FRACTION}):
            method = functools.partial(_gcjr_hidden, fraction=fraction, seed=seed, draw=draw, config=config)
            frame = evaluate_method(cases, method, q=q, r=r, theta=theta, schedules=(0,))
            frames.append(frame.assign(fraction=fraction, draw=draw))
    return pd.concat(frames, ignore_index=True)


def noise_sweep(
    cases: list[Case],
    *,
    noise_levels: Sequence[float],
    r_values: Sequence[int],
    theta_values: Sequence[ThetaLike],
    q: int = 2,
) -> pd.DataFrame:
    """GCJR and exhaustive search under per-seed replay noise, for each (noise, r, θ).

    Scored against the noiseless family. GCJR runs under all three schedules,
    so its ``sc`` measures schedule consistency where it can fail (the
    schedule decides which seeds a set sees); exhaustive search runs under the
    first only. ``agree`` marks cases where both return the same family on the
    first schedule (they see the same outcome for the same set, so they can
    only disagree through sets one of them does not replay).
    """
    for values, name in ((noise_levels, "noise_levels"), (r_values, "r_values"), (theta_values, "theta_values")):
        _require(values, name)
    methods = {
        "GCJR": (functools.partial(gcjr, config=replace(GCJR, q=q)), (0, 1, 2)),
        "exhaustive": (functools.partial(exhaustive, q=q), (0,)),
    }
    frames = []
    for noise, r, theta in itertools.product(noise_levels, r_values, theta_values):
        runs = {
            name: evaluate_method(cases, m, q=q, r=r, theta=theta, noise=noise, schedules=schedules)
            for name, (m, schedules) in methods.items()
        }
        agree = (runs["GCJR"]["family"] == runs["exhaustive"]["family"]).to_numpy()
        for name, frame in runs.items():
            frame = frame.assign(method=name, noise=noise, r=r, theta=theta_label(theta), agree=agree)
            frames.append(frame if name == "GCJR" else frame.assign(sc=np.nan))
    return pd.concat(frames, ignore_index=True)


def ablation_runs(
    cases: list[Case],
    hidden_sweep: pd.DataFrame | None,
    *,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
    reference: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """Each ablation of ``search.ABLATIONS`` on every case (first schedule), plus 10% hidden edges.

    ``reference`` is an existing GCJR evaluation reused as the ``gcjr`` row;
    ``hidden_edges_10`` is the 0.1 slice of ``hidden_sweep`` (every draw),
    left out when ``hidden_sweep`` is None.
    """
    frames = {
        name: evaluate_method(cases, functools.partial(gcjr, config=cfg), q=q, r=r, theta=theta, schedules=(0,))
        for name, cfg in ablation_configs(q).items()
        if not (name == "gcjr" and reference is not None)
    }
    if reference is not None:
        frames = {"gcjr": reference, **frames}
    if hidden_sweep is not None:
        frames["hidden_edges_10"] = hidden_sweep[hidden_sweep["fraction"] == PAPER_HIDDEN_FRACTION]
    return frames


def baseline_runs(
    cases: list[Case],
    gcjr_frame: pd.DataFrame,
    *,
    seed: int,
    window: int = 4,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
) -> dict[str, pd.DataFrame]:
    """The five baselines on every case under all three schedules; random pairs gets GCJR's replays per case."""
    budgets = dict(zip(gcjr_frame["case_id"], gcjr_frame["replays"], strict=True))
    methods = baseline_methods(budgets, seed, w=window, q=q)
    return {name: evaluate_method(cases, method, q=q, r=r, theta=theta) for name, method in methods.items()}
