"""Cold against warm book builds: a warm ``rcakit book`` with nothing changed re-executes nothing.

Run: ``.venv/bin/python benchmarks/bench_book.py [--defaults]``. In a scratch
book, results folder and empty data home (the user's are untouched), the
script times three builds in one run: a cold ``rcakit book`` (every page
executed, then Sphinx), a warm one with nothing changed (only Sphinx), and
``rcakit build`` (Sphinx alone, for reference). It prints each time, which
pages the warm build re-executed (none is the target), and the ratio
cold / warm. Quick values by default, so it runs in minutes; ``--defaults``
times the pages at their defaults, as ``make book`` runs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rcakit.paths import project_root

BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib", "api.md", "bibliography.md")


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one ``rcakit`` command, and its stderr; a failure stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rcakit.cli", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"rcakit {' '.join(args)} failed: {proc.stderr.strip()}")
    return seconds, proc.stderr


def main() -> None:
    values = ["--defaults"] if "--defaults" in sys.argv[1:] else ["--quick"]
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "book"
        book.mkdir()
        for name in BOOK_FILES:
            shutil.copy(project_root() / "book" / name, book / name)
        if (project_root() / "book" / "_static").is_dir():
            shutil.copytree(project_root() / "book" / "_static", book / "_static")
        env = {
            **os.environ,
            "RCAKIT_BOOK_DIR": str(book),
            "RCAKIT_RESULTS_DIR": str(Path(tmp) / "results"),
            "RCAKIT_DATA_DIR": str(Path(tmp) / "data"),
            "RCAKIT_PROGRESS": "0",
        }
        cold, _ = timed(["book", *values], env)
        warm, log = timed(["book", *values], env)
        sphinx, _ = timed(["build"], env)
    rerun = [line.split(":")[0] for line in log.splitlines() if ": running (" in line]
    print(f"values: {values[0]}")
    print(f"cold rcakit book: {cold:.1f} s")
    print(f"warm rcakit book (nothing changed): {warm:.1f} s; pages re-executed: {rerun or 'none'}")
    print(f"rcakit build (Sphinx only): {sphinx:.1f} s")
    print(f"cold / warm: {cold / warm:.1f}x; warm / Sphinx only: {warm / sphinx:.2f}")


if __name__ == "__main__":
    main()
