"""Loaders for LongRCA Bench records and Who&When logs, and the check of a path before it is loaded.

Both formats map into :class:`~rcakit.trajectories.schema.Trajectory`; each
concept has its module:

- :mod:`~rcakit.trajectories.reading`: reading record files without blocking
  or trusting them (a FIFO, a dangling link, invalid UTF-8 or JSON is one line);
- :mod:`~rcakit.trajectories.parsing`: :class:`LoadResult`, the checks every
  field passes (LongRCA §3.3) and the read loop;
- :mod:`~rcakit.trajectories.longrca_format`: LongRCA records (Appendix A);
- :mod:`~rcakit.trajectories.who_and_when_format`: the Who&When logs and their subsets.

Nothing is dropped silently: the ``read_*`` functions return the good
trajectories together with every error line, and the ``load_*`` functions
raise :class:`rcakit.RcakitError` on the first bad record. A path that does
not exist is always an ``RcakitError`` naming it. This module checks a path of
either format (:func:`validate_path`, behind ``rcakit validate``) and keeps
every loader importable from one place.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from pathlib import Path

from rcakit import RcakitError
from rcakit.trajectories.longrca_format import check_longrca, load_longrca, longrca_source, parse_longrca, read_longrca
from rcakit.trajectories.parsing import LoadResult
from rcakit.trajectories.reading import MAX_FILE_BYTES, RecordError, entry_problem, require_path
from rcakit.trajectories.who_and_when_format import (
    WHO_AND_WHEN_SIZES,
    WHO_AND_WHEN_SUBSETS,
    check_who_and_when,
    load_who_and_when,
    parse_who_and_when,
    read_who_and_when,
    who_and_when_folders,
)

__all__ = [
    "MAX_FILE_BYTES",
    "WHO_AND_WHEN_SIZES",
    "WHO_AND_WHEN_SUBSETS",
    "LoadResult",
    "RecordError",
    "check_longrca",
    "check_who_and_when",
    "detect_format",
    "entry_problem",
    "load_longrca",
    "load_who_and_when",
    "longrca_source",
    "parse_longrca",
    "parse_who_and_when",
    "read_longrca",
    "read_who_and_when",
    "require_path",
    "validate_path",
    "who_and_when_folders",
]


def detect_format(path: str | Path) -> str:
    """``"who_and_when"`` for a Who&When root or subset folder, ``"traces"`` for agent traces (OTLP,
    Phoenix, TRAIL: :func:`~rcakit.trajectories.traces.is_trace_path`), else ``"longrca"``."""
    path = Path(path)
    if path.is_dir() and (path.name in WHO_AND_WHEN_SUBSETS or any((path / s).is_dir() for s in WHO_AND_WHEN_SUBSETS)):
        return "who_and_when"
    from rcakit.trajectories.traces import is_trace_path

    return "traces" if is_trace_path(path) else "longrca"


def validate_path(path: str | Path, fmt: str = "auto") -> tuple[int, list[str]]:
    """Check every record under ``path``: ``(number of good records, one error line per bad one)``.

    ``fmt`` is ``"longrca"``, ``"who_and_when"``, a trace format (``"otlp"``,
    ``"phoenix"``, ``"trail"``, or ``"traces"`` for any of them) or ``"auto"``
    (see :func:`detect_format`). Raises ``RcakitError`` only when the path itself is
    unusable (missing, an empty folder or file, an unknown format).
    """
    path = require_path(Path(path))
    kind = detect_format(path) if fmt == "auto" else fmt
    from rcakit.trajectories.traces import TRACE_FORMATS, read_traces

    readers = {"longrca": read_longrca, "who_and_when": read_who_and_when}
    if kind not in readers and kind not in (*TRACE_FORMATS, "traces"):
        known = ", ".join(("auto", "longrca", "who_and_when", "traces", *TRACE_FORMATS))
        raise RcakitError(f"format: {fmt!r} is not one of {known}")
    if kind in readers:
        result = readers[kind](path, announce=False)
    else:
        result = read_traces(path, "auto" if kind == "traces" else kind, announce=False)
    if not result.trajectories and not result.errors:
        raise RcakitError(f"{path}: no records found")
    return len(result.trajectories), result.errors
