"""One chapter run at its quick values in a subprocess, judged as a strict build would judge its page.

Shared by the sweeps that ``make test`` leaves out: twenty seeds of every
chapter (``test_seeds.py``) and every chapter at the ends of its parameters'
ranges (``test_bounds.py``). A run fails when ``rcakit run`` exits non-zero,
or when its page quotes a glued number that is missing or does not format
(``page_glue.problems``). :func:`sweep` spreads one chapter's runs over
``RCAKIT_SEED_WORKERS`` processes (default 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rcakit.book import registry
from support.page_glue import problems


def run_quick(chapter_id: str, overrides: dict[str, Any], folder: Path) -> tuple[int, str]:
    """Run ``chapter_id --quick`` with ``overrides`` into ``folder``; (exit status, first problem line)."""
    env = {
        **os.environ,
        "RCAKIT_BOOK_DIR": str(folder / "book"),
        "RCAKIT_RESULTS_DIR": str(folder / "results"),
        "RCAKIT_DATA_DIR": str(folder.parent / "data"),
        "RCAKIT_PROGRESS": "0",
    }
    args = [sys.executable, "-m", "rcakit", "run", chapter_id, "--quick"]
    for name, value in overrides.items():
        args += ["-p", name, str(value)]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return proc.returncode, lines[-1] if lines else f"exit {proc.returncode}"
    page = folder / "book" / "chapters" / (registry.get(chapter_id).notebook.stem + ".ipynb")
    found = problems(page)
    return (1, found[0]) if found else (0, "")


def sweep(chapter_id: str, runs: Mapping[str, dict[str, Any]], folder: Path) -> dict[str, str]:
    """Run every ``{label: overrides}`` of ``chapter_id`` (each into its own folder); ``{label: problem}`` of those
    that fail, so a sweep passes when it is empty."""
    labels = list(runs)
    workers = int(os.environ.get("RCAKIT_SEED_WORKERS", "2"))
    with ThreadPoolExecutor(workers) as pool:
        outcomes = pool.map(lambda i: run_quick(chapter_id, runs[labels[i]], folder / f"run-{i}"), range(len(labels)))
        return {label: line for label, (status, line) in zip(labels, outcomes, strict=True) if status}
