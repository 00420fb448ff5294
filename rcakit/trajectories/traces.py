"""Reading a user's agent traces: OTLP (JSON or protobuf), Phoenix's span export or TRAIL, into trajectories.

Each file's format is told by its suffix (``*.pb``/``*.binpb`` are OTLP
protobuf) or by the first field that only one format has within its first
64 KiB (``resourceSpans``: OTLP/JSON; else ``child_spans`` or
``span_attributes``: TRAIL, also inside a released row's ``trace`` string;
else ``span_kind``: Phoenix), unless ``fmt`` names it. Spans are gathered by
trace across every file, and each trace becomes one trajectory
(``rcakit.trajectories.openinference.trajectory_of``). Every bad record
and every trace that cannot become a trajectory is one error line naming
where it came from; the good trajectories are kept (:class:`LoadResult`).

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from rcakit import RcakitError
from rcakit.trajectories.openinference import trajectory_of
from rcakit.trajectories.otlp import PROTOBUF_SUFFIXES, otlp_spans
from rcakit.trajectories.parsing import LoadResult
from rcakit.trajectories.phoenix import phoenix_spans
from rcakit.trajectories.reading import RecordError, entry_problem
from rcakit.trajectories.spans import Span, trace_files
from rcakit.trajectories.trail import read_labels, trail_spans

TRACE_FORMATS = ("otlp", "phoenix", "trail")
PEEK_BYTES = 1 << 16
Reader = Callable[[Path], Iterator[tuple[str, "list[Span] | RecordError"]]]
READERS: dict[str, Reader] = {"otlp": otlp_spans, "phoenix": phoenix_spans, "trail": trail_spans}
_MARKERS = {
    "otlp": ('"resourceSpans"',),
    "trail": ('"child_spans"', '"span_attributes"', '\\"child_spans\\"'),  # the last: a released row's string
    "phoenix": ('"span_kind"',),
}


def peek(path: Path) -> str:
    """The first :data:`PEEK_BYTES` of a regular file as text ('' for anything else; the reader reports it)."""
    if entry_problem(path) is not None:
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        return handle.read(PEEK_BYTES).decode("utf-8", "replace")


def file_format(path: Path) -> str | None:
    """``otlp``, ``phoenix`` or ``trail`` for a trace file, ``None`` when nothing in it says which."""
    if path.suffix in PROTOBUF_SUFFIXES:
        return "otlp"
    head = peek(path)
    return next((fmt for fmt, markers in _MARKERS.items() if any(m in head for m in markers)), None)


def is_trace_path(path: Path) -> bool:
    """Whether ``path`` (a file, or a folder's first trace file) holds traces rather than LongRCA records."""
    try:
        files = trace_files(path)
    except RcakitError:
        return False
    return file_format(files[0]) is not None


def read_traces(
    path: str | Path, fmt: str = "auto", labels: str | Path | None = None, announce: bool = True
) -> LoadResult:
    """The trajectories of every trace under ``path`` and one error line per bad record or trace.

    ``fmt`` is ``auto`` or one of :data:`TRACE_FORMATS`; ``labels`` a TRAIL
    labels file or folder (span ids of annotated errors, by trace id).
    """
    path = Path(path)
    if fmt != "auto" and fmt not in TRACE_FORMATS:
        raise RcakitError(f"format: {fmt!r} is not one of auto, {', '.join(TRACE_FORMATS)}")
    marks = read_labels(Path(labels)) if labels else {}
    result = LoadResult()
    traces: dict[str, list[Span]] = {}
    formats: dict[str, tuple[str, str]] = {}  # trace id -> (format, the file it first appears in)
    for file in trace_files(path):
        kind = file_format(file) if fmt == "auto" else fmt
        if kind is None:
            result.errors.append(f"{file}: not a trace file (no resourceSpans, child_spans or span_kind)")
            result.rejected[str(file)] += 1
            continue
        for _, spans in READERS[kind](file):
            if isinstance(spans, RecordError):
                result.errors.append(str(spans))
                result.rejected[str(file)] += 1
                continue
            for span in spans:
                traces.setdefault(span.trace_id, []).append(span)
                formats.setdefault(span.trace_id, (kind, str(file)))
    _build(traces, formats, marks, result)
    if announce:
        result.announce(path)
    return result


def _build(
    traces: Mapping[str, list[Span]],
    formats: Mapping[str, tuple[str, str]],
    marks: Mapping[str, set[str]],
    result: LoadResult,
) -> None:
    for trace_id, spans in traces.items():
        kind, file = formats[trace_id]
        where = f"{file}: trace {trace_id}"
        try:
            result.trajectories.append(trajectory_of(spans, where, kind, marks.get(trace_id, ())))
        except RecordError as exc:
            result.errors.append(str(exc))
            result.rejected[file] += 1


def check_traces(value: object, params: Mapping[str, object]) -> None:
    """The ``traces`` parameter before a kernel starts: ``""``, or a path whose every record and trace reads.

    The first bad record is the error (one line naming it, and how many more
    there are); so is a path with no trace at all.
    """
    if not value:
        return
    from rcakit.paths import resolve

    path = resolve(str(value))
    labels = params.get("labels") or None
    result = read_traces(path, str(params.get("trace_format", "auto")), resolve(str(labels)) if labels else None, False)
    result.raise_if_errors()
    if not result.trajectories:
        raise RcakitError(f"{path}: no traces found")
