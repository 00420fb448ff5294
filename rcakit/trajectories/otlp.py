"""OTLP trace exports: ``ExportTraceServiceRequest`` objects as JSON or protobuf, read into spans.

The OpenTelemetry protocol's trace request (``resourceSpans`` → ``scopeSpans``
→ ``spans``, with typed ``AnyValue`` attributes) in its two encodings:

- OTLP/JSON, one request per line as the Collector's file exporter writes it,
  or a single JSON document (a request, or a list of them); integers may be
  decimal strings and ids are hex, as the OTLP/JSON encoding specifies;
- OTLP/protobuf, one binary ``ExportTraceServiceRequest`` per file
  (``*.pb``/``*.binpb``), decoded by ``opentelemetry-proto`` (never by hand)
  and then read as its JSON form.

A request that does not have this shape is one error line naming the file and
line and the field. The spans go on to
:mod:`~rcakit.trajectories.openinference`, which builds the steps.

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rcakit.trajectories.reading import RecordError, short
from rcakit.trajectories.spans import Span, SpanRecords, file_bytes, hex_id, nanoseconds, spans_of_file

PROTOBUF_SUFFIXES = (".pb", ".binpb")
STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK"}
STATUS |= {"STATUS_CODE_ERROR": "ERROR"}
MAX_DEPTH = 32  # nested array/kvlist values deeper than this are an error, not a recursion


def any_value(value: Any, where: str, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as a Python value: str, bool, int, float, list, dict or bytes' base64 text."""
    if depth > MAX_DEPTH:
        raise RecordError(f"{where}: an attribute value nested deeper than {MAX_DEPTH}")
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected an AnyValue object, got {short(value)}")
    if not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        try:
            return int(str(value["intValue"])[:24])
        except ValueError:
            raise RecordError(f"{where}: intValue: {short(value['intValue'])} is not an integer") from None
    if "doubleValue" in value:
        raw = value["doubleValue"]
        return float(raw) if isinstance(raw, (int, float, str)) else None
    if "bytesValue" in value:
        return str(value["bytesValue"])
    if "arrayValue" in value:
        return [any_value(v, where, depth + 1) for v in _list(value["arrayValue"], "values", where)]
    if "kvlistValue" in value:
        return key_values(_list(value["kvlistValue"], "values", where), where, depth + 1)
    raise RecordError(f"{where}: an AnyValue with none of the OTLP value fields: {short(value)}")


def key_values(items: Any, where: str, depth: int = 0) -> dict[str, Any]:
    """A list of OTLP ``KeyValue`` objects as a dict."""
    if not isinstance(items, list):
        raise RecordError(f"{where}: attributes: expected a list, got {type(items).__name__}")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise RecordError(f"{where}: attributes: expected {{key, value}}, got {short(item)}")
        out[item["key"]] = any_value(item.get("value", {}), f"{where}: {item['key']}", depth)
    return out


def _list(record: Any, name: str, where: str) -> list[Any]:
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected an object, got {type(record).__name__}")
    value = record.get(name, [])
    if not isinstance(value, list):
        raise RecordError(f"{where}: {name}: expected a list, got {type(value).__name__}")
    return value


def request_spans(request: Any, where: str) -> list[Span]:
    """The spans of one ``ExportTraceServiceRequest`` in its JSON form."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise RecordError(f"{where}: resourceSpans: missing field (not an OTLP trace request)")
    spans = []
    for r, resource in enumerate(_list(request, "resourceSpans", where)):
        scopes = _list(resource, "scopeSpans", where) or _list(resource, "instrumentationLibrarySpans", where)
        for s, scope in enumerate(scopes):
            for i, raw in enumerate(_list(scope, "spans", where)):
                spans.append(otlp_span(raw, f"{where}: resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"))
    return spans


def otlp_span(raw: Any, where: str) -> Span:
    """One OTLP span object as a :class:`Span`."""
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: expected an object, got {type(raw).__name__}")
    status = raw.get("status") or {}
    if not isinstance(status, dict):
        raise RecordError(f"{where}: status: expected an object, got {short(status)}")
    code = status.get("code", 0)
    if code not in STATUS:
        raise RecordError(f"{where}: status.code: {short(code)} is not an OTLP status code")
    events = []
    for e, event in enumerate(_list(raw, "events", where)):
        name = event.get("name", "") if isinstance(event, dict) else None
        if not isinstance(name, str):
            raise RecordError(f"{where}: events[{e}].name: expected str")
        events.append((name, key_values(event.get("attributes", []), f"{where}: events[{e}]")))
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise RecordError(f"{where}: name: expected str, got {type(name).__name__}")
    return Span(
        trace_id=str(hex_id(raw.get("traceId"), where, "traceId")),
        span_id=str(hex_id(raw.get("spanId"), where, "spanId")),
        parent_id=hex_id(raw.get("parentSpanId"), where, "parentSpanId", empty_ok=True),
        name=name,
        start=nanoseconds(raw.get("startTimeUnixNano", 0), where, "startTimeUnixNano"),
        end=nanoseconds(raw.get("endTimeUnixNano", 0), where, "endTimeUnixNano"),
        attributes=key_values(raw.get("attributes", []), where),
        status=STATUS[code],
        status_message=str(status.get("message", "")),
        events=tuple(events),
        where=where,
    )


def protobuf_request(raw: bytes, where: str) -> dict[str, Any]:
    """A binary ``ExportTraceServiceRequest`` decoded by ``opentelemetry-proto``, as its JSON form."""
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise RecordError(f"{where}: OTLP protobuf needs opentelemetry-proto (pip install 'rcakit[traces]')") from None
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(raw)
    except (DecodeError, RuntimeWarning, ValueError):
        raise RecordError(f"{where}: not an OTLP protobuf ExportTraceServiceRequest") from None
    return MessageToDict(message)


def otlp_spans(path: Path) -> SpanRecords:
    """``(where, spans-or-error)`` for every request in one OTLP file (JSON, JSON Lines or protobuf)."""
    if path.suffix not in PROTOBUF_SUFFIXES:
        return spans_of_file(path, request_spans)
    return _protobuf_spans(path)


def _protobuf_spans(path: Path) -> SpanRecords:
    try:
        yield str(path), request_spans(protobuf_request(file_bytes(path), str(path)), str(path))
    except RecordError as exc:
        yield str(path), exc
