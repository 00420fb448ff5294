"""Reading record files without trusting them: one error line, never a hang or a flood.

A LongRCA or Who&When record file is read only when it is a readable regular
file (checked with ``stat`` before anything opens it, so a FIFO or a device
named ``*.json`` never blocks a load), not larger than :data:`MAX_FILE_BYTES`,
valid UTF-8 and JSON the parser can take (nesting too deep or a number past the
interpreter's digit limit is one error too). A folder yields its ``*.json``
entries in natural order; every entry that fails is one :class:`RecordError`
line naming it (LongRCA §3.3's quality checks start here).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rcakit import RcakitError


class RecordError(RcakitError):
    """A single invalid record; its message is ``"<where>: <field>: <problem>"``."""


MAX_FILE_BYTES = 1 << 30  # a record file larger than 1 GiB is refused, not read
MAX_FOLDER_BYTES = 2 << 30  # a folder whose record files add up to more is refused before any is read
SPARSE_MIN_BYTES = 1 << 20  # above this, a file with under an eighth of its size on disk is refused (sparse)
_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def short(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, so a huge field never floods an error line."""
    huge = isinstance(value, int) and abs(value) >= 10**limit
    text = f"<a {len(str(abs(value)))}-digit number>" if huge else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{where}: invalid UTF-8 at byte {exc.start}") from None


class _DuplicateKey(ValueError):
    """A JSON object that names one key twice (the parser would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s object hook: a dict of ``pairs``, or :class:`_DuplicateKey` for a repeated key."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse(text: str, where: str) -> Any:
    """JSON, with every way a valid-looking file can break the parser reported in one line; a key named
    twice in one object is an error, not a silent choice of the last."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise RecordError(f"{where}: invalid JSON: the key {short(exc.args[0])} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        why = "a trailing comma" if _trailing_comma(exc) else exc.msg
        raise RecordError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {why}") from None
    except RecursionError:
        raise RecordError(f"{where}: invalid JSON: nested too deeply to read") from None
    except ValueError:  # an integer literal past the interpreter's digit limit
        digits = sys.get_int_max_str_digits()
        raise RecordError(f"{where}: invalid JSON: a number with more than {digits} digits") from None


def _trailing_comma(exc: json.JSONDecodeError) -> bool:
    """Whether the parser stopped at a comma with nothing after it: ``[1, 2,]``, ``{"a": 1,}`` or a
    JSON Lines record followed by ``,``."""
    before, after = exc.doc[: exc.pos].rstrip(), exc.doc[exc.pos :].lstrip()
    return (before.endswith(",") and after[:1] in ("]", "}")) or (exc.msg == "Extra data" and after.strip() == ",")


def entry_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a record file, or ``None`` when it is a readable regular file.

    Checked with ``stat`` before anything opens it, so a FIFO or a device never
    blocks a load: a dangling symbolic link, a symbolic-link loop, anything but
    a regular file, a file over :data:`MAX_FILE_BYTES`.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "dangling symbolic link" if os.path.islink(path) else "no such file or folder"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        return f"cannot read: {exc.strerror or exc}"
    kind = stat.S_IFMT(info.st_mode)
    if kind != stat.S_IFREG:
        return f"not a regular file ({_KINDS.get(kind, 'a special file')})"
    if info.st_size > MAX_FILE_BYTES:
        return f"file too large ({info.st_size} bytes, limit {MAX_FILE_BYTES})"
    if info.st_size > SPARSE_MIN_BYTES and info.st_blocks * 512 < info.st_size // 8:
        return f"a sparse file ({info.st_size} bytes, {info.st_blocks * 512} of them on disk): not a record file"
    return None


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file, opened without blocking and re-checked after opening."""
    problem = entry_problem(path)
    if problem is not None:
        raise RecordError(f"{path}: {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced between stat and open
            raise RecordError(f"{path}: not a regular file")
        try:
            return handle.read()
        except OSError as exc:
            raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from None


def require_path(path: Path, what: str = "file or folder") -> Path:
    """``path`` if it exists; else ``RcakitError`` naming it (one line)."""
    if not os.path.lexists(path):
        raise RcakitError(f"{path}: no such {what}")
    if not path.exists():
        raise RcakitError(f"{path}: {entry_problem(path)}")
    return path


def _size(path: Path) -> int:
    """A folder entry's size for the folder's budget (0 for one that cannot be stat'ed: it is an error later)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _folder_files(path: Path) -> list[Path]:
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise RcakitError(f"{path}: cannot list the folder: {exc.strerror or exc}") from None
    return sorted((path / n for n in names if n.endswith(".json")), key=_natural_key)


def raw_records(path: Path) -> Iterator[tuple[str, str, Any]]:
    """``(file, where, record-or-RecordError)`` for a JSON file, a JSONL file or a folder of JSON files.

    In a folder, every ``*.json`` entry yields its records or one error; an
    entry that is not a readable regular file is one error, never a stop.
    """
    require_path(path)
    if path.is_dir():
        files = _folder_files(path)
        if not files:
            raise RcakitError(f"{path}: folder holds no .json files")
        total = sum(_size(f) for f in files)
        if total > MAX_FOLDER_BYTES:
            raise RcakitError(
                f"{path}: its .json files hold {total} bytes, more than {MAX_FOLDER_BYTES}; nothing was read"
            )
        for file in files:
            yield from _file_records(file)
        return
    yield from _file_records(path)


def _file_records(path: Path) -> Iterator[tuple[str, str, Any]]:
    file = str(path)
    try:
        raw = _read_bytes(path)
    except RecordError as exc:
        yield file, file, exc
        return
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(raw.split(b"\n"), start=1):
            where = f"{path}:{lineno}"
            if line.strip():
                yield file, where, _guarded(_decoded, line, where)
        return
    data = _guarded(_decoded, raw, file)
    if isinstance(data, list):
        for i, record in enumerate(data):
            yield file, f"{path}[{i}]", record
    else:
        yield file, file, data


def _guarded(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or the :class:`RecordError` it raised."""
    try:
        return fn(*args)
    except RecordError as exc:
        return exc


def _decoded(data: bytes, where: str) -> Any:
    return _parse(_decode(data, where), where)


def _natural_key(path: Path) -> tuple[Any, ...]:
    numeric = path.stem.isascii() and path.stem.isdigit() and len(path.stem) < 30
    return (0, int(path.stem), "") if numeric else (1, 0, path.stem)
