"""Wall time of ``make unit``, the inner loop, run twice: the second run is the one a developer waits for.

The first run may reinstall the package (the install stamps follow
``pyproject.toml`` and the ``Makefile``); the second finds the stamps and
runs only pytest over ``tests/unit`` on every core. Prints both times and the
second against the budget; exits 1 when either run fails or the second is
over budget. Run: ``.venv/bin/python benchmarks/bench_unit.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 60.0  # seconds of wall time for the second run


def make_unit() -> tuple[float, int]:
    """One ``make unit``: its wall time in seconds and its exit status."""
    start = time.perf_counter()
    done = subprocess.run(["make", "unit"], cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    first, first_status = make_unit()
    second, second_status = make_unit()
    print(f"make unit, first run: {first:.1f} s (exit {first_status})")
    print(f"make unit, second run: {second:.1f} s (exit {second_status}; budget {BUDGET:g} s)")
    return int(first_status != 0 or second_status != 0 or second > BUDGET)


if __name__ == "__main__":
    sys.exit(main())
