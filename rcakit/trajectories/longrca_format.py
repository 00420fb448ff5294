"""The LongRCA Bench record format (Appendix A) read into trajectories.

Each record carries a ``question_ID``, a ``history`` of steps ``step, name,
role, content`` numbered contiguously from 0 and, when labelled, the
responsible role ``mistake_agent`` and the root step ``mistake_step``. A
record file is JSON (one record or a list), JSON Lines, or a folder of JSON
files; every bad record is one error line (:mod:`~rcakit.trajectories.parsing`).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rcakit.trajectories.parsing import LoadResult, entry_of, field_of, first_usable, history_of, label_of, read_records
from rcakit.trajectories.reading import RecordError, short
from rcakit.trajectories.schema import Step, Trajectory

_SOURCE_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]*")


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
    qid = field_of(record, "question_ID", where, (str, int))
    history = history_of(record, where)
    steps = []
    for i in range(len(history)):
        entry = entry_of(history, i, where)
        index = field_of(entry, "step", f"{where}: history[{i}]", int)
        if index != i:
            raise RecordError(
                f"{where}: history[{i}].step: {short(index)}, expected {i} (steps must be contiguous from 0)"
            )
        name, role, content = (field_of(entry, k, f"{where}: history[{i}]") for k in ("name", "role", "content"))
        steps.append(Step(i, name, role, content))
    steps = tuple(steps)
    label = label_of(record, steps, where)
    return Trajectory(
        id=str(qid),
        source=str(record.get("source") or longrca_source(str(qid))),
        task=str(record.get("task") or steps[0].content),
        steps=steps,
        label=label,
    )


def read_longrca(path: str | Path, *, announce: bool = True) -> LoadResult:
    """Every record of a LongRCA JSON file, JSONL file or folder: good ones and error lines.

    A record whose ``question_ID`` an earlier record already has is rejected
    (its labels would be counted twice). With ``announce``, rejections are
    counted on the terminal (:meth:`LoadResult.announce`).
    """
    result = read_records(Path(path), parse_longrca, unique="question_ID")
    if announce:
        result.announce(path)
    return result


def load_longrca(path: str | Path) -> list[Trajectory]:
    """LongRCA records as trajectories; ``RcakitError`` naming file and field on any bad record."""
    return read_longrca(path, announce=False).raise_if_errors()


def check_longrca(path: str | Path) -> None:
    """``RcakitError`` (one line naming ``path``) unless it holds a labelled, valid LongRCA record.

    Records are read in order until the first one, so a good release costs one
    file; what a chapter would reject (nothing but bad or unlabelled records)
    is found before it starts.
    """
    first_usable(Path(path), parse_longrca, "labelled LongRCA record")
