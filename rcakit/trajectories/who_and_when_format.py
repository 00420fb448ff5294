"""The Who&When log format (Zhang et al. 2025) read into trajectories.

The logs sit in two subset folders, ``Hand-Crafted`` and
``Algorithm-Generated``, one JSON file per failed run with its ``history``,
``question`` and the labelled ``mistake_agent`` and ``mistake_step`` (a string
holding a 0-based index). Every bad log is one error line
(:mod:`~rcakit.trajectories.parsing`).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.parsing import (
    LoadResult,
    Parser,
    entry_of,
    field_of,
    first_usable,
    history_of,
    label_of,
    read_records,
)
from rcakit.trajectories.reading import RecordError, require_path
from rcakit.trajectories.schema import Step, Trajectory

WHO_AND_WHEN_SUBSETS = ("Hand-Crafted", "Algorithm-Generated")
WHO_AND_WHEN_SIZES = {"Hand-Crafted": 58, "Algorithm-Generated": 126}  # logs per subset; the official denominators


def parse_who_and_when(record: Any, where: str, source: str = "Who&When") -> Trajectory:
    """One Who&When log as a trajectory; ``RecordError`` if invalid.

    The agent is ``name`` when the history entries carry one
    (Algorithm-Generated, whose ``role`` is the message role) and ``role``
    otherwise (Hand-Crafted). ``mistake_step`` is a string holding a 0-based
    index into ``history``. The trajectory id is ``<source>/<file stem>``.
    """
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(record).__name__}")
    history = history_of(record, where)
    entries = [entry_of(history, i, where) for i in range(len(history))]
    key = "name" if all("name" in e for e in entries) else "role"
    steps = []
    for i, entry in enumerate(entries):
        name = field_of(entry, key, f"{where}: history[{i}]")
        content = field_of(entry, "content", f"{where}: history[{i}]")
        role = entry.get("role") if key == "name" else None
        steps.append(Step(i, name, role, content))
    steps = tuple(steps)
    for required in ("question", "mistake_agent", "mistake_step"):
        field_of(record, required, where, (str, int) if required == "mistake_step" else str)
    label = label_of(record, steps, where)
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


def read_who_and_when(path: str | Path, subset: str | None = None, *, announce: bool = True) -> LoadResult:
    """Every Who&When log under ``path`` (any shape :func:`who_and_when_folders` takes): good
    trajectories and error lines; with ``announce``, rejections are counted on the terminal
    (:meth:`LoadResult.announce`)."""
    result = LoadResult()
    for name, folder in who_and_when_folders(path, subset):
        result.extend(read_records(folder, _who_and_when_parser(name)))
    if announce:
        result.announce(path)
    return result


def _who_and_when_parser(subset: str) -> Parser:
    return lambda record, where: parse_who_and_when(record, where, subset)


def load_who_and_when(path: str | Path, subset: str | None = None) -> list[Trajectory]:
    """Who&When logs as trajectories; ``RcakitError`` naming file and field on any bad log."""
    return read_who_and_when(path, subset, announce=False).raise_if_errors()


def check_who_and_when(path: str | Path) -> None:
    """``RcakitError`` (one line naming the folder) unless every subset folder under ``path`` holds a
    valid log: an empty subset folder, a folder with no subset and a subset of bad logs are errors.

    Each subset is read until its first good log, so good data costs one file per subset.
    """
    for name, folder in who_and_when_folders(path):
        first_usable(folder, _who_and_when_parser(name), f"{name} log")
