"""The chapter's sweeps: hidden edges, stochastic replay and the cost formula.

Each returns a tidy DataFrame (one row per case and setting) so the chapter
only aggregates and plots.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from math import comb
from typing import Sequence

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.repair.graph import Case, hide_edges
from rcakit.repair.metrics import evaluate
from rcakit.repair.search import GCJR, exhaustive, gcjr


def _require(values: Sequence, name: str) -> None:
    if len(values) == 0:
        raise RcakitError(f"{name}: the sweep needs at least one value")


def _gcjr_hidden(case: Case, oracle, fraction: float, seed: int, draw: int, config=GCJR):
    view = hide_edges(case.graph, fraction, np.random.default_rng([seed, case.seed, draw]))
    return gcjr(case, oracle, config, graph=view)


def hidden_edge_sweep(cases: list[Case], fractions: Sequence[float], draws: int, seed: int,
                      q: int = 2, r: int = 3, theta: float = 0.66) -> pd.DataFrame:
    """GCJR with a fraction of edges hidden from its view; the oracle keeps the true graph.

    Draw d hides a nested prefix of one random edge permutation per case, so
    the fractions are compared on the same hidden edges.
    """
    _require(fractions, "hidden_fractions")
    frames = []
    config = replace(GCJR, q=q)
    for draw in range(draws):
        for fraction in fractions:
            method = functools.partial(_gcjr_hidden, fraction=fraction, seed=seed, draw=draw, config=config)
            frame = evaluate(cases, method, q=q, r=r, theta=theta, schedules=(0,))
            frames.append(frame.assign(fraction=fraction, draw=draw))
    return pd.concat(frames, ignore_index=True)


def noise_sweep(cases: list[Case], noise_levels: Sequence[float], r_values: Sequence[int],
                theta_values: Sequence[float], q: int = 2) -> pd.DataFrame:
    """GCJR and exhaustive search under per-seed replay noise, for each (noise, r, θ).

    Scored against the noiseless family; ``agree`` marks cases where GCJR and
    exhaustive search return the same family (they see the same replay
    outcomes for the same set, so they can only disagree through sets one of
    them does not replay).
    """
    for values, name in ((noise_levels, "noise_levels"), (r_values, "r_values"), (theta_values, "theta_values")):
        _require(values, name)
    methods = {"GCJR": functools.partial(gcjr, config=replace(GCJR, q=q)),
               "exhaustive": functools.partial(exhaustive, q=q)}
    frames = []
    for noise in noise_levels:
        for r in r_values:
            for theta in theta_values:
                runs = {name: evaluate(cases, m, q=q, r=r, theta=theta, noise=noise, schedules=(0,))
                        for name, m in methods.items()}
                agree = (runs["GCJR"]["family"] == runs["exhaustive"]["family"]).to_numpy()
                for name, frame in runs.items():
                    frames.append(frame.assign(method=name, noise=noise, r=r, theta=theta, agree=agree))
    return pd.concat(frames, ignore_index=True)


def cost_check(gcjr_frame: pd.DataFrame, exhaustive_frame: pd.DataFrame, r: int, q: int = 2) -> pd.DataFrame:
    """Counted replays beside r(1+m+p) for GCJR and r(1 + Σ_{k<=q} C(n,k)) for exhaustive search.

    At q = 2 the second is the paper's r(1+n+C(n,2)); p counts every
    multi-event set GCJR replayed.
    """
    n = exhaustive_frame["n"]
    return pd.DataFrame({
        "case_id": gcjr_frame["case_id"],
        "kind": gcjr_frame["kind"],
        "n": n,
        "m": gcjr_frame["m"],
        "p": gcjr_frame["p"],
        "gcjr_counted": gcjr_frame["replays"],
        "gcjr_formula": r * (1 + gcjr_frame["m"] + gcjr_frame["p"]),
        "exhaustive_counted": exhaustive_frame["replays"],
        "exhaustive_formula": r * (1 + n.map(lambda k: sum(comb(k, j) for j in range(1, q + 1)))),
    })
