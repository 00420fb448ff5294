r"""Shapley values of an SCM's failure, estimated by replay, and the sweeps around them (CAR §4-5).

The game: players are the steps, and :math:`v(S) = P(\text{bad} \mid
\text{steps in } S \text{ held at their observed actions})`, each call
estimated afresh from rollouts (:class:`RolloutValue`). The generic
estimators live in :mod:`rcakit.shapley`; this module adds the SCM value
function, one seeded estimate under a rollout budget, fresh-seed reruns and
how often their intervals hold a target, the efficiency sum read as an
estimate of :math:`v(\emptyset)`, and a convergence sweep against the analytic
values.

Used in the chapter ``car-shapley``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rcakit import stats
from rcakit.scm.model import SCM, do_hold
from rcakit.shapley import ShapleyEstimate, shapley_exact, shapley_permutation


@dataclass
class RolloutValue:
    """v(S) = P(bad | steps in S held at their observed actions), estimated afresh
    from ``samples_per_eval`` rollouts at every call; ``rollouts`` counts them."""

    scm: SCM
    samples_per_eval: int
    rng: np.random.Generator
    rollouts: int = 0

    def __call__(self, coalition: frozenset) -> float:
        self.rollouts += self.samples_per_eval
        return float(self.scm.sample_bad(self.rng, do_hold(coalition), self.samples_per_eval).mean())


def scm_shapley(
    model: SCM,
    n_permutations: int,
    samples_per_eval: int,
    rollout_budget: int,
    value_seed: int | Sequence[int],
    order_seed: int,
    antithetic: bool = True,
) -> ShapleyEstimate:
    """Monte-Carlo Shapley of v(S) = P(bad | S held) on an SCM (CAR §4-5).

    ``rollout_budget`` caps the rollouts (0: no cap); every evaluation of v
    costs ``samples_per_eval`` of them. ``value_seed`` seeds the rollouts and
    ``order_seed`` the permutations.
    """
    value = RolloutValue(model, samples_per_eval, np.random.default_rng(value_seed))
    return shapley_permutation(value, model.n_steps, n_permutations, antithetic=antithetic, seed=order_seed,
                               budget=rollout_budget or None, cost_per_evaluation=samples_per_eval)


def efficiency_from_v_empty(estimate: ShapleyEstimate, alpha: float = 0.05) -> dict:
    r"""The efficiency sum read as one minus an estimate of :math:`v(\emptyset)` (CAR §5).

    Every walk telescopes to :math:`\hat v(N) - \hat v(\emptyset)`, and
    :math:`\hat v(N) = 1` exactly (holding every step replays the failing run),
    so the sum is one minus the share of bad outcomes among the rollouts of
    the walks' empty coalitions. Returns that count, the walks, and the
    Wilson interval of the sum that follows from it.
    """
    empty_rollouts = estimate.walks * estimate.cost_per_evaluation
    empty_bad = round((1 - estimate.efficiency) * empty_rollouts)
    lo, hi = stats.wilson_ci(empty_bad, empty_rollouts, alpha)
    return {"walks": estimate.walks, "empty_rollouts": empty_rollouts, "empty_bad": empty_bad,
            "v_empty": 1 - estimate.efficiency, "efficiency_ci": [1 - hi, 1 - lo]}


def shapley_reruns(
    model: SCM, reruns: int, n_permutations: int, samples_per_eval: int, rollout_budget: int, seed: int
) -> pd.DataFrame:
    """``reruns`` independent repeats of :func:`scm_shapley`, one row per rerun and player.

    Columns ``rerun, player, phi, ci_low, ci_high``: how often an interval
    contains a target is the share of rows whose interval does.
    """
    rows = []
    for r in range(reruns):
        value_seed, order_seed = np.random.default_rng([seed, r]).integers(0, 2**31, size=2)
        est = scm_shapley(model, n_permutations, samples_per_eval, rollout_budget, int(value_seed), int(order_seed))
        for i in range(model.n_steps):
            rows.append({"rerun": r, "player": i, "phi": est.values[i],
                         "ci_low": est.ci_low[i], "ci_high": est.ci_high[i]})
    return pd.DataFrame(rows)


def interval_coverage(reruns: pd.DataFrame, targets: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """How often the reruns' intervals contain each target value, per player, with a Wilson CI.

    ``reruns`` is :func:`shapley_reruns`'s table; ``targets`` maps a label
    (e.g. ``"paper"``) to one value per player.
    """
    rows = []
    for player, group in reruns.groupby("player"):
        for label, values in targets.items():
            value = float(values[player])
            inside = ((group["ci_low"] <= value) & (value <= group["ci_high"])).to_numpy()
            lo, hi = stats.wilson_ci(int(inside.sum()), len(inside))
            rows.append({"step": int(player), "target": label, "value": value,
                         "share of reruns inside": float(inside.mean()), "Wilson low": lo, "Wilson high": hi})
    return pd.DataFrame(rows)


def permutation_budgets(model: SCM, samples_per_eval: int, permutations: Sequence[int]) -> list[int]:
    """The rollouts that each count of antithetic permutations costs: 2 (n + 1) evaluations each."""
    per_permutation = 2 * (model.n_steps + 1) * samples_per_eval
    return [per_permutation * m for m in permutations]


def shapley_convergence(
    model: SCM, budgets: Sequence[int], seeds: int, samples_per_eval: int, seed: int
) -> pd.DataFrame:
    """Error against the analytic values, antithetic against plain sampling, per rollout budget.

    For each budget and each of ``seeds`` repeats, the same rollout budget is
    spent on antithetic pairs and on plain permutations (twice as many walks).
    Columns: ``rollouts, sampling, efficiency error, max per-player error``.
    """
    analytic = shapley_exact(model.analytic_v, model.n_steps)
    total = model.analytic_v(frozenset(range(model.n_steps))) - model.analytic_v(frozenset())
    rows = []
    for budget in budgets:
        for s in range(seeds):
            for antithetic in (True, False):
                est = scm_shapley(model, 10**6, samples_per_eval, budget, [seed, s, budget], s, antithetic)
                rows.append({"rollouts": est.spent,
                             "sampling": "antithetic" if antithetic else "plain",
                             "efficiency error": abs(est.efficiency - total),
                             "max per-player error": float(np.max(np.abs(est.values - analytic)))})
    return pd.DataFrame(rows)
