r"""Shapley values of an SCM's failure, estimated by replay, and the sweeps around them (CAR §4-5).

The game: players are the steps, and :math:`v(S) = P(\text{bad} \mid
\text{steps in } S \text{ held at their observed actions})`, each call
estimated afresh from rollouts (:class:`RolloutValue`). The generic
estimators live in :mod:`rcakit.shapley`; this module adds the SCM value
function, one seeded estimate under a rollout budget, the efficiency sum read
as an estimate of :math:`v(\emptyset)`, fresh-seed reruns and how often
their intervals hold a target (:func:`coverage_study`: CAR's interval beside
Student's t, walks taken as independent draws, and cached values of
:math:`v`), a convergence sweep against the analytic values, and the
estimators priced in rollouts (:func:`rollout_study`: CAR's against pooled
values of :math:`v`).

Used in the chapter ``car-shapley``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from rcakit import stats
from rcakit.scm.causal_model import SCM, do_hold
from rcakit.shapley import (
    INTERVALS,
    BatchDraw,
    KnownFull,
    PairedDraw,
    ShapleyEstimate,
    ValueFunction,
    coalition_of,
    permutation_interval,
    shapley_car,
    shapley_enumerated,
    shapley_exact,
    shapley_leverage,
    shapley_paired,
    shapley_permutation,
    shapley_pooled,
    shapley_rollouts,
)


def closed_form(model: SCM) -> ValueFunction:
    """The SCM's analytic value function v(S); an SCM without one cannot be checked against it."""
    if model.analytic_v is None:
        raise ValueError("this SCM has no closed-form value function (analytic_v)")
    return model.analytic_v


@dataclass
class RolloutValue:
    """v(S) = P(bad | steps in S held at their observed actions), estimated afresh
    from ``samples_per_eval`` rollouts at every call; ``rollouts`` counts them.

    ``tallies`` keeps, per coalition, the bad rollouts and all rollouts drawn
    for it. With ``cache`` each coalition is estimated once and the estimate
    reused: the variant CAR §4 avoids, kept to measure what it does to the
    intervals.
    """

    scm: SCM
    samples_per_eval: int
    rng: np.random.Generator
    rollouts: int = 0
    cache: bool = False
    tallies: dict[frozenset[Any], list[int]] = field(default_factory=dict)

    def __call__(self, coalition: frozenset[Any]) -> float:
        tally = self.tallies.setdefault(frozenset(coalition), [0, 0])
        if self.cache and tally[1]:
            return tally[0] / tally[1]
        bad = self.scm.sample_bad(self.rng, do_hold(coalition), self.samples_per_eval)
        self.rollouts += self.samples_per_eval
        tally[0] += int(bad.sum())
        tally[1] += self.samples_per_eval
        return float(bad.mean())


@dataclass
class SCMShapley(ShapleyEstimate):
    """A :class:`~rcakit.shapley.ShapleyEstimate` of an SCM's failure, with the rollout
    tallies of its value function: coalition -> ``[bad rollouts, rollouts]``."""

    tallies: dict[frozenset[Any], list[int]] = field(default_factory=dict)


def scm_shapley(
    model: SCM,
    *,
    n_permutations: int,
    samples_per_eval: int,
    rollout_budget: int,
    value_seed: int | Sequence[int],
    order_seed: int,
    antithetic: bool = True,
    interval: str = "normal",
    cache_values: bool = False,
) -> SCMShapley:
    """Monte-Carlo Shapley of v(S) = P(bad | S held) on an SCM (CAR §4-5).

    ``rollout_budget`` caps the rollouts (0: no cap); every evaluation of v
    costs ``samples_per_eval`` of them. ``value_seed`` seeds the rollouts and
    ``order_seed`` the permutations; ``interval`` is the interval reported
    (``rcakit.shapley.INTERVALS``, CAR's is ``normal``); ``cache_values``
    reuses each coalition's first estimate (not CAR's protocol), kept only to
    show that it breaks the interval: its RMSE stops falling and CAR's interval
    under-covers. The honest way to reuse rollouts is
    :func:`rcakit.shapley.shapley_pooled`, which pools every visit and takes its
    interval from a jackknife.
    """
    value = RolloutValue(model, samples_per_eval, np.random.default_rng(value_seed), cache=cache_values)
    estimate = shapley_permutation(
        value,
        model.n_steps,
        n_permutations,
        antithetic=antithetic,
        seed=order_seed,
        budget=rollout_budget or None,
        cost_per_evaluation=samples_per_eval,
        interval=interval,
    )
    return SCMShapley(**vars(estimate), tallies=value.tallies)


