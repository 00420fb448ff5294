"""Interval estimates shared by every chapter.

Wilson intervals come from statsmodels; the bootstrap is a seeded percentile
bootstrap over numpy. Nothing here re-implements what those libraries offer.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from statsmodels.stats.proportion import proportion_confint


def wilson_ci(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a proportion; ``(nan, nan)`` when ``n == 0``."""
    if n == 0:
        return (float("nan"), float("nan"))
    lo, hi = proportion_confint(int(successes), int(n), alpha=alpha, method="wilson")
    return (float(lo), float(hi))


def accuracy_with_ci(correct: Sequence[bool], alpha: float = 0.05) -> dict:
    """``{acc, n, lo, hi}`` of a hit/miss list, with a Wilson interval."""
    hits, n = int(np.sum(correct)), len(correct)
    lo, hi = wilson_ci(hits, n, alpha)
    return {"acc": hits / n if n else float("nan"), "n": n, "lo": lo, "hi": hi}


def bootstrap_ci(
    data: Sequence | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Percentile bootstrap: ``(statistic(data), lo, hi)``.

    Resamples rows of ``data`` with replacement ``n_boot`` times from a
    generator seeded with ``seed``. Empty data gives three NaNs.
    """
    arr = np.asarray(data)
    if len(arr) == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(arr), size=(n_boot, len(arr)))
    stats = np.array([statistic(arr[row]) for row in idx])
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return (float(statistic(arr)), float(lo), float(hi))


def bootstrap_accuracy_ci(
    correct: Sequence[bool], n_boot: int = 1000, seed: int = 42
) -> tuple[float, float, float]:
    """Accuracy of a hit/miss list with the AgenticRAG-FP bootstrap CI.

    B resamples of size n with replacement; the sorted resampled accuracies are
    read at the 2.5% and 97.5% positions (the authors' convention, seed 42).
    The point estimate is the full-sample accuracy.
    """
    arr = np.asarray(correct, dtype=float)
    n = len(arr)
    if n == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    accs = np.sort(arr[rng.integers(0, n, size=(n_boot, n))].mean(axis=1))
    lo = accs[int(0.025 * n_boot)]
    hi = accs[min(int(0.975 * n_boot), n_boot - 1)]
    return (float(arr.mean()), float(lo), float(hi))


def mean_ci_normal(values: Sequence[float], z: float = 1.959963984540054) -> tuple[float, float, float]:
    """CLT interval ``mean ± z·sd/sqrt(M)`` (sample sd, ddof=1)."""
    arr = np.asarray(values, dtype=float)
    m = arr.mean()
    half = z * arr.std(ddof=1) / np.sqrt(len(arr)) if len(arr) > 1 else float("nan")
    return (float(m), float(m - half), float(m + half))
