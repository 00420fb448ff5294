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

Priced in rollouts, from a batched draw of fresh rollouts (``BatchDraw``):
:func:`shapley_car`, CAR's estimator as the chapter runs it, and
:func:`shapley_pooled`, the same antithetic walks with each :math:`v(S)`
pooled over every visit, :math:`v(N) = 1` not rolled out, and a
delete-a-group jackknife interval; from a draw with common random numbers
(``PairedDraw``), :func:`shapley_paired`, whose pairs of walks share their
rollouts' noise, with a padded interval; :func:`shapley_enumerated`, every
coalition from an equal share of the budget; and :func:`shapley_rollouts`,
the default among them. ``benchmarks/bench_rollouts.py`` measures them by
rollouts, RMSE and coverage, beside shapiq's approximators.

Nothing here knows about agents or SCMs: ``rcakit.scm`` supplies a value
function estimated by replay, and ``rcakit.repair.baselines`` the value table
of a replay oracle.

Used in the chapters: ``car-shapley``, ``gcjr-ablations`` (its Shapley
baseline) and ``primer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from math import comb
from typing import Any, cast

import numpy as np
from scipy import stats as scipy_stats

from rcakit import RcakitError

ValueFunction = Callable[[frozenset[Any]], float]
INTERVALS = ("normal", "student", "walks")  # CAR's z interval over pairs; Student's t over pairs; walks as draws
PAD = 1.0  # the bound of a marginal contribution v(S + i) - v(S) to values in [0, 1]: the padded pseudo-rows
# shapley_rollouts: a paired draw counts as coupled when its shared noise removes at least this share of a
# marginal contribution's variance (coupling). A paired difference's variance is 1 - kappa times a fresh one's,
# and on the benchmark's uncoupled game (bench_rollouts.py, unseeded-10) Leverage SHAP's variance was a quarter
# of uncoupled paired walks' at equal rollouts, so pairing pays once 1 - kappa < 1/4.
COUPLED = 0.75


@dataclass(frozen=True)
class KnownFull:
    r"""A protocol's proof that :math:`v(N)` needs no rollout, and its value.

    The estimators by rollouts roll :math:`v(N)` out unless they get one of these: holding every step
    replays the failing run only when the replay is deterministic (CAR §3), and a flaky tool or a hosted
    model's nondeterminism makes :math:`v(N) < 1`, which an assumed 1 turns into a bias of
    :math:`(1 - v(N)) / n` on every player, idle ones included. Build it where the protocol guarantees the
    replay (``rcakit.scm.full_replay`` for an SCM), never from a guess. ``source`` says what proves it.
    """

    value: float
    source: str


def _full_value(full: KnownFull | None, caller: str) -> float | None:
    """``full``'s value, or None to roll v(N) out; a bare number is an assumption, refused."""
    if full is None:
        return None
    if not isinstance(full, KnownFull):
        raise RcakitError(
            f"{caller}: full = {full!r} is an assumption; pass None (v(N) is rolled out) "
            "or a KnownFull proof from a protocol whose replay is deterministic"
        )
    return float(full.value)


def shapley_exact(value_fn: ValueFunction, n: int) -> np.ndarray:
    r"""Exact Shapley values of players ``0 .. n-1`` by enumerating all coalitions.

    :math:`\phi_i = \sum_{S \subseteq N \setminus \{i\}} \frac{|S|!\,(n-|S|-1)!}{n!}
    \bigl(v(S \cup \{i\}) - v(S)\bigr)`. ``value_fn`` is called once per
    coalition; the weighted marginal sums are then taken with numpy over
    coalition bitmasks (:func:`shapley_of_table`).
    """
    size = 1 << n
    coalitions: list[frozenset[Any]] = [frozenset()] * size
    for mask in range(1, size):
        low = mask & -mask
        coalitions[mask] = coalitions[mask ^ low] | {low.bit_length() - 1}
    return shapley_of_table(np.fromiter((value_fn(c) for c in coalitions), dtype=float, count=size))


