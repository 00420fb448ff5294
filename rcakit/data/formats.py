"""What a file must look like before its first-fetch sha256 is recorded.

A data set whose hashes the registry cannot pin is trusted on first use: the
bytes of the first fetch become the reference every later fetch is checked
against. So the registry pins, for each such file, a plausible size range and,
where the format allows, a cheap check that the bytes are of the kind they
claim to be. An error page, a truncated body or a file of another kind is
refused before anything is kept or recorded ("trust on first use").

The checks read the file once and keep no more than one JSON document in
memory: ``json`` (the file parses as one JSON document), ``jsonl`` (every
non-blank line parses as a JSON object), ``parquet`` (the magic bytes ``PAR1``
open and close the file) and ``text`` (UTF-8 that does not open like an HTML
page).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body")
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class Expectation:
    """A file's size range in bytes (inclusive) and, optionally, its format (one of :data:`FORMATS`)."""

    low: int
    high: int
    format: str | None = None

    def span(self) -> str:
        """The size range in words: ``28.9 MB to 31.9 MB``."""
        return f"{size_words(self.low)} to {size_words(self.high)}"

    def size_problem(self, size: int) -> str | None:
        """Why ``size`` bytes is implausible, or ``None``."""
        if self.low <= size <= self.high:
            return None
        return f"{size_words(size)}, the registry expects {self.span()}"

    def problem(self, path: Path) -> str | None:
        """What is wrong with the file at ``path`` (size first, then format), or ``None``."""
        found = self.size_problem(path.stat().st_size)
        if found is None and self.format is not None:
            found = CHECKS[self.format](path)
        if found is not None and "HTML" not in found and looks_like_html(path):
            found = f"an HTML page: {found}"
        return found


def size_words(n: int) -> str:
    """Bytes in decimal units, as the Hugging Face Hub shows them."""
    if n < 1000:
        return f"{n} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def looks_like_html(path: Path) -> bool:
    """The file opens like an HTML page (what a proxy, a login wall or a 200 error page sends)."""
    with open(path, "rb") as fh:
        head = fh.read(512).lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith(HTML_STARTS)


def _json(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            json.load(fh)
    except (ValueError, RecursionError):  # a UnicodeDecodeError is a ValueError
        return "not a JSON document"
    return None


def _jsonl(path: Path) -> str | None:
    lines = 0
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):
                return f"line {number} is not JSON"
            if not isinstance(value, dict):
                return f"line {number} is not a JSON object"
            lines += 1
    return None if lines else "no JSON line"


def _parquet(path: Path) -> str | None:
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(0, 2)
        if fh.tell() < 12:
            return "too short for a Parquet file"
        fh.seek(-4, 2)
        tail = fh.read(4)
    return None if head == tail == PARQUET_MAGIC else "not a Parquet file (no PAR1 at both ends)"


def _text(path: Path) -> str | None:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text"
    return "an HTML page" if looks_like_html(path) else None


CHECKS: dict[str, Callable[[Path], str | None]] = {"json": _json, "jsonl": _jsonl, "parquet": _parquet, "text": _text}
FORMATS = tuple(CHECKS)


def parse(where: str, raw: object) -> Expectation:
    """An :class:`Expectation` from its registry form ``{bytes: [low, high], format: F}``."""
    if not isinstance(raw, dict) or set(raw) - {"bytes", "format"}:
        raise ValueError(f"{where}: expected {{bytes: [low, high], format: {'|'.join(FORMATS)}}}")
    span = raw.get("bytes")
    if not (
        isinstance(span, list) and len(span) == 2 and all(type(n) is int for n in span) and 0 <= span[0] <= span[1]
    ):
        raise ValueError(f"{where}: 'bytes' must be [low, high], two whole numbers with 0 <= low <= high")
    fmt = raw.get("format")
    if fmt is not None and fmt not in CHECKS:
        raise ValueError(f"{where}: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return Expectation(span[0], span[1], fmt)
