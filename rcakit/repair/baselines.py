"""Baselines of GCJR §Experiments, each returning a ``RepairResult``.

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
- ``random_matched``: uniformly random distinct sets of size <= q over all
  candidates, as many replays as GCJR spent on the case, then the
  minimality filter.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case, failure_slice
from rcakit.repair.oracle import ReplayOracle
from rcakit.repair.search import EXHAUSTIVE, RepairResult, minimal_sets, ranked, replay_search


def _order(case: Case, oracle: ReplayOracle) -> list[str]:
    return [v for v in case.schedules[oracle.schedule] if v in case.index]


def singleton_replay(case: Case, oracle: ReplayOracle) -> RepairResult:
    """Every candidate replayed alone; no slicing, no pairs."""
    return replay_search(case, oracle, _order(case, oracle), replace(EXHAUSTIVE, q=1))


def execution_window(case: Case, oracle: ReplayOracle, w: int = 4, q: int = 2) -> RepairResult:
    """Exhaustive search over the last ``w`` candidates logged before the sink."""
    if not (isinstance(w, (int, np.integer)) and w >= 1):
        raise RcakitError(f"execution_window: w = {w!r} must be an integer >= 1")
    schedule = case.schedules[oracle.schedule]
    before = schedule[: schedule.index(case.sink)]
    window = [v for v in before if v in case.index][-w:]
    return replay_search(case, oracle, window, replace(EXHAUSTIVE, q=q))


def shapley_top2(case: Case, oracle: ReplayOracle) -> RepairResult:
    """The top-2 events by exact Shapley value of h_θ, returned as one joint set."""
    from rcakit.scm import shapley_exact

    table = oracle.h_table().astype(float)
    n = len(case.candidates)
    phi = shapley_exact(lambda c: table[sum(1 << i for i in c)], n)
    order = _order(case, oracle)
    top = sorted(order, key=lambda v: (-phi[case.index[v]], order.index(v)))[:2]
    s = frozenset(top)
    return RepairResult(frozenset([s]), (s,), oracle.calls)


def centrality(case: Case, oracle: ReplayOracle, graph: nx.DiGraph | None = None) -> RepairResult:
    """Pointwise structural blame: the most between-central slice candidate, no replay."""
    view = case.graph if graph is None else graph
    score = nx.betweenness_centrality(view)
    keep = failure_slice(view, case.sink)
    order = [v for v in _order(case, oracle) if v in keep]
    if not order:
        return RepairResult(frozenset(), (), oracle.calls)
    s = frozenset([max(order, key=lambda v: (score[v], -order.index(v)))])
    return RepairResult(frozenset([s]), (s,), oracle.calls)


def random_matched(case: Case, oracle: ReplayOracle, budget: int, rng: np.random.Generator, q: int = 2) -> RepairResult:
    """Random sets of size <= q at a budget of ``budget`` seed replays (∅ included)."""
    order = _order(case, oracle)
    pool = [frozenset(c) for k in range(1, q + 1) for c in itertools.combinations(order, k)]
    n_sets = min(len(pool), max(budget // oracle.r - 1, 0))
    means = {frozenset(): oracle.mean_success(())}
    for i in sorted(rng.choice(len(pool), size=n_sets, replace=False)):
        means[pool[i]] = oracle.mean_success(pool[i])
    family = minimal_sets(s for s, m in means.items() if s and oracle.passes(m))
    return RepairResult(family, ranked(family, means, order), oracle.calls, len(order), n_sets)


def baseline_methods(budgets: dict[str, int], seed: int, w: int = 4, q: int = 2) -> dict:
    """The five baselines as ``method(case, oracle)`` callables, keyed by name.

    ``budgets`` maps a case id to GCJR's replay count on it (for the
    matched-budget random baseline, whose draws are seeded by (seed, case,
    schedule)).
    """
    def random_at_budget(case: Case, oracle: ReplayOracle) -> RepairResult:
        rng = np.random.default_rng([seed, case.seed, oracle.schedule])
        return random_matched(case, oracle, budgets[case.case_id], rng, q)

    return {
        "singleton_replay": singleton_replay,
        "execution_window": functools.partial(execution_window, w=w, q=q),
        "shapley_top2": shapley_top2,
        "centrality": centrality,
        "random_matched": random_at_budget,
    }
