"""One attribution interface: the failed case a method reads, the answer it returns, and what it paid.

A method is any callable ``method(case, oracle, budget=None) -> Attribution``
(the :class:`Method` protocol). ``case`` (a :class:`FailedCase`) names the
players (hops, events or steps) and carries what a family of methods may read:
the dependency graph as a GCJR ``Case`` with its planted family and fault marks
removed, the failed trace (RAG hops) or the recorded run as an SCM (support
agent). ``oracle`` (an :class:`~rcakit.attribution.oracle.AttributionOracle`)
replays the run with a set of players repaired under r shared seeds and counts
what that costs, as a :class:`Cost`: seed replays, rollouts and the words of
re-executed text. A method that needs what a testbed does not provide raises
:class:`NotApplicable` and is skipped there.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rcakit import RcakitError
from rcakit.repair.graph import Case

if TYPE_CHECKING:
    from rcakit.attribution import AttributionOracle

KINDS = ("point", "ranking", "family")


@dataclass(frozen=True)
class Cost:
    """What one method paid on one case: seed replays (a rollout each), words of re-executed text, memo hits.

    Model tokens are not counted here: a language model's usage is recorded by
    ``rcakit.llm.accounting``, the one token ledger.
    """

    replays: int = 0
    words: int = 0
    memo_hits: int = 0


@dataclass(frozen=True)
class Attribution:
    """A method's answer on one case.

    ``kind`` is ``point`` (``answer``: one player, or None), ``ranking``
    (``answer``: the players, best first) or ``family`` (``answer``: a frozenset
    of frozensets of players, the minimal repair sets). ``cost`` is filled in
    from the oracle's counters by :func:`rcakit.attribution.run_method`;
    a method need not set it.
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
    players: tuple[Any, ...]
    dag: Case
    trace: Any = None


class Method(Protocol):
    """An attribution method: ``method(case, oracle, budget)`` -> :class:`Attribution`.

    ``budget`` caps the seed replays the method may spend (``None``: its own
    default). The arguments are passed by position, so a user's method may
    name them as it likes.
    """

    def __call__(self, case: FailedCase, oracle: AttributionOracle, budget: int | None = None, /) -> Attribution: ...
