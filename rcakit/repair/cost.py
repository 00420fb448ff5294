"""GCJR's replay cost r(1+m+p) and exhaustive search's r(1 + n + C(n,2)), against the oracle's counted calls.

GCJR §Technical contribution gives both costs in replay calls. Here m and p
are read from the graph (not from a search), and the counted calls from the
oracle's own counter, so a search that skips an admissible pair or replays
one twice fails the check. ``candidate_sets`` and ``pair_reasons`` lay one
case's candidate sets out for the chapter's worked example: which sets GCJR
replays, why, and which succeed.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from math import comb
from typing import Any, NamedTuple

import networkx as nx
import pandas as pd

from rcakit.repair.graph import Case, Structure, failure_slice
from rcakit.repair.metrics import format_family
from rcakit.repair.oracle import THETA, ReplayOracle, ThetaLike


class CostTerms(NamedTuple):
    """m and p of GCJR's cost r(1+m+p) (GCJR §Technical contribution)."""

    slice_candidates: int  # m
    admitted_sets: int  # p


def gcjr_cost_terms(
    case: Case, *, r: int = 3, theta: ThetaLike = THETA, noise: float = 0.0, schedule: int = 0, q: int = 2
) -> CostTerms:
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
    referee = ReplayOracle(case, r=r, theta=theta, noise=noise, schedule=schedule)
    succeeds = functools.lru_cache(maxsize=None)(lambda s: referee.h(s))
    p = 0
    for clique in nx.enumerate_all_cliques(pairs):
        if len(clique) > q:
            break
        if len(clique) >= 2 and not any(
            succeeds(frozenset(t)) for k in range(1, len(clique)) for t in itertools.combinations(clique, k)
        ):
            p += 1
    return CostTerms(len(scope), p)


def cost_check(
    cases: list[Case],
    gcjr_frame: pd.DataFrame,
    exhaustive_frame: pd.DataFrame,
    *,
    r: int,
    theta: ThetaLike = THETA,
    q: int = 2,
) -> pd.DataFrame:
    """The oracle's counted calls beside r(1+m+p) for GCJR and r(1 + Σ_{k<=q} C(n,k)) for exhaustive search.

    At q = 2 the second is the paper's r(1+n+C(n,2)). Both frames come from
    ``evaluate_method`` on ``cases`` with GCJR's default switches, noiseless, first
    schedule; m and p come from ``gcjr_cost_terms``.
    """
    terms = [gcjr_cost_terms(case, r=r, theta=theta, q=q) for case in cases]
    frame = pd.DataFrame(
        {
            "case_id": [case.case_id for case in cases],
            "kind": [case.kind for case in cases],
            "n": [len(case.candidates) for case in cases],
            "m": [m for m, _ in terms],
            "p": [p for _, p in terms],
        }
    )
    frame["in_scope"] = gcjr_frame.set_index("case_id").loc[frame["case_id"], "in_scope"].to_numpy()
    frame["gcjr_counted"] = gcjr_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["gcjr_formula"] = r * (1 + frame["m"] + frame["p"])
    frame["exhaustive_counted"] = exhaustive_frame.set_index("case_id").loc[frame["case_id"], "replays"].to_numpy()
    frame["exhaustive_formula"] = [exhaustive_cost(len(case.candidates), r, q) for case in cases]
    frame["gcjr_match"] = frame["gcjr_counted"] == frame["gcjr_formula"]
    frame["exhaustive_match"] = frame["exhaustive_counted"] == frame["exhaustive_formula"]
    return frame


def exhaustive_cost(n: int, r: int = 3, q: int = 2) -> int:
    """r(1 + Σ_{k<=q} C(n, k)): exhaustive search's replays on n candidates (r(1+n+C(n,2)) at q = 2)."""
    return r * (1 + sum(comb(n, k) for k in range(1, q + 1)))


