"""Replay under r shared seeds: θ, the threshold rule h_θ, the oracle interface and its one base class.

GCJR §Core problem: a candidate set S is replayed under r shared seeds, Y_j(S)
says whether seed j's replay succeeds, and h_θ(S) = 1[(1/r) Σ_j Y_j(S) >= θ]
with θ = 2/3. θ is held as an exact fraction a/b and the rule is evaluated in
integers, successes · b >= a · r, so 2/3 means "at least two thirds of the
seeds" for every r (a float such as 0.66 would let 66 of 100 seeds pass).

:class:`Oracle` is the interface the searches and baselines are typed
against. :class:`SharedSeedOracle` is its one implementation of everything
but the replay itself: the check on r, θ, the schedule, ``passes``,
``replay``, ``h``, ``value``, ``replay_every_subset``, a call counter that
can be read and never written, and ``SharedSeedOracle.charge``, the one
hook that adds to it. A concrete oracle implements only
``SharedSeedOracle.successes``, the number of successful seeds of a set:

- :class:`rcakit.repair.oracle.controlled_dag.ReplayOracle`, symbolic propagation on a
  Controlled-DAG case, with per-seed noise;
- ``rcakit.repair.pilot.WorkflowOracle``, the four-agent workflow's
  messages replayed by its agents;
- ``rcakit.attribution.oracle.AttributionOracle``, a testbed's replay
  function behind a memo shared by the methods of a chapter run, which also
  counts model tokens and memo hits.

The unit of cost is the paper's: one seed replay of one set. ``replay``
charges r of them per set. An oracle whose cost is counted where the work
happens (the workflow charges each agent execution, so replaying ∅ is free)
sets ``charges_seeds = False`` and calls ``charge`` from there. Model tokens
of LLM-backed methods are counted in :mod:`rcakit.llm.accounting`, the one
token ledger.

Used in the chapters: `primer`, `gcjr-ablations`, `attribution-families`.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case

THETA = Fraction(2, 3)  # GCJR §Methodology: a set succeeds on at least 2/3 of its seeds
ThetaLike = Fraction | int | float | str  # what ``threshold`` accepts
Counts = int | np.integer | np.ndarray  # one count of successful seeds, or an array of counts


def threshold(theta: ThetaLike) -> Fraction:
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


def is_count(value: object, least: int = 1) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``least``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and bool(value >= least)


@dataclass(frozen=True)
class Replay:
    """The outcome of replaying one set under r shared seeds."""

    events: frozenset[Any]
    successes: int
    r: int
    success: bool  # h_θ(S)

    @property
    def mean(self) -> Fraction:
        """(1/r) Σ_j Y_j(S), exactly."""
        return Fraction(self.successes, self.r)


@runtime_checkable
class Oracle(Protocol):
    """h_θ over r shared seeds for one case and schedule: what a search or a baseline may call.

    ``calls`` is the cost charged so far; a search reads ``Replay`` results,
    and whoever built the oracle reads ``calls`` after the search returns.
    """

    @property
    def case(self) -> Case: ...

    @property
    def r(self) -> int: ...

    @property
    def theta(self) -> Fraction: ...

    @property
    def schedule(self) -> int: ...

    @property
    def calls(self) -> int: ...

    def passes(self, successes: Counts) -> bool | np.ndarray: ...

    def replay(self, events: Iterable[str]) -> Replay: ...

    def h(self, events: Iterable[str]) -> bool: ...

    def replay_every_subset(self) -> np.ndarray: ...


class SharedSeedOracle(ABC):
    """The one base class of the replay oracles (see the module docstring).

    A subclass implements :meth:`successes`; everything else, the cost
    counter included, lives here. ``calls`` only grows, through
    :meth:`charge`, and has no setter; ``__slots__`` leave no place for a
    second count.
    """

    __slots__ = ("case", "r", "theta", "schedule", "__calls")
    charges_seeds: ClassVar[bool] = True  # replay charges r seed replays per set

    def __init__(self, case: Case, r: int = 3, theta: ThetaLike = THETA, schedule: int = 0) -> None:
        name = type(self).__name__
        if not is_count(r):
            raise RcakitError(f"{name}: r = {r!r} must be an integer >= 1")
        if not (is_count(schedule, 0) and schedule < len(case.schedules)):
            raise RcakitError(f"{name}: schedule = {schedule!r} is not one of the case's schedules")
        self.case, self.r, self.schedule = case, int(r), int(schedule)
        self.theta = threshold(theta)
        self.__calls = 0

    @property
    def calls(self) -> int:
        """Cost charged so far (read-only): seed replays, or what the subclass charges instead."""
        return self.__calls

    def charge(self, replays: int = 0) -> None:
        """The one cost hook: add ``replays`` to ``calls`` (a probe, a rollout, an agent execution)."""
        if not is_count(replays, 0):
            raise RcakitError(f"{type(self).__name__}.charge: replays = {replays!r} must be an integer >= 0")
        self.__calls += int(replays)

    def passes(self, successes: Counts) -> bool | np.ndarray:
        """The θ rule on a count (or an array of counts) of successful seeds: successes / r >= θ, in integers."""
        return successes * self.theta.denominator >= self.theta.numerator * self.r

    @abstractmethod
    def successes(self, events: frozenset[str]) -> int:
        """Σ_j Y_j(S): how many of the r shared seeds' replays of ``events`` succeed."""

    def replay(self, events: Iterable[str]) -> Replay:
        """Replay one set under the r shared seeds (charges r seed replays unless the subclass charges itself)."""
        events = frozenset(events)
        self.case.mask(events)  # a non-candidate is a one-line error
        if self.charges_seeds:
            self.charge(self.r)
        successes = int(self.successes(events))
        return Replay(events, successes, self.r, bool(self.passes(successes)))

    def h(self, events: Iterable[str]) -> bool:
        """h_θ(S) (charges what ``replay`` charges)."""
        return self.replay(events).success

    def value(self, events: Iterable[str]) -> float:
        """The mean replay success of a set, (1/r) Σ_j Y_j(S) (charges what ``replay`` charges)."""
        return float(self.replay(events).mean)

    def replay_every_subset(self) -> np.ndarray:
        """h_θ of every subset of the candidates, indexed by bitmask (charges r·2^n seed replays)."""
        players = self.case.candidates
        out = np.zeros(1 << len(players), dtype=bool)
        for k in range(len(players) + 1):
            for s in itertools.combinations(players, k):
                out[self.case.mask(s)] = self.h(s)
        return out
