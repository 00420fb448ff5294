"""Shapley attribution priced in rollouts: CAR's estimator, rcakit's and shapiq's on the same noisy games,
kind ones and unkind ones.

Run: ``.venv/bin/python benchmarks/bench_rollouts.py [--quick] [--seeds N] [--games NAME ...] [--shapiq]``;
``make bench-rollouts`` runs the shapiq comparison against shapiq 1.8 in a second environment on
Python 3.12 (``scripts/bench_rollouts_py312.sh``).

Every value-function evaluation of a replay study re-runs the agent, so the cost
that matters is rollouts, not CPU time. Games, each with its exact Shapley vector:

- ``interaction`` and ``or-failure``: CAR's AND and OR SCMs (``rcakit.scm.interaction_scm``,
  ``or_failure_scm``), every rollout a real replay (``rcakit.scm.scm_draw``, and
  ``scm_paired_draw`` with common random numbers), the exact vector from their closed-form v, and v(N)
  proven by the SCM's deterministic replay (``rcakit.scm.full_replay``);
- ``agent-6``, ``agent-10``, ``agent-14``, ``agent-20``: synthetic agent runs. A failure happens when a
  clause of held steps fires (an AND pair that always fails when both are held, so v(N) = 1; OR pairs;
  single steps with rare effects; idle steps) or from background noise; with common random numbers a
  rollout draws the background and each clause once for every coalition of its row (the kind case);
- the unkind games, none given a proof of v(N): ``fresh-10`` and ``fresh-20`` (the background drawn
  afresh for every coalition: steps seeded, the environment not), ``unseeded-10`` (a "paired" draw that
  shares nothing, as from a policy that cannot be seeded), ``flaky-10`` (holding every step replays the
  failure only 80 % of the time: v(N) = 0.8), ``nonmono-10`` (a guard step that, held without its
  partner, stops the failure: negative marginals) and ``rare-10`` (background 0.5 and a step that fires
  3 % of the time: a rare effect in a high-variance game).

rcakit's estimators (``rcakit.shapley``): ``car`` is CAR §4 as the chapter runs it (antithetic pairs,
K = 12 rollouts per coalition, v(∅) and v(N) rolled out, CAR's normal interval); ``car-t`` the same rows
with Student's t; ``pooled`` antithetic walks with K = 1, v(S) pooled over every visit and a
delete-a-group jackknife interval; ``leverage``, Leverage SHAP (Musco and Witter, 2024) on one fresh
rollout per sampled coalition with a jackknife interval; ``paired``, the same walks as ``pooled`` with
common random numbers inside each pair and the padded interval; ``default``,
``rcakit.shapley.shapley_rollouts`` given the game's paired draw (it measures the draw's coupling and
picks ``paired`` or ``leverage``); ``enumerated`` (n <= 10), every coalition from an equal share.
Unless the game has a proof, every one of them rolls v(N) out.

shapiq's Shapley-value approximators (``--shapiq``, whatever version is installed) get the same games: a
coalition query costs K fresh rollouts, K in 1, 4, 12 and the budget over 2^n, and the best K per
approximator is reported; v(N) and v(∅) are rolled out like every other coalition. shapiq's approximators
take fresh rollouts only, so on ``fresh-10`` and ``unseeded-10`` (``fresh-20``) they see the same draws
as on ``agent-10`` (``agent-20``) and print the same numbers. ShaplEIG (shapiq
>= 1.8) also returns posterior variances: its 95 % normal interval's worst per-player coverage is
printed beside rcakit's. It needs shapiq's ``shapleig`` extra (torch, gpytorch, botorch); without it
the benchmark names it as skipped (``SHAPIQ_EXTRAS=shapleig make bench-rollouts`` installs it).

For each game, budget (120 to 61,440 rollouts) and seed: the RMSE of the Shapley vector, and whether each
player's interval holds its exact value. Printed per game: RMSE by budget; for each estimator the budget
to RMSE 0.02 (log-linear interpolation; a value at or below the lowest budget is printed as a bound), its
ratio to CAR, the WORST coverage of any player at any budget from 960 rollouts, beside the binomial
floor for that many cells (``rcakit.scm.binomial_floor``: the lowest of that many cells of an exactly
95 % interval stays above it with probability 0.95), and how many players' mean error over the runs from
960 rollouts has a 95 % interval that excludes 0 (``rcakit.scm.player_bias``); then the per-player
tables (every estimator's coverage of each player beside the exact values, ``rcakit.scm.player_coverage``,
and the default's mean error per player); and one closing line per game naming the default.
The full run uses 200 seeds per cell for rcakit's estimators and 20 for shapiq's, on every game;
``--quick`` 20 and 2, budgets up to 15,360, and only the synthetic games (the SCM games replay in Python,
rollout by rollout, and the car-shapley chapter measures them; ``--games interaction or-failure`` adds
them).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from rcakit.scm import (
    SCM,
    full_replay,
    interaction_scm,
    or_failure_scm,
    player_bias,
    player_coverage,
    rollout_study,
    scm_draw,
    scm_paired_draw,
    worst_player_coverage,
)
from rcakit.shapley import BatchDraw, KnownFull, PairedDraw, coalition_of, shapley_exact, shapley_of_table

TARGET = 0.02
BUDGETS = [120 * 2**i for i in range(10)]  # 120 .. 61,440 rollouts
DEFAULT = "default"  # rcakit.shapley.shapley_rollouts given the paired draw
Noise = Literal["shared", "fresh", "unseeded"]


@dataclass(frozen=True)
class Game:
    """A game: players, its exact v on bitmasks (for the exact vector), rollouts drawn with a seed, and
    the proof of v(N) when the protocol has one."""

    name: str
    n: int
    v: Callable[[int], float]
    draw: Callable[[np.random.Generator], BatchDraw]
    paired: Callable[[np.random.Generator], PairedDraw]
    full: KnownFull | None = None
    table: np.ndarray | None = None

    def exact(self) -> np.ndarray:
        if self.table is not None:
            return shapley_of_table(self.table)
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
        full_replay(model),
    )


Clause = tuple[str, tuple[int, ...], float]


def clauses_for(n: int) -> list[Clause]:
    """The failing clauses of a synthetic run of ``n`` steps: an AND pair that always fails when both are
    held, OR pairs, AND pairs with a chance, single steps with rare effects; the rest are idle."""
    clauses: list[Clause] = [("and", (0, 1), 1.0), ("or", (2, 3), 0.3)]
    if n >= 10:
        clauses += [("and", (4, 5), 0.25), ("one", (6,), 0.05)]
    if n >= 14:
        clauses += [("or", (7, 8), 0.1), ("one", (9,), 0.02)]
    if n >= 20:
        clauses += [("and", (10, 11), 0.2), ("or", (12, 13, 14), 0.05), ("one", (15,), 0.1)]
    return clauses


def agent_game(
    n: int,
    *,
    name: str | None = None,
    noise: Noise = "shared",
    background: float = 0.1,
    flaky: float = 1.0,
    clauses: list[Clause] | None = None,
    guard: tuple[int, int, float] | None = None,
) -> Game:
    """A synthetic failing run of ``n`` steps; clauses of held steps fire independently.

    The run fails when the flaky replay fails (chance ``flaky``), and background noise or a clause fires,
    and no guard stops it: ``guard = (g, h, chance)`` stops the failure with ``chance`` when step ``g`` is
    held without step ``h``. With common random numbers a rollout draws each of these once per row
    (``shared``), the background once per coalition (``fresh``) or everything once per coalition
    (``unseeded``: the draw claims to pair and does not)."""
    clauses = clauses_for(n) if clauses is None else clauses
    masks = np.arange(1 << n)
    fires = np.array([_fires(kind, steps, masks) for kind, steps, _ in clauses])  # (clauses, 2^n)
    chance = np.array([q for _, _, q in clauses])
    guarded = (
        np.zeros(1 << n, dtype=bool)
        if guard is None
        else ((masks >> guard[0]) & 1 == 1) & ((masks >> guard[1]) & 1 == 0)
    )
    stop = 0.0 if guard is None else guard[2]
    table = flaky * (1 - (1 - background) * np.prod(1 - chance[:, None] * fires, axis=0)) * (1 - stop * guarded)
    assert table[-1] == flaky  # holding every step replays the failure when the replay does

    def draw(rng: np.random.Generator) -> BatchDraw:
        return lambda m, k: rng.binomial(k, table[m])

    def paired(rng: np.random.Generator) -> PairedDraw:
        """Rollout ``j`` of a row: uniforms for the replay, the background, each clause and the guard."""

        def draw_rows(m: np.ndarray, k: int) -> np.ndarray:
            rows, columns = m.shape
            width = 3 + len(clauses)
            u = rng.random((rows, columns if noise == "unseeded" else 1, k, width))
            if noise == "fresh":
                u = np.broadcast_to(u, (rows, columns, k, width)).copy()
                u[..., 1] = rng.random((rows, columns, k))
            fired = fires[:, m].transpose(1, 2, 0)[:, :, None] & (u[..., 3:] < chance)  # (rows, c, k, clauses)
            failing = (u[..., 0] < flaky) & ((u[..., 1] < background) | fired.any(axis=-1))
            failing &= ~(guarded[m][:, :, None] & (u[..., 2] < stop))
            return failing.sum(axis=-1)

        return draw_rows

    return Game(name or f"agent-{n}", n, lambda m: float(table[m]), draw, paired, None, table)


def _fires(kind: str, steps: tuple[int, ...], masks: np.ndarray) -> np.ndarray:
    """Whether a clause of held steps fires for each coalition mask: all of them, or any."""
    bits = np.array([(masks >> s) & 1 for s in steps], dtype=bool)
    return bits.all(axis=0) if kind == "and" else bits.any(axis=0)


def games() -> list[Game]:
    """The benchmark's games, kind and unkind (the module's docstring)."""
    return [
        scm_game("interaction", interaction_scm()),
        scm_game("or-failure", or_failure_scm()),
        agent_game(6),
        agent_game(10),
        agent_game(14),
        agent_game(20),
        agent_game(10, name="fresh-10", noise="fresh"),
        agent_game(20, name="fresh-20", noise="fresh"),
        agent_game(10, name="unseeded-10", noise="unseeded"),
        agent_game(10, name="flaky-10", flaky=0.8),
        agent_game(10, name="nonmono-10", guard=(7, 8, 0.6)),
        agent_game(10, name="rare-10", background=0.5, clauses=[("and", (0, 1), 1.0), ("one", (2,), 0.03)]),
    ]


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
    "LeverageSHAP",
    "OddSHAP",
    "RegressionMSR",
    "ProxySHAP",
    "ShaplEIG",
)  # shapiq's Shapley-value approximators; those the installed version lacks are named and skipped; SPEX
# is left out (RMSE 0.2-0.3 on these noisy games at every budget tried, 1-4 s a call)


SHAPIQ_OPTIONS: dict[str, dict[str, object]] = {
    "RegressionMSR": {"index": "SV"},
    "ProxySHAP": {"index": "SV", "max_order": 1},
}  # the Shapley-value setting of approximators that default to interactions


def shapiq_approximators() -> dict[str, Callable[..., object]]:
    """The installed shapiq's approximators among :data:`SHAPIQ`, by name; the missing ones are printed."""
    import shapiq
    import shapiq.approximator as approximators

    found = {name: getattr(approximators, name) for name in SHAPIQ if hasattr(approximators, name)}
    missing = [name for name in SHAPIQ if name not in found]
    # shapiq puts a placeholder that raises its ImportError where an optional extra is not installed
    # (ShaplEIG needs shapiq[shapleig]: torch, gpytorch, botorch)
    extra = {name: str(found.pop(name)._import_error) for name in list(found) if hasattr(found[name], "_import_error")}
    print(
        f"shapiq {shapiq.__version__}: " + (f"not in this version: {', '.join(missing)}" if missing else "all present")
    )
    for name, error in extra.items():
        print(f"  {name} skipped, its optional dependencies are missing: {error}")
    return found


