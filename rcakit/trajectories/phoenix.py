"""Arize Phoenix's span export, read into spans.

Phoenix returns spans from its REST API and Python client in one documented
shape (the ``Span`` schema of its span endpoints): ``name``, ``context``
(``trace_id``, ``span_id``), ``parent_id``, ``span_kind``, ``start_time`` and
``end_time`` (ISO 8601), ``status_code`` (``OK``/``ERROR``/``UNSET``),
``status_message``, ``attributes`` and ``events``. A file holds one such span
per line, a list of them, or the API's page ``{"data": [...]}``. The span
data frame (``get_spans_dataframe``) written with pandas'
``to_json(orient="records", lines=True)`` has the same fields flattened to
``context.span_id``, ``attributes.input.value``, …; both read the same. Phoenix's
``span_kind`` becomes the ``openinference.span.kind`` attribute when the
attributes lack it.

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rcakit.trajectories.reading import RecordError, short
from rcakit.trajectories.spans import Span, SpanRecords, flatten, hex_id, nanoseconds, spans_of_file

STATUS = {"OK": "OK", "ERROR": "ERROR", "UNSET": "UNSET", "": "UNSET"}
_ATTRIBUTES = "attributes."


def phoenix_span(record: Any, where: str) -> Span:
    """One Phoenix span (nested or flattened) as a :class:`Span`."""
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected a span object, got {type(record).__name__}")
    flat = flatten(record)
    if "context.span_id" not in flat:
        raise RecordError(f"{where}: context.span_id: missing field (not a Phoenix span)")
    attributes = {k[len(_ATTRIBUTES) :]: v for k, v in flat.items() if k.startswith(_ATTRIBUTES)}
    kind = flat.get("span_kind")
    if isinstance(kind, str) and kind and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = kind.upper()
    status = str(flat.get("status_code") or "").upper()
    if status not in STATUS:
        raise RecordError(f"{where}: status_code: {short(flat.get('status_code'))} is not OK, ERROR or UNSET")
    events = record.get("events") or []
    if not isinstance(events, list):
        raise RecordError(f"{where}: events: expected a list, got {type(events).__name__}")
    name = flat.get("name", "")
    return Span(
        trace_id=str(hex_id(flat.get("context.trace_id"), where, "context.trace_id")),
        span_id=str(hex_id(flat.get("context.span_id"), where, "context.span_id")),
        parent_id=hex_id(flat.get("parent_id"), where, "parent_id", empty_ok=True),
        name=name if isinstance(name, str) else str(name),
        start=nanoseconds(flat.get("start_time"), where, "start_time"),
        end=nanoseconds(flat.get("end_time", flat.get("start_time")), where, "end_time"),
        attributes=attributes,
        status=STATUS[status],
        status_message=str(flat.get("status_message") or ""),
        events=tuple(_event(e, f"{where}: events[{i}]") for i, e in enumerate(events)),
        where=where,
    )


def _event(event: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(event, dict) or not isinstance(event.get("name", ""), str):
        raise RecordError(f"{where}: expected an event object with a name")
    attributes = event.get("attributes") or {}
    return event.get("name", ""), flatten(attributes) if isinstance(attributes, dict) else {}


def phoenix_spans(path: Path) -> SpanRecords:
    """``(where, spans-or-error)`` for every record of one Phoenix export file."""
    return spans_of_file(path, _record_spans)


def _record_spans(record: Any, where: str) -> list[Span]:
    """A Phoenix record's spans: its ``data`` list (a trace export), or the record itself (one span)."""
    if isinstance(record, dict) and isinstance(record.get("data"), list):
        return [phoenix_span(s, f"{where}: data[{i}]") for i, s in enumerate(record["data"])]
    return [phoenix_span(record, where)]
