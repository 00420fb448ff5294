"""One attribution interface: a failed case, a replay oracle that counts its cost, and the answer type.

A method is any callable ``method(case, oracle, budget=None) -> Attribution``.
``case`` (a :class:`FailedCase`) names the players (hops, events or steps) and
carries what a family of methods may read: the dependency graph as a GCJR
``Case`` with its planted family and fault marks removed, the failed trace
(RAG hops) or the recorded run as an SCM (support agent). ``oracle`` (an
:class:`AttributionOracle`) replays the run with a set of players repaired
under r shared seeds and counts what that costs: seed replays, rollouts and
model tokens.

The oracle is a :class:`~rcakit.repair.shared_seeds.SharedSeedOracle`, the
base class of every replay oracle: it implements only the successes of a set,
so GCJR's search and baselines run on every testbed unchanged, and the base
class owns r, θ, the counter of seed replays and the charging hook, which
here also takes model tokens. Replays that several methods share inside one
chapter run are looked up in a :class:`ReplayMemo` keyed by (case, set,
seed): a memo hit costs no computation, but it is still charged to the method
(each method pays what it would pay alone); the hits are counted apart.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from rcakit import RcakitError
from rcakit.repair.graph import Case
from rcakit.repair.shared_seeds import THETA, SharedSeedOracle, ThetaLike, is_count

KINDS = ("point", "ranking", "family")


@dataclass(frozen=True)
class Cost:
    """What one method paid on one case: seed replays (a rollout each), model tokens, memo hits."""

    replays: int = 0
    tokens: int = 0
    memo_hits: int = 0


@dataclass(frozen=True)
class Attribution:
    """A method's answer on one case.

    ``kind`` is ``point`` (``answer``: one player, or None), ``ranking``
    (``answer``: the players, best first) or ``family`` (``answer``: a frozenset
    of frozensets of players, the minimal repair sets). ``cost`` is filled in
    from the oracle's counters by :func:`run_method`; a method need not set it.
    """

    kind: str
    answer: Any
    cost: Cost = field(default_factory=Cost)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RcakitError(f"Attribution: kind {self.kind!r} is not one of {', '.join(KINDS)}")


class NotApplicable(RcakitError):
    """The method needs something this testbed does not provide (a trace, an SCM, a graph)."""


@dataclass(frozen=True)
class FailedCase:
    """One failed run as a method sees it: no ground truth in it.

    ``dag`` is a GCJR ``Case`` over the players (family emptied, fault marks
    cleared); ``trace`` the failed RAG trace (RAG hops only); ``players`` the
    intervenable units in execution order.
    """

    case_id: str
    testbed: str
    players: tuple
    dag: Case
    trace: Any = None


class ReplayMemo:
    """Replay outcomes shared by the methods of one chapter run, keyed by (case, set, seed)."""

    def __init__(self) -> None:
        self.outcomes: dict[tuple, tuple[bool, int]] = {}
        self.tables: dict[tuple, np.ndarray] = {}
        self.hits = 0
        self.computed = 0


ReplayOne = Callable[[frozenset, int], tuple[bool, int]]


class AttributionOracle(SharedSeedOracle):
    """h_θ(S) over r shared seeds for one failed case, counting its own cost (GCJR §Core problem).

    ``replay_one(S, j) -> (success, tokens)`` replays the run once with the
    players in S repaired under seed j. ``table(r) -> h_θ per bitmask``, when
    given, replays every subset at once under the same r and θ (a vectorised
    testbed). The counters ``calls`` (seed replays), ``tokens`` and
    ``memo_hits`` only grow, through :meth:`charge` and the memo. Extra
    capabilities (``agent``, ``scm``) are attached by a testbed.
    """

    __slots__ = ("_replay_one", "_table", "memo", "__tokens", "__memo_hits", "agent", "scm")

    def __init__(
        self,
        case: Case,
        replay_one: ReplayOne,
        *,
        r: int = 3,
        theta: ThetaLike = THETA,
        memo: ReplayMemo | None = None,
        table: Callable[[int], np.ndarray] | None = None,
    ) -> None:
        super().__init__(case, r, theta)
        self._replay_one, self._table = replay_one, table
        self.memo = memo if memo is not None else ReplayMemo()
        self.__tokens = self.__memo_hits = 0
        self.agent: Any = None
        self.scm: Any = None

    @property
    def tokens(self) -> int:
        """Model tokens (or words of re-executed text) charged so far (read-only)."""
        return self.__tokens

    @property
    def memo_hits(self) -> int:
        """Seed replays answered by the shared memo so far (charged all the same; read-only)."""
        return self.__memo_hits

    def cost(self) -> Cost:
        """The counters as a :class:`Cost`."""
        return Cost(self.calls, self.tokens, self.memo_hits)

    def charge(self, replays: int = 0, tokens: int = 0) -> None:
        """Charge work: seed replays (a probe re-running the agent, a contrastive rollout) and tokens."""
        if not is_count(tokens, 0):
            raise RcakitError(f"AttributionOracle.charge: tokens = {tokens!r} must be an integer >= 0")
        super().charge(replays)
        self.__tokens += int(tokens)

    def _seed(self, events: frozenset, j: int) -> bool:
        key = (self.case.case_id, events, j)
        if key in self.memo.outcomes:
            self.memo.hits += 1
            self.__memo_hits += 1
        else:
            self.memo.computed += 1
            self.memo.outcomes[key] = self._replay_one(events, j)
        success, tokens = self.memo.outcomes[key]
        self.charge(tokens=tokens)
        return success

    def rollout(self, events: frozenset, j: int) -> bool:
        """Y_j(S): one replay of set ``events`` under seed ``j`` (any ``j >= 0``, not only the r shared
        ones), charged as one seed replay."""
        self.charge(1)
        return self._seed(events, j)

    def successes(self, events: frozenset[str]) -> int:
        """Σ_j Y_j(S), each seed's replay looked up in the memo or computed (and its tokens charged)."""
        return sum(self._seed(events, j) for j in range(self.r))

    def replay_every_subset(self) -> np.ndarray:
        """h_θ of every subset of the players, indexed by bitmask (charges r·2^n seed replays).

        With a ``table``, one vectorised call shared through the memo; else set by set.
        """
        if self._table is None:
            return super().replay_every_subset()
        n = len(self.case.candidates)
        key = (self.case.case_id, "every subset", self.r)
        if key in self.memo.tables:
            self.memo.hits += self.r << n
            self.__memo_hits += self.r << n
        else:
            self.memo.computed += self.r << n
            self.memo.tables[key] = self._table(self.r)
        self.charge(self.r << n)
        return self.memo.tables[key]


Oracle = AttributionOracle  # the name the adapters and testbeds import


class Method(Protocol):
    """An attribution method: ``method(case, oracle, budget)`` -> :class:`Attribution`.

    ``budget`` caps the seed replays the method may spend (``None``: its own
    default). The arguments are passed by position, so a user's method may
    name them as it likes.
    """

    def __call__(self, case: FailedCase, oracle: AttributionOracle, budget: int | None = None, /) -> Attribution: ...
