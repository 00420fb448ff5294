"""An append-only JSONL case store, so a killed sweep resumes where it stopped.

Each finished case is one JSON line, flushed and fsynced before the sweep goes
on. Opening a store only reads it. On reload:

- a torn last line (the process died mid-write, or the file system left a
  NUL-filled tail) is ignored; the first new case cuts it off before it is
  appended, so the rerun of that case takes its place;
- a corrupt line in the middle (not JSON) is skipped with one warning line
  naming the store and the line (``rcakit.progress.warn``: on the terminal,
  never in a notebook's outputs), and the good cases after it are kept;
- a line that is JSON but not a case (``null``, a list, an object without
  ``key`` and ``value``) is a one-line ``RcakitError`` naming the store and
  the line: the file is not a case store, and nothing is overwritten.

Appending a line is the store's unit of durability, so the store is the one
file rcakit extends in place rather than replacing it (``rcakit.io``).

Where stores live and what keys them: :func:`open_case_store` puts a store in
the results folder's ``cases`` folder (so ``$RCAKIT_RESULTS_DIR`` moves it) and
names it by a digest of the parameters and of :func:`code_digest`, the source of
every module that can change a case; a store written by other code or other
parameters is never reused.

Where cases run: :meth:`CaseStore.run` takes an ``rcakit.parallel.Runner``, so a
sweep that goes through the store runs on threads or on a Dask cluster by its
``workers`` and ``scheduler`` settings, the store still written by this process alone.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.io import check_entry, open_append, read_regular
from rcakit.parallel import Progress, Runner
from rcakit.progress import warn
from rcakit.results import results_dir, to_jsonable

CASES_FOLDER = "cases"  # the stores' folder inside the results folder
DIGEST_CHARS = 12  # hex digits kept of a SHA-256 digest in a store's name and fingerprint


class CaseStore:
    """Finished cases keyed by a string id, persisted to ``path``."""

    def __init__(self, path: str | os.PathLike[str], fingerprint: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self._cases: dict[str, dict[str, Any]] = {}
        self._good_bytes: int | None = None  # set when a torn tail must be cut before the next append
        self._rows = 0  # well-formed lines read: a store with none gets the fingerprint first
        self._load()

    def _load(self) -> None:
        try:
            if not os.path.lexists(self.path):
                return
            data = read_regular(check_entry(self.path, "case store"), "case store")
        except OSError as err:
            raise RcakitError(f"{self.path}: cannot read case store: {err.strerror or err}") from None
        lines = data.split(b"\n")
        offset = 0
        for number, raw in enumerate(lines, start=1):
            last = number == len(lines)
            if last:
                if raw:
                    self._good_bytes = offset  # torn tail: no newline after it
                return
            offset += len(raw) + 1
            row = _parse(raw)
            if row is _CORRUPT:
                if all(not rest.strip(b"\0") for rest in lines[number:]):
                    self._good_bytes = offset - len(raw) - 1  # a NUL-filled tail is a torn tail
                    return
                warn(f"{self.path}:{number}: corrupt line skipped (not JSON); the case is recomputed")
                continue
            self._take(row, number)

    def _take(self, row: object, number: int) -> None:
        self._rows += 1
        if isinstance(row, dict) and "__fingerprint__" in row:
            self._check_fingerprint(row["__fingerprint__"])
        elif isinstance(row, dict) and isinstance(row.get("key"), str) and "value" in row:
            self._cases[row["key"]] = row["value"]
        else:
            raise RcakitError(
                f"{self.path}:{number}: not a case (expected an object with 'key' and 'value', "
                f"got {type(row).__name__}); is this a case store?"
            )

    def _check_fingerprint(self, stored: dict[str, Any]) -> None:
        if self.fingerprint is not None and stored != self.fingerprint:
            raise RcakitError(
                f"{self.path}: case store was written with other parameters; delete it or choose another store path"
            )

    def _append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_append(self.path, truncate_to=self._good_bytes)  # never through a link or into a FIFO
        self._good_bytes = None
        with os.fdopen(fd, "ab") as fh:
            fh.write((json.dumps(row, sort_keys=True) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())

    def __contains__(self, key: str) -> bool:
        return key in self._cases

    def __len__(self) -> int:
        return len(self._cases)

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._cases[key]

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Persist one finished case."""
        if self.fingerprint is not None and not self._rows:
            self._append({"__fingerprint__": self.fingerprint})
        self._append({"key": key, "value": value})
        self._rows += 1
        self._cases[key] = value

    def run(
        self,
        items: Iterable[tuple[str, object]],
        work: Callable[[Any], dict[str, Any]],
        progress: Progress | None = None,
        runner: Runner | None = None,
    ) -> list[dict[str, Any]]:
        """Compute ``work(item)`` for each ``(key, item)`` not yet stored.

        ``runner`` (an ``rcakit.parallel.Runner``; serial by default) decides
        where the cases run: in this process, on threads or on a Dask cluster.
        This process alone writes the store, each case as it finishes. Returns
        every case's value in the order of ``items``, whether it was computed
        now or loaded from an earlier, interrupted run.
        """
        items = list(items)
        todo = [(k, it) for k, it in items if k not in self._cases]
        (runner or Runner()).run(todo, work, progress=progress, on_result=self.put)
        return [self._cases[k] for k, _ in items]


_CORRUPT = object()


def _parse(raw: bytes) -> object:
    """One line's JSON value, or ``_CORRUPT`` (bad bytes, bad JSON, absurd nesting)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _CORRUPT


def code_digest(packages: Sequence[str]) -> str:
    """Digest of the source of every module in ``packages`` (dotted names of packages or modules).

    A package counts with all its ``.py`` files, subpackages included, each
    keyed by its path inside the package, so editing, adding, removing or
    renaming a module changes the digest. The order of ``packages`` does not
    matter. Give every module a case's value can depend on (e.g.
    ``["rcakit.rag", "rcakit.llm", "rcakit.stats", "rcakit.store"]``).
    """
    if isinstance(packages, str):
        packages = [packages]
    h = hashlib.sha256()
    for name in sorted(set(packages)):
        for rel, path in _sources(name):
            h.update(f"{name}:{rel}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


def _sources(name: str) -> list[tuple[str, Path]]:
    """``(path inside the package, file)`` for each source file of module or package ``name``."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise ValueError(f"code_digest: no module or package named {name!r}")
    if spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        return sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*.py"))
    path = Path(spec.origin)
    return [(path.name, path)]


def store_folder(folder: str | os.PathLike[str] | None = None) -> Path:
    """Where case stores go: ``<results folder>/cases`` by default; a relative ``folder`` is
    taken from the results folder (``$RCAKIT_RESULTS_DIR``), an absolute one as it is."""
    if folder is None:
        folder = CASES_FOLDER
    path = Path(folder).expanduser()
    return path if path.is_absolute() else results_dir() / path


def open_case_store(
    name: str,
    params: Mapping[str, Any],
    packages: Sequence[str],
    folder: str | os.PathLike[str] | None = None,
) -> CaseStore:
    """The case store of ``name`` (a chapter id) for ``params`` and the code of ``packages``.

    Its fingerprint is the parameters plus :func:`code_digest` of ``packages``;
    its file is ``<store_folder(folder)>/<name>-<digest of the fingerprint>.jsonl``.
    Other parameters or other code give another file, never a reused one.
    """
    fingerprint = {"params": to_jsonable(params), "code": code_digest(packages)}
    digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()
    return CaseStore(store_folder(folder) / f"{name}-{digest[:DIGEST_CHARS]}.jsonl", fingerprint=fingerprint)
