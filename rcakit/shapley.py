"""Shapley values of any set function ``v(coalition) -> float`` (CAR §4).

Players are ``0 .. n-1`` and a coalition is a ``frozenset`` of them. Two
estimators:

- :func:`shapley_exact` enumerates all :math:`2^n` coalitions
  (Shapley, 1953);
- :func:`shapley_permutation` samples random orderings and averages each
  player's marginal contribution along them (Castro et al., 2009), with CAR's
  antithetic pairing (every ordering is also walked in reverse), a budget
  breaker that keeps only whole permutations, and CLT intervals.

Nothing here knows about agents or SCMs: ``rcakit.scm`` supplies a value
function estimated by replay, and ``rcakit.repair.baselines`` the value table
of a replay oracle.

Used in the chapters: ``car-shapley``, ``gcjr-ablations`` (its Shapley
baseline) and ``primer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import comb

import numpy as np

from rcakit import RcakitError, stats

ValueFunction = Callable[[frozenset], float]


def shapley_exact(value_fn: ValueFunction, n: int) -> np.ndarray:
    r"""Exact Shapley values of players ``0 .. n-1`` by enumerating all coalitions.

    :math:`\phi_i = \sum_{S \subseteq N \setminus \{i\}} \frac{|S|!\,(n-|S|-1)!}{n!}
    \bigl(v(S \cup \{i\}) - v(S)\bigr)`. ``value_fn`` is called once per
    coalition; the weighted marginal sums are then taken with numpy over
    coalition bitmasks.
    """
    size = 1 << n
    coalitions: list[frozenset] = [frozenset()] * size
    for mask in range(1, size):
        low = mask & -mask
        coalitions[mask] = coalitions[mask ^ low] | {low.bit_length() - 1}
    v = np.fromiter((value_fn(c) for c in coalitions), dtype=float, count=size)
    masks = np.arange(size)
    popcount = np.array([len(c) for c in coalitions])
    weight = np.array([1.0 / (n * comb(n - 1, s)) for s in range(n)])
    phi = np.empty(n)
    for i in range(n):
        without = masks[(masks >> i) & 1 == 0]
        phi[i] = np.sum(weight[popcount[without]] * (v[without | (1 << i)] - v[without]))
    return phi


@dataclass
class ShapleyEstimate:
    r"""Monte-Carlo Shapley values with CLT intervals.

    ``samples`` holds one row per completed permutation (the average of its
    forward and reverse walks when antithetic); the intervals are
    :math:`\bar x \pm z\, s / \sqrt{M}` over those :math:`M` rows. ``evaluations`` counts the calls of
    the value function and ``spent`` the budget they used (``evaluations``
    times the cost of one call).
    """

    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    evaluations: int
    permutations: int
    truncated: bool
    samples: np.ndarray
    cost_per_evaluation: int = 1

    @property
    def efficiency(self) -> float:
        """The sum of the values; it estimates v(all players) - v(empty set)."""
        return float(self.values.sum())

    @property
    def spent(self) -> int:
        """Budget used: value-function calls times the cost of one call."""
        return self.evaluations * self.cost_per_evaluation

    @property
    def walks(self) -> int:
        """Orderings walked (two per permutation when antithetic)."""
        return self.evaluations // (len(self.values) + 1)


def _walk(value_fn: ValueFunction, order: np.ndarray) -> np.ndarray:
    """Marginal contribution of each player along one ordering (n + 1 evaluations)."""
    marginals = np.empty(len(order))
    coalition: frozenset = frozenset()
    previous = value_fn(coalition)
    for player in order:
        coalition = coalition | {int(player)}
        current = value_fn(coalition)
        marginals[player] = current - previous
        previous = current
    return marginals


def _reverse_walk(value_fn: ValueFunction, order: np.ndarray) -> np.ndarray:
    """The antithetic partner of a walk: the same players in reverse order (CAR §4)."""
    return _walk(value_fn, order[::-1])


def shapley_permutation(
    value_fn: ValueFunction,
    n: int,
    n_permutations: int,
    antithetic: bool = True,
    seed: int = 0,
    budget: int | None = None,
    cost_per_evaluation: int = 1,
) -> ShapleyEstimate:
    """Monte-Carlo Shapley by random permutations (CAR §4).

    With ``antithetic`` each sampled permutation is also walked in reverse and
    the two walks' marginals are averaged. ``value_fn`` is called afresh for
    every coalition of every walk: no caching across permutations, so a noisy
    (sampled) value function keeps independent marginals.

    ``budget`` caps what the calls may cost, in the caller's unit: one call
    costs ``cost_per_evaluation`` (for a value estimated from 12 rollouts per
    call, 12 rollouts). The breaker stops before a permutation that would not
    fit, so only completed permutations enter the estimate. ``None``: no cap.
    """
    if cost_per_evaluation < 1:
        raise RcakitError(f"shapley_permutation: cost_per_evaluation = {cost_per_evaluation!r} must be >= 1")
    rng = np.random.default_rng(seed)
    calls = (n + 1) * (2 if antithetic else 1)
    rows, evaluations, truncated = [], 0, False
    for _ in range(n_permutations):
        if budget is not None and (evaluations + calls) * cost_per_evaluation > budget:
            truncated = True
            break
        order = rng.permutation(n)
        marginals = _walk(value_fn, order)
        if antithetic:
            marginals = (marginals + _reverse_walk(value_fn, order)) / 2
        rows.append(marginals)
        evaluations += calls
    samples = np.array(rows).reshape(len(rows), n)
    intervals = np.array([stats.mean_ci_normal(samples[:, i]) for i in range(n)]).reshape(n, 3)
    return ShapleyEstimate(
        intervals[:, 0], intervals[:, 1], intervals[:, 2], evaluations, len(rows), truncated, samples,
        cost_per_evaluation,
    )