def cost_summary(cost: pd.DataFrame, r: int) -> dict[str, Any]:
    """The cost section's numbers: formula matches over all cases, means and minima over the in-scope ones.

    ``*_sets`` are calls / r, the number of replayed sets. ``formula_reduction``
    is 1 - mean r(1+m+p) / mean r(1 + Σ_{k<=q} C(n,k)) over the in-scope
    cases: what the cost formulas alone say the replay reduction is, computed
    as :func:`rcakit.repair.metrics.replay_reduction` computes the counted one.
    """
    inside = cost[cost["in_scope"]]
    gcjr_formula, exhaustive_formula = inside["gcjr_formula"].mean(), inside["exhaustive_formula"].mean()
    return {
        "gcjr_formula_match": float(cost["gcjr_match"].mean()),
        "exhaustive_formula_match": float(cost["exhaustive_match"].mean()),
        "n": inside["n"].mean(),
        "m": inside["m"].mean(),
        "p": inside["p"].mean(),
        "gcjr_calls": inside["gcjr_counted"].mean(),
        "exhaustive_calls": inside["exhaustive_counted"].mean(),
        "gcjr_sets": inside["gcjr_counted"].mean() / r,
        "exhaustive_sets": inside["exhaustive_counted"].mean() / r,
        "smallest_exhaustive_calls": int(inside["exhaustive_formula"].min()),
        "smallest_n": int(inside["n"].min()),
        "formula_reduction": 1 - gcjr_formula / exhaustive_formula,
    }


def pair_reasons(case: Case) -> Counter[str]:
    """Why each pair of intervenable slice events is or is not admitted (GCJR §Methodology, q = 2).

    Each pair counts once, under the first rule it fails: ``"same agent"``,
    ``"comparable"`` (one event reaches the other), ``"no shared join"``, or
    ``"admissible"`` when it passes all three.
    """
    structure = Structure(case.graph)
    keep = failure_slice(case.graph, case.sink)
    agent = case.graph.nodes
    reasons: Counter[str] = Counter()
    for u, v in itertools.combinations([v for v in case.candidates if v in keep], 2):
        if agent[u]["agent"] == agent[v]["agent"]:
            reasons["same agent"] += 1
        elif structure.comparable(u, v):
            reasons["comparable"] += 1
        else:
            reasons["admissible" if structure.converge(u, v) else "no shared join"] += 1
    return reasons


def candidate_sets(case: Case, *, r: int = 3, theta: ThetaLike = THETA) -> pd.DataFrame:
    """Every candidate alone and every admissible pair of slice events: does GCJR replay it, why, does it succeed.

    GCJR at q = 2, noiseless, first schedule (GCJR §Methodology): a singleton is
    replayed when it lies in the failure slice, an admissible pair when neither
    of its events succeeds alone. ``succeeds`` is h_θ from a separate oracle
    (its count discarded), so the sets GCJR skips get an outcome too. ``events``
    holds each set; the other columns are what a reader sees.
    """
    structure = Structure(case.graph)
    keep = failure_slice(case.graph, case.sink)
    referee = ReplayOracle(case, r=r, theta=theta)
    order = case.order()
    rows: list[tuple[tuple[str, ...], bool, str]] = [
        ((v,), v in keep, "in the failure slice" if v in keep else "outside the failure slice") for v in order
    ]
    wins = {v for (v,), replayed, _ in rows if replayed and referee.h([v])}
    for u, v in itertools.combinations([v for v in order if v in keep], 2):
        if structure.admissible(u, v):
            pruned = bool({u, v} & wins)
            rows.append(((u, v), not pruned, "holds a successful singleton" if pruned else "admissible pair"))
    return pd.DataFrame(
        {
            "events": [frozenset(events) for events, _, _ in rows],
            "candidate set": [format_family([frozenset(events)]) for events, _, _ in rows],
            "replayed by GCJR": [replayed for _, replayed, _ in rows],
            "why": [why for _, _, why in rows],
            "succeeds": [referee.h(events) for events, _, _ in rows],
        }
    )
