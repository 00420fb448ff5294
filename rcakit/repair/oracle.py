"""Counterfactual replay: what happens when events are swapped for clean counterparts.

Semantics chosen here (the paper leaves the mechanism of its symbolic
benchmark open): the clean counterpart of an event is the message it emits
with its *own* injected error removed, computed from the inputs it receives in
the replay. So a repaired event still relays corruption that reaches it from
upstream, and an event without an error of its own has a clean counterpart
equal to what it already sent. Corruption flows along the *true* edges through
each event's gate; the run succeeds when the sink ends clean.

GCJR §Core problem: r shared seeds, h_θ(S) = 1[(1/r) Σ_j Y_j(S) >= θ].
Per-seed noise flips Y_j with probability ``noise``; the flip of seed j for a
set S is a fixed function of (case, schedule, S, j), so every method sees the
same replay outcome for the same set (common random numbers) and raising r
keeps the first seeds' outcomes.
"""

from __future__ import annotations

import itertools
from functools import cached_property
from typing import Iterable

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case


class _Plan:
    """The true graph of a case compiled for vectorised propagation."""

    def __init__(self, case: Case):
        g = case.graph
        order = list(nx.topological_sort(g))
        pos = {v: i for i, v in enumerate(order)}
        self.steps = [
            (case.index.get(v, -1), g.nodes[v]["fault"], g.nodes[v]["gate"] == "all",
             [pos[u] for u in g.predecessors(v)])
            for v in order
        ]
        self.sink = pos[case.sink]

    def success(self, masks: np.ndarray) -> np.ndarray:
        """Clean outcome of the sink for each repair bitmask in ``masks``."""
        corrupt = np.zeros((len(self.steps), len(masks)), dtype=bool)
        for pos, (bit, fault, redundant, parents) in enumerate(self.steps):
            if parents:
                inputs = corrupt[parents]
                corrupt[pos] = inputs.all(axis=0) if redundant else inputs.any(axis=0)
            if fault:
                own = np.ones(len(masks), bool) if bit < 0 else ((masks >> bit) & 1) == 0
                corrupt[pos] |= own
        return ~corrupt[self.sink]


def _plan(case: Case) -> _Plan:
    if "plan" not in case.cache:
        if len(case.candidates) > 62:
            raise RcakitError(f"case {case.case_id}: more than 62 candidates do not fit a bitmask")
        case.cache["plan"] = _Plan(case)
    return case.cache["plan"]


def clean_success(case: Case, mask: int) -> bool:
    """Y(S) without noise: does repairing the set with bitmask ``mask`` restore success?"""
    outcomes = case.cache.setdefault("outcome", {})
    if mask not in outcomes:
        outcomes[mask] = bool(_plan(case).success(np.array([mask], dtype=np.int64))[0])
    return outcomes[mask]


def _uniforms(case: Case, schedule: int, mask: int, r: int) -> np.ndarray:
    """The first r per-seed uniforms of set ``mask`` (prefix-stable in r)."""
    draws = case.cache.setdefault("uniforms", {})
    key = (schedule, mask)
    if key not in draws or len(draws[key]) < r:
        draws[key] = np.random.default_rng([case.seed, schedule, mask]).random(max(r, 9))
    return draws[key][:r]


def seed_outcomes(case: Case, mask: int, r: int, noise: float = 0.0, schedule: int = 0) -> np.ndarray:
    """Y_1..Y_r(S): the per-seed replay successes of one set."""
    clean = clean_success(case, mask)
    if noise == 0.0:
        return np.full(r, clean)
    return clean ^ (_uniforms(case, schedule, mask, r) < noise)


def replay(case: Case, events: Iterable[str], seed: int, noise: float = 0.0, schedule: int = 0) -> bool:
    """One replay with shared seed ``seed``: does replacing ``events`` restore success?"""
    if seed < 0:
        raise RcakitError(f"replay: seed = {seed!r} must be >= 0")
    return bool(seed_outcomes(case, case.mask(events), seed + 1, noise, schedule)[seed])


def true_family(case: Case, q: int = 2) -> frozenset:
    """F_{q,θ} under noiseless replay: all inclusion-minimal successes of size <= q.

    The reference every method is scored against (MRFR, GCJR §Technical
    contribution); replay here is free and is not counted.
    """
    found = [
        frozenset(s)
        for k in range(1, q + 1)
        for s in itertools.combinations(case.candidates, k)
        if clean_success(case, case.mask(s))
    ]
    return frozenset(s for s in found if not any(t < s for t in found))


class ReplayOracle:
    """h_θ over r shared seeds for one case and schedule; counts every seed replay.

    ``calls`` grows by r for each set replayed (the paper's unit: one replay
    of the downstream workflow under one seed).
    """

    def __init__(self, case: Case, r: int = 3, theta: float = 0.66, noise: float = 0.0, schedule: int = 0):
        if not (isinstance(r, (int, np.integer)) and r >= 1):
            raise RcakitError(f"ReplayOracle: r = {r!r} must be an integer >= 1")
        if not 0.0 < theta <= 1.0:
            raise RcakitError(f"ReplayOracle: theta = {theta!r} is outside (0, 1]")
        if not 0.0 <= noise < 1.0:
            raise RcakitError(f"ReplayOracle: noise = {noise!r} is outside [0, 1)")
        if not 0 <= schedule < len(case.schedules):
            raise RcakitError(f"ReplayOracle: schedule = {schedule!r} is not one of the case's schedules")
        self.case, self.r, self.theta, self.noise, self.schedule = case, int(r), theta, noise, schedule
        self.calls = 0

    def mean_success(self, events: Iterable[str]) -> float:
        """(1/r) Σ_j Y_j(S), charging r calls."""
        self.calls += self.r
        return float(seed_outcomes(self.case, self.case.mask(events), self.r, self.noise, self.schedule).mean())

    def passes(self, mean: float) -> bool:
        """The θ rule on a mean success."""
        return mean >= self.theta - 1e-12

    def h(self, events: Iterable[str]) -> bool:
        """h_θ(S), charging r calls."""
        return self.passes(self.mean_success(events))

    def h_table(self) -> np.ndarray:
        """h_θ of every subset of the candidates, indexed by bitmask; charges r·2^n calls."""
        n = len(self.case.candidates)
        masks = np.arange(2**n, dtype=np.int64)
        self.calls += self.r * len(masks)
        clean = _plan(self.case).success(masks)
        if self.noise == 0.0:
            return clean
        flips = np.array([_uniforms(self.case, self.schedule, int(m), self.r) < self.noise for m in masks])
        return (clean[:, None] ^ flips).mean(axis=1) >= self.theta - 1e-12
