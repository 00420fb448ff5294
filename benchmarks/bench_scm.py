"""Estimator overhead of rcakit.shapley's estimators, beyond the value function; and, on request,
how often the Shapley intervals of CAR §4 cover the analytic values over many reruns.

    python benchmarks/bench_scm.py
    python benchmarks/bench_scm.py coverage [--reruns 1000] [--seed 0]

Overhead = (time of the estimator − time of the same value-function calls made
directly) / number of calls. Targets: at most 10 µs per coalition for
``shapley_exact`` at n = 14 and per evaluation for ``shapley_permutation``; and
``shapley_exact_batched`` (a value function that takes every coalition as one
0/1 matrix) at least 5x faster than shapiq's ``ExactComputer`` on the same
batched game at n = 20, with the same values (shapiq is in the ``dev`` extra).

``coverage`` runs :func:`rcakit.scm.coverage_study` on the interaction SCM at
CAR's setting (q = 0.3, 80 permutations x 12 rollouts) and at settings with
fewer permutations, fewer rollouts or another q, and prints, per setting and
interval, the share of reruns whose interval held the analytic value of each
step with its 95% Wilson interval. The car-shapley chapter measures the same
at its own parameters with fewer reruns.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from rcakit import scm
from rcakit.shapley import shapley_exact, shapley_exact_batched, shapley_permutation

COVERAGE_SETTINGS = (  # (q, permutations, rollouts per v(S)); CAR's setting first
    (0.3, 80, 12),
    (0.3, 20, 12),
    (0.3, 10, 12),
    (0.3, 5, 12),
    (0.3, 3, 12),
    (0.3, 2, 12),
    (0.1, 20, 4),
    (0.7, 10, 2),
)


def cheap_value(s: frozenset) -> float:
    return float(len(s) % 3)


def best_of(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def exact_overhead(n: int = 14) -> tuple[float, float]:
    coalitions = [frozenset(i for i in range(n) if m >> i & 1) for m in range(1 << n)]
    direct = best_of(lambda: [cheap_value(c) for c in coalitions])
    total = best_of(lambda: shapley_exact(cheap_value, n))
    return (total - direct) / len(coalitions) * 1e6, total


def permutation_overhead(n: int = 14, permutations: int = 400) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    walks = [rng.permutation(n) for _ in range(permutations)]
    prefixes = [frozenset(map(int, w[:k])) for w in walks for order in (w, w[::-1]) for k in range(n + 1)]
    direct = best_of(lambda: [cheap_value(c) for c in prefixes])
    total = best_of(lambda: shapley_permutation(cheap_value, n, permutations, seed=0))
    return (total - direct) / len(prefixes) * 1e6, total


def exact_against_shapiq(n: int = 20) -> tuple[float, float, float]:
    """Seconds of ``shapley_exact_batched`` and of shapiq's ExactComputer on one batched game of ``n``
    players (additive weights and an AND pair), and the largest difference of their values."""
    import shapiq

    weights = np.random.default_rng(0).random(n)

    def game(members: np.ndarray) -> np.ndarray:
        members = np.asarray(members, dtype=float)
        return members @ weights + members[:, 0] * members[:, 1]

    start = time.perf_counter()
    ours = shapley_exact_batched(game, n)
    mid = time.perf_counter()
    found = shapiq.ExactComputer(game, n_players=n)("SV")
    end = time.perf_counter()
    theirs = np.array([found[(i,)] for i in range(n)])
    return mid - start, end - mid, float(np.abs(ours - theirs).max())


def coverage_table(reruns: int, seed: int) -> pd.DataFrame:
    """Coverage of the analytic Shapley values, one row per setting and interval, one column per step."""
    settings = {f"q={q} M={m} x{k}": (scm.interaction_scm(q=q, seed=seed), m, k, 0) for q, m, k in COVERAGE_SETTINGS}
    study = scm.coverage_study(settings, reruns, seed)
    study["cell"] = [
        f"{c:.3f} [{lo:.3f}, {hi:.3f}]"
        for c, lo, hi in zip(study["coverage"], study["Wilson low"], study["Wilson high"], strict=True)
    ]
    rows = list(dict.fromkeys(zip(study["setting"], study["interval"], strict=True)))  # settings, then variants
    table = study.set_index(["setting", "interval", "step"])["cell"].unstack("step")
    return table.reindex(pd.MultiIndex.from_tuples(rows, names=["setting", "interval"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="speed", choices=["speed", "coverage"])
    parser.add_argument("--reruns", type=int, default=1000, help="reruns per setting (coverage)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the reruns (coverage)")
    args = parser.parse_args()
    if args.what == "coverage":
        start = time.perf_counter()
        table = coverage_table(args.reruns, args.seed)
        with pd.option_context("display.width", 200, "display.max_colwidth", None, "display.max_rows", None):
            print(
                f"coverage of the analytic phi over {args.reruns} reruns per setting "
                f"(share [95% Wilson interval]; nominal 0.95):"
            )
            print(table.to_string())
        print(f"({time.perf_counter() - start:.0f} s)")
        return
    per_coalition, t_exact = exact_overhead()
    print(
        f"shapley_exact n=14: {1 << 14} coalitions in {t_exact * 1e3:.1f} ms; "
        f"overhead {per_coalition:.2f} µs per coalition (target <= 10)"
    )
    per_eval, t_perm = permutation_overhead()
    print(
        f"shapley_permutation n=14, 400 antithetic permutations: {400 * 2 * 15} evaluations in "
        f"{t_perm * 1e3:.1f} ms; overhead {per_eval:.2f} µs per evaluation (target <= 10)"
    )
    ours, theirs, gap = exact_against_shapiq()
    print(
        f"exact Shapley n=20, one batched game: shapley_exact_batched {ours:.2f} s, shapiq ExactComputer "
        f"{theirs:.2f} s: {theirs / ours:.1f}x faster (target >= 5); largest difference {gap:.1e}"
    )


if __name__ == "__main__":
    main()
