"""How long ``import rcakit.rag`` takes, and whether it loads IPython or matplotlib.

The science package re-exports its names lazily (``rcakit/rag/__init__.py``), so
importing it loads no page tool, no plotting library and no notebook display.
Each measurement is a fresh interpreter (nothing cached in ``sys.modules``);
the median of five is printed. Exits 1 if the median is over the budget or
either library was loaded. Run: ``.venv/bin/python benchmarks/bench_import.py``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

MODULE = "rcakit.rag"
BUDGET = 0.5  # seconds
RUNS = 5
HEAVY = ("IPython", "matplotlib")
PROBE = f"""
import json, sys, time
start = time.perf_counter()
import {MODULE}
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def measure() -> dict:
    """One fresh interpreter's import time and the heavy libraries it loaded."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    runs = [measure() for _ in range(RUNS)]
    median = statistics.median(r["seconds"] for r in runs)
    loaded = sorted({m for r in runs for m in r["loaded"]})
    print(f"import {MODULE}: median {median:.3f} s over {RUNS} fresh interpreters (budget {BUDGET} s)")
    for name in HEAVY:
        print(f"  {name} loaded: {'yes' if name in loaded else 'no'}")
    ok = median <= BUDGET and not loaded
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
