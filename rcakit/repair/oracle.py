"""Counterfactual replay: what happens when events are swapped for clean counterparts.

Semantics chosen here (the paper leaves the mechanism of its symbolic
benchmark open): the clean counterpart of an event is the message it emits
with its *own* injected error removed, computed from the inputs it receives in
the replay. So a repaired event still relays corruption that reaches it from
upstream, and an event without an error of its own has a clean counterpart
equal to what it already sent. Corruption flows along the *true* edges through
each event's gate; the run succeeds when the sink ends clean.

GCJR §Core problem: r shared seeds, h_θ(S) = 1[(1/r) Σ_j Y_j(S) >= θ] with
θ = 2/3. θ is held as an exact fraction a/b and the rule is evaluated in
integers, successes · b >= a · r, so 2/3 means "at least two thirds of the
seeds" for every r (a float such as 0.66 would let 66 of 100 seeds pass).
Per-seed noise flips Y_j with probability ``noise``; the flip of seed j for a
set S is a fixed function of (case, schedule, S, j): every method sees the
same replay outcome for the same set (common random numbers), raising r keeps
the first seeds' outcomes, and the schedule the run is replayed under decides
which seeds a set sees.

Replay outcomes are pure functions of a case, so the module keeps one memo per
case (``_memo``: the compiled graph, the noiseless outcome of each set and the
per-seed uniforms), held weakly: it lives as long as the case does and
never changes what a replay returns.

Used in the chapters: `primer`, `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case
from rcakit.repair.search import minimal_sets

THETA = Fraction(2, 3)  # GCJR §Methodology: a set succeeds on at least 2/3 of its seeds


def threshold(theta) -> Fraction:
    """θ as an exact fraction in (0, 1]: a Fraction, an int, a decimal or ``"a/b"`` string, or a float.

    A float is read by its shortest decimal form (0.66 is 33/50), so only a
    string or a Fraction can say 2/3 exactly.
    """
    try:
        value = Fraction(str(theta)) if isinstance(theta, (float, np.floating)) else Fraction(theta)
    except (TypeError, ValueError, ZeroDivisionError):
        raise RcakitError(f"theta = {theta!r} is not a number or a fraction such as '2/3'") from None
    if not 0 < value <= 1:
        raise RcakitError(f"theta = {theta!r} is outside (0, 1]")
    return value


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


@dataclass
class _CaseMemo:
    """What replaying one case has computed so far (see the module docstring)."""

    plan: _Plan
    outcomes: dict[int, bool] = field(default_factory=dict)  # set bitmask -> Y(S) without noise
    uniforms: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (schedule, mask) -> draws


_MEMOS: weakref.WeakKeyDictionary[Case, _CaseMemo] = weakref.WeakKeyDictionary()


def _memo(case: Case) -> _CaseMemo:
    if case not in _MEMOS:
        if len(case.candidates) > 62:
            raise RcakitError(f"case {case.case_id}: more than 62 candidates do not fit a bitmask")
        _MEMOS[case] = _CaseMemo(_Plan(case))
    return _MEMOS[case]


def clean_success(case: Case, mask: int) -> bool:
    """Y(S) without noise: does repairing the set with bitmask ``mask`` restore success?"""
    memo = _memo(case)
    if mask not in memo.outcomes:
        memo.outcomes[mask] = bool(memo.plan.success(np.array([mask], dtype=np.int64))[0])
    return memo.outcomes[mask]


def _uniforms(case: Case, schedule: int, mask: int, r: int) -> np.ndarray:
    """The first r per-seed uniforms of set ``mask`` (prefix-stable in r)."""
    draws = _memo(case).uniforms
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
    return minimal_sets(
        frozenset(s)
        for k in range(1, q + 1)
        for s in itertools.combinations(case.candidates, k)
        if clean_success(case, case.mask(s))
    )


@dataclass(frozen=True)
class Replay:
    """The outcome of replaying one set under r shared seeds."""

    events: frozenset
    successes: int
    r: int
    success: bool  # h_θ(S)

    @property
    def mean(self) -> Fraction:
        """(1/r) Σ_j Y_j(S), exactly."""
        return Fraction(self.successes, self.r)


class ReplayOracle:
    """h_θ over r shared seeds for one case and schedule.

    The oracle counts its own calls: every seed replay (the paper's unit, one
    replay of the downstream workflow under one seed) adds one to a private
    counter that only ``_replay_masks`` increments and that has no setter. A
    search gets ``Replay`` results, never the counter; whoever built the
    oracle reads ``calls`` after the search returns.
    """

    __slots__ = ("case", "r", "theta", "noise", "schedule", "__calls")

    def __init__(self, case: Case, r: int = 3, theta=THETA, noise: float = 0.0, schedule: int = 0):
        if not (isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 1):
            raise RcakitError(f"ReplayOracle: r = {r!r} must be an integer >= 1")
        if not 0.0 <= noise < 1.0:
            raise RcakitError(f"ReplayOracle: noise = {noise!r} is outside [0, 1)")
        if not 0 <= schedule < len(case.schedules):
            raise RcakitError(f"ReplayOracle: schedule = {schedule!r} is not one of the case's schedules")
        self.case, self.r, self.noise, self.schedule = case, int(r), noise, schedule
        self.theta = threshold(theta)
        self.__calls = 0

    @property
    def calls(self) -> int:
        """Seed replays charged so far (read-only)."""
        return self.__calls

    def passes(self, successes):
        """The θ rule on a count (or an array of counts) of successful seeds: successes / r >= θ, in integers."""
        return successes * self.theta.denominator >= self.theta.numerator * self.r

    def _replay_masks(self, masks: np.ndarray) -> np.ndarray:
        """Successful seeds per set bitmask; charges r calls per set (the only place that counts)."""
        self.__calls += self.r * len(masks)
        if len(masks) == 1:  # one set: the cached per-set outcome, no vectorised pass
            return np.array([seed_outcomes(self.case, int(masks[0]), self.r, self.noise, self.schedule).sum()])
        clean = _memo(self.case).plan.success(masks)
        if self.noise == 0.0:
            return clean.astype(np.int64) * self.r
        flips = np.array([_uniforms(self.case, self.schedule, int(m), self.r) < self.noise for m in masks])
        return (clean[:, None] ^ flips).sum(axis=1)

    def replay(self, events: Iterable[str]) -> Replay:
        """Replay one set under the r shared seeds (charges r calls)."""
        events = frozenset(events)
        successes = int(self._replay_masks(np.array([self.case.mask(events)], dtype=np.int64))[0])
        return Replay(events, successes, self.r, self.passes(successes))

    def h(self, events: Iterable[str]) -> bool:
        """h_θ(S) (charges r calls)."""
        return self.replay(events).success

    def replay_every_subset(self) -> np.ndarray:
        """h_θ of every subset of the candidates, indexed by bitmask (charges r·2^n calls)."""
        masks = np.arange(2 ** len(self.case.candidates), dtype=np.int64)
        return self.passes(self._replay_masks(masks))
