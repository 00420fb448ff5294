r"""Shapley values of any set function ``v(coalition) -> float`` (CAR §4).

Players are ``0 .. n-1`` and a coalition is a ``frozenset`` of them. Two
estimators:

- :func:`shapley_exact` enumerates all :math:`2^n` coalitions
  (Shapley, 1953);
- :func:`shapley_permutation` samples random orderings and averages each
  player's marginal contribution along them (Castro et al., 2009), with CAR's
  antithetic pairing (every ordering is also walked in reverse), a budget
  breaker that keeps only whole permutations, and intervals
  (:func:`permutation_interval`).

The intervals (:data:`INTERVALS`) are computed from the same rows: CAR's
``normal`` interval, :math:`\bar x \pm z\, s / \sqrt{M}` over the :math:`M`
antithetic pairs (CAR §4); ``student``, the same with the quantile of
Student's t with :math:`M - 1` degrees of freedom, which keeps its nominal
coverage when :math:`M` is small; and ``walks``, every walk taken as its own
draw (what ignoring the pairing would give), kept to measure that choice.

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
from scipy import stats as scipy_stats

from rcakit import RcakitError

ValueFunction = Callable[[frozenset], float]
INTERVALS = ("normal", "student", "walks")  # CAR's z interval over pairs; Student's t over pairs; walks as draws


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


def permutation_interval(
    rows: np.ndarray, method: str = "normal", level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Mean and interval per player (column) of i.i.d. rows of marginal contributions (CAR §4).

    ``normal``: :math:`\bar x \pm z_{1-\alpha/2}\, s / \sqrt{M}`, CAR's interval;
    ``student``: the same with :math:`t_{M-1,\,1-\alpha/2}` in place of :math:`z`.
    ``s`` is the sample standard deviation (ddof 1); with fewer than two rows
    the interval is NaN. Returns ``(mean, low, high)``, one entry per column.
    """
    if method not in ("normal", "student"):
        raise RcakitError(f"permutation_interval: method {method!r} is not one of normal, student")
    columns = [np.ascontiguousarray(c) for c in np.asarray(rows, dtype=float).T]  # one player at a time
    m = len(columns[0]) if columns else 0
    mean = np.array([c.mean() if m else np.nan for c in columns])
    if m < 2:
        return mean, np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    tail = 0.5 + level / 2
    quantile = scipy_stats.norm.ppf(tail) if method == "normal" else scipy_stats.t.ppf(tail, m - 1)
    half = np.array([quantile * c.std(ddof=1) / np.sqrt(m) for c in columns])
    return mean, mean - half, mean + half


@dataclass
class ShapleyEstimate:
    r"""Monte-Carlo Shapley values with intervals.

    ``samples`` holds one row per completed permutation (the average of its
    forward and reverse walks when antithetic), ``walk_samples`` one row per
    walk (forward, then reverse). ``ci_low`` and ``ci_high`` are the
    ``interval`` (:data:`INTERVALS`) at ``level``; :meth:`interval` gives any
    other. ``evaluations`` counts the calls of the value function and
    ``spent`` the budget they used (``evaluations`` times the cost of one call).
    """

    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    evaluations: int
    permutations: int
    truncated: bool
    samples: np.ndarray
    cost_per_evaluation: int = 1
    walk_samples: np.ndarray | None = None
    interval_method: str = "normal"
    level: float = 0.95

    def interval(self, method: str, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` per player by ``method`` (:data:`INTERVALS`), at ``level`` (default: the estimate's).

        ``walks`` treats each walk as an independent draw: the normal interval
        over ``walk_samples``, which ignores the antithetic pairing.
        """
        if method not in INTERVALS:
            raise RcakitError(f"interval: method {method!r} is not one of {', '.join(INTERVALS)}")
        level = self.level if level is None else level
        if method == "walks":
            walks = self.samples if self.walk_samples is None else self.walk_samples
            _, low, high = permutation_interval(walks, "normal", level)
        else:
            _, low, high = permutation_interval(self.samples, method, level)
        return low, high

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
    interval: str = "normal",
    level: float = 0.95,
) -> ShapleyEstimate:
    """Monte-Carlo Shapley by random permutations (CAR §4).

    With ``antithetic`` each sampled permutation is also walked in reverse and
    the two walks' marginals are averaged into one row: the pair is one draw.
    ``value_fn`` is called afresh for every coalition of every walk: no caching
    across permutations, so a noisy (sampled) value function keeps independent
    rows, and their spread carries the noise of the value function.
    ``interval`` picks the interval of ``ci_low`` and ``ci_high``
    (:data:`INTERVALS`; CAR's is ``normal``).

    ``budget`` caps what the calls may cost, in the caller's unit: one call
    costs ``cost_per_evaluation`` (for a value estimated from 12 rollouts per
    call, 12 rollouts). The breaker stops before a permutation that would not
    fit, so only completed permutations enter the estimate. ``None``: no cap.
    """
    if cost_per_evaluation < 1:
        raise RcakitError(f"shapley_permutation: cost_per_evaluation = {cost_per_evaluation!r} must be >= 1")
    if interval not in INTERVALS:
        raise RcakitError(f"shapley_permutation: interval {interval!r} is not one of {', '.join(INTERVALS)}")
    rng = np.random.default_rng(seed)
    calls = (n + 1) * (2 if antithetic else 1)
    walks, evaluations, truncated = [], 0, False
    for _ in range(n_permutations):
        if budget is not None and (evaluations + calls) * cost_per_evaluation > budget:
            truncated = True
            break
        order = rng.permutation(n)
        walks.append(_walk(value_fn, order))
        if antithetic:
            walks.append(_reverse_walk(value_fn, order))
        evaluations += calls
    walk_samples = np.array(walks).reshape(len(walks), n)
    per_row = 2 if antithetic else 1
    samples = walk_samples.reshape(-1, per_row, n).mean(axis=1)
    estimate = ShapleyEstimate(
        permutation_interval(samples)[0],
        np.empty(n),
        np.empty(n),
        evaluations,
        len(samples),
        truncated,
        samples,
        cost_per_evaluation,
        walk_samples,
        interval,
        level,
    )
    estimate.ci_low, estimate.ci_high = estimate.interval(interval)
    return estimate
