"""Shapley attribution priced in rollouts: CAR's estimator, rcakit's and shapiq's on the same noisy games.

Run: ``.venv/bin/python benchmarks/bench_rollouts.py [--quick] [--seeds N]``.

Every value-function evaluation of a replay study re-runs the agent, so the cost
that matters is rollouts, not CPU time. Games, each with its exact
Shapley vector:

- ``interaction`` and ``or-failure``: CAR's AND and OR SCMs (``rcakit.scm.interaction_scm``,
  ``or_failure_scm``), every rollout a real replay (``rcakit.scm.scm_draw``, and
  ``scm_paired_draw`` with common random numbers), the exact vector from their closed-form v;
- ``agent-6``, ``agent-10``, ``agent-14``: synthetic agent runs of 6, 10 and 14
  steps. A failure happens when a clause of held steps fires (an AND pair that
  always fails when both are held, so v(N) = 1 as when every step replays the
  failing run; OR pairs; single steps with rare effects; idle steps) or from
  background noise; a rollout draws the background and each clause once.

rcakit's estimators (``rcakit.shapley``): ``car`` is CAR §4 as the chapter runs it
(antithetic pairs, K = 12 rollouts per coalition, v(∅) and v(N) rolled out,
CAR's normal interval); ``car-t`` the same rows with Student's t; ``pooled``
antithetic walks with K = 1, v(N) = 1 not rolled out, v(S) pooled over every
visit and a delete-a-group jackknife interval (20 groups, Student's t);
``paired``, the default where the policy is seeded, the same walks with common
random numbers inside each pair and the padded interval; ``enumerated`` (n <= 10),
every coalition from an equal share of the budget.

shapiq's Shapley-value approximators (:data:`SHAPIQ`) get the same games: a
coalition query costs K fresh rollouts, K in 1, 4, 12 and the budget over 2^n,
and the best K per approximator is reported. They give no interval. SPEX is left
out (RMSE 0.2-0.3 on these noisy games at every budget tried, 1-4 s a call),
and ProxySPEX needs lightgbm, no dependency of this project. The synthetic games
are boolean formulas, which regression approximators (KernelSHAP, kADDSHAP) fit
well; that flatters them against a real agent's game.

For each game, budget (120 to 61,440 rollouts) and seed: the RMSE of the
Shapley vector, and whether each player's interval holds its exact value.
Printed per game: RMSE by budget, coverage by budget, the budget each estimator
needs to reach RMSE 0.02 (log-linear interpolation between measured budgets; a
value at or below the lowest budget is printed as a bound), the ratio to CAR,
shapiq's budgets, and one closing line per game. The full run uses 200 seeds per
cell for rcakit's estimators and 20 for shapiq's (a tenth, for time: each shapiq
call costs up to a second); ``--quick`` 40 and 4, budgets up to 15,360.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rcakit.scm import SCM, interaction_scm, or_failure_scm, rollout_study, scm_draw, scm_paired_draw
from rcakit.shapley import BatchDraw, PairedDraw, coalition_of, shapley_exact

TARGET = 0.02
BUDGETS = [120 * 2**i for i in range(10)]  # 120 .. 61,440 rollouts
DEFAULT = "paired"  # rcakit's default where the policy can be seeded (rcakit.shapley.shapley_rollouts)


@dataclass(frozen=True)
class Game:
    """A game: players, its exact v on bitmasks (for the exact vector), and rollouts drawn with a seed."""

    name: str
    n: int
    v: Callable[[int], float]
    draw: Callable[[np.random.Generator], BatchDraw]
    paired: Callable[[np.random.Generator], PairedDraw]

    def exact(self) -> np.ndarray:
        return shapley_exact(lambda s: self.v(sum(1 << i for i in s)), self.n)


def scm_game(name: str, model: SCM) -> Game:
    """CAR's SCM: every rollout a real replay with the coalition held (``rcakit.scm.scm_draw``)."""
    v = model.analytic_v
    assert v is not None
    n = model.n_steps
    return Game(
        name,
        n,
        lambda m: v(coalition_of(m, n)),
        lambda rng: scm_draw(model, rng),
        lambda rng: scm_paired_draw(model, rng),
    )