def shapley_exact_batched(values_of: Callable[[np.ndarray], np.ndarray], n: int) -> np.ndarray:
    """Exact Shapley values from a value function that takes every coalition at once: ``values_of`` gets
    :func:`membership` (row ``m``: coalition bitmask ``m``) and returns the :math:`2^n` values. For games
    that evaluate many coalitions in one call."""
    return shapley_of_table(np.asarray(values_of(membership(n).astype(np.int8)), dtype=float))


def membership(n: int) -> np.ndarray:
    r"""The :math:`2^n \times n` 0/1 matrix of every coalition: row ``m`` is bitmask ``m``, column ``i``
    is 1 when player ``i`` is in it."""
    return (np.arange(1 << n)[:, None] >> np.arange(n)) & 1


def _weights(n: int) -> np.ndarray:
    """Shapley's weight of a coalition of each size ``s < n`` that a player joins: s!(n-s-1)!/n!."""
    return np.array([1.0 / (n * comb(n - 1, s)) for s in range(n)])


def _popcount(masks: np.ndarray) -> np.ndarray:
    counts = np.zeros(masks.shape, dtype=np.int64)
    bits = masks.copy()
    while bits.any():
        counts += bits & 1
        bits >>= 1
    return counts


def shapley_coefficients(n: int) -> np.ndarray:
    r"""The :math:`n \times 2^n` matrix :math:`C` with :math:`\phi = C v` for values ``v`` by bitmask:
    :math:`C_{iS} = w(|S| - 1)` when :math:`i \in S`, else :math:`-w(|S|)`, with Shapley's weights ``w``."""
    popcount, weight = _popcount(np.arange(1 << n)), _weights(n)
    member = membership(n).T
    return np.where(member == 1, weight[np.maximum(popcount - 1, 0)], -weight[np.minimum(popcount, n - 1)])