def efficiency_from_v_empty(estimate: SCMShapley, alpha: float = 0.05) -> dict[str, Any]:
    r"""The efficiency sum read as one minus an estimate of :math:`v(\emptyset)` (CAR §5).

    Every walk telescopes to :math:`\hat v(N) - \hat v(\emptyset)`, made of
    that walk's own two estimates, and :math:`\hat v(N) = 1` when holding
    every step replays the failing run. So the sum should equal one minus the
    share of bad outcomes among the rollouts of the walks' empty coalitions.
    Returns that count, the walks, the pooled :math:`\hat v(\emptyset)` and
    :math:`\hat v(N)` from the value function's tallies (not from the sum),
    ``efficiency_gap`` = :math:`|\sum_i \hat\phi_i - (1 - \hat v(\emptyset))|`,
    which is 0 up to rounding when both facts hold, and the Wilson interval of
    the sum that follows from the count.
    """
    n = len(estimate.values)
    empty_bad, empty_rollouts = estimate.tallies.get(frozenset(), [0, 0])
    full_bad, full_rollouts = estimate.tallies.get(frozenset(range(n)), [0, 0])
    v_empty = empty_bad / empty_rollouts if empty_rollouts else float("nan")
    lo, hi = stats.wilson_ci(empty_bad, empty_rollouts, alpha)
    return {
        "walks": estimate.walks,
        "empty_rollouts": empty_rollouts,
        "empty_bad": empty_bad,
        "v_empty": v_empty,
        "v_full": full_bad / full_rollouts if full_rollouts else float("nan"),
        "efficiency_gap": abs(estimate.efficiency - (1 - v_empty)),
        "efficiency_ci": [1 - hi, 1 - lo],
    }


def shapley_reruns(
    model: SCM,
    reruns: int,
    *,
    n_permutations: int,
    samples_per_eval: int,
    rollout_budget: int,
    seed: int,
    intervals: Sequence[str] = ("normal",),
    cache_values: bool = False,
) -> pd.DataFrame:
    """``reruns`` independent repeats of :func:`scm_shapley`, one row per rerun, player and interval.

    Columns ``rerun, player, interval, phi, ci_low, ci_high``, one row per
    method of ``intervals`` (all computed from the same rerun). Rerun ``r``
    draws its seeds from ``(seed, r)``, so the reruns of two calls with the
    same ``seed`` are the same draws. How often an interval contains a target
    is the share of rows whose interval does (:func:`interval_coverage`).
    """
    rows = []
    for r in range(reruns):
        value_seed, order_seed = np.random.default_rng([seed, r]).integers(0, 2**31, size=2)
        est = scm_shapley(
            model,
            n_permutations=n_permutations,
            samples_per_eval=samples_per_eval,
            rollout_budget=rollout_budget,
            value_seed=int(value_seed),
            order_seed=int(order_seed),
            cache_values=cache_values,
        )
        for method in intervals:
            low, high = est.interval(method)
            for i in range(model.n_steps):
                rows.append(
                    {
                        "rerun": r,
                        "player": i,
                        "interval": method,
                        "phi": est.values[i],
                        "ci_low": low[i],
                        "ci_high": high[i],
                    }
                )
    return pd.DataFrame(rows)