def _shapiq_call(
    make: Callable[..., object], n: int, seed: int, queries: int, value: Callable
) -> tuple[np.ndarray, np.ndarray | None]:
    """One approximator's values (and posterior variances when it gives them) from ``queries`` queries."""
    approximator = make(n=n, random_state=seed, **SHAPIQ_OPTIONS.get(getattr(make, "__name__", ""), {}))
    variances = None
    if hasattr(approximator, "approximate_with_variance"):
        found, spread = approximator.approximate_with_variance(queries, value)  # type: ignore[attr-defined]
        variances = np.array([_entry(spread, i) for i in range(n)], dtype=float)
    else:
        found = approximator.approximate(queries, value)  # type: ignore[attr-defined]
    return np.array([_entry(found, i) for i in range(n)], dtype=float), variances


def _entry(values: object, i: int) -> float:
    """Player ``i``'s entry of shapiq's InteractionValues (or of an array)."""
    if isinstance(values, np.ndarray):
        return float(values.ravel()[i] if values.size > i else np.nan)
    return float(values[(i,)])  # type: ignore[index]


def shapiq_study(game: Game, budgets: list[int], seeds: int, found: dict[str, Callable[..., object]]) -> pd.DataFrame:
    """Each shapiq approximator on the noisy game: a coalition query costs ``K`` fresh rollouts
    (``K`` in 1, 4, 12 and the budget over 2^n), so it gets ``budget // K`` queries; v(∅) and v(N) are
    rolled out like every coalition. Rows: ``estimator, k, budget, seed, squared error, covered i`` (the
    latter only from an approximator that returns variances, its normal 95 % interval)."""
    import warnings

    exact, weights, rows = game.exact(), 1 << np.arange(game.n), []
    for budget in budgets:
        split = -(-budget // (1 << game.n))  # K = the budget over 2^n, one series whatever its value
        for series, (k, label) in enumerate([(1, "1"), (4, "4"), (12, "12"), (split, "B/2^n")]):
            for s in range(seeds):
                for index, (name, make) in enumerate(found.items()):
                    draw = game.draw(np.random.default_rng([s, budget, series, index]))

                    def value(coalitions: np.ndarray, draw: BatchDraw = draw, k: int = k) -> np.ndarray:
                        masks = np.atleast_2d(coalitions).astype(np.int64) @ weights
                        return draw(masks, k) / k

                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            phi, variances = _shapiq_call(make, game.n, s, budget // k, value)
                    except Exception as error:  # noqa: BLE001 - a failing approximator is reported, not fatal
                        phi, variances = np.full(game.n, np.nan), None
                        if s == 0 and budget == budgets[-1] and series == 0:
                            print(f"  {name}: {type(error).__name__}: {str(error)[:120]}")
                    row = {"estimator": name, "k": label, "budget": budget, "seed": s}
                    row["squared error"] = float(np.mean((phi - exact) ** 2))
                    if variances is not None:
                        half = 1.959963984540054 * np.sqrt(np.maximum(variances, 0))
                        row.update({f"covered {i}": bool(abs(phi[i] - exact[i]) <= half[i]) for i in range(game.n)})
                    rows.append(row)
    return pd.DataFrame(rows)


def shapiq_best(
    game: Game, budgets: list[int], seeds: int, found: dict[str, Callable[..., object]]
) -> tuple[str, float]:
    """Per approximator and ``K``, the budget to RMSE 0.02; printed with, for an approximator that gives
    variances, its worst per-player coverage from 960 rollouts at its best K; returns the best
    ``(name (K), budget)``."""
    table = shapiq_study(game, budgets, seeds, found)
    table = table[np.isfinite(table["squared error"])]
    rmse = table.groupby(["estimator", "k", "budget"])["squared error"].mean().pow(0.5)
    need = {(name, k): budget_to(TARGET, rmse.loc[(name, k)]) for name, k in rmse.index.droplevel(2).unique()}
    best: dict[str, tuple[str, str]] = {}
    for (name, k), budget in need.items():
        if name not in best or budget < need[best[name]]:
            best[name] = (name, k)
    print(f"shapiq ({seeds} seeds per cell, best K per approximator), rollouts to RMSE {TARGET}:")
    for name, k in best.values():
        line = f"  {name} (K = {k}) {budget_text(need[(name, k)], budgets[0])}"
        chosen = table[(table["estimator"] == name) & (table["k"] == k)]
        if "covered 0" in chosen and chosen["covered 0"].notna().any():
            worst = worst_player_coverage(chosen.dropna(subset=["covered 0"]))
            if len(worst):
                w = worst.iloc[0]
                line += f"; posterior 95 % interval: worst player {w['worst']:.3f}"
                line += f" (floor {w['floor']:.3f}, {w['cells']} cells)"
        print(line)
    if not best:
        return "none", float("inf")
    label = min(best.values(), key=lambda key: need[key])
    return f"{label[0]} (K = {label[1]})", need[label]


def _ratio_text(car: float, other: float, largest: int) -> str:
    """CAR's budget to the target over another's; when CAR never reached it, a bound from the largest budget."""
    if not np.isfinite(other):
        return "-"
    return f"{car / other:.1f}x" if np.isfinite(car) else f">= {largest / other:.1f}x"


def budget_text(budget: float, lowest: int) -> str:
    """A budget to RMSE 0.02 as printed: at or below the lowest budget measured it is only a bound."""
    if not np.isfinite(budget):
        return "not reached"
    return f"<= {lowest:,}" if budget <= lowest else f"{budget:,.0f}"


def report(
    game: Game, budgets: list[int], seeds: int, shapiq_seeds: int, found: dict[str, Callable[..., object]] | None
) -> str:
    """The game's tables, printed, and its closing line."""
    table = rollout_study(
        game.draw,
        game.exact(),
        budgets,
        seeds=seeds,
        seed=0,
        paired_for=game.paired,
        enumerated=game.n <= 10,
        full=game.full,
    )
    rmse = table.groupby(["estimator", "budget"])["squared error"].mean().pow(0.5).unstack(0)
    proof = "proven by replay" if game.full is not None else "rolled out"
    print(f"\n== {game.name} (n = {game.n}, {seeds} seeds per cell, v(N) = {game.v((1 << game.n) - 1):.2f} {proof}) ==")
    print("RMSE of the Shapley vector by rollout budget:")
    print(rmse.round(4).to_string())
    need = {name: budget_to(TARGET, rmse[name].dropna()) for name in rmse.columns}
    worst, bias = worst_player_coverage(table), player_bias(table)
    summary = pd.DataFrame(
        {
            f"rollouts to RMSE {TARGET}": [budget_text(need[name], budgets[0]) for name in rmse.columns],
            "ratio to CAR": [_ratio_text(need["car"], need[name], budgets[-1]) for name in rmse.columns],
            "worst player coverage from 960": [
                f"{worst.loc[name, 'worst']:.3f}" if name in worst.index else "-" for name in rmse.columns
            ],
            "players biased": [biased(bias, name, game.n) for name in rmse.columns],
        },
        index=rmse.columns,
    )
    print(summary.to_string())
    if len(worst):
        w = worst.iloc[0]
        print(f"binomial floor for {int(w['cells'])} cells of {int(w['seeds'])} seeds: {w['floor']:.3f}")
    print_players(game, table, bias)
    chosen = table[(table["estimator"] == DEFAULT) & (table["budget"] >= 960)]["chose"]
    shares = ", ".join(
        f"{name} {share:.0%}" for name, share in chosen.value_counts(normalize=True).sort_index().items()
    )
    shares = f": {shares} of runs from 960" if shares else ""
    shapiq_text = ""
    if found:
        shapiq_name, shapiq_need = shapiq_best(game, budgets, shapiq_seeds, found)
        shapiq_text = f", best shapiq {shapiq_name} {budget_text(shapiq_need, budgets[0])}"
    ratio = need["car"] / need[DEFAULT]
    bound = "at least " if need[DEFAULT] <= budgets[0] or not np.isfinite(need["car"]) else ""
    if not np.isfinite(need["car"]):  # CAR never reached the target: the ratio is at least the largest budget's
        ratio = budgets[-1] / need[DEFAULT]
    low = worst.loc[DEFAULT] if DEFAULT in worst.index else None
    coverage = f"worst player {low['worst']:.3f} (floor {low['floor']:.3f})" if low is not None else "no interval"
    return (
        f"{game.name}: rcakit default (shapley_rollouts{shares}) {budget_text(need[DEFAULT], budgets[0])} rollouts to "
        f"RMSE {TARGET}, CAR {budget_text(need['car'], budgets[0])} ({bound}{ratio:.1f}x fewer){shapiq_text}; "
        f"coverage from 960 rollouts: {coverage}; mean error's 95 % interval excludes 0 for "
        f"{biased(bias, DEFAULT, game.n)} players"
    )


def biased(bias: pd.DataFrame, name: str, n: int) -> str:
    """How many of ``name``'s players have a mean error whose interval (``rcakit.scm.player_bias``)
    excludes 0, as ``k/n``: about 5 % of them by chance, all of them under a shared bias."""
    chosen = bias[bias["estimator"] == name]
    if not len(chosen):
        return "-"
    return f"{int(((chosen['low'] > 0) | (chosen['high'] < 0)).sum())}/{n}"


def print_players(game: Game, table: pd.DataFrame, bias: pd.DataFrame) -> None:
    """The per-player tables from 960 rollouts: every estimator's coverage of each player (the lowest over
    the budgets, ``rcakit.scm.player_coverage``) under the exact values, and the default's mean error per
    player with its 95 % interval over the runs (``rcakit.scm.player_bias``)."""
    cover = player_coverage(table)
    exact = pd.DataFrame([game.exact()], index=["exact phi"], columns=cover.columns)
    print("per player from 960 rollouts: exact phi, each estimator's lowest coverage over the budgets")
    print(pd.concat([exact.round(4), cover.round(3)]).to_string())
    mine = bias[bias["estimator"] == DEFAULT].set_index("player")[["mean error", "low", "high"]]
    print(f"{DEFAULT}'s mean error per player from 960 rollouts, with its 95 % interval over the runs:")
    print(mine.T.round(4).to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 seeds, budgets up to 15,360, synthetic games")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 200, quick 20)")
    parser.add_argument("--games", nargs="*", default=None, help="only these games (default: all)")
    parser.add_argument("--shapiq", action="store_true", help="also run the installed shapiq's approximators")
    args = parser.parse_args()
    seeds = args.seeds or (20 if args.quick else 200)
    shapiq_seeds = max(2, seeds // 10)
    budgets = BUDGETS[:8] if args.quick else BUDGETS
    every = games()
    if args.games is not None:
        chosen = [game for game in every if game.name in args.games]
    else:
        chosen = [game for game in every if not (args.quick and game.full is not None)]  # quick: no SCM games
    found = shapiq_approximators() if args.shapiq else None
    lines = [report(game, budgets, seeds, shapiq_seeds, found) for game in chosen]
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
