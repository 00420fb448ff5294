"""Speed of rcakit.trajectories: loader throughput and offline locators at LongRCA scale.

Prints two figures:
- the Who&When loader's throughput (logs and steps per second, validation included);
- the offline locators' time on the default synthetic benchmark (1,140
  trajectories, about 180k steps); the target is under 30 s for all four.

Run: .venv/bin/python benchmarks/bench_trajectories.py [WHO_AND_WHEN_PATH]
"""

from __future__ import annotations

import sys
import time

from rcakit.paths import resolve
from rcakit.trajectories import GeneratorConfig, generate_benchmark, offline_locators, read_who_and_when


def bench_loader(path) -> None:
    if not path.is_dir():
        print(f"loader: skipped, no Who&When folder at {path}")
        return
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = read_who_and_when(path)
        best = min(best, time.perf_counter() - start)
    logs = len(result.trajectories) + len(result.errors)
    steps = sum(len(t) for t in result.trajectories)
    print(
        f"loader: {logs} Who&When logs ({steps} steps) in {best:.3f} s "
        f"= {logs / best:.0f} logs/s, {steps / best:.0f} steps/s (best of 3)"
    )


def bench_locators(seed: int = 0) -> None:
    start = time.perf_counter()
    bench = generate_benchmark(seed, GeneratorConfig())
    generated = time.perf_counter() - start
    steps = sum(len(t) for t in bench)
    print(f"generator: {len(bench)} trajectories, {steps} steps in {generated:.2f} s")
    total = 0.0
    for locator in offline_locators(seed):
        start = time.perf_counter()
        locator.locate_all(bench)
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"  {locator.name:<20} {elapsed:6.2f} s")
    verdict = "within" if total < 30 else "OVER"
    print(f"locators: all four in {total:.2f} s on {steps} steps ({verdict} the 30 s target)")


if __name__ == "__main__":
    bench_loader(resolve(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/who_and_when"))
    bench_locators()
