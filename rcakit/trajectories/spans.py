"""A span as every trace reader sees it, and the files its readers take.

OpenTelemetry, Phoenix and TRAIL each write spans in their own shape; each
reader turns a record into :class:`Span` values, so that one mapping
(:mod:`~rcakit.trajectories.openinference`) builds steps from all of them.
Ids are lower-case hex (OTLP/JSON writes hex, a protobuf message decoded to
JSON gives base64: both arrive here as the same hex). Files are read with the
same guarantees as the other record readers (:mod:`~rcakit.trajectories.reading`):
``stat`` before any open (no hang on a FIFO), the size caps, one error line per
bad record naming the file and line.

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.reading import (
    MAX_FOLDER_BYTES,
    RecordError,
    _decode,
    _natural_key,
    _parse,
    _read_bytes,
    require_path,
    short,
)

_HEX = re.compile(r"[0-9a-fA-F]+")
MAX_NESTING = 32  # attribute objects nested deeper are kept whole
TRACE_SUFFIXES = (".json", ".jsonl", ".pb", ".binpb")  # the files a folder of traces is read from


@dataclass(frozen=True)
class Span:
    """One span: ids (hex), name, start and end (ns since the epoch), flat attributes, status and events.

    ``status`` is ``"OK"``, ``"ERROR"`` or ``"UNSET"``; ``events`` are ``(name,
    attributes)`` pairs in their recorded order; ``where`` names the record the
    span came from, for error lines.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    status: str = "UNSET"
    status_message: str = ""
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    where: str = ""


def hex_id(value: Any, where: str, what: str, empty_ok: bool = False) -> str | None:
    """A trace or span id as lower-case hex: hex as OTLP/JSON writes it, or base64 of the bytes."""
    if value in (None, "") and empty_ok:
        return None
    if not isinstance(value, str) or not value:
        raise RecordError(f"{where}: {what}: expected a hex or base64 id, got {short(value)}")
    if len(value) in (16, 32) and _HEX.fullmatch(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RecordError(f"{where}: {what}: {short(value)} is neither hex nor base64") from None
    if len(raw) not in (8, 16):
        raise RecordError(f"{where}: {what}: {short(value)} is not an 8- or 16-byte id")
    return raw.hex() if any(raw) or not empty_ok else None


def flatten(attributes: Mapping[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Nested attribute objects (Phoenix, TRAIL) as the flat dotted keys OpenTelemetry records.

    A list of objects is indexed the way OpenInference flattens one:
    ``{"llm": {"output_messages": [{"message": {"role": "assistant"}}]}}`` gives
    ``llm.output_messages.0.message.role``; a list of plain values stays a list,
    and so does anything nested deeper than :data:`MAX_NESTING` (kept whole, never a recursion).
    """
    flat: dict[str, Any] = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if depth >= MAX_NESTING:
            flat[name] = value
        elif isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}.", depth + 1))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                flat.update(flatten(item, f"{name}.{i}.", depth + 1))
        else:
            flat[name] = value
    return flat


def nanoseconds(value: Any, where: str, what: str) -> int:
    """A time as ns since the epoch: an integer (or its decimal string, as OTLP/JSON writes it) or ISO 8601."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        return int(value)
    if isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if stamp.tzinfo is None:
                stamp = stamp.replace(tzinfo=dt.UTC)
            delta = stamp - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    raise RecordError(f"{where}: {what}: {short(value)} is not a time (ns since the epoch or ISO 8601)")


def trace_files(path: Path) -> list[Path]:
    """The trace files under ``path``: the file itself, or a folder's ``*.json``, ``*.jsonl``, ``*.pb``
    and ``*.binpb`` entries in natural order (a folder over :data:`MAX_FOLDER_BYTES` is refused)."""
    require_path(path)
    if not path.is_dir():
        return [path]
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise RcakitError(f"{path}: cannot list the folder: {exc.strerror or exc}") from None
    files = sorted((path / n for n in names if n.endswith(TRACE_SUFFIXES)), key=_natural_key)
    if not files:
        raise RcakitError(f"{path}: folder holds no trace files ({', '.join(TRACE_SUFFIXES)})")
    total = sum(_size(f) for f in files)
    if total > MAX_FOLDER_BYTES:
        raise RcakitError(f"{path}: its trace files hold {total} bytes, more than {MAX_FOLDER_BYTES}; nothing was read")
    return files


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def file_bytes(path: Path) -> bytes:
    """A trace file's bytes, read without blocking (a FIFO, a device, an oversized file is a RecordError)."""
    return _read_bytes(path)


def json_records(path: Path, raw: bytes) -> Iterator[tuple[str, Any]]:
    """``(where, record-or-RecordError)``: one JSON document (a list gives one record per element), or
    JSON Lines (one record per non-empty line, as the Collector's file exporter writes, whatever the suffix)."""
    file = str(path)
    try:
        text = _decode(raw, file)
    except RecordError as exc:
        yield file, exc
        return
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if path.suffix != ".jsonl":
        try:
            data = _parse(text, file)
        except RecordError as exc:
            if len(lines) < 2:
                yield file, exc
                return
        else:
            if isinstance(data, list):
                for i, record in enumerate(data):
                    yield f"{path}[{i}]", record
            else:
                yield file, data
            return
    for lineno, line in lines:
        where = f"{path}:{lineno}"
        try:
            yield where, _parse(line, where)
        except RecordError as exc:
            yield where, exc


SpanRecords = Iterator[tuple[str, list[Span] | RecordError]]


def spans_of_file(path: Path, convert: Callable[[Any, str], list[Span]]) -> SpanRecords:
    """``(where, spans-or-error)`` for every JSON record of one trace file, each turned into spans by
    ``convert(record, where)``; an unreadable file, a bad record and a record ``convert`` refuses are each
    one :class:`~rcakit.trajectories.reading.RecordError` naming where it is, and reading goes on."""
    try:
        raw = file_bytes(path)
    except RecordError as exc:
        yield str(path), exc
        return
    for where, record in json_records(path, raw):
        if isinstance(record, RecordError):
            yield where, record
            continue
        try:
            yield where, convert(record, where)
        except RecordError as exc:
            yield where, exc
