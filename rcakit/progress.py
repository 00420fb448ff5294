"""Progress for long sweeps, on the terminal only.

A chapter's kernel must not print progress into the notebook (strict nbval
compares outputs). ``track`` therefore writes a tqdm bar to the controlling
terminal when there is one and ``RCAKIT_PROGRESS`` is not ``0``; otherwise it
returns the iterable untouched.
"""

from __future__ import annotations

import functools
import os
from typing import Iterable, Iterator


@functools.lru_cache(maxsize=1)
def _terminal():
    if os.environ.get("RCAKIT_PROGRESS", "1") == "0":
        return None
    try:
        return open("/dev/tty", "w")  # noqa: SIM115 - kept open for the process
    except OSError:
        return None


def track(iterable: Iterable, desc: str = "", total: int | None = None) -> Iterator:
    """``iterable`` wrapped in a terminal progress bar when a terminal exists."""
    tty = _terminal()
    if tty is None:
        return iter(iterable)
    from tqdm import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, file=tty, leave=False))
