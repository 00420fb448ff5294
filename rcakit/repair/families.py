"""Repair families: what a repair method returns, the minimality filter and the ranking (GCJR §Core problem).

A repair family is a set of event sets. The target F_{q,θ} is its
inclusion-minimal successes (an antichain); ``minimal_sets`` is the one
inclusion-minimality filter of the package, used by the searches, the
baselines, the benchmark's reference family and the attribution testbeds.
``ranked`` orders a family for RS@1, and ``RepairResult`` carries a family
and its ranking. The module depends on nothing else in ``rcakit.repair``,
so the oracle, the search and the benchmark can all import it.

Used in the chapters: `primer`, `gcjr-ablations`, `attribution-families`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

Family = frozenset[frozenset[str]]


@dataclass(frozen=True)
class RepairResult:
    """A method's output on one case.

    family: the returned sets; ranking: the same sets, best first (size, then
    mean replay success, then earliest event in the schedule). The replay
    cost is not part of the result: the oracle counts it (``Oracle.calls``).
    """

    family: Family
    ranking: tuple[frozenset[str], ...]


def minimal_sets(sets: Iterable[frozenset[Any]]) -> frozenset[Any]:
    """The inclusion-minimal members of ``sets`` (an antichain)."""
    sets = set(sets)
    return frozenset(s for s in sets if not any(t < s for t in sets))


def ranked(
    family: Iterable[frozenset[str]], means: Mapping[frozenset[str], Fraction | float], order: Sequence[str]
) -> tuple[frozenset[str], ...]:
    """``family`` best first: smaller sets, then higher mean replay success, then the earliest event in ``order``."""
    pos = {v: i for i, v in enumerate(order)}
    return tuple(sorted(family, key=lambda s: (len(s), -means[s], min(pos[v] for v in s))))
