"""The AgenticRAG-FP authors' released per-case runs of the content-corruption arm, read and checked.

The authors published one JSON file per (agent, data set) run of the
certified content-corruption arm (AgenticRAG-FP §7.2-7.3; data set
``agenticrag-fp-runs`` in ``data/registry.yaml``). For every injection depth a
file holds the failed cases, aligned: the injected truth ``(stage, hop)``,
each diagnoser's prediction ``(stage, hop, tokens)`` and the case's metadata
(question, gold answer, the original and replacement spans, the final answer,
the authors' own outcome label and query-contamination flag), and the
metadata of every recovered case. :func:`read_runs` reads a folder of such
files (or one file) into typed :class:`AuthorsRun` records; a file that is not
in the format is one :class:`rcakit.RcakitError` line naming the file and the
field. :func:`pinned_release` tells whether a folder holds exactly the
registry's pinned files (every sha256 checked).

The diagnosers keep the authors' names in the files (``doctor_rag``,
``suffix_regen``); :data:`DIAGNOSERS` maps them to rcakit's.

Used in the chapters: `content-corruption` (through ``rcakit.chapters.content_corruption.RescoredRun``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.trajectories.reading import raw_records, short

DATA_SET = "agenticrag-fp-runs"
DIAGNOSERS = {  # the authors' names -> rcakit's
    "rule_based": "rule_based",
    "doctor_rag": "coverage",
    "llm_judge": "llm_judge",
    "propagation_aware": "propagation_aware",
    "suffix_regen": "suf_regen",
}
CRITERIA = ("hop", "stage", "both")  # what a prediction must match to count as a hit (the files' ``criterion``)


@dataclass(frozen=True)
class Prediction:
    """One diagnoser's verdict on a failed case: stage, hop (1-based; 0 names no hop) and tokens spent."""

    stage: str
    hop: int
    cost: float


@dataclass(frozen=True)
class InjectedCase:
    """One injected case of a run: what the corruption did and, for a failed case, the diagnosers' verdicts.

    ``label`` and ``contaminated`` are the authors' own stored outcome
    (absorbed / resisted / derailed) and query-contamination flag;
    ``truth`` and ``predictions`` are set for failed cases only.
    """

    depth: int
    failed: bool
    sample_id: str
    question: str
    gold: str
    final_answer: str
    original_span: str
    corrupted_span: str
    strategy: str
    label: str
    contaminated: bool
    iterations: int
    truth: tuple[str, int] | None = None
    predictions: Mapping[str, Prediction] = field(default_factory=dict)

    def hit(self, diagnoser: str, criterion: str = "hop") -> bool:
        """Whether ``diagnoser`` localised this failed case under ``criterion`` (the authors' exact match)."""
        if self.truth is None:
            raise ValueError("only a failed case has a truth to hit")
        pred, (stage, hop) = self.predictions[diagnoser], self.truth
        return {"hop": pred.hop == hop, "stage": pred.stage == stage, "both": (pred.stage, pred.hop) == (stage, hop)}[
            criterion
        ]


@dataclass(frozen=True)
class AuthorsRun:
    """One released run: its agent and judge models, data set, retriever, criterion and injected cases."""

    file: str
    agent: str
    judge: str
    dataset: str
    retriever: str
    criterion: str
    diagnosers: tuple[str, ...]
    cases: tuple[InjectedCase, ...]

    @property
    def label(self) -> str:
        """``agent / data set``, as the per-run tables name the run."""
        return f"{self.agent} / {self.dataset}"

    def failed(self, depth: int | None = None) -> list[InjectedCase]:
        """The failed cases (at ``depth``, or at every depth), in the file's order."""
        return [c for c in self.cases if c.failed and depth in (None, c.depth)]


def read_runs(path: str | Path) -> tuple[AuthorsRun, ...]:
    """Every run in ``path``: a folder of the authors' JSON files (in file-name order) or one such file.

    A file that is not a run in the authors' format raises one
    :class:`rcakit.RcakitError` line naming the file and the field.
    """
    runs = []
    for file, where, record in raw_records(Path(path)):
        if isinstance(record, RcakitError):
            raise record
        runs.append(parse_run(record, where, Path(file).name))
    return tuple(runs)


def parse_run(record: Any, where: str, file: str = "") -> AuthorsRun:
    """One run from the parsed JSON of one file; ``where`` names it in an error line."""
    top = _mapping(record, where)
    criterion = _field(top, "criterion", str, where)
    if criterion not in CRITERIA:
        raise RcakitError(f"{where}: criterion: {short(criterion)} is not one of {', '.join(CRITERIA)}")
    diagnosers = tuple(_strings(_field(top, "diagnosers", list, where), f"{where}: diagnosers"))
    unknown = [d for d in diagnosers if d not in DIAGNOSERS]
    if unknown:
        raise RcakitError(f"{where}: diagnosers: {short(unknown[0])} is not one of {', '.join(DIAGNOSERS)}")
    raw = _mapping(_field(top, "raw_by_depth", dict, where), f"{where}: raw_by_depth")
    cases = [case for key, entry in raw.items() for case in _depth_cases(key, entry, diagnosers, where)]
    return AuthorsRun(
        file=file or where,
        agent=_model(_field(top, "provider", str, where)),
        judge=_model(_field(top, "judge", str, where)),
        dataset=_field(top, "dataset", str, where),
        retriever=_field(top, "retriever", str, where),
        criterion=criterion,
        diagnosers=tuple(DIAGNOSERS[d] for d in diagnosers),
        cases=tuple(cases),
    )