def agent_game(n: int) -> Game:
    """A synthetic failing run of ``n`` steps; clauses of held steps fire independently."""
    clauses: list[tuple[str, tuple[int, ...], float]] = [("and", (0, 1), 1.0), ("or", (2, 3), 0.3)]
    if n >= 10:
        clauses += [("and", (4, 5), 0.25), ("one", (6,), 0.05)]
    if n >= 14:
        clauses += [("or", (7, 8), 0.1), ("one", (9,), 0.02)]
    background = 0.1
    masks = np.arange(1 << n)
    fires = np.array([_fires(kind, steps, masks) for kind, steps, _ in clauses])  # (clauses, 2^n)
    chance = np.array([q for _, _, q in clauses])
    table = 1 - (1 - background) * np.prod(1 - chance[:, None] * fires, axis=0)
    assert table[-1] == 1.0  # holding every step replays the failure

    def draw(rng: np.random.Generator) -> BatchDraw:
        return lambda m, k: rng.binomial(k, table[m])

    def paired(rng: np.random.Generator) -> PairedDraw:
        """Common random numbers: rollout ``j`` of a row draws the background and each clause once."""

        def draw_rows(m: np.ndarray, k: int) -> np.ndarray:
            u = rng.random((m.shape[0], k, 1 + len(clauses)))  # per row and rollout: background, clauses
            quiet = u[..., 0] >= background
            fired = fires[:, m].transpose(1, 2, 0)[:, None] & (u[..., None, 1:] < chance)  # (rows, k, c, clauses)
            return (~(quiet[..., None] & ~fired.any(axis=-1))).sum(axis=1)

        return draw_rows

    return Game(f"agent-{n}", n, lambda m: float(table[m]), draw, paired)


def _fires(kind: str, steps: tuple[int, ...], masks: np.ndarray) -> np.ndarray:
    """Whether a clause of held steps fires for each coalition mask: all of them, or any."""
    bits = np.array([(masks >> s) & 1 for s in steps], dtype=bool)
    return bits.all(axis=0) if kind == "and" else bits.any(axis=0)


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


SHAPIQ = (
    "KernelSHAP",
    "UnbiasedKernelSHAP",
    "PermutationSamplingSV",
    "StratifiedSamplingSV",
    "OwenSamplingSV",
    "SVARM",
    "kADDSHAP",
)  # shapiq 1.4's Shapley-value approximators; SPEX and ProxySPEX left out (docstring)