def shapley_of_table(v: np.ndarray) -> np.ndarray:
    """Exact Shapley values from ``v[m]``, the value of coalition bitmask ``m``, for every ``m < 2^n``."""
    size = len(v)
    n = size.bit_length() - 1
    if size != 1 << n:
        raise RcakitError(f"shapley_of_table: {size} values is not 2^n for any n")
    masks = np.arange(size)
    popcount, weight = _popcount(masks), _weights(n)
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
    ``student``: the same with :math:`t_{M-1,\,1-\alpha/2}` in place of :math:`z`;
    ``padded``: Student's t over the rows and two pseudo-rows at the bounds :math:`-1` and :math:`+1` of a
    marginal contribution to a value in :math:`[0, 1]`, centred on their mean (the device of
    Agresti and Coull's interval for a proportion, one success and one failure added). When nearly every
    row is 0, as under common random numbers for a step with a rare effect, ``student`` shrinks to a
    point and misses; the pseudo-rows keep the width that :math:`M` rows can resolve, and they matter
    less as :math:`M` grows.
    ``s`` is the sample standard deviation (ddof 1); with fewer than two rows
    the interval is NaN. Returns ``(mean, low, high)``, one entry per column.
    """
    if method not in ("normal", "student", "padded"):
        raise RcakitError(f"permutation_interval: method {method!r} is not one of normal, student, padded")
    columns = [np.ascontiguousarray(c) for c in np.asarray(rows, dtype=float).T]  # one player at a time
    m = len(columns[0]) if columns else 0
    mean = np.array([c.mean() if m else np.nan for c in columns])
    if m < 2:
        return mean, np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    if method == "padded":
        columns = [np.concatenate([c, [-PAD, PAD]]) for c in columns]
    centre = np.array([c.mean() for c in columns])
    size = len(columns[0])
    tail = 0.5 + level / 2
    quantile = scipy_stats.norm.ppf(tail) if method == "normal" else scipy_stats.t.ppf(tail, size - 1)
    half = np.array([quantile * c.std(ddof=1) / np.sqrt(size) for c in columns])
    return mean, centre - half, centre + half


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
    coalition: frozenset[Any] = frozenset()
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


# --- estimators priced in rollouts -----------------------------------------------------

# ``draw(masks, k)``: for each coalition bitmask in ``masks`` (bit ``i`` set: player ``i`` held), the number
# of bad outcomes among ``k`` fresh rollouts with that coalition held; an int array like ``masks``. Each call
# draws new rollouts, so one call for every visit of a sweep is the same as one call per visit.
BatchDraw = Callable[[np.ndarray, int], np.ndarray]


def coalition_of(mask: int, n: int) -> frozenset[Any]:
    """The players of bitmask ``mask`` (bit ``i`` set: player ``i`` in), of players ``0 .. n-1``."""
    return frozenset(i for i in range(n) if int(mask) >> i & 1)


@dataclass
class RolloutEstimate:
    """Shapley values estimated from rollouts: the values, their interval (``interval`` at ``level``),
    the rollouts spent, the antithetic pairs walked, and the jackknife groups (:func:`shapley_pooled`) or
    the rows of pair means that any interval of :func:`permutation_interval` takes (:func:`shapley_car`),
    the estimator that produced it, and (from :func:`shapley_rollouts` given a paired draw) the measured
    coupling of the draw, :func:`coupling`."""

    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rollouts: int
    pairs: int
    interval: str
    level: float = 0.95
    groups: int = 0
    rows: np.ndarray | None = None
    estimator: str = ""
    coupling: float = float("nan")


def antithetic_walks(n: int, pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``pairs`` random orderings of ``n`` players, each followed by its reverse (CAR §4).

    Returns ``(orders, masks)``: ``orders[w]`` the players of walk ``w`` in order, and ``masks[w, j]`` the
    bitmask of the coalition of its first ``j`` players (``masks[w, 0] = 0``, ``masks[w, n]`` all players).
    """
    forward = np.array([rng.permutation(n) for _ in range(pairs)], dtype=np.int64).reshape(pairs, n)
    orders = np.empty((2 * pairs, n), dtype=np.int64)
    orders[0::2], orders[1::2] = forward, forward[:, ::-1]
    masks = np.zeros((2 * pairs, n + 1), dtype=np.int64)
    masks[:, 1:] = np.cumsum(np.left_shift(1, orders), axis=1)
    return orders, masks


def _marginals(orders: np.ndarray, values_along: np.ndarray) -> np.ndarray:
    """Per walk, each player's marginal contribution from the values of the walk's coalitions."""
    marginals = np.empty(orders.shape)
    np.put_along_axis(marginals, orders, np.diff(values_along, axis=1), axis=1)
    return marginals


def shapley_car(
    draw: BatchDraw,
    n: int,
    rollout_budget: int,
    *,
    k: int = 12,
    seed: int = 0,
    interval: str = "normal",
    level: float = 0.95,
) -> RolloutEstimate:
    r"""CAR's estimator (CAR §4) priced in rollouts: antithetic pairs, every coalition of every walk
    estimated afresh from ``k`` rollouts (v(∅) and v(N) included), one row per pair, and the ``normal``
    (CAR's) or ``student`` interval over the rows. Only whole pairs fit in ``rollout_budget``:
    :math:`\lfloor B / (2 (n + 1) k) \rfloor` of them. The same estimate as :func:`shapley_permutation`
    with a ``k``-rollout value function, from one batched ``draw``."""
    rng = np.random.default_rng(seed)
    pairs = rollout_budget // (2 * (n + 1) * k)
    orders, masks = antithetic_walks(n, pairs, rng)
    values_along = draw(masks.ravel(), k).reshape(masks.shape) / k
    rows = _marginals(orders, values_along).reshape(pairs, 2, n).mean(axis=1)
    mean, low, high = permutation_interval(rows, interval, level)
    spent = 2 * pairs * (n + 1) * k
    return RolloutEstimate(mean, low, high, spent, pairs, interval, level, rows=rows, estimator="car")


def shapley_pooled(
    draw: BatchDraw,
    n: int,
    rollout_budget: int,
    *,
    k: int = 1,
    full: KnownFull | None = None,
    seed: int = 0,
    groups: int = 20,
    level: float = 0.95,
) -> RolloutEstimate:
    r"""Antithetic walks whose coalition values are pooled over every visit, with a jackknife interval.

    Each visit of a coalition draws ``k`` fresh rollouts, and :math:`\hat v(S)` is the bad fraction of all
    the rollouts drawn for :math:`S` over the whole sweep, not of one visit: a coalition that many walks
    cross is estimated from all of them. :math:`v(N)` is rolled out like the rest unless ``full`` proves
    it (:class:`KnownFull`: a deterministic replay of the failing run), and is then never rolled out.
    :math:`\hat\phi_i` is the mean over walks of :math:`\hat v(S \cup \{i\}) - \hat v(S)`.

    Pooling ties the walks together, so their spread is no interval. The pairs are dealt into ``groups``
    groups; deleting one group's walks and its rollouts gives :math:`\hat\phi^{(-g)}`, and the
    delete-a-group jackknife variance
    :math:`\frac{G-1}{G} \sum_g (\hat\phi^{(-g)} - \bar\phi)^2` with Student's t on :math:`G - 1` degrees
    of freedom gives the interval. Only whole pairs fit in ``rollout_budget``.
    """
    known = _full_value(full, "shapley_pooled")
    rng = np.random.default_rng(seed)
    rolled = n if known is not None else n + 1  # coalitions rolled out per walk
    pairs = rollout_budget // (2 * rolled * k)
    orders, masks = antithetic_walks(n, pairs, rng)
    walks = 2 * pairs
    visited = masks[:, :rolled]  # without the full coalition when it is known
    unique, index = np.unique(visited, return_inverse=True)
    index = index.reshape(visited.shape)
    bad = draw(visited.ravel(), k).reshape(visited.shape)
    g = max(1, min(groups, pairs))
    group_of_walk = (np.arange(walks) // 2) % g
    group_bad = np.zeros((g, len(unique)))
    group_seen = np.zeros((g, len(unique)))
    np.add.at(group_bad, (np.repeat(group_of_walk, rolled), index.ravel()), bad.ravel())
    np.add.at(group_seen, (np.repeat(group_of_walk, rolled), index.ravel()), k)

    def phi(keep: np.ndarray, bad_sum: np.ndarray, seen: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            v = bad_sum / seen  # NaN for a coalition only the deleted group visited: no kept walk uses it
        along = np.empty(masks.shape)
        along[:, :rolled] = v[index]
        if known is not None:
            along[:, n] = known
        return _marginals(orders[keep], along[keep]).mean(axis=0)

    total_bad, total_seen = group_bad.sum(axis=0), group_seen.sum(axis=0)
    everything = np.ones(walks, dtype=bool)
    values = phi(everything, total_bad, total_seen) if walks else np.full(n, np.nan)
    if g < 2:
        nan = np.full(n, np.nan)
        return RolloutEstimate(
            values, nan, nan.copy(), walks * rolled * k, pairs, "jackknife", level, g, None, "pooled"
        )
    deleted = np.array(
        [phi(group_of_walk != j, total_bad - group_bad[j], total_seen - group_seen[j]) for j in range(g)]
    )
    spread = np.sqrt((g - 1) / g * np.sum((deleted - deleted.mean(axis=0)) ** 2, axis=0))
    half = scipy_stats.t.ppf(0.5 + level / 2, g - 1) * spread
    spent = walks * rolled * k
    return RolloutEstimate(values, values - half, values + half, spent, pairs, "jackknife", level, g, None, "pooled")


# ``draw(masks, k)`` with common random numbers: for a (rows, c) array of coalition bitmasks, the (rows, c)
# bad counts of ``k`` rollouts per entry, where rollout ``j`` of every coalition in one row draws each
# resampled step from the same stream, so two coalitions of a row differ only where their held steps do.
# Rows are independent. Only a policy that can be seeded gives such a draw (an SCM, a scripted or a
# local-model agent; not a hosted model).
PairedDraw = Callable[[np.ndarray, int], np.ndarray]


def _paired_along(paired: PairedDraw, orders: np.ndarray, masks: np.ndarray, k: int, known: float | None) -> np.ndarray:
    """The values along each walk of antithetic pairs whose two walks share their ``k`` rollouts' noise:
    one row of the draw per pair, :math:`\\emptyset` once, each walk's proper prefixes, and :math:`v(N)`
    rolled out (once for both walks) unless ``known``."""
    walks, width = masks.shape
    n = width - 1
    along = np.empty((walks, width))
    if not walks:
        return along
    forward, reverse = masks[0::2], masks[1::2]
    tail = [forward[:, n:]] if known is None else []
    values = paired(np.concatenate([forward[:, :n], reverse[:, 1:n], *tail], axis=1), k) / k
    along[0::2, :n] = values[:, :n]
    along[1::2, 0] = values[:, 0]
    along[1::2, 1:n] = values[:, n : 2 * n - 1]
    along[:, n] = known if known is not None else np.repeat(values[:, -1], 2)
    return along


def _pair_rows(orders: np.ndarray, along: np.ndarray) -> np.ndarray:
    """One row per antithetic pair: the mean of its two walks' marginal contributions."""
    return _marginals(orders, along).reshape(-1, 2, orders.shape[1]).mean(axis=1)


def shapley_paired(
    paired: PairedDraw,
    n: int,
    rollout_budget: int,
    *,
    k: int = 1,
    full: KnownFull | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> RolloutEstimate:
    r"""Antithetic walks with common random numbers inside each pair (the refinement CAR §7 leaves open).

    The two walks of a pair share their ``k`` rollouts' noise (``paired``): :math:`\emptyset` is rolled out
    once for both, then the :math:`n - 1` proper prefixes of each walk, and :math:`v(N)` once for both
    unless ``full`` proves it (:class:`KnownFull`): :math:`2n` coalitions per pair, :math:`2n - 1` with the
    proof. A step that changes nothing in a rollout then contributes exactly 0 to it, instead of the
    difference of two independent draws. One row per pair, as in :func:`shapley_car`; the interval is
    ``padded`` (:func:`permutation_interval`), since the rows of a step with a rare effect are nearly all 0
    and Student's t over them shrinks to a point.
    """
    known = _full_value(full, "shapley_paired")
    rng = np.random.default_rng(seed)
    per_pair = 2 * n - 1 + (known is None)
    pairs = rollout_budget // (per_pair * k)
    orders, masks = antithetic_walks(n, pairs, rng)
    rows = _pair_rows(orders, _paired_along(paired, orders, masks, k, known))
    mean, low, high = permutation_interval(rows, "padded", level)
    return RolloutEstimate(mean, low, high, pairs * per_pair * k, pairs, "padded", level, rows=rows, estimator="paired")


def shapley_enumerated(
    draw: BatchDraw, n: int, rollout_budget: int, *, full: KnownFull | None = None, level: float = 0.95
) -> RolloutEstimate:
    r"""Every coalition estimated from an equal share of the budget, then exact Shapley on the estimates.

    The :math:`2^n` coalitions (:math:`2^n - 1` when ``full`` proves :math:`v(N)`, :class:`KnownFull`)
    each get :math:`K = \lfloor B / 2^n \rfloor` rollouts; :math:`\hat\phi = C \hat v` with Shapley's
    coefficients :math:`C` (:func:`shapley_coefficients`). The coalitions are independent, so
    :math:`\operatorname{Var} \hat\phi_i = \sum_S C_{iS}^2\, p_S (1 - p_S) / K`, with each
    :math:`p_S` taken as :math:`(x_S + 1) / (K + 2)` (one bad and one good rollout added, so a coalition
    whose rollouts all agree still carries variance) and a normal interval. For small :math:`n` only: the
    cost grows as :math:`2^n`.
    """
    known = _full_value(full, "shapley_enumerated")
    size = 1 << n
    rolled = size - 1 if known is not None else size
    k = rollout_budget // rolled
    if k < 1:
        nan = np.full(n, np.nan)
        return RolloutEstimate(nan, nan.copy(), nan.copy(), 0, 0, "enumerated", level, estimator="enumerated")
    bad = np.asarray(draw(np.arange(rolled), k), dtype=float)
    v = np.concatenate([bad / k, [known]]) if known is not None else bad / k
    coefficients = shapley_coefficients(n)
    values = coefficients @ v
    smoothed = (bad + 1) / (k + 2)
    spread = coefficients[:, :rolled] ** 2 @ (smoothed * (1 - smoothed) / k)
    half = scipy_stats.norm.ppf(0.5 + level / 2) * np.sqrt(spread)
    return RolloutEstimate(
        values, values - half, values + half, rolled * k, 0, "enumerated", level, estimator="enumerated"
    )


def _leverage_sums(member: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    r"""The sums that Kernel SHAP's projected normal equations need from some sampled rows, stacked as an
    :math:`n \times (n + 3)` array: :math:`P Z^\top \Omega Z P`, then :math:`P Z^\top \Omega y`,
    :math:`P Z^\top \Omega \mathbf 1` and :math:`P Z^\top \Omega |z|`, with rows :math:`z` (``member``),
    outcomes :math:`y`, the leverage weights :math:`\Omega = \operatorname{diag}(1 / (|z| (n - |z|)))` and
    :math:`P = I - \mathbf 1 \mathbf 1^\top / n`. Sums over rows, so groups' sums add and subtract."""
    n = member.shape[1]
    project = np.eye(n) - 1.0 / n
    sizes = member.sum(axis=1)
    weighted = project @ (member / (sizes * (n - sizes))[:, None]).T  # P Z^T Omega, n x rows
    columns = np.column_stack([outcome, np.ones(len(outcome)), sizes])
    return np.hstack([weighted @ member @ project, weighted @ columns])


def _leverage_fit(sums: np.ndarray, v_empty: float, v_full: float) -> np.ndarray:
    r"""Kernel SHAP's constrained weighted least squares from :func:`_leverage_sums`:
    :math:`\min_\phi \sum_z \omega_z (z^\top \phi - y_z + \hat v(\emptyset))^2` subject to
    :math:`\mathbf 1^\top \phi = \hat v(N) - \hat v(\emptyset)`. With :math:`\phi = c \mathbf 1 / n + P u`,
    :math:`c = \hat v(N) - \hat v(\emptyset)`, the normal equations on the constraint's complement are
    :math:`P Z^\top \Omega Z P\, u = P Z^\top \Omega (y - \hat v(\emptyset) - |z|\, c / n)` (Musco and
    Witter, 2024, §3); their minimum-norm solution lies in the range of :math:`P`."""
    n = sums.shape[0]
    total = v_full - v_empty
    rhs = sums[:, n] - v_empty * sums[:, n + 1] - total / n * sums[:, n + 2]
    u = np.linalg.lstsq(sums[:, :n], rhs, rcond=None)[0]
    return total / n + u - u.mean()  # P u


def shapley_leverage(
    draw: BatchDraw,
    n: int,
    rollout_budget: int,
    *,
    full: KnownFull | None = None,
    seed: int = 0,
    groups: int = 20,
    level: float = 0.95,
) -> RolloutEstimate:
    r"""Leverage SHAP (Musco and Witter, "Provably accurate Shapley value estimation via leverage score
    sampling", 2024) on one fresh rollout per sampled coalition, with a delete-a-group jackknife interval.

    Shapley values solve Kernel SHAP's regression: minimise
    :math:`\sum_{0 < |z| < n} \mu(|z|)\,(z^\top\phi - v(z) + v(\emptyset))^2`, with
    :math:`\mu(s) \propto 1 / (\binom{n}{s} s (n - s))`, subject to
    :math:`\mathbf 1^\top \phi = v(N) - v(\emptyset)`. The paper (§3-4) shows that the leverage scores of
    that regression, once the constraint is projected out, are equal within a coalition size and sum to
    the same total for every size: sampling by leverage is a size drawn uniformly from
    :math:`1 .. n - 1` and then a uniform coalition of that size, taken with its complement (paired
    sampling), and a sampled row is reweighted by :math:`\mu / p \propto 1 / (s (n - s))`. Here each
    sampled coalition is one fresh rollout (``draw``), drawn with replacement; :math:`v(\emptyset)` and
    :math:`v(N)` (unless ``full`` proves it, :class:`KnownFull`) get
    :math:`\max(G, B / (2 + n^{3/2}))` rollouts each, since their error reaches every player divided by
    :math:`n` while the regression's grows with :math:`n`. No common random numbers are needed.

    The interval: the sampled pairs and the endpoint rollouts are dealt into ``groups`` groups; refitting
    without each group gives the delete-a-group jackknife variance and Student's t on :math:`G - 1`
    degrees of freedom, as in :func:`shapley_pooled`.
    """
    known = _full_value(full, "shapley_leverage")
    rng = np.random.default_rng(seed)
    ends = 1 if known is not None else 2
    per_end = min(max(groups, round(rollout_budget / (2 + n**1.5))), rollout_budget // (2 * ends))
    pairs = (rollout_budget - ends * per_end) // 2
    nan = np.full(n, np.nan)
    if pairs < 1 or per_end < 1 or n < 2:
        return RolloutEstimate(nan, nan.copy(), nan.copy(), 0, 0, "jackknife", level, estimator="leverage")
    size = rng.integers(1, n, size=pairs)
    ranks = rng.random((pairs, n)).argsort(axis=1).argsort(axis=1)
    member = np.concatenate([ranks < size[:, None], ranks >= size[:, None]]).astype(float)
    outcome = draw(member.astype(np.int64) @ (1 << np.arange(n)), 1).astype(float)
    empty = draw(np.zeros(per_end, dtype=np.int64), 1).astype(float)
    top = draw(np.full(per_end, (1 << n) - 1, dtype=np.int64), 1).astype(float) if known is None else None
    g = max(1, min(groups, pairs, per_end))
    row_group, end_group = np.tile(np.arange(pairs) % g, 2), np.arange(per_end) % g
    group_sums = np.array([_leverage_sums(member[row_group == j], outcome[row_group == j]) for j in range(g)])
    total_sums = group_sums.sum(axis=0)

    def fit(keep: int | None) -> np.ndarray:
        at_end = end_group != keep
        v_full = float(top[at_end].mean()) if top is not None else float(cast(float, known))
        sums = total_sums if keep is None else total_sums - group_sums[keep]
        return _leverage_fit(sums, float(empty[at_end].mean()), v_full)

    values = fit(None)
    spent = 2 * pairs + ends * per_end
    if g < 2:
        return RolloutEstimate(values, nan, nan.copy(), spent, pairs, "jackknife", level, g, estimator="leverage")
    deleted = np.array([fit(j) for j in range(g)])
    spread = np.sqrt((g - 1) / g * np.sum((deleted - deleted.mean(axis=0)) ** 2, axis=0))
    half = scipy_stats.t.ppf(0.5 + level / 2, g - 1) * spread
    return RolloutEstimate(
        values, values - half, values + half, spent, pairs, "jackknife", level, g, estimator="leverage"
    )


def coupling(along: np.ndarray, known: bool) -> float:
    r"""The share of a fresh difference's variance that a paired draw's shared noise removes, measured on
    probe pairs walked twice.

    ``along`` holds the values along each probe pair's walks twice (pair ``p``: walks ``4p .. 4p + 3``, the
    first copy's forward and reverse walks, then the second's), each copy from its own row of the draw, so
    the copies share nothing. For adjacent coalitions :math:`S \subset T` of a walk let :math:`d_S` and
    :math:`d_T` be the differences between the two copies' outcomes. Then
    :math:`E[(d_T - d_S)^2] = 2 \operatorname{Var}(x_T - x_S)` within a row, and
    :math:`E[d_S^2 + d_T^2] = 2 (\operatorname{Var} x_S + \operatorname{Var} x_T)`, the variance of a
    difference of fresh outcomes, so

    .. math:: \kappa = 1 - \frac{\sum (d_T - d_S)^2}{\sum (d_S^2 + d_T^2)}

    is the share of a marginal contribution's variance that pairing removes: about 1 when the outcomes of
    adjacent coalitions move together, about 0 when the draw only claims to pair (for two outcomes of equal
    variance it is their correlation). NaN when the copies never differ (no noise, nothing to share).
    """
    stop = along.shape[1] - (1 if known else 0)
    copies = along.reshape(-1, 2, 2, along.shape[1])[..., :stop]  # pair, copy, direction, coalition
    d = copies[:, 0] - copies[:, 1]
    left, right = d[..., :-1], d[..., 1:]
    fresh = float(np.sum(left**2 + right**2))
    return 1 - float(np.sum((right - left) ** 2)) / fresh if fresh > 0 else float("nan")


def shapley_rollouts(
    n: int,
    rollout_budget: int,
    *,
    draw: BatchDraw | None = None,
    paired: PairedDraw | None = None,
    full: KnownFull | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> RolloutEstimate:
    r"""rcakit's default by rollouts, chosen by measurement (``benchmarks/bench_rollouts.py``).

    :math:`v(N)` is rolled out unless ``full`` proves it (:class:`KnownFull`); an assumed
    :math:`v(N) = 1` biases every player when the replay is flaky.

    Given ``paired`` (a draw that claims common random numbers), the rule: the first
    :math:`\max(4, P / 20)` of the :math:`P` pairs the budget buys are walked twice, each copy in its own row,
    and :func:`coupling` measures :math:`\kappa`, the share of a marginal contribution's variance that the
    draw's shared noise removes. When :math:`\kappa \ge` :data:`COUPLED` (a paired difference then has
    at most a quarter of the variance of a fresh one, which is what Leverage SHAP gains over uncoupled
    walks on the benchmark's uncoupled game) or the copies never differed, the draw counts as
    coupled: :func:`shapley_paired` walks the rest, and the probe's rows join its rows. Otherwise the rest
    of the budget goes to :func:`shapley_leverage`, on ``draw`` when given, else on ``paired`` one
    coalition per row (rows are independent, so that is a fresh draw). A budget of fewer than 16 pairs is
    walked paired with no probe. Given only ``draw``: :func:`shapley_leverage`. The estimate names the
    estimator and carries :math:`\kappa` (``coupling``).
    """
    known = _full_value(full, "shapley_rollouts")
    if paired is None:
        if draw is None:
            raise RcakitError("shapley_rollouts: give draw (fresh rollouts) or paired (common random numbers)")
        return shapley_leverage(draw, n, rollout_budget, full=full, seed=seed, level=level)
    per_pair = 2 * n - 1 + (known is None)
    pairs = rollout_budget // per_pair
    if pairs < 16:
        return shapley_paired(paired, n, rollout_budget, full=full, seed=seed, level=level)
    rng = np.random.default_rng(seed)
    probe = max(4, pairs // 20)
    orders, masks = antithetic_walks(n, probe, rng)
    orders = orders.reshape(probe, 1, 2, n).repeat(2, axis=1).reshape(-1, n)
    masks = masks.reshape(probe, 1, 2, n + 1).repeat(2, axis=1).reshape(-1, n + 1)
    along = _paired_along(paired, orders, masks, 1, known)
    kappa = coupling(along, known is not None)
    spent = 2 * probe * per_pair
    if np.isnan(kappa) or kappa >= COUPLED:
        rest_orders, rest_masks = antithetic_walks(n, pairs - 2 * probe, rng)
        rows = np.concatenate(
            [
                _pair_rows(orders, along),
                _pair_rows(rest_orders, _paired_along(paired, rest_orders, rest_masks, 1, known)),
            ]
        )
        mean, low, high = permutation_interval(rows, "padded", level)
        used = len(rows) * per_pair
        return RolloutEstimate(
            mean, low, high, used, len(rows), "padded", level, rows=rows, estimator="paired", coupling=kappa
        )
    fresh = draw if draw is not None else lambda m, k: paired(m[:, None], k)[:, 0]
    found = shapley_leverage(fresh, n, rollout_budget - spent, full=full, seed=int(rng.integers(2**31)), level=level)
    return replace(found, rollouts=found.rollouts + spent, coupling=kappa)
