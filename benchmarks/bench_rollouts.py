"""Shapley attribution priced in rollouts: CAR's estimator against pooled values with a jackknife interval.

Run: ``.venv/bin/python benchmarks/bench_rollouts.py [--quick] [--seeds N]``.

Every value-function evaluation of a replay study re-runs the agent, so the cost
that matters is rollouts, not CPU time (issue 30). Games, each with its exact
Shapley vector:

- ``interaction`` and ``or-failure``: CAR's AND and OR SCMs (``rcakit.scm.interaction_scm``,
  ``or_failure_scm``), every rollout a real ``SCM.sample_bad`` replay, the exact
  vector from their closed-form v;
- ``agent-6``, ``agent-10``, ``agent-14``: synthetic agent runs of 6, 10 and 14
  steps. A failure happens when a clause of held steps fires (an AND pair that
  always fails when both are held, so v(N) = 1 as when every step replays the
  failing run; OR pairs; single steps with rare effects; idle steps) or from
  background noise; a rollout is one Bernoulli draw with that probability.

Estimators (``rcakit.shapley``): ``car`` is CAR §4 as the chapter runs it
(antithetic pairs, K = 12 rollouts per coalition, v(∅) and v(N) rolled out,
CAR's normal interval); ``car-t`` the same rows with Student's t; ``pooled``
antithetic walks with K = 1, v(N) = 1 not rolled out, v(S) pooled over every
visit and a delete-a-group jackknife interval (20 groups, Student's t).

For each game, budget (480 to 61,440 rollouts) and seed: the RMSE of the
Shapley vector, and whether each player's interval holds its exact value.
Printed per game: RMSE by budget, coverage by budget, the budget each estimator
needs to reach RMSE 0.02 (log-linear interpolation between measured budgets),
and one closing line per game. ``--quick`` uses 40 seeds and budgets up to
15,360 (a few minutes); the full run uses 200 seeds. shapiq's approximators are
not measured here yet (see the issue's closing note).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rcakit.scm import SCM, interaction_scm, or_failure_scm, rollout_study, scm_draw
from rcakit.shapley import BatchDraw, coalition_of, shapley_exact

TARGET = 0.02
BUDGETS = [480 * 2**i for i in range(8)]  # 480 .. 61,440 rollouts


@dataclass(frozen=True)
class Game:
    """A game: players, its exact v on bitmasks (for the exact vector), and rollouts drawn with a seed."""

    name: str
    n: int
    v: Callable[[int], float]
    draw: Callable[[np.random.Generator], BatchDraw]

    def exact(self) -> np.ndarray:
        return shapley_exact(lambda s: self.v(sum(1 << i for i in s)), self.n)


def scm_game(name: str, model: SCM) -> Game:
    """CAR's SCM: every rollout a real replay with the coalition held (``rcakit.scm.scm_draw``)."""
    v = model.analytic_v
    assert v is not None
    return Game(name, model.n_steps, lambda m: v(coalition_of(m, model.n_steps)), lambda rng: scm_draw(model, rng))


def agent_game(n: int) -> Game:
    """A synthetic failing run of ``n`` steps; clauses of held steps fire independently."""
    clauses: list[tuple[str, tuple[int, ...], float]] = [("and", (0, 1), 1.0), ("or", (2, 3), 0.3)]
    if n >= 10:
        clauses += [("and", (4, 5), 0.25), ("one", (6,), 0.05)]
    if n >= 14:
        clauses += [("or", (7, 8), 0.1), ("one", (9,), 0.02)]
    background = 0.1
    size = 1 << n
    masks = np.arange(size)
    quiet = np.full(size, 1 - background)
    for kind, steps, q in clauses:
        bits = np.array([(masks >> s) & 1 for s in steps])
        fires = bits.all(axis=0) if kind == "and" else bits.any(axis=0)
        quiet *= 1 - q * fires
    table = 1 - quiet
    assert table[size - 1] == 1.0  # holding every step replays the failure

    def draw(rng: np.random.Generator) -> BatchDraw:
        return lambda m, k: rng.binomial(k, table[m])

    return Game(f"agent-{n}", n, lambda m: float(table[m]), draw)


def budget_to(target: float, rmse: pd.Series) -> float:
    """The budget at which RMSE falls to ``target``, interpolated in log-log between measured budgets."""
    budgets, errors = rmse.index.to_numpy(float), rmse.to_numpy(float)
    below = np.flatnonzero(errors <= target)
    if not len(below):
        return float("inf")
    j = below[0]
    if j == 0:
        return float(budgets[0])
    x0, x1, y0, y1 = np.log(budgets[j - 1]), np.log(budgets[j]), np.log(errors[j - 1]), np.log(errors[j])
    return float(np.exp(x0 + (np.log(target) - y0) * (x1 - x0) / (y1 - y0)))


def report(game: Game, budgets: list[int], seeds: int) -> str:
    """The game's tables, printed, and its closing line."""
    table = rollout_study(game.draw, game.exact(), budgets, seeds=seeds, seed=0)
    grouped = table.groupby(["estimator", "budget"])
    rmse = grouped["squared error"].mean().pow(0.5).unstack(0)
    coverage = grouped["covered"].mean().unstack(0)
    print(f"\n== {game.name} (n = {game.n}) ==")
    print("RMSE of the Shapley vector by rollout budget:")
    print(rmse.round(4).to_string())
    print("coverage of the 95 % interval (mean over players):")
    print(coverage.round(3).to_string())
    need = {name: budget_to(TARGET, rmse[name].dropna()) for name in rmse.columns}
    print(f"rollouts to RMSE {TARGET}: " + ", ".join(f"{k} {v:,.0f}" for k, v in need.items()))
    from_960 = coverage[coverage.index >= 960]
    ratio = need["car"] / need["pooled"] if np.isfinite(need["pooled"]) else float("nan")
    return (
        f"{game.name}: budget to RMSE {TARGET}: rcakit-default (pooled) {need['pooled']:,.0f}, "
        f"CAR {need['car']:,.0f} ({ratio:.1f}x fewer); coverage from 960 rollouts: pooled "
        f"{from_960['pooled'].min():.3f} (lowest), CAR {from_960['car'].min():.3f}, "
        f"CAR with t {from_960['car-t'].min():.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 seeds, budgets up to 15,360")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 200, quick 40)")
    args = parser.parse_args()
    seeds = args.seeds or (40 if args.quick else 200)
    budgets = BUDGETS[:6] if args.quick else BUDGETS
    games = [
        scm_game("interaction", interaction_scm()),
        scm_game("or-failure", or_failure_scm()),
        agent_game(6),
        agent_game(10),
        agent_game(14),
    ]
    lines = [report(game, budgets, seeds) for game in games]
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
