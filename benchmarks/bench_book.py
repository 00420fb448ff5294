"""Cold against warm book builds, and how long each page takes to execute.

Run: ``.venv/bin/python benchmarks/bench_book.py [--defaults]``. In a scratch
book, results folder and empty data home (the user's are untouched), one run
measures:

- a cold ``rcakit book``: every page executed, then Sphinx; each page's
  execution is timed on its own (this is the table of run times the README
  quotes: pages carry no timings, so the benchmark does);
- a warm ``rcakit book`` with nothing changed: no page may be re-executed,
  so its time is only Sphinx's;
- ``rcakit build`` (Sphinx alone), for reference.

It prints the times, the pages the warm build re-executed (none is the
target) and the ratio cold / warm. Quick values by default, so it runs in
minutes; ``--defaults`` times the pages at their defaults, as ``make book``
runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rcakit.book import build as html_book
from rcakit.book import registry, runner


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one ``rcakit`` command, and its stderr; a failure stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rcakit", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"rcakit {' '.join(args)} failed: {proc.stderr.strip()}")
    return seconds, proc.stderr


def scratch_book(tmp: Path) -> dict[str, str]:
    """A scratch book with the project's book files; the environment that points rcakit at it."""
    book = tmp / "book"
    book.mkdir()
    html_book.copy_sources(book)
    return {
        "RCAKIT_BOOK_DIR": str(book),
        "RCAKIT_RESULTS_DIR": str(tmp / "results"),
        "RCAKIT_DATA_DIR": str(tmp / "data"),
        "RCAKIT_PROGRESS": "0",
    }


def main() -> None:
    quick = "--defaults" not in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        env = scratch_book(Path(tmp))
        os.environ.update(env)
        pages = {}
        for cid in registry.PAGES:  # the cold run, page by page, as rcakit book runs them
            start = time.perf_counter()
            runner.run_chapter(cid, quick=quick, show_progress=False)
            pages[cid] = time.perf_counter() - start
        start = time.perf_counter()
        html_book.build()
        cold = sum(pages.values()) + time.perf_counter() - start
        values = ["--quick"] if quick else ["--defaults"]
        warm, log = timed(["book", *values], {**os.environ, **env})
        sphinx, _ = timed(["build"], {**os.environ, **env})
    rerun = [line.split(":")[0] for line in log.splitlines() if ": running (" in line]
    print(f"values: {values[0]}")
    for cid, seconds in pages.items():
        print(f"  {cid}: {seconds:.0f} s")
    print(f"cold rcakit book: {cold:.0f} s")
    print(f"warm rcakit book (nothing changed): {warm:.0f} s; pages re-executed: {rerun or 'none'}")
    print(f"rcakit build (Sphinx only): {sphinx:.0f} s")
    print(f"cold / warm: {cold / warm:.1f}x; warm / Sphinx only: {warm / sphinx:.2f}")


if __name__ == "__main__":
    main()