def interval_coverage(reruns: pd.DataFrame, targets: Mapping[str, Sequence[float] | np.ndarray]) -> pd.DataFrame:
    """How often the reruns' intervals contain each target value, per interval and player, with a Wilson CI.

    ``reruns`` is :func:`shapley_reruns`'s table; ``targets`` maps a label
    (e.g. ``"analytic"``) to one value per player. Columns: ``interval, step,
    target, value, reruns, coverage, Wilson low, Wilson high, mean width``.
    """
    rows = []
    for (method, key), group in reruns.groupby(["interval", "player"], sort=False):
        player = cast(int, key)  # the reruns' player column holds step indices
        for label, values in targets.items():
            value = float(values[player])
            inside = ((group["ci_low"] <= value) & (value <= group["ci_high"])).to_numpy()
            lo, hi = stats.wilson_ci(int(inside.sum()), len(inside))
            rows.append(
                {
                    "interval": method,
                    "step": int(player),
                    "target": label,
                    "value": value,
                    "reruns": len(inside),
                    "coverage": float(inside.mean()),
                    "Wilson low": lo,
                    "Wilson high": hi,
                    "mean width": float((group["ci_high"] - group["ci_low"]).mean()),
                }
            )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class CoverageVariant:
    """One way to get an interval for the Shapley values: its label, the interval
    method (``rcakit.shapley.INTERVALS``), and whether v(S) is cached."""

    label: str
    method: str
    cached: bool = False


COVERAGE_VARIANTS = {
    "car": CoverageVariant("CAR: normal quantile over pairs", "normal"),
    "student": CoverageVariant("Student t over pairs", "student"),
    "walks": CoverageVariant("normal over walks, pairing ignored", "walks"),
    "cached": CoverageVariant("CAR's, with v(S) cached", "normal", cached=True),
}


def coverage_study(
    settings: Mapping[str, tuple[SCM, int, int, int]],
    reruns: int,
    seed: int,
    variants: Iterable[str] = tuple(COVERAGE_VARIANTS),
) -> pd.DataFrame:
    r"""How often each interval holds the analytic Shapley values, per setting (CAR §4-5).

    ``settings`` maps a label to ``(model, n_permutations, samples_per_eval,
    rollout_budget)``; the model must have an ``analytic_v``. Each setting is
    rerun ``reruns`` times from its own stream of ``seed`` (the same draws for
    every variant that does not cache), and each variant of :data:`COVERAGE_VARIANTS` is
    scored: CAR's normal interval over the antithetic pairs; Student's t over
    the pairs; the normal interval over the walks as if they were independent;
    and CAR's interval when :math:`v(S)` is estimated once per coalition and
    reused. Columns: ``setting, permutations, rollouts per v(S), variant,
    interval`` (the variant's label) and those of :func:`interval_coverage`
    from ``step`` on.
    """
    variants = list(variants)
    frames = []
    for i, (label, (model, n_permutations, samples_per_eval, budget)) in enumerate(settings.items()):
        analytic = shapley_exact(closed_form(model), model.n_steps)
        setting_seed = int(np.random.default_rng([seed, i]).integers(0, 2**31))  # independent draws per setting
        runs = {
            cached: shapley_reruns(
                model,
                reruns,
                n_permutations=n_permutations,
                samples_per_eval=samples_per_eval,
                rollout_budget=budget,
                seed=setting_seed,
                intervals=INTERVALS,
                cache_values=cached,
            )
            for cached in sorted({COVERAGE_VARIANTS[v].cached for v in variants})
        }
        for key in variants:
            variant = COVERAGE_VARIANTS[key]
            chosen = runs[variant.cached][runs[variant.cached]["interval"] == variant.method]
            table = interval_coverage(chosen, {"analytic": analytic}).drop(columns=["interval", "target"])
            table.insert(0, "interval", variant.label)
            table.insert(0, "variant", key)
            table.insert(0, "rollouts per v(S)", samples_per_eval)
            table.insert(0, "permutations", n_permutations)
            table.insert(0, "setting", label)
            frames.append(table)
    return pd.concat(frames, ignore_index=True)


def permutation_budgets(model: SCM, samples_per_eval: int, permutations: Sequence[int]) -> list[int]:
    """The rollouts that each count of antithetic permutations costs: 2 (n + 1) evaluations each."""
    per_permutation = 2 * (model.n_steps + 1) * samples_per_eval
    return [per_permutation * m for m in permutations]


