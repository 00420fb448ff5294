"""Wall time of a whole chapter run, shared by the benchmark scripts.

The chapter runs through ``rcakit.book.runner`` into a scratch book and results
folder, so the user's book and results are untouched.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def chapter_seconds(chapter_id: str, quick: bool = False) -> float:
    """Seconds for one run of ``chapter_id`` (its defaults, or its quick values), kernel start included."""
    from rcakit.book import runner

    with tempfile.TemporaryDirectory() as tmp:
        before = os.environ.get("RCAKIT_RESULTS_DIR")
        os.environ["RCAKIT_RESULTS_DIR"] = tmp
        try:
            start = time.perf_counter()
            runner.run_chapter(chapter_id, quick=quick, output_dir=Path(tmp), show_progress=False)
            return time.perf_counter() - start
        finally:
            if before is None:
                os.environ.pop("RCAKIT_RESULTS_DIR")
            else:
                os.environ["RCAKIT_RESULTS_DIR"] = before