def _depth_cases(key: str, entry: Any, diagnosers: Sequence[str], where: str) -> list[InjectedCase]:
    here = f"{where}: raw_by_depth[{key!r}]"
    if not (key.isascii() and key.isdigit() and int(key) >= 1):
        raise RcakitError(f"{here}: a depth is a whole number from 1")
    depth, entry = int(key), _mapping(entry, here)
    truths = [_truth(t, f"{here}.truth[{i}]") for i, t in enumerate(_field(entry, "truth", list, here))]
    failed = _field(entry, "metadata", list, here)
    recovered = _field(entry, "recovered_metadata", list, here)
    if len(failed) != len(truths):
        raise RcakitError(f"{here}: {len(truths)} truths but {len(failed)} failed cases' metadata")
    predictions = _mapping(_field(entry, "predictions", dict, here), f"{here}.predictions")
    verdicts: dict[str, list[Prediction]] = {}
    for name in diagnosers:
        listed = predictions.get(name)
        if not isinstance(listed, list) or len(listed) != len(truths):
            raise RcakitError(f"{here}.predictions.{name}: expected a list of {len(truths)} [stage, hop, cost]")
        verdicts[DIAGNOSERS[name]] = [_prediction(p, f"{here}.predictions.{name}[{i}]") for i, p in enumerate(listed)]
    cases = [
        _case(meta, depth, f"{here}.metadata[{i}]", truths[i], {n: v[i] for n, v in verdicts.items()})
        for i, meta in enumerate(failed)
    ]
    return cases + [_case(meta, depth, f"{here}.recovered_metadata[{i}]") for i, meta in enumerate(recovered)]


def _case(
    meta: Any,
    depth: int,
    where: str,
    truth: tuple[str, int] | None = None,
    predictions: Mapping[str, Prediction] | None = None,
) -> InjectedCase:
    meta = _mapping(meta, where)
    text = {k: _field(meta, k, str, where) for k in _TEXT_FIELDS}
    return InjectedCase(
        depth=depth,
        failed=truth is not None,
        sample_id=text["sample_id"],
        question=text["question"],
        gold=text["reference_answer"],
        final_answer=text["final_answer"],
        original_span=text["original_span"],
        corrupted_span=text["corrupted_span"],
        strategy=text["strategy"],
        label=text["absorption"],
        contaminated=_field(meta, "query_contaminated", bool, where),
        iterations=_field(meta, "iterations_used", int, where),
        truth=truth,
        predictions=dict(predictions or {}),
    )


_TEXT_FIELDS = (
    "sample_id",
    "question",
    "reference_answer",
    "final_answer",
    "original_span",
    "corrupted_span",
    "strategy",
    "absorption",
)


def _truth(value: Any, where: str) -> tuple[str, int]:
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and _whole(value[1])):
        raise RcakitError(f"{where}: expected [stage, hop], got {short(value)}")
    return (value[0], int(value[1]))


def _prediction(value: Any, where: str) -> Prediction:
    if not (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and _whole(value[1])
        and isinstance(value[2], (int, float))
        and not isinstance(value[2], bool)
        and value[2] >= 0
    ):
        raise RcakitError(f"{where}: expected [stage, hop, cost], got {short(value)}")
    return Prediction(value[0], int(value[1]), float(value[2]))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _model(spec: str) -> str:
    """``claude:claude-haiku-4-5`` -> ``claude-haiku-4-5`` (the provider kind dropped)."""
    return spec.partition(":")[2] or spec


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise RcakitError(f"{where}: expected an object, got {short(value)}")
    return value


def _field(record: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in record:
        raise RcakitError(f"{where}: missing field {name!r}")
    value = record[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RcakitError(f"{where}: {name}: expected {kind.__name__}, got {short(value)}")
    return value


def _strings(values: list[Any], where: str) -> list[str]:
    if not all(isinstance(v, str) for v in values):
        raise RcakitError(f"{where}: expected a list of names")
    return values


def pinned_release(path: str | Path) -> bool:
    """Whether ``path`` (a folder) holds exactly the registry's pinned files of :data:`DATA_SET`, by sha256."""
    from rcakit import data

    folder = Path(path)
    if not folder.is_dir():
        return False
    pinned = {Path(f.path).name: f.sha256 for f in data.get(DATA_SET).files}
    present = sorted(p.name for p in folder.glob("*.json"))
    if present != sorted(pinned):
        return False
    return all(hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha for name, sha in pinned.items())


__all__ = [
    "CRITERIA",
    "DATA_SET",
    "DIAGNOSERS",
    "AuthorsRun",
    "InjectedCase",
    "Prediction",
    "parse_run",
    "pinned_release",
    "read_runs",
]