def shapley_convergence(
    model: SCM, budgets: Sequence[int], *, seeds: int, samples_per_eval: int, seed: int
) -> pd.DataFrame:
    """Error against the analytic values, antithetic against plain sampling, per rollout budget.

    For each budget and each of ``seeds`` repeats, the same rollout budget is
    spent on antithetic pairs and on plain permutations (twice as many walks).
    Columns: ``rollouts, sampling, efficiency error, max per-player error``.
    """
    v = closed_form(model)
    analytic = shapley_exact(v, model.n_steps)
    total = v(frozenset(range(model.n_steps))) - v(frozenset())
    rows = []
    for budget in budgets:
        for s in range(seeds):
            for antithetic in (True, False):
                est = scm_shapley(
                    model,
                    n_permutations=10**6,
                    samples_per_eval=samples_per_eval,
                    rollout_budget=budget,
                    value_seed=[seed, s, budget],
                    order_seed=s,
                    antithetic=antithetic,
                )
                rows.append(
                    {
                        "rollouts": est.spent,
                        "sampling": "antithetic" if antithetic else "plain",
                        "efficiency error": abs(est.efficiency - total),
                        "max per-player error": float(np.max(np.abs(est.values - analytic))),
                    }
                )
    return pd.DataFrame(rows)


def full_replay(model: SCM) -> KnownFull:
    r"""The proof that an SCM's :math:`v(N)` needs no rollout, with its value (CAR §3).

    In :meth:`SCM.rollout` a held step takes its recorded action and observation and draws nothing, so
    with every step held the trace is the recorded one whatever the seed, and :math:`v(N)` is the one
    outcome of that replay, exactly 0 or 1. An agent whose tools or model are not replayed from a record
    has no such proof: its estimators roll :math:`v(N)` out."""
    trace = model.rollout(np.random.default_rng(0), do_hold(range(model.n_steps)))
    return KnownFull(float(model.is_bad(trace)), "an SCM replay with every step held draws nothing")


def scm_draw(model: SCM, rng: np.random.Generator) -> BatchDraw:
    """Real replays of ``model`` as a ``rcakit.shapley.BatchDraw``: for each coalition mask, the bad
    outcomes of ``k`` fresh rollouts with its steps held (every visit of one coalition in one batch)."""

    def draw(masks: np.ndarray, k: int) -> np.ndarray:
        out = np.empty(len(masks), dtype=np.int64)
        for mask in np.unique(masks):
            where = np.flatnonzero(masks == mask)
            held = coalition_of(mask, model.n_steps)
            out[where] = model.sample_bad(rng, do_hold(held), k * len(where)).reshape(len(where), k).sum(axis=1)
        return out

    return draw


def scm_paired_draw(model: SCM, rng: np.random.Generator) -> PairedDraw:
    """Real replays of ``model`` with common random numbers, as a ``rcakit.shapley.PairedDraw``: rollout
    ``j`` of a row gives each step a generator from its own seed (drawn from ``rng`` per row and rollout),
    rewound to its start for every coalition of the row, so a resampled step draws the same numbers in each."""

    def draw(masks: np.ndarray, k: int) -> np.ndarray:
        rows, columns = masks.shape
        out = np.zeros((rows, columns), dtype=np.int64)
        for r in range(rows):
            for _ in range(k):
                streams = [np.random.default_rng(int(s)) for s in rng.integers(2**63, size=model.n_steps)]
                start = [stream.bit_generator.state for stream in streams]
                for mask in np.unique(masks[r]):
                    for stream, state in zip(streams, start, strict=True):
                        stream.bit_generator.state = state
                    held = do_hold(coalition_of(mask, model.n_steps))
                    out[r, masks[r] == mask] += model.is_bad(model.rollout(rng, held, streams))
        return out

    return draw