def shapiq_study(game: Game, budgets: list[int], seeds: int) -> pd.DataFrame:
    """Each shapiq approximator on the noisy game: a coalition query costs ``K`` fresh rollouts
    (``K`` in 1, 4, 12 and the budget over 2^n), so it gets ``budget // K`` queries; the full coalition's
    value is given, as to rcakit's estimators. Rows: ``estimator, k, budget, seed, squared error``."""
    import warnings

    import shapiq.approximator as approximators

    exact, weights, rows = game.exact(), 1 << np.arange(game.n), []
    for budget in budgets:
        split = -(-budget // (1 << game.n))  # K = the budget over 2^n, one series whatever its value
        for series, (k, label) in enumerate([(1, "1"), (4, "4"), (12, "12"), (split, "B/2^n")]):
            for s in range(seeds):
                for index, name in enumerate(SHAPIQ):
                    draw = game.draw(np.random.default_rng([s, budget, series, index]))

                    def value(coalitions: np.ndarray, draw: BatchDraw = draw, k: int = k) -> np.ndarray:
                        masks = np.atleast_2d(coalitions).astype(np.int64) @ weights
                        return np.where(masks == (1 << game.n) - 1, 1.0, draw(masks, k) / k)

                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        found = getattr(approximators, name)(n=game.n, random_state=s).approximate(budget // k, value)
                    phi = np.array([found[(i,)] for i in range(game.n)])
                    rows.append(
                        {
                            "estimator": name,
                            "k": label,
                            "budget": budget,
                            "seed": s,
                            "squared error": float(np.mean((phi - exact) ** 2)),
                        }
                    )
    return pd.DataFrame(rows)


def shapiq_best(game: Game, budgets: list[int], seeds: int) -> tuple[str, float]:
    """Per approximator and ``K``, the budget to RMSE 0.02; printed, and the best ``(name (K), budget)``."""
    table = shapiq_study(game, budgets, seeds)
    rmse = table.groupby(["estimator", "k", "budget"])["squared error"].mean().pow(0.5)
    need = {f"{name} (K = {k})": budget_to(TARGET, rmse.loc[(name, k)]) for name, k in rmse.index.droplevel(2).unique()}
    best = {}
    for label, budget in need.items():
        name = label.split(" (")[0]
        if name not in best or budget < need[best[name]]:
            best[name] = label
    print(
        f"shapiq ({seeds} seeds per cell, best K per approximator), rollouts to RMSE {TARGET}: "
        + ", ".join(f"{label} {need[label]:,.0f}" for label in best.values())
    )
    label = min(best.values(), key=lambda lab: need[lab])
    return label, need[label]


def budget_text(budget: float, lowest: int) -> str:
    """A budget to RMSE 0.02 as printed: at or below the lowest budget measured it is only a bound."""
    return f"<= {lowest:,}" if budget <= lowest else f"{budget:,.0f}"


def report(game: Game, budgets: list[int], seeds: int, shapiq_seeds: int) -> str:
    """The game's tables, printed, and its closing line."""
    table = rollout_study(
        game.draw, game.exact(), budgets, seeds=seeds, seed=0, paired_for=game.paired, enumerated=game.n <= 10
    )
    grouped = table.groupby(["estimator", "budget"])
    rmse = grouped["squared error"].mean().pow(0.5).unstack(0)
    coverage = grouped["covered"].mean().unstack(0)
    print(f"\n== {game.name} (n = {game.n}, {seeds} seeds per cell) ==")
    print("RMSE of the Shapley vector by rollout budget:")
    print(rmse.round(4).to_string())
    print("coverage of each estimator's 95 % interval (mean over players):")
    print(coverage.round(3).to_string())
    need = {name: budget_to(TARGET, rmse[name].dropna()) for name in rmse.columns}
    print(f"rollouts to RMSE {TARGET}: " + ", ".join(f"{k} {budget_text(v, budgets[0])}" for k, v in need.items()))
    print("ratio to CAR: " + ", ".join(f"{k} {need['car'] / v:.1f}x" for k, v in need.items() if k != "car"))
    shapiq_name, shapiq_need = shapiq_best(game, budgets, shapiq_seeds)
    lowest = coverage.loc[coverage.index >= 960, DEFAULT].min()
    ratio = need["car"] / need[DEFAULT]
    bound = "at least " if need[DEFAULT] <= budgets[0] else ""
    return (
        f"{game.name}: budget to RMSE {TARGET}: rcakit-default ({DEFAULT}) {budget_text(need[DEFAULT], budgets[0])}, "
        f"CAR {need['car']:,.0f} ({bound}{ratio:.1f}x fewer), best shapiq {shapiq_name} {shapiq_need:,.0f}; "
        f"coverage {lowest:.3f} (lowest from 960 rollouts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 seeds, budgets up to 15,360")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 200, quick 40)")
    args = parser.parse_args()
    seeds = args.seeds or (40 if args.quick else 200)
    shapiq_seeds = max(2, seeds // 10)
    budgets = BUDGETS[:8] if args.quick else BUDGETS
    games = [
        scm_game("interaction", interaction_scm()),
        scm_game("or-failure", or_failure_scm()),
        agent_game(6),
        agent_game(10),
        agent_game(14),
    ]
    lines = [report(game, budgets, seeds, shapiq_seeds) for game in games]
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
