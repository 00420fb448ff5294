"""How a sweep's failures read: a case that failed every attempt, and any error in one line.

A case that raises is retried (:mod:`rcakit.parallel.executor`); one that fails
every attempt stops the run with :class:`CaseFailed`, which names the case's key
and its last error in one line, so the command line prints it as any other
``RcakitError`` and exits 2.
"""

from __future__ import annotations

from rcakit import RcakitError


class CaseFailed(RcakitError):
    """A case failed on every attempt; ``key`` names it, ``error`` is its last error in one line."""

    def __init__(self, key: str, error: str, attempts: int) -> None:
        self.key, self.error, self.attempts = key, error, attempts
        super().__init__(
            f"case {key!r} failed after {attempts} attempt{'s' * (attempts > 1)}: {error}; "
            "the finished cases are saved, rerun to resume"
        )


def one_line(exc: BaseException) -> str:
    """An error as one line: an ``RcakitError``'s own message, else ``Type: message``."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, RcakitError) else f"{type(exc).__name__}: {text}".rstrip(": ")
