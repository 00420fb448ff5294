"""The environment variables that bound rcakit's waits, read and checked in one way.

Every wait has a deadline: a data fetch (``$RCAKIT_FETCH_TIMEOUT``,
``rcakit.data.remote``), the import of a plug-in method
(``$RCAKIT_PLUGIN_TIMEOUT``, ``rcakit.attribution.sandbox``), the wait for
a case on a Dask cluster (``$RCAKIT_DASK_TIMEOUT``, ``rcakit.parallel.cluster``), a model call
(``$RCAKIT_LLM_TIMEOUT`` and the chapters' ``llm_timeout``,
``rcakit.llm.spec``). :func:`seconds_from_env` reads one: unset or empty is the
default; anything but a number of seconds above 0 and at most :data:`MAX_SECONDS`
is a one-line error, and so it is for a parameter (:func:`check_seconds`).

One bound for every number that becomes a wait or a count, so no value the
checks accept can fail later in the platform (``threading`` and ``socket``
timeouts overflow above about 9.2e9 s, an ``int64`` above 2**63): a wait is at
most :data:`MAX_SECONDS` (a day), a count (cases, samples, permutations) at
most :data:`MAX_COUNT`. A chapter parameter whose bounds leave the upper end
open gets these (``rcakit.book.registry.bounds_of``; ``rcakit list`` prints them).
"""

from __future__ import annotations

import math
import os

from rcakit import RcakitError

MAX_SECONDS = 86400.0  # a day: any longer wait is a typo, and every platform timer takes it
MAX_COUNT = 10**9  # cases, samples, permutations: more is a typo, and fits every integer type rcakit uses


def check_seconds(value: object, name: str) -> float:
    """``value`` as seconds, a number > 0 and at most :data:`MAX_SECONDS`; else one ``RcakitError`` line
    naming ``name`` (a parameter or an environment variable)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        shown = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:60]}... ({len(repr(value))} characters)"
        raise RcakitError(f"{name}: expected a number of seconds > 0, got {shown}")
    if value > MAX_SECONDS:
        raise RcakitError(f"{name}: {value:g} s is longer than rcakit waits (at most {MAX_SECONDS:g} s, a day)")
    return float(value)


def seconds_from_env(name: str, default: float) -> float:
    """``$name`` as seconds (a finite number > 0), ``default`` when unset or empty; else one ``RcakitError`` line."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        shown = repr(raw) if len(raw) <= 60 else f"{raw[:60]!r}... ({len(raw)} characters)"
        raise RcakitError(f"{name}: expected a number of seconds > 0, got {shown}")
    return check_seconds(seconds, name)


__all__ = ["MAX_COUNT", "MAX_SECONDS", "check_seconds", "seconds_from_env"]