def rollout_study(
    draw_for: Callable[[np.random.Generator], BatchDraw],
    exact: np.ndarray,
    budgets: Sequence[int],
    *,
    seeds: int,
    seed: int,
    car_k: int = 12,
    paired_for: Callable[[np.random.Generator], PairedDraw] | None = None,
    enumerated: bool = False,
    full: KnownFull | None = None,
) -> pd.DataFrame:
    r"""Shapley estimators priced in rollouts, each against the exact vector.

    For each budget and each of ``seeds`` repeats, each estimator gets fresh rollouts from
    ``draw_for(rng)``: :func:`rcakit.shapley.shapley_car` (``car_k`` rollouts per coalition, CAR's
    normal interval, and Student's t over the same rows as ``car-t``),
    :func:`rcakit.shapley.shapley_pooled` (one rollout per visit, jackknife interval) and
    :func:`rcakit.shapley.shapley_leverage` (Leverage SHAP, jackknife interval); with ``paired_for``,
    :func:`rcakit.shapley.shapley_paired` (common random numbers inside each pair, padded interval) as
    ``paired``; with ``enumerated``, :func:`rcakit.shapley.shapley_enumerated`; and ``default``,
    :func:`rcakit.shapley.shapley_rollouts` given what a caller has (the paired draw when there is one,
    else the fresh one). :math:`v(N)` is rolled out by all of them unless ``full`` proves it
    (:class:`rcakit.shapley.KnownFull`; CAR's own estimator always rolls it out).
    Columns: ``estimator, budget, seed, rollouts`` (spent), ``chose`` (the estimator that ran: what
    ``default`` picked), ``squared error`` (mean over players, against
    ``exact``), ``covered`` (the share of players whose interval holds their exact value), ``covered i``
    for each player ``i``, ``covered phi_0`` (the same as ``covered 0``) and ``error i``, player ``i``'s
    estimate minus its exact value. A run with no interval (fewer than two pairs, or no rollout per
    coalition) has no row.
    """
    n = len(exact)

    def rng(s: int, budget: int, stream: int) -> np.random.Generator:
        return np.random.default_rng([seed, s, budget, stream])

    rows = []
    for budget in budgets:
        for s in range(seeds):
            car = shapley_car(draw_for(rng(s, budget, 0)), n, budget, k=car_k, seed=s)
            student = permutation_interval(np.asarray(car.rows), "student", car.level)
            found = [("car", car), ("car-t", replace(car, ci_low=student[1], ci_high=student[2], interval="student"))]
            found.append(("pooled", shapley_pooled(draw_for(rng(s, budget, 1)), n, budget, full=full, seed=s)))
            found.append(("leverage", shapley_leverage(draw_for(rng(s, budget, 4)), n, budget, full=full, seed=s)))
            if paired_for is not None:
                found.append(("paired", shapley_paired(paired_for(rng(s, budget, 2)), n, budget, full=full, seed=s)))
                chosen = shapley_rollouts(n, budget, paired=paired_for(rng(s, budget, 5)), full=full, seed=s)
            else:
                chosen = shapley_rollouts(n, budget, draw=draw_for(rng(s, budget, 5)), full=full, seed=s)
            found.append(("default", chosen))
            if enumerated:
                found.append(("enumerated", shapley_enumerated(draw_for(rng(s, budget, 3)), n, budget, full=full)))
            for label, est in found:
                low, high = est.ci_low, est.ci_high
                if np.isnan(low).any():
                    continue
                held = (low <= exact) & (exact <= high)
                rows.append(
                    {
                        "estimator": label,
                        "budget": int(budget),
                        "seed": s,
                        "rollouts": est.rollouts,
                        "chose": est.estimator,
                        "squared error": float(np.mean((est.values - exact) ** 2)),
                        "covered": float(held.mean()),
                        "covered phi_0": bool(held[0]),
                        **{f"covered {i}": bool(held[i]) for i in range(n)},
                        **{f"error {i}": float(est.values[i] - exact[i]) for i in range(n)},
                    }
                )
    return pd.DataFrame(rows)


def binomial_floor(seeds: int, cells: int, level: float = 0.95, nominal: float = 0.95) -> float:
    """The coverage that the lowest of ``cells`` coverages, each from ``seeds`` runs of an interval whose
    true coverage is exactly ``nominal``, stays at or above with probability ``level`` (Šidák: each cell at
    the ``(1 - level^(1/cells))`` quantile of its binomial count)."""
    tail = 1 - level ** (1 / cells)
    return float(scipy_stats.binom.ppf(tail, seeds, nominal) / seeds)


def _players(study: pd.DataFrame, prefix: str) -> list[str]:
    """A study's per-player columns ``<prefix>0 .. <prefix>(n-1)``, in player order."""
    return [c for c in study.columns if c.startswith(prefix) and c[len(prefix) :].isdigit()]


