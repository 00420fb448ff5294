"""Loaders for LongRCA Bench records and Who&When logs, with validation.

Both formats map into :class:`~rcakit.trajectories.schema.Trajectory`.
Validation follows the benchmark's quality checks (LongRCA §3.3): a record is
rejected, with a one-line message naming the file and the field, when a field
is missing or mistyped, the steps are not contiguous from 0, the history is
empty, the label step is not an integer inside the trajectory, the label role
never occurs in the trajectory's recorded role set, or the file is not valid
UTF-8 or JSON. Nothing is dropped silently: the ``read_*`` functions return
the good trajectories together with every error line, and the ``load_*``
functions raise :class:`rcakit.RcakitError` on the first bad record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

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

    def extend(self, other: "LoadResult") -> None:
        self.trajectories.extend(other.trajectories)
        self.errors.extend(other.errors)

    def raise_if_errors(self) -> list[Trajectory]:
        """The trajectories, or an ``RcakitError`` quoting the first error and the count."""
        if self.errors:
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            raise RcakitError(self.errors[0] + more)
        return self.trajectories


# ---------------------------------------------------------------- raw reading


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{where}: invalid UTF-8 at byte {exc.start}") from None


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, record-or-RecordError)`` for a JSON file, a JSONL file or a folder of JSON files."""
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=_natural_key)
        if not files:
            raise RcakitError(f"{path}: folder holds no .json files")
        for file in files:
            yield from _records(file)
        return
    if not path.exists():
        raise RcakitError(f"{path}: no such file or folder")
    raw = path.read_bytes()
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(raw.split(b"\n"), start=1):
            where = f"{path}:{lineno}"
            if line.strip():
                yield where, _guarded(lambda: _parse(_decode(line, where), where))
        return
    where = str(path)
    data = _guarded(lambda: _parse(_decode(raw, where), where))
    if isinstance(data, list):
        for i, record in enumerate(data):
            yield f"{path}[{i}]", record
    else:
        yield where, data


def _guarded(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except RecordError as exc:
        return exc


def _natural_key(path: Path) -> tuple:
    return (0, int(path.stem), "") if path.stem.isdigit() else (1, 0, path.stem)


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
    elif text is not None and re.fullmatch(r"[+-]?\d+", text):
        step = int(text)
    else:
        raise RecordError(f"{where}: mistake_step: {value!r} is not an integer")
    if not 0 <= step < n_steps:
        raise RecordError(f"{where}: mistake_step: {step} is outside the trajectory (0..{n_steps - 1})")
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
    recorded = {normalise_role(s.name) for s in steps}
    if normalise_role(role) not in recorded:
        raise RecordError(f"{where}: mistake_agent: {role!r} never appears in the trajectory's roles")
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
            raise RecordError(f"{where}: history[{i}].step: {index}, expected {i} (steps must be contiguous from 0)")
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
    """Every record of a LongRCA JSON file, JSONL file or folder: good ones and error lines."""
    return _read(Path(path), parse_longrca)


def load_longrca(path: str | Path) -> list[Trajectory]:
    """LongRCA records as trajectories; ``RcakitError`` naming file and field on any bad record."""
    return read_longrca(path).raise_if_errors()


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
    path = Path(path)
    if not path.is_dir():
        raise RcakitError(f"{path}: no such Who&When folder")
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


def read_who_and_when(path: str | Path, subset: str | None = None) -> LoadResult:
    """Every Who&When log under ``path``: good trajectories and error lines."""
    result = LoadResult()
    for name, folder in who_and_when_folders(path, subset):
        result.extend(_read(folder, lambda rec, where, s=name: parse_who_and_when(rec, where, s)))
    return result


def load_who_and_when(path: str | Path, subset: str | None = None) -> list[Trajectory]:
    """Who&When logs as trajectories; ``RcakitError`` naming file and field on any bad log."""
    return read_who_and_when(path, subset).raise_if_errors()


# ---------------------------------------------------------------- shared


def _read(path: Path, parse: Callable[[Any, str], Trajectory]) -> LoadResult:
    result = LoadResult()
    for where, record in _records(path):
        try:
            if isinstance(record, RecordError):
                raise record
            result.trajectories.append(parse(record, where))
        except RecordError as exc:
            result.errors.append(str(exc))
    return result


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
    path = Path(path)
    if not path.exists():
        raise RcakitError(f"{path}: no such file or folder")
    kind = detect_format(path) if fmt == "auto" else fmt
    readers = {"longrca": read_longrca, "who_and_when": read_who_and_when}
    if kind not in readers:
        raise RcakitError(f"format: {fmt!r} is not one of auto, longrca, who_and_when")
    result = readers[kind](path)
    if not result.trajectories and not result.errors:
        raise RcakitError(f"{path}: no records found")
    return len(result.trajectories), result.errors
