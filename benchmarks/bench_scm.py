"""Estimator overhead of rcakit.shapley's estimators, beyond the value function.

    python benchmarks/bench_scm.py

Overhead = (time of the estimator − time of the same value-function calls made
directly) / number of calls. Targets: at most 10 µs per coalition for
``shapley_exact`` at n = 14 and per evaluation for ``shapley_permutation``.
"""

from __future__ import annotations

import time

import numpy as np

from rcakit.shapley import shapley_exact, shapley_permutation


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


if __name__ == "__main__":
    per_coalition, t_exact = exact_overhead()
    print(f"shapley_exact n=14: {1 << 14} coalitions in {t_exact * 1e3:.1f} ms; "
          f"overhead {per_coalition:.2f} µs per coalition (target <= 10)")
    per_eval, t_perm = permutation_overhead()
    print(f"shapley_permutation n=14, 400 antithetic permutations: {400 * 2 * 15} evaluations in "
          f"{t_perm * 1e3:.1f} ms; overhead {per_eval:.2f} µs per evaluation (target <= 10)")
