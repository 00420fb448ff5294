"""Run time of the attribution-families chapter at its defaults and at --quick.

    python benchmarks/bench_attribution.py

Targets: defaults within 2 minutes and quick within 30 s on the 2-core
machine. Both runs go into scratch folders (``timing.chapter_seconds``).
"""

from __future__ import annotations

from timing import chapter_seconds


def main() -> None:
    quick = chapter_seconds("attribution-families", quick=True)
    print(f"attribution-families --quick: {quick:.1f} s (target < 30 s)")
    full = chapter_seconds("attribution-families")
    print(f"attribution-families, defaults: {full:.1f} s (target < 120 s)")


if __name__ == "__main__":
    main()
