"""Loaders for LongRCA Bench records and Who&When logs, with validation.

Both formats map into :class:`~rcakit.trajectories.schema.Trajectory`.
Validation follows the benchmark's quality checks (LongRCA §3.3): a record is
rejected, with a one-line message naming the file and the field, when a field
is missing or mistyped, the steps are not contiguous from 0, the history is
empty, the label step is not an integer inside the trajectory, the label role
never occurs in the trajectory's recorded role set, or the file is not valid
UTF-8 or JSON. In a folder, an entry that is not a readable regular file (a
dangling or looping symbolic link, a FIFO or device named ``*.json``, an
unreadable file) and a file the JSON parser cannot take (nesting too deep, a
number past the interpreter's digit limit) is one error line too; file types
are checked before anything is opened, so a load never blocks. Nothing is
dropped silently: the ``read_*`` functions return the good trajectories
together with every error line, and the ``load_*`` functions raise
:class:`rcakit.RcakitError` on the first bad record. A path that does not
exist is always an ``RcakitError`` naming it.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.schema import Label, Step, Trajectory, normalise_role

WHO_AND_WHEN_SUBSETS = ("Hand-Crafted", "Algorithm-Generated")
_SOURCE_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]*")


class RecordError(RcakitError):
    """A single invalid record; its message is ``"<where>: <field>: <problem>"``."""


@dataclass
class LoadResult:
    """The good trajectories of a path and one error line per rejected record."""

    trajectories: list[Trajectory] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)  # rejected records per file, in load order

    def extend(self, other: LoadResult) -> None:
        """Add ``other``'s trajectories, errors and rejection counts to these."""
        self.trajectories.extend(other.trajectories)
        self.errors.extend(other.errors)
        self.rejected.update(other.rejected)

    def announce(self, where: str | Path) -> None:
        """Count the rejected records on the terminal (``rcakit.progress.warn``, never the notebook).

        One line per file with rejections, then a summary naming the command
        that prints every reason; nothing when no record was rejected. The
        notebook shows :meth:`report`.
        """
        if not self.errors:
            return
        from rcakit.progress import warn

        for file, n in self.rejected.items():
            warn(f"{file}: {n} record{'' if n == 1 else 's'} rejected")
        total = len(self.errors) + len(self.trajectories)
        files = len(self.rejected) or 1
        warn(
            f"{where}: {len(self.errors)} of {total} records rejected in {files} file{'' if files == 1 else 's'}; "
            f"'rcakit validate {where}' prints why"
        )

    def by_source(self, sources: Sequence[str]) -> dict[str, list[Trajectory]]:
        """The trajectories of each of ``sources`` (a Who&When subset, say), in their order."""
        return {s: [t for t in self.trajectories if t.source == s] for s in sources}

    def report(self, where: str | Path, shown_as: str | None = None) -> str:
        """:meth:`summary` and one ``rejected:`` line per error, with ``where`` written ``shown_as``."""
        lines = [self.summary(where)] + [f"rejected: {e}" for e in self.errors]
        text = "\n".join(lines)
        return text if shown_as is None else text.replace(str(where), shown_as)

    def summary(self, where: str | Path) -> str:
        """One line: how many records under ``where`` were good and how many bad."""
        return f"{where}: {len(self.trajectories)} good records, {len(self.errors)} bad"

    def raise_if_errors(self) -> list[Trajectory]:
        """The trajectories, or an ``RcakitError`` quoting the first error and the count."""
        if self.errors:
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            raise RcakitError(self.errors[0] + more)
        return self.trajectories


# ---------------------------------------------------------------- raw reading

