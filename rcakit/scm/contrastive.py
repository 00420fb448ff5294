"""The contrastive estimator and the point-of-commitment locus (CAR §4).

The effect of step ``k`` compares the run re-decided from step ``k`` onward
with the observed run replayed as it was; the locus is the latest step whose
re-decision still rescues the run.

Used in the chapters: ``car-shapley`` and ``primer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rcakit import stats
from rcakit.scm.causal_model import SCM, do_hold, do_resample


@dataclass
class Contrastive:
    """Per-step effects and the point-of-commitment locus (None if no step qualifies)."""

    table: pd.DataFrame
    locus: int | None


def contrastive_effects(scm: SCM, k_samples: int, seed: int, *, n_boot: int = 1000, level: float = 0.95) -> Contrastive:
    """Effect of step k: P(bad | steps < k held, k and later resampled) - P(bad | observed).

    P(bad | observed) is estimated by ``k_samples`` replays that hold every step.
    Each proportion gets a Wilson interval and the difference a percentile
    bootstrap interval (:func:`rcakit.stats.bootstrap_difference_ci`), both at
    ``level``. The locus is the LAST step whose interval excludes 0 with a
    negative effect: the point of commitment, the latest step at which
    re-deciding can still rescue the run (CAR §4).
    """
    rng = np.random.default_rng(seed)
    observed = scm.sample_bad(rng, do_hold(range(scm.n_steps)), k_samples)
    rows = []
    for k, step in enumerate(scm.steps):
        bad = scm.sample_bad(rng, do_resample(k), k_samples)
        diff, lo, hi = stats.bootstrap_difference_ci(bad, observed, n_boot, rng, level=level)
        p_lo, p_hi = stats.wilson_ci(int(bad.sum()), k_samples, alpha=1 - level)
        rows.append(
            {
                "step": k,
                "name": step.name,
                "p_bad_do": bad.mean(),
                "p_lo": p_lo,
                "p_hi": p_hi,
                "p_bad_observed": observed.mean(),
                "effect": diff,
                "effect_lo": lo,
                "effect_hi": hi,
            }
        )
    table = pd.DataFrame(rows)
    rescuing = table.index[table["effect_hi"] < 0]
    return Contrastive(table, int(rescuing.max()) if len(rescuing) else None)


def analytic_effects(scm: SCM) -> list[float]:
    r"""The contrastive effects in closed form, from the SCM's analytic :math:`v` (CAR §4).

    Resampling step ``k`` and every later step, with the earlier steps held,
    is :math:`v(\{0, \dots, k-1\})`; holding every step is :math:`v(N)`. So
    :math:`\Delta_k = v(\{0, \dots, k-1\}) - v(N)`.
    """
    if scm.analytic_v is None:
        raise ValueError("this SCM has no closed-form value function (analytic_v)")
    v = scm.analytic_v
    held_all = v(frozenset(range(scm.n_steps)))
    return [v(frozenset(range(k))) - held_all for k in range(scm.n_steps)]
