"""Interval estimates shared by every chapter.

Wilson intervals (Wilson, 1927) come from statsmodels. The bootstraps
(Efron and Tibshirani, 1994) are seeded percentile bootstraps: over numpy,
sharing one resampling step (:func:`resample`), a statistic of one sample
(:func:`bootstrap_ci`) and a difference of two independent means
(:func:`bootstrap_difference_ci`); the AgenticRAG-FP accuracy convention
(:func:`bootstrap_accuracy_ci`) over Python's ``random.Random``, as the
authors draw it, so their published intervals can be recomputed exactly. Nothing here re-implements what those
libraries offer.

Used in the chapters: ``primer`` and ``car-shapley`` (Wilson, the two-arm
bootstrap of a contrastive effect, CLT intervals of Shapley values);
``coverage-collapse`` and ``content-corruption`` through ``rcakit.rag`` (the
accuracy bootstrap); ``longrca-strata`` through ``rcakit.trajectories``
(Wilson).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
from statsmodels.stats.proportion import proportion_confint

Streams = TypeVar("Streams", bound=NamedTuple)


def wilson_ci(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a proportion; ``(nan, nan)`` when ``n == 0``."""
    if n == 0:
        return (float("nan"), float("nan"))
    # two scalar counts give two floats; statsmodels' inferred type also covers array and frame inputs
    lo, hi = cast(tuple[float, float], proportion_confint(int(successes), int(n), alpha=alpha, method="wilson"))
    return (float(lo), float(hi))


def accuracy_with_ci(correct: Sequence[bool], alpha: float = 0.05) -> dict[str, Any]:
    """``{acc, n, lo, hi}`` of a hit/miss list, with a Wilson interval."""
    hits, n = int(np.sum(correct)), len(correct)
    lo, hi = wilson_ci(hits, n, alpha)
    return {"acc": hits / n if n else float("nan"), "n": n, "lo": lo, "hi": hi}


def resample(data: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` resamples of ``data``'s rows with replacement, each of ``len(data)`` rows.

    The one resampling step of every bootstrap here: shape ``(n_boot, len(data), ...)``.
    """
    return data[rng.integers(0, len(data), size=(n_boot, len(data)))]


def percentile_interval(draws: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` interval of bootstrap draws (numpy's linear percentiles)."""
    tail = (100 - 100 * level) / 2  # exactly 2.5 at level 0.95
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return (float(lo), float(hi))


def bootstrap_ci(
    data: Sequence[Any] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Percentile bootstrap: ``(statistic(data), lo, hi)``.

    Resamples rows of ``data`` with replacement ``n_boot`` times from a
    generator seeded with ``seed``. Empty data gives three NaNs.
    """
    arr = np.asarray(data)
    if len(arr) == 0:
        return (math.nan, math.nan, math.nan)
    draws = np.array([statistic(row) for row in resample(arr, n_boot, np.random.default_rng(seed))])
    return (float(statistic(arr)), *percentile_interval(draws, level))


def bootstrap_accuracy_ci(correct: Sequence[bool], n_boot: int = 1000, seed: int = 42) -> tuple[float, float, float]:
    """Accuracy of a hit/miss list with the AgenticRAG-FP bootstrap CI, drawn as the authors draw it.

    ``n_boot`` resamples of size n with replacement from Python's
    ``random.Random(seed)`` (``choices``, one index at a time), the sorted
    resampled accuracies read at the 2.5% and 97.5% positions, not
    interpolated as :func:`percentile_interval` does (the authors' convention,
    seed 42). The point estimate is the full-sample accuracy.
    """
    hits = [bool(c) for c in correct]
    n = len(hits)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    rng = random.Random(seed)
    accs = sorted(sum(rng.choices(hits, k=n)) / n for _ in range(n_boot))
    lo = accs[max(0, int(0.025 * n_boot))]
    hi = accs[min(int(0.975 * n_boot), n_boot - 1)]
    return (sum(hits) / n, lo, hi)


def bootstrap_difference_ci(
    a: Sequence[Any] | np.ndarray,
    b: Sequence[Any] | np.ndarray,
    n_boot: int = 1000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Percentile bootstrap of ``mean(a) - mean(b)``: ``(difference, lo, hi)``.

    Each arm is resampled independently (two separate samples, as CAR §4's
    contrastive effect compares an intervention's rollouts with the observed
    run's replays). ``seed`` may be a generator, so a caller can continue one
    stream.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    draws = resample(a, n_boot, rng).mean(axis=1) - resample(b, n_boot, rng).mean(axis=1)
    return (float(a.mean() - b.mean()), *percentile_interval(draws, level))


def mean_ci_normal(values: Sequence[float], z: float = 1.959963984540054) -> tuple[float, float, float]:
    """CLT interval ``mean ± z·sd/sqrt(M)`` (sample sd, ddof=1)."""
    arr = np.asarray(values, dtype=float)
    m = arr.mean()
    half = z * arr.std(ddof=1) / np.sqrt(len(arr)) if len(arr) > 1 else float("nan")
    return (float(m), float(m - half), float(m + half))


def seed_streams(seed: int, streams: type[Streams]) -> Streams:
    """One independent integer seed per named use, drawn from the master ``seed``.

    ``streams`` is a ``NamedTuple`` of ints whose fields name the uses, in the
    order they are drawn (a chapter defines it: ``PrimerStreams``,
    ``CarStreams``); a use then reads ``streams.contrasts``, not an index, and
    draws the same numbers whichever of the other uses ran before it. Adding
    a field at the end keeps every earlier stream's value.
    """
    draws = np.random.default_rng(seed).integers(0, 2**31, size=len(streams._fields))
    return streams._make(int(d) for d in draws)