MAX_FILE_BYTES = 1 << 30  # a record file larger than 1 GiB is refused, not read
_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def _short(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, so a huge field never floods an error line."""
    huge = isinstance(value, int) and abs(value) >= 10**limit
    text = f"<a {len(str(abs(value)))}-digit number>" if huge else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{where}: invalid UTF-8 at byte {exc.start}") from None


def _parse(text: str, where: str) -> Any:
    """JSON, with every way a valid-looking file can break the parser reported in one line."""
    try:
        return json.loads(text)
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


def _folder_files(path: Path) -> list[Path]:
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise RcakitError(f"{path}: cannot list the folder: {exc.strerror or exc}") from None
    return sorted((path / n for n in names if n.endswith(".json")), key=_natural_key)


def _records(path: Path) -> Iterator[tuple[str, str, Any]]:
    """``(file, where, record-or-RecordError)`` for a JSON file, a JSONL file or a folder of JSON files.

    In a folder, every ``*.json`` entry yields its records or one error; an
    entry that is not a readable regular file is one error, never a stop.
    """
    require_path(path)
    if path.is_dir():
        files = _folder_files(path)
        if not files:
            raise RcakitError(f"{path}: folder holds no .json files")
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


def _natural_key(path: Path) -> tuple:
    numeric = path.stem.isascii() and path.stem.isdigit() and len(path.stem) < 30
    return (0, int(path.stem), "") if numeric else (1, 0, path.stem)


# ---------------------------------------------------------------- field checks


def _field(record: dict, name: str, where: str, kind: type | tuple = str) -> Any:
    if name not in record:
        raise RecordError(f"{where}: {name}: missing field")
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RecordError(f"{where}: {name}: expected {expected}, got {type(value).__name__}")
    return value


def _label_step(value: Any, n_steps: int, where: str) -> int:
    """A 0-based integer step (an int, or a string of digits as in Who&When)."""
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        step = value
    elif text is not None and re.fullmatch(r"[+-]?[0-9]+", text):
        sign, digits = (-1 if text.startswith("-") else 1), text.lstrip("+-").lstrip("0")
        step = sign * (int(digits or "0") if len(digits) <= 18 else 10**18)  # never convert a huge string
    else:
        raise RecordError(f"{where}: mistake_step: {_short(value)} is not an integer")
    if not 0 <= step < n_steps:
        shown = _short(value if step in (10**18, -(10**18)) else step)
        raise RecordError(f"{where}: mistake_step: {shown} is outside the trajectory (0..{n_steps - 1})")
    return step


def _label(record: dict, steps: tuple[Step, ...], where: str) -> Label | None:
    present = [k for k in ("mistake_agent", "mistake_step") if k in record]
    if not present:
        return None
    if len(present) == 1:
        missing = ({"mistake_agent", "mistake_step"} - set(present)).pop()
        raise RecordError(f"{where}: {missing}: missing field (the label needs both role and step)")
    role = _field(record, "mistake_agent", where)
    step = _label_step(record["mistake_step"], len(steps), where)
    recorded = {normalise_role(s.name) for s in steps} - {""}
    if not normalise_role(role):
        raise RecordError(f"{where}: mistake_agent: empty role")
    if normalise_role(role) not in recorded:
        raise RecordError(f"{where}: mistake_agent: {_short(role)} never appears in the trajectory's roles")
    reason = record.get("mistake_reason") or ""
    return Label(role=role, step=step, reason=str(reason))


def _history(record: dict, where: str) -> list:
    history = _field(record, "history", where, list)
    if not history:
        raise RecordError(f"{where}: history: empty history")
    return history


def _entry(history: list, i: int, where: str) -> dict:
    entry = history[i]
    if not isinstance(entry, dict):
        raise RecordError(f"{where}: history[{i}]: expected an object, got {type(entry).__name__}")
    return entry


# ---------------------------------------------------------------- LongRCA


def longrca_source(question_id: str) -> str:
    """The source of a LongRCA record: the leading alphanumeric run of its source-prefixed id."""
    match = _SOURCE_PREFIX.match(question_id)
    return match.group(0) if match else question_id


def parse_longrca(record: Any, where: str) -> Trajectory:
    """One LongRCA record (Appendix A) as a trajectory; ``RecordError`` if invalid.

    Steps must carry ``step, name, role, content`` with ``step`` contiguous
    from 0. The label is optional (unlabelled runs can be located but not
    scored); when present it needs both ``mistake_agent`` and ``mistake_step``.
    The task is the record's ``task`` field if any, else the first step's
    content (the history includes the task instruction). The source is the
    record's ``source`` field if any, else :func:`longrca_source` of the id.
    """
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(record).__name__}")
    qid = _field(record, "question_ID", where, (str, int))
    history = _history(record, where)
    steps = []
    for i in range(len(history)):
        entry = _entry(history, i, where)
        index = _field(entry, "step", f"{where}: history[{i}]", int)
        if index != i:
            raise RecordError(
                f"{where}: history[{i}].step: {_short(index)}, expected {i} (steps must be contiguous from 0)"
            )
        name, role, content = (_field(entry, k, f"{where}: history[{i}]") for k in ("name", "role", "content"))
        steps.append(Step(i, name, role, content))
    steps = tuple(steps)
    label = _label(record, steps, where)
    return Trajectory(
        id=str(qid),
        source=str(record.get("source") or longrca_source(str(qid))),
        task=str(record.get("task") or steps[0].content),
        steps=steps,
        label=label,
    )


def read_longrca(path: str | Path) -> LoadResult:
    """Every record of a LongRCA JSON file, JSONL file or folder: good ones and error lines.

    A record whose ``question_ID`` an earlier record already has is rejected
    (its labels would be counted twice). Rejections are counted on the
    terminal (:meth:`LoadResult.announce`).
    """
    result = _read_longrca(Path(path))
    result.announce(path)
    return result


def _read_longrca(path: Path) -> LoadResult:
    return _read(path, parse_longrca, unique="question_ID")


def load_longrca(path: str | Path) -> list[Trajectory]:
    """LongRCA records as trajectories; ``RcakitError`` naming file and field on any bad record."""
    return _read_longrca(Path(path)).raise_if_errors()


def check_longrca(path: str | Path) -> None:
    """``RcakitError`` (one line naming ``path``) unless it holds a labelled, valid LongRCA record.

    Records are read in order until the first one, so a good release costs one
    file; what a chapter would reject (nothing but bad or unlabelled records)
    is found before it starts.
    """
    _first_usable(Path(path), parse_longrca, "labelled LongRCA record")


# ---------------------------------------------------------------- Who&When


def parse_who_and_when(record: Any, where: str, source: str = "Who&When") -> Trajectory:
    """One Who&When log as a trajectory; ``RecordError`` if invalid.

    The agent is ``name`` when the history entries carry one
    (Algorithm-Generated, whose ``role`` is the message role) and ``role``
    otherwise (Hand-Crafted). ``mistake_step`` is a string holding a 0-based
    index into ``history``. The trajectory id is ``<source>/<file stem>``.
    """
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(record).__name__}")
    history = _history(record, where)
    entries = [_entry(history, i, where) for i in range(len(history))]
    key = "name" if all("name" in e for e in entries) else "role"
    steps = []
    for i, entry in enumerate(entries):
        name = _field(entry, key, f"{where}: history[{i}]")
        content = _field(entry, "content", f"{where}: history[{i}]")
        role = entry.get("role") if key == "name" else None
        steps.append(Step(i, name, role, content))
    steps = tuple(steps)
    for required in ("question", "mistake_agent", "mistake_step"):
        _field(record, required, where, (str, int) if required == "mistake_step" else str)
    label = _label(record, steps, where)
    stem = Path(where.split("[")[0]).stem
    return Trajectory(
        id=f"{source}/{stem}",
        source=source,
        task=record["question"],
        steps=steps,
        label=label,
        meta={"question_ID": record.get("question_ID")},
    )


def who_and_when_folders(path: str | Path, subset: str | None = None) -> list[tuple[str, Path]]:
    """``(subset, folder)`` pairs: the Who&When root (both or one subset) or a subset folder."""
    path = require_path(Path(path), "Who&When folder")
    if not path.is_dir():
        raise RcakitError(f"{path}: is not a folder (expected the Who&When root or a subset folder)")
    if subset is not None and subset not in WHO_AND_WHEN_SUBSETS:
        raise RcakitError(f"subset: {subset!r} is not one of {', '.join(WHO_AND_WHEN_SUBSETS)}")
    if path.name in WHO_AND_WHEN_SUBSETS:
        if subset not in (None, path.name):
            raise RcakitError(f"{path}: is the {path.name} subset, not {subset}")
        return [(path.name, path)]
    wanted = [subset] if subset else [s for s in WHO_AND_WHEN_SUBSETS if (path / s).is_dir()]
    if not wanted or not all((path / s).is_dir() for s in wanted):
        raise RcakitError(f"{path}: no Who&When subset folder ({' or '.join(wanted or WHO_AND_WHEN_SUBSETS)})")
    return [(s, path / s) for s in wanted]


WHO_AND_WHEN_SIZES = {"Hand-Crafted": 58, "Algorithm-Generated": 126}  # logs per subset; the official denominators


def read_who_and_when(path: str | Path, subset: str | None = None) -> LoadResult:
    """Every Who&When log under ``path`` (any shape :func:`who_and_when_folders` takes): good
    trajectories and error lines; rejections are counted on the terminal (:meth:`LoadResult.announce`)."""
    result = _read_who_and_when(path, subset)
    result.announce(path)
    return result


def _read_who_and_when(path: str | Path, subset: str | None = None) -> LoadResult:
    result = LoadResult()
    for name, folder in who_and_when_folders(path, subset):
        result.extend(_read(folder, _who_and_when_parser(name)))
    return result


def _who_and_when_parser(subset: str) -> Callable[[Any, str], Trajectory]:
    return lambda record, where: parse_who_and_when(record, where, subset)


def load_who_and_when(path: str | Path, subset: str | None = None) -> list[Trajectory]:
    """Who&When logs as trajectories; ``RcakitError`` naming file and field on any bad log."""
    return _read_who_and_when(path, subset).raise_if_errors()


def check_who_and_when(path: str | Path) -> None:
    """``RcakitError`` (one line naming the folder) unless every subset folder under ``path`` holds a
    valid log: an empty subset folder, a folder with no subset and a subset of bad logs are errors.

    Each subset is read until its first good log, so good data costs one file per subset.
    """
    for name, folder in who_and_when_folders(path):
        _first_usable(folder, _who_and_when_parser(name), f"{name} log")


# ---------------------------------------------------------------- shared


def _read(path: Path, parse: Callable[[Any, str], Trajectory], unique: str | None = None) -> LoadResult:
    """Every record under ``path`` parsed; with ``unique`` (a field name), a record whose trajectory
    id an earlier record has is an error naming that field and the earlier record."""
    result = LoadResult()
    first: dict[str, str] = {}
    for file, where, record in _records(path):
        try:
            if isinstance(record, RecordError):
                raise record
            trajectory = parse(record, where)
            if unique is not None:
                if trajectory.id in first:
                    raise RecordError(f"{where}: {unique}: {_short(trajectory.id)} repeats {first[trajectory.id]}")
                first[trajectory.id] = where
            result.trajectories.append(trajectory)
        except RecordError as exc:
            result.errors.append(str(exc))
            result.rejected[file] += 1
    return result


def _first_usable(path: Path, parse: Callable[[Any, str], Trajectory], what: str) -> None:
    """Return at the first labelled record under ``path`` that parses; else one ``RcakitError``."""
    errors, unlabelled = [], 0
    for _, where, record in _records(path):
        try:
            if isinstance(record, RecordError):
                raise record
            trajectory = parse(record, where)
        except RecordError as exc:
            errors.append(str(exc))
            continue
        if trajectory.label is not None:
            return
        unlabelled += 1
    if not errors and not unlabelled:
        raise RcakitError(f"{path}: no records found")
    first = f"; the first: {errors[0]}" if errors else ""
    raise RcakitError(f"{path}: no {what} ({unlabelled} unlabelled, {len(errors)} rejected{first})")


def detect_format(path: str | Path) -> str:
    """``"who_and_when"`` for a Who&When root or subset folder, else ``"longrca"``."""
    path = Path(path)
    if path.is_dir() and (path.name in WHO_AND_WHEN_SUBSETS or any((path / s).is_dir() for s in WHO_AND_WHEN_SUBSETS)):
        return "who_and_when"
    return "longrca"


def validate_path(path: str | Path, fmt: str = "auto") -> tuple[int, list[str]]:
    """Check every record under ``path``: ``(number of good records, one error line per bad one)``.

    ``fmt`` is ``"longrca"``, ``"who_and_when"`` or ``"auto"`` (see
    :func:`detect_format`). Raises ``RcakitError`` only when the path itself is
    unusable (missing, an empty folder or file, an unknown format).
    """
    path = require_path(Path(path))
    kind = detect_format(path) if fmt == "auto" else fmt
    readers = {"longrca": _read_longrca, "who_and_when": _read_who_and_when}
    if kind not in readers:
        raise RcakitError(f"format: {fmt!r} is not one of auto, longrca, who_and_when")
    result = readers[kind](path)  # quiet: validate prints every error itself
    if not result.trajectories and not result.errors:
        raise RcakitError(f"{path}: no records found")
    return len(result.trajectories), result.errors
