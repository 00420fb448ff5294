"""Progress for long sweeps, on the terminal only.

A chapter's kernel must not print progress into the notebook (strict nbval
compares outputs). ``track`` therefore writes a tqdm bar to the controlling
terminal when there is one and ``RCAKIT_PROGRESS`` is not ``0``; otherwise it
returns the iterable untouched.

Warnings that must not land in a notebook either (a corrupt case-store line)
go through ``warn``: inside a kernel that ``rcakit.book.runner`` started, they are
appended to the file named by ``$RCAKIT_WARNINGS``, which the runner prints on
its own stderr after the run; elsewhere (a Python session, JupyterLab) they
go to stderr directly.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO


@functools.lru_cache(maxsize=1)
def _terminal() -> TextIO | None:
    if os.environ.get("RCAKIT_PROGRESS", "1") == "0":
        return None
    try:
        return open("/dev/tty", "w")  # kept open for the life of the process
    except OSError:
        return None


def track(iterable: Iterable[Any], desc: str = "", total: int | None = None) -> Iterator[Any]:
    """``iterable`` wrapped in a terminal progress bar when a terminal exists."""
    tty = _terminal()
    if tty is None:
        return iter(iterable)
    from tqdm import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, file=tty, leave=False))


WARNINGS_ENV = "RCAKIT_WARNINGS"


def warn(message: str) -> None:
    """One warning line for the person running rcakit, never in notebook outputs."""
    line = "rcakit: warning: " + " ".join(str(message).split()) + "\n"
    target = os.environ.get(WARNINGS_ENV)
    if not target:
        sys.stderr.write(line)
        return
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))  # one O_APPEND write per line: lines never interleave
    finally:
        os.close(fd)
