"""The replay oracle of the attribution testbeds, which counts its cost, and the memo the methods share.

An :class:`AttributionOracle` replays one failed run with a set of players
repaired under r shared seeds and counts what that costs, as a
:class:`~rcakit.attribution.interface.Cost`: seed replays, rollouts and the
words of re-executed text (the RAG agent's replays).

The oracle is a :class:`~rcakit.repair.SharedSeedOracle`, the
base class of every replay oracle: it implements only the successes of a set,
so GCJR's search and baselines run on every testbed unchanged, and the base
class owns r, θ, the counter of seed replays and the charging hook, which
here also takes words. Replays that several methods share inside one
chapter run are looked up in a :class:`ReplayMemo` keyed by (case, set,
seed): a memo hit costs no computation, but it is still charged to the method
(each method pays what it would pay alone); the hits are counted apart.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rcakit import RcakitError
from rcakit.attribution.interface import Cost
from rcakit.repair.graph import Case
from rcakit.repair.oracle import THETA, SharedSeedOracle, ThetaLike, is_count


class ReplayMemo:
    """Replay outcomes shared by the methods of one chapter run, keyed by (case, set, seed)."""

    def __init__(self) -> None:
        self.outcomes: dict[tuple[Any, ...], tuple[bool, int]] = {}
        self.tables: dict[tuple[Any, ...], np.ndarray] = {}
        self.hits = 0
        self.computed = 0


ReplayOne = Callable[[frozenset[Any], int], tuple[bool, int]]


class AttributionOracle(SharedSeedOracle):
    """h_θ(S) over r shared seeds for one failed case, counting its own cost (GCJR §Core problem).

    ``replay_one(S, j) -> (success, words)`` replays the run once with the
    players in S repaired under seed j. ``table(r) -> h_θ per bitmask``, when
    given, replays every subset at once under the same r and θ (a vectorised
    testbed). The counters ``calls`` (seed replays), ``words`` and
    ``memo_hits`` only grow, through :meth:`charge` and the memo. Extra
    capabilities (``agent``, ``scm``) are attached by a testbed.
    """

    __slots__ = ("_replay_one", "_table", "memo", "__words", "__memo_hits", "agent", "scm")

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
        self.__words = self.__memo_hits = 0
        self.agent: Any = None
        self.scm: Any = None

    @property
    def words(self) -> int:
        """Words of re-executed text charged so far (read-only)."""
        return self.__words

    @property
    def memo_hits(self) -> int:
        """Seed replays answered by the shared memo so far (charged all the same; read-only)."""
        return self.__memo_hits

    def cost(self) -> Cost:
        """The counters as a :class:`~rcakit.attribution.interface.Cost`."""
        return Cost(self.calls, self.words, self.memo_hits)

    def charge(self, replays: int = 0, words: int = 0) -> None:
        """Charge work: seed replays (a probe re-running the agent, a contrastive rollout) and words."""
        if not is_count(words, 0):
            raise RcakitError(f"AttributionOracle.charge: words = {words!r} must be an integer >= 0")
        super().charge(replays)
        self.__words += int(words)

    def _seed(self, events: frozenset[Any], j: int) -> bool:
        key = (self.case.case_id, events, j)
        if key in self.memo.outcomes:
            self.memo.hits += 1
            self.__memo_hits += 1
        else:
            self.memo.computed += 1
            self.memo.outcomes[key] = self._replay_one(events, j)
        success, words = self.memo.outcomes[key]
        self.charge(words=words)
        return success

    def rollout(self, events: frozenset[Any], j: int) -> bool:
        """Y_j(S): one replay of set ``events`` under seed ``j`` (any ``j >= 0``, not only the r shared
        ones), charged as one seed replay."""
        self.charge(1)
        return self._seed(events, j)

    def successes(self, events: frozenset[str]) -> int:
        """Σ_j Y_j(S), each seed's replay looked up in the memo or computed (and its words charged)."""
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
