"""The Controlled-DAG replay oracle: what happens when events are swapped for clean counterparts.

Semantics chosen here (the paper leaves the mechanism of its symbolic
benchmark open): the clean counterpart of an event is the message it emits
with its *own* injected error removed, computed from the inputs it receives in
the replay. So a repaired event still relays corruption that reaches it from
upstream, and an event without an error of its own has a clean counterpart
equal to what it already sent. Corruption flows along the *true* edges through
each event's gate; the run succeeds when the sink ends clean.

The oracle is :class:`ReplayOracle`, a :class:`~rcakit.repair.oracle.base.SharedSeedOracle`
(GCJR §Core problem: r shared seeds, h_θ with θ = 2/3, a counter of seed
replays) that implements only the successes of a set. Per-seed noise flips
Y_j with probability ``noise``; the flip of seed j for a set S is a fixed
function of (case, schedule, S, j): every method sees the same replay
outcome for the same set (common random numbers), raising r keeps the first
seeds' outcomes, and the schedule the run is replayed under decides which
seeds a set sees.

Replay outcomes are pure functions of a case, so the module keeps one memo per
case (``_memo``: the compiled graph, the noiseless outcome of each set and the
per-seed uniforms), held weakly: it lives as long as the case does and
never changes what a replay returns.

Used in the chapters: `primer`, `gcjr-ablations`, `attribution-families`.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case
from rcakit.repair.oracle.base import THETA, SharedSeedOracle, ThetaLike


class _Plan:
    """The true graph of a case compiled for vectorised propagation."""

    def __init__(self, case: Case) -> None:
        g = case.graph
        order = list(nx.topological_sort(g))
        pos = {v: i for i, v in enumerate(order)}
        self.steps = [
            (
                case.index.get(v, -1),
                g.nodes[v]["fault"],
                g.nodes[v]["gate"] == "all",
                [pos[u] for u in g.predecessors(v)],
            )
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


def seed_outcomes(case: Case, mask: int, r: int, *, noise: float = 0.0, schedule: int = 0) -> np.ndarray:
    """Y_1..Y_r(S): the per-seed replay successes of one set."""
    clean = clean_success(case, mask)
    if noise == 0.0:
        return np.full(r, clean)
    return clean ^ (_uniforms(case, schedule, mask, r) < noise)


def replay_once(case: Case, events: Iterable[str], seed: int, noise: float = 0.0, *, schedule: int = 0) -> bool:
    """One replay with shared seed ``seed``: does replacing ``events`` restore success?"""
    if seed < 0:
        raise RcakitError(f"replay_once: seed = {seed!r} must be >= 0")
    return bool(seed_outcomes(case, case.mask(events), seed + 1, noise=noise, schedule=schedule)[seed])


class ReplayOracle(SharedSeedOracle):
    """h_θ over r shared seeds for one case and schedule, by symbolic propagation with per-seed noise.

    The cost is the base class's: r seed replays per set (the paper's unit,
    one replay of the downstream workflow under one seed), counted in a
    read-only ``calls``. A search gets ``Replay`` results, never the counter.
    """

    __slots__ = ("noise",)

    def __init__(
        self, case: Case, r: int = 3, theta: ThetaLike = THETA, *, noise: float = 0.0, schedule: int = 0
    ) -> None:
        if not 0.0 <= noise < 1.0:
            raise RcakitError(f"ReplayOracle: noise = {noise!r} is outside [0, 1)")
        super().__init__(case, r, theta, schedule)
        self.noise = noise

    def successes(self, events: frozenset[str]) -> int:
        """Σ_j Y_j(S) of one set, from the case's memo."""
        return int(
            seed_outcomes(self.case, self.case.mask(events), self.r, noise=self.noise, schedule=self.schedule).sum()
        )

    def replay_every_subset(self) -> np.ndarray:
        """h_θ of every subset of the candidates, indexed by bitmask, in one vectorised pass (charges r·2^n)."""
        masks = np.arange(2 ** len(self.case.candidates), dtype=np.int64)
        self.charge(self.r * len(masks))
        clean = _memo(self.case).plan.success(masks)
        if self.noise == 0.0:
            return np.asarray(self.passes(clean.astype(np.int64) * self.r))
        flips = np.array([_uniforms(self.case, self.schedule, int(m), self.r) < self.noise for m in masks])
        return np.asarray(self.passes((clean[:, None] ^ flips).sum(axis=1)))
