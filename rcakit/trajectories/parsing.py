"""Parsing records into trajectories: the load result, the checks every field passes, and the read loop.

Validation follows the benchmark's quality checks (LongRCA §3.3): a record is
rejected, with a one-line message naming the file and the field, when a field
is missing or mistyped, the history is empty, the label step is not an integer
inside the trajectory, or the label role never occurs in the trajectory's
recorded role set. Nothing is dropped silently: a read returns the good
trajectories together with every error line (:class:`LoadResult`). The two
formats' parsers are in :mod:`~rcakit.trajectories.longrca_format` and
:mod:`~rcakit.trajectories.who_and_when_format`.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.reading import RecordError, raw_records, short
from rcakit.trajectories.schema import Label, Step, Trajectory, normalise_role

Parser = Callable[[Any, str], Trajectory]  # (record, where) -> trajectory, or RecordError


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


def field_of(record: dict[str, Any], name: str, where: str, kind: type | tuple[Any, ...] = str) -> Any:
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
        raise RecordError(f"{where}: mistake_step: {short(value)} is not an integer")
    if not 0 <= step < n_steps:
        shown = short(value if step in (10**18, -(10**18)) else step)
        raise RecordError(f"{where}: mistake_step: {shown} is outside the trajectory (0..{n_steps - 1})")
    return step


def label_of(record: dict[str, Any], steps: tuple[Step, ...], where: str) -> Label | None:
    present = [k for k in ("mistake_agent", "mistake_step") if k in record]
    if not present:
        return None
    if len(present) == 1:
        missing = ({"mistake_agent", "mistake_step"} - set(present)).pop()
        raise RecordError(f"{where}: {missing}: missing field (the label needs both role and step)")
    role = field_of(record, "mistake_agent", where)
    step = _label_step(record["mistake_step"], len(steps), where)
    recorded = {normalise_role(s.name) for s in steps} - {""}
    if not normalise_role(role):
        raise RecordError(f"{where}: mistake_agent: empty role")
    if normalise_role(role) not in recorded:
        raise RecordError(f"{where}: mistake_agent: {short(role)} never appears in the trajectory's roles")
    reason = record.get("mistake_reason") or ""
    return Label(role=role, step=step, reason=str(reason))


def history_of(record: dict[str, Any], where: str) -> list[Any]:
    history = field_of(record, "history", where, list)
    if not history:
        raise RecordError(f"{where}: history: empty history")
    return history


def entry_of(history: list[Any], i: int, where: str) -> dict[str, Any]:
    entry = history[i]
    if not isinstance(entry, dict):
        raise RecordError(f"{where}: history[{i}]: expected an object, got {type(entry).__name__}")
    return entry


def read_records(path: Path, parse: Parser, unique: str | None = None) -> LoadResult:
    """Every record under ``path`` parsed; with ``unique`` (a field name), a record whose trajectory
    id an earlier record has is an error naming that field and the earlier record."""
    result = LoadResult()
    first: dict[str, str] = {}
    for file, where, record in raw_records(path):
        try:
            if isinstance(record, RecordError):
                raise record
            trajectory = parse(record, where)
            if unique is not None:
                if trajectory.id in first:
                    raise RecordError(f"{where}: {unique}: {short(trajectory.id)} repeats {first[trajectory.id]}")
                first[trajectory.id] = where
            result.trajectories.append(trajectory)
        except RecordError as exc:
            result.errors.append(str(exc))
            result.rejected[file] += 1
    return result


def first_usable(path: Path, parse: Parser, what: str) -> None:
    """Return at the first labelled record under ``path`` that parses; else one ``RcakitError``."""
    errors, unlabelled = [], 0
    for _, where, record in raw_records(path):
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
