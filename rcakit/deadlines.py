"""The environment variables that bound rcakit's waits, read and checked in one way.

Every wait has a deadline: a data fetch (``$RCAKIT_FETCH_TIMEOUT``,
``rcakit.data.remote``), the import of a plug-in method
(``$RCAKIT_PLUGIN_TIMEOUT``, ``rcakit.attribution.sandbox``), the wait for
a case on a Dask cluster (``$RCAKIT_DASK_TIMEOUT``, ``rcakit.parallel.cluster``), a model call
(``$RCAKIT_LLM_TIMEOUT`` and the chapters' ``llm_timeout``,
``rcakit.llm.spec``). :func:`seconds_from_env` reads one: unset or empty is the
default; anything but a finite number of seconds above 0 is a one-line error.
"""

from __future__ import annotations

import math
import os

from rcakit import RcakitError


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
    return seconds


__all__ = ["seconds_from_env"]
