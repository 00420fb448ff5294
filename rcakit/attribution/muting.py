"""What a user's attribution method prints is not the chapter's output.

:func:`muted` discards what the current thread writes to ``sys.stdout`` and
``sys.stderr``: a user's method that prints on every case would otherwise
publish its prints in the chapter's notebook (1 MiB per
call made a 52.7 MB page). Other threads (a progress bar, the kernel's own
output) write as before. Used by ``rcakit.attribution.adapters`` (the
import) and ``rcakit.attribution.scoring`` (every call).
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any, TextIO


class _Muting(io.TextIOBase):
    """A stand-in for ``sys.stdout`` or ``sys.stderr`` that drops what muted threads write."""

    def __init__(self, stream: TextIO, threads: weakref.WeakSet[threading.Thread]) -> None:
        self._stream, self._threads = stream, threads

    def write(self, text: str) -> int:
        if threading.current_thread() in self._threads:
            return len(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # the kernel's stream attributes (session, fileno, ...)
        return getattr(self._stream, name)


_MUTED: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_INSTALL = threading.Lock()


def _install() -> None:
    """Put :class:`_Muting` in front of ``sys.stdout`` and ``sys.stderr`` once (again if they were replaced)."""
    with _INSTALL:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if not isinstance(stream, _Muting) and stream is not None:
                setattr(sys, name, _Muting(stream, _MUTED))


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """Within the block, what this thread prints is discarded; other threads are not affected."""
    _install()
    thread = threading.current_thread()
    was_muted = thread in _MUTED
    _MUTED.add(thread)
    try:
        yield
    finally:
        if not was_muted:
            _MUTED.discard(thread)


__all__ = ["muted"]
