"""Baselines of GCJR §Experiments, each a ``Method``: ``(case, oracle) -> RepairResult``.

The paper names them but not their details; the choices are:

- ``singleton_replay``: replay every candidate alone (no graph); the
  successes are the family.
- ``execution_window``: the last w candidates before the sink in the
  schedule, searched exhaustively up to size q with the minimality filter.
- ``shapley_top2``: exact Shapley values of h_θ over all candidates (2^n
  replayed coalitions); the two highest-valued events form one set, the
  family is that pair. Ties go to the event earlier in the schedule.
- ``centrality``: no replay; the slice candidate with the highest betweenness
  centrality in the execution graph is blamed as a singleton.
- ``random_pairs``: uniformly random distinct *pairs* over all candidates
  (the paper's "random pairs": no singleton is replayed), as many pairs as
  GCJR's replay count on the case pays for after ∅, then the minimality
  filter. It can therefore never return a singleton repair.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.repair.families import RepairResult, minimal_sets, ranked
from rcakit.repair.graph import Case, failure_slice
from rcakit.repair.oracle import Oracle
from rcakit.repair.search import EXHAUSTIVE, Method, replay_search
from rcakit.shapley import shapley_exact


def singleton_replay(case: Case, oracle: Oracle) -> RepairResult:
    """Every candidate replayed alone; no slicing, no pairs."""
    return replay_search(case, oracle, case.order(oracle.schedule), replace(EXHAUSTIVE, q=1))


def execution_window(case: Case, oracle: Oracle, w: int = 4, q: int = 2) -> RepairResult:
    """Exhaustive search over the last ``w`` candidates logged before the sink."""
    if not (isinstance(w, (int, np.integer)) and w >= 1):
        raise RcakitError(f"execution_window: w = {w!r} must be an integer >= 1")
    window = case.order(oracle.schedule, before=case.sink)[-w:]
    return replay_search(case, oracle, window, replace(EXHAUSTIVE, q=q))


def shapley_top2(case: Case, oracle: Oracle) -> RepairResult:
    """The top-2 events by exact Shapley value of h_θ, returned as one joint set."""
    table = oracle.replay_every_subset().astype(float)
    n = len(case.candidates)
    phi = shapley_exact(lambda c: table[sum(1 << i for i in c)], n)
    order = case.order(oracle.schedule)
    top = sorted(order, key=lambda v: (-phi[case.index[v]], order.index(v)))[:2]
    s = frozenset(top)
    return RepairResult(frozenset([s]), (s,))


def centrality(case: Case, oracle: Oracle, graph: nx.DiGraph[Any] | None = None) -> RepairResult:
    """Pointwise structural blame: the most between-central slice candidate, no replay."""
    view = case.graph if graph is None else graph
    score = nx.betweenness_centrality(view)
    keep = failure_slice(view, case.sink)
    order = [v for v in case.order(oracle.schedule) if v in keep]
    if not order:
        return RepairResult(frozenset(), ())
    s = frozenset([max(order, key=lambda v: (score[v], -order.index(v)))])
    return RepairResult(frozenset([s]), (s,))


def random_pairs(case: Case, oracle: Oracle, budget: int, rng: np.random.Generator) -> RepairResult:
    """Random distinct pairs at a budget of ``budget`` seed replays (∅ included, no singletons)."""
    order = case.order(oracle.schedule)
    pool = [frozenset(c) for c in itertools.combinations(order, 2)]
    n_pairs = min(len(pool), max(budget // oracle.r - 1, 0))
    means = {frozenset(): oracle.replay(()).mean}
    hits = []
    for i in sorted(rng.choice(len(pool), size=n_pairs, replace=False)):
        outcome = oracle.replay(pool[i])
        means[pool[i]] = outcome.mean
        if outcome.success:
            hits.append(pool[i])
    family = minimal_sets(hits)
    return RepairResult(family, ranked(family, means, order))


def baseline_methods(budgets: dict[str, int], seed: int, w: int = 4, q: int = 2) -> dict[str, Method]:
    """The five baselines as ``method(case, oracle)`` callables, keyed by name.

    ``budgets`` maps a case id to GCJR's replay count on it (for the
    matched-budget random-pairs baseline, whose draws are seeded by (seed,
    case, schedule)).
    """

    def random_at_budget(case: Case, oracle: Oracle) -> RepairResult:
        rng = np.random.default_rng([seed, case.seed, oracle.schedule])
        return random_pairs(case, oracle, budgets[case.case_id], rng)

    return {
        "singleton_replay": singleton_replay,
        "execution_window": functools.partial(execution_window, w=w, q=q),
        "shapley_top2": shapley_top2,
        "centrality": centrality,
        "random_pairs": random_at_budget,
    }
