"""The served-calls tally: which machine and which model server answered a case's chats.

Every chat through ``rcakit.llm.CachedProvider`` is charged, with
:func:`count_call`, to the tally of the case running in that thread, per
(machine, server): ``calls`` counts every chat and depends only on the
requests; ``model_calls`` counts the cache misses and depends on the cache's
state, so only ``calls`` may go into a notebook's outputs. :func:`attempt_case`
runs one case with its own tally, in whatever process or thread runs it (this
one, a thread of it, or a Dask worker), and returns the tally with the value.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Stream = Generator[tuple[Any, ...], None, None]  # (index, ok, value or error, served, attempts) per finished case

MACHINE = socket.gethostname()
_CASE = threading.local()  # the running case's Served tally, in the thread that runs it


@dataclass
class Served:
    """Model calls per (machine, server): ``calls`` (all chats) and ``model_calls`` (cache misses)."""

    rows: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, machine: str, server: str, calls: int = 1, model_calls: int = 0) -> None:
        row = self.rows.setdefault((machine, server), [0, 0])
        row[0] += calls
        row[1] += model_calls

    def update(self, other: Served) -> None:
        for (machine, server), (calls, model_calls) in other.rows.items():
            self.add(machine, server, calls, model_calls)

    @property
    def calls(self) -> int:
        return sum(row[0] for row in self.rows.values())

    def table(self, runtime: bool = False) -> pd.DataFrame:
        """One row per (machine, server), sorted; ``model_calls`` only with ``runtime`` (cache-dependent)."""
        import pandas as pd

        columns = ["machine", "server", "calls"] + (["model_calls"] if runtime else [])
        rows = [(m, s, c, mc) for (m, s), (c, mc) in sorted(self.rows.items())]
        return pd.DataFrame([r[: len(columns)] for r in rows], columns=columns)


def count_call(server: str, model_call: bool) -> None:
    """Charge one chat to the running case's tally (a no-op outside ``rcakit.parallel.run_cases``)."""
    tally = getattr(_CASE, "served", None)
    if tally is not None:
        tally.add(MACHINE, server, 1, int(model_call))


def attempt_case(work: Callable[..., Any], item: object, retries: int) -> tuple[bool, object, Served, int]:
    """Run ``work(item)`` up to ``1 + retries`` times: ``(ok, value or last error, served, attempts)``."""
    served = Served()
    _CASE.served = served
    error: Exception = RuntimeError("no attempt ran")  # replaced by the first failure: retries >= 0 tries once
    attempt = 0
    try:
        for attempt in range(1, retries + 2):
            try:
                return True, work(item), served, attempt
            except Exception as exc:  # any error of a case: a server hiccup as much as a bug
                error = exc
        return False, error, served, attempt
    finally:
        _CASE.served = None


def announce(line: str) -> None:
    """One line on the terminal, where the progress bars go (never into a notebook's outputs)."""
    from rcakit.progress import _terminal

    tty = _terminal()
    if tty is not None:
        tty.write(line + "\n")
        tty.flush()
