"""The chapter's sweeps: hidden edges, stochastic replay and the cost formula.

Each returns a tidy DataFrame (one row per case and setting) so the chapter
only aggregates and plots.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from math import comb
from typing import Sequence

import networkx as nx
import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.repair.graph import Case, Structure, failure_slice, hide_edges
from rcakit.repair.metrics import evaluate
from rcakit.repair.oracle import THETA, ReplayOracle, threshold
from rcakit.repair.search import GCJR, exhaustive, gcjr


def _require(values: Sequence, name: str) -> None:
    if len(values) == 0:
        raise RcakitError(f"{name}: the sweep needs at least one value")


def theta_label(theta) -> str:
    """θ as a short exact label for tables and results, e.g. ``"2/3"``."""
    return str(threshold(theta))


def _gcjr_hidden(case: Case, oracle, fraction: float, seed: int, draw: int, config=GCJR):
    view = hide_edges(case.graph, fraction, np.random.default_rng([seed, case.seed, draw]))
    return gcjr(case, oracle, config, graph=view)


def hidden_edge_sweep(cases: list[Case], fractions: Sequence[float], draws: int, seed: int,
                      q: int = 2, r: int = 3, theta=THETA) -> pd.DataFrame:
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
                theta_values: Sequence, q: int = 2) -> pd.DataFrame:
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
    methods = {"GCJR": (functools.partial(gcjr, config=replace(GCJR, q=q)), (0, 1, 2)),
               "exhaustive": (functools.partial(exhaustive, q=q), (0,))}
    frames = []
    for noise, r, theta in itertools.product(noise_levels, r_values, theta_values):
        runs = {name: evaluate(cases, m, q=q, r=r, theta=theta, noise=noise, schedules=schedules)
                for name, (m, schedules) in methods.items()}
        agree = (runs["GCJR"]["family"] == runs["exhaustive"]["family"]).to_numpy()
        for name, frame in runs.items():
            frame = frame.assign(method=name, noise=noise, r=r, theta=theta_label(theta), agree=agree)
            frames.append(frame if name == "GCJR" else frame.assign(sc=np.nan))
    return pd.concat(frames, ignore_index=True)


def gcjr_cost_terms(case: Case, *, r: int = 3, theta=THETA, noise: float = 0.0, schedule: int = 0,
                    q: int = 2) -> tuple[int, int]:
    """m and p of GCJR's cost r(1+m+p), read from the graph, not from a search.

    m: intervenable events in the failure slice B(o). p: sets of 2..q slice
    events that are pairwise admissible (cliques of the admissible-pair graph)
    and contain no successful smaller set; at q = 2, the admissible pairs
    without a successful singleton. The outcomes come from a separate oracle
    with the same settings (same outcomes, by common random numbers), whose
    count is discarded.
    """
    structure = Structure(case.graph)
    keep = failure_slice(case.graph, case.sink)
    scope = sorted(v for v in case.candidates if v in keep)
    pairs = nx.Graph()
    pairs.add_nodes_from(scope)
    pairs.add_edges_from((u, v) for u, v in itertools.combinations(scope, 2) if structure.admissible(u, v))
    referee = ReplayOracle(case, r, theta, noise, schedule)
    succeeds = functools.lru_cache(maxsize=None)(lambda s: referee.h(s))
    p = 0
    for clique in nx.enumerate_all_cliques(pairs):
        if len(clique) > q:
            break
        if len(clique) >= 2 and not any(succeeds(frozenset(t)) for k in range(1, len(clique))
                                        for t in itertools.combinations(clique, k)):
            p += 1
    return len(scope), p


def cost_check(cases: list[Case], gcjr_frame: pd.DataFrame, exhaustive_frame: pd.DataFrame, r: int,
               theta=THETA, q: int = 2) -> pd.DataFrame:
    """The oracle's counted calls beside r(1+m+p) for GCJR and r(1 + Σ_{k<=q} C(n,k)) for exhaustive search.

    At q = 2 the second is the paper's r(1+n+C(n,2)). Both frames come from
    ``evaluate`` on ``cases`` with GCJR's default switches, noiseless, first
    schedule; m and p come from ``gcjr_cost_terms``.
    """
    terms = [gcjr_cost_terms(case, r=r, theta=theta, q=q) for case in cases]
    n = pd.Series([len(case.candidates) for case in cases])
    frame = pd.DataFrame({
        "case_id": [case.case_id for case in cases],
        "kind": [case.kind for case in cases],
        "n": n,
        "m": [m for m, _ in terms],
        "p": [p for _, p in terms],
    })
    frame["gcjr_counted"] = gcjr_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["gcjr_formula"] = r * (1 + frame["m"] + frame["p"])
    frame["exhaustive_counted"] = exhaustive_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["exhaustive_formula"] = r * (1 + n.map(lambda k: sum(comb(k, j) for j in range(1, q + 1))))
    frame["gcjr_match"] = frame["gcjr_counted"] == frame["gcjr_formula"]
    frame["exhaustive_match"] = frame["exhaustive_counted"] == frame["exhaustive_formula"]
    return frame
