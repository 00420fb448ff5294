r"""Replay fidelity: does replaying a recorded step reproduce its action? (CAR §3)

The action-match rate is the share of replayed steps whose action equals the
recorded one,

.. math:: \mathrm{AMR} = \frac{1}{|K|} \sum_{k \in K} \mathbf{1}[\hat a_k = a_k],

with a Wilson interval. CAR reports this rate rather than assuming replay is
exact. Any replay can be scored this way: an SCM's steps
(:func:`rcakit.scm.action_match_rate`) or an agentic-RAG reader's reads
(:mod:`rcakit.rag.fidelity`).

Used in the chapters: `car-shapley`, `coverage-collapse`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rcakit import stats


@dataclass(frozen=True)
class ActionMatch:
    """Per replayed step: the recorded action, the replayed one, and whether they match."""

    steps: tuple[int, ...]
    recorded: tuple[Any, ...]
    replayed: tuple[Any, ...]

    @property
    def matches(self) -> tuple[bool, ...]:
        return tuple(a == b for a, b in zip(self.recorded, self.replayed, strict=True))

    @property
    def n(self) -> int:
        return len(self.steps)

    @property
    def rate(self) -> float:
        """The action-match rate: the share of replayed steps whose action matches."""
        return sum(self.matches) / self.n if self.n else float("nan")

    def ci(self, alpha: float = 0.05) -> tuple[float, float]:
        """The Wilson interval of the rate."""
        return stats.wilson_ci(sum(self.matches), self.n, alpha)

    def __add__(self, other: ActionMatch) -> ActionMatch:
        """Pool two replays (e.g. of several recorded runs) into one count."""
        return ActionMatch(self.steps + other.steps, self.recorded + other.recorded, self.replayed + other.replayed)