def player_coverage(study: pd.DataFrame, *, from_budget: int = 960) -> pd.DataFrame:
    """Per estimator (rows) and player (columns, by index), the lowest coverage of that player's interval
    at any budget from ``from_budget`` rollouts in :func:`rollout_study`'s table: the cells whose minimum
    :func:`worst_player_coverage` reports, one column per player, so a player with a large effect is not
    hidden behind idle ones at 1.00."""
    players = _players(study, "covered ")
    chosen = study[study["budget"] >= from_budget]
    table = chosen.groupby(["estimator", "budget"])[players].mean().groupby(level="estimator").min()
    table.columns = pd.Index([int(c.split()[-1]) for c in players], name="player")
    return table


def player_bias(study: pd.DataFrame, *, from_budget: int = 960, level: float = 0.95) -> pd.DataFrame:
    r"""Per estimator and player, the mean error over the runs at every budget from ``from_budget``
    rollouts in :func:`rollout_study`'s table, with its interval: the average over the budgets of each
    budget's mean error, whose variance is :math:`\sum_b s_b^2 / m_b` over the squared number of
    budgets (budget ``b``: ``m_b`` runs, sample variance :math:`s_b^2`), and Student's t quantile at
    ``level`` on :math:`\sum_b (m_b - 1)` degrees of freedom. An unbiased estimator's interval holds 0
    for about ``level`` of the players; a bias shared by every player, such as an assumed :math:`v(N)`,
    moves them all. Columns ``estimator, player, mean error, low, high``."""
    errors = _players(study, "error ")
    rows = []
    for name, chosen in study[study["budget"] >= from_budget].groupby("estimator"):
        cells = chosen.groupby("budget")[errors]
        means, spread, runs = cells.mean(), cells.var(ddof=1), cells.count()
        mean = means.mean().to_numpy(float)
        quantile = scipy_stats.t.ppf(0.5 + level / 2, max(int((runs.iloc[:, 0] - 1).sum()), 1))
        half = quantile * np.sqrt((spread / runs).sum().to_numpy(float)) / len(means)
        for i in range(len(errors)):
            row = {"estimator": name, "player": i, "mean error": mean[i], "low": mean[i] - half[i]}
            rows.append({**row, "high": mean[i] + half[i]})
    return pd.DataFrame(rows, columns=["estimator", "player", "mean error", "low", "high"])


def worst_player_coverage(study: pd.DataFrame, *, from_budget: int = 960) -> pd.DataFrame:
    r"""Per estimator, the lowest coverage of any player at any budget from ``from_budget`` rollouts, the
    number of (player, budget) cells it is the minimum of, the seeds per cell, and the binomial floor: the
    coverage that the lowest of that many cells stays above with probability 0.95 when every cell's true
    coverage is exactly 0.95 (each cell a binomial count, Šidák's per-cell level
    :math:`1 - 0.95^{1/c}`). A worst cell above the floor is what noise gives; below it, the interval fails."""
    players = _players(study, "covered ")
    rows = {}
    for name, chosen in study[study["budget"] >= from_budget].groupby("estimator"):
        cells = chosen.groupby("budget")[players].mean()
        seeds = int(chosen.groupby("budget").size().min())
        count = cells.size
        floor = binomial_floor(seeds, count) if count else float("nan")
        rows[name] = {"worst": float(cells.to_numpy().min()), "cells": count, "seeds": seeds, "floor": floor}
    return pd.DataFrame.from_dict(rows, orient="index")


def rmse_ratio(
    study: pd.DataFrame, top: tuple[str, int], bottom: tuple[str, int], *, n_boot: int = 2000, seed: int = 42
) -> tuple[float, float, float]:
    """RMSE of ``top`` (estimator, budget) over RMSE of ``bottom``, with a 95% percentile bootstrap
    interval over the seeds of each (resampled independently: their rollouts are independent)."""
    rng = np.random.default_rng(seed)

    def errors(key: tuple[str, int]) -> np.ndarray:
        chosen = study[(study["estimator"] == key[0]) & (study["budget"] == key[1])]
        return chosen["squared error"].to_numpy(float)

    a, b = errors(top), errors(bottom)
    if not len(a) or not len(b):
        return float("nan"), float("nan"), float("nan")
    draws = np.sqrt(stats.resample(a, n_boot, rng).mean(axis=1) / stats.resample(b, n_boot, rng).mean(axis=1))
    return float(np.sqrt(a.mean() / b.mean())), *stats.percentile_interval(draws)
