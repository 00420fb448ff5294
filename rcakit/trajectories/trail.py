"""TRAIL's traces and labels (Deshpande et al., 2025), read from their documented schema.

TRAIL releases each example as two JSON strings, ``trace`` and ``labels``. A
trace is ``{"trace_id", "spans": [...]}`` whose spans nest their children
under ``child_spans``; a span has ``span_id``, ``parent_span_id``,
``span_name``, ``timestamp`` (ISO 8601), ``status_code`` (``Ok``, ``Error``,
``Unset``), ``status_message`` and ``span_attributes`` (OpenInference keys).
The labels are ``{"trace_id", "errors": [...]}``, each error naming its span
in ``location`` with a ``category``, ``evidence``, ``description`` and
``impact``. TRAIL annotates every error it finds, not one root cause: rcakit
takes the earliest annotated step as the reference step and its agent as the
reference role (a choice the own-traces chapter states), so the LongRCA
metrics apply. The data set is gated (MIT): users download it themselves.

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.reading import RecordError, short
from rcakit.trajectories.spans import (
    Span,
    SpanRecords,
    file_bytes,
    flatten,
    hex_id,
    json_records,
    nanoseconds,
    spans_of_file,
    trace_files,
)

STATUS = {"OK": "OK", "ERROR": "ERROR", "UNSET": "UNSET", "": "UNSET"}
MAX_DEPTH = 256  # child_spans nested deeper than this are an error, not a recursion


def trail_spans_of(record: Any, where: str) -> list[Span]:
    """Every span of one TRAIL trace record, children flattened with their parent's id."""
    if isinstance(record, dict) and isinstance(record.get("trace"), str):  # a row of the released table
        from rcakit.trajectories.reading import _parse

        record = _parse(record["trace"], f"{where}: trace")
    if not isinstance(record, dict) or not isinstance(record.get("spans"), list):
        raise RecordError(f"{where}: spans: missing field (not a TRAIL trace)")
    trace_id = record.get("trace_id")
    out: list[Span] = []
    stack: list[tuple[Any, str | None, str, int]] = [
        (s, None, f"{where}: spans[{i}]", 0) for i, s in reversed(list(enumerate(record["spans"])))
    ]
    while stack:
        raw, parent, at, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RecordError(f"{at}: child_spans nested deeper than {MAX_DEPTH}")
        span = _span(raw, trace_id, parent, at)
        out.append(span)
        children = raw.get("child_spans") or []
        if not isinstance(children, list):
            raise RecordError(f"{at}: child_spans: expected a list, got {type(children).__name__}")
        stack.extend(
            (c, span.span_id, f"{at}.child_spans[{i}]", depth + 1) for i, c in reversed(list(enumerate(children)))
        )
    return out


def _span(raw: Any, trace_id: Any, parent: str | None, where: str) -> Span:
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: expected a span object, got {type(raw).__name__}")
    status = str(raw.get("status_code") or "").upper()
    if status not in STATUS:
        raise RecordError(f"{where}: status_code: {short(raw.get('status_code'))} is not Ok, Error or Unset")
    attributes = raw.get("span_attributes") or {}
    if not isinstance(attributes, dict):
        raise RecordError(f"{where}: span_attributes: expected an object, got {type(attributes).__name__}")
    start = nanoseconds(raw.get("timestamp"), where, "timestamp")
    return Span(
        trace_id=str(hex_id(raw.get("trace_id", trace_id), where, "trace_id")),
        span_id=str(hex_id(raw.get("span_id"), where, "span_id")),
        parent_id=parent or hex_id(raw.get("parent_span_id"), where, "parent_span_id", empty_ok=True),
        name=str(raw.get("span_name") or ""),
        start=start,
        end=start,
        attributes=flatten(attributes),
        status=STATUS[status],
        status_message=str(raw.get("status_message") or ""),
        where=where,
    )


def trail_spans(path: Path) -> SpanRecords:
    """``(where, spans-or-error)`` for every trace record of one TRAIL file."""
    return spans_of_file(path, trail_spans_of)


def read_labels(path: Path) -> dict[str, set[str]]:
    """``{trace id: span ids an error is located at}`` from a TRAIL labels file or folder.

    A bad labels record is an ``RcakitError`` naming it: labels decide every score, so none is skipped.
    """
    out: dict[str, set[str]] = {}
    for file in trace_files(path):
        for where, record in json_records(file, file_bytes(file)):
            if isinstance(record, RecordError):
                raise RcakitError(str(record))
            if isinstance(record, dict) and isinstance(record.get("labels"), str):
                from rcakit.trajectories.reading import _parse

                record = _parse(record["labels"], f"{where}: labels")
            errors = record.get("errors") if isinstance(record, dict) else None
            if not isinstance(errors, list):
                raise RcakitError(f"{where}: errors: missing field (not a TRAIL labels record)")
            trace = str(hex_id(record.get("trace_id"), where, "trace_id"))
            for i, error in enumerate(errors):
                location = error.get("location") if isinstance(error, dict) else None
                out.setdefault(trace, set()).add(str(hex_id(location, f"{where}: errors[{i}]", "location")))
    return out
