"""Run time of the gcjr-ablations chapter and oracle calls per case of rcakit.repair.

    python benchmarks/bench_repair.py [--skip-chapter]

Prints (1) the wall time of the chapter's full default run through the
runner (target: under 60 s on the 2-core dev machine), executed into a
scratch folder so the committed results are untouched, (2) for each method on
the default 120-case benchmark, the mean oracle calls (seed replays, counted
by the oracle itself: ``SharedSeedOracle.calls``, which only its charging
hook increments) per case and the wall time per case, and (3) the cost
check: the share of cases whose counted calls equal r(1+m+p) for GCJR and
r(1+n+C(n,2)) for exhaustive search.
"""

from __future__ import annotations

import functools
import sys
import time

from timing import chapter_seconds

from rcakit import repair
from rcakit.repair import cost


def method_costs() -> list[tuple[str, float, float]]:
    cases = repair.controlled_dag_benchmark()
    gcjr_frame = repair.evaluate_method(cases, repair.gcjr, schedules=(0,))
    budgets = dict(zip(gcjr_frame["case_id"], gcjr_frame["replays"], strict=True))
    methods = {
        "gcjr": repair.gcjr,
        "exhaustive": repair.exhaustive,
        **{f"gcjr/{n}": functools.partial(repair.gcjr, config=c) for n, c in repair.ABLATIONS.items() if n != "gcjr"},
        **repair.baseline_methods(budgets, seed=0),
    }
    rows = []
    for name, method in methods.items():
        fresh = repair.controlled_dag_benchmark()  # empty replay caches, so every method pays its own way
        start = time.perf_counter()
        frame = repair.evaluate_method(fresh, method, schedules=(0,))
        rows.append((name, frame["replays"].mean(), (time.perf_counter() - start) / len(fresh) * 1e3))
    return rows


def cost_shares() -> tuple[float, float]:
    cases = repair.controlled_dag_benchmark()
    g = repair.evaluate_method(cases, repair.gcjr, schedules=(0,))
    e = repair.evaluate_method(cases, repair.exhaustive, schedules=(0,))
    check = cost.cost_check(cases, g, e, r=3)
    return float(check["gcjr_match"].mean()), float(check["exhaustive_match"].mean())


def main() -> None:
    start = time.perf_counter()
    repair.controlled_dag_benchmark()
    print(f"generate 120 Controlled-DAG cases: {time.perf_counter() - start:.2f} s")
    print(f"{'method':<24}{'oracle calls / case':>20}{'ms / case':>12}")
    for name, calls, ms in method_costs():
        print(f"{name:<24}{calls:>20.1f}{ms:>12.2f}")
    gcjr_share, exhaustive_share = cost_shares()
    print(f"cost check: counted == r(1+m+p) on {gcjr_share:.3f} of cases; == r(1+n+C(n,2)) on {exhaustive_share:.3f}")
    if "--skip-chapter" not in sys.argv:
        print(f"chapter gcjr-ablations, default parameters: {chapter_seconds('gcjr-ablations'):.1f} s (target < 60 s)")


if __name__ == "__main__":
    main()
