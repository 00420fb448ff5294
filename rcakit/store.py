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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Hashable, Iterable, Iterator

from rcakit import RcakitError
from rcakit.progress import warn


class CaseStore:
    """Finished cases keyed by a string id, persisted to ``path``."""

    def __init__(self, path: str | os.PathLike, fingerprint: dict | None = None):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self._cases: dict[str, dict] = {}
        self._good_bytes: int | None = None  # set when a torn tail must be cut before the next append
        self._rows = 0  # well-formed lines read: a store with none gets the fingerprint first
        self._load()

    def _load(self) -> None:
        try:
            if not self.path.exists():
                return
            data = self.path.read_bytes()
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

    def _take(self, row, number: int) -> None:
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

    def _check_fingerprint(self, stored: dict) -> None:
        if self.fingerprint is not None and stored != self.fingerprint:
            raise RcakitError(
                f"{self.path}: case store was written with other parameters; "
                "delete it or choose another store path"
            )

    def _append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._good_bytes is not None:
            with self.path.open("r+b") as fh:
                fh.truncate(self._good_bytes)
            self._good_bytes = None
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def __contains__(self, key: str) -> bool:
        return key in self._cases

    def __len__(self) -> int:
        return len(self._cases)

    def __getitem__(self, key: str) -> dict:
        return self._cases[key]

    def put(self, key: str, value: dict) -> None:
        """Persist one finished case."""
        if self.fingerprint is not None and not self._rows:
            self._append({"__fingerprint__": self.fingerprint})
        self._append({"key": key, "value": value})
        self._rows += 1
        self._cases[key] = value

    def run(
        self,
        items: Iterable[tuple[str, Hashable]],
        work: Callable[[Hashable], dict],
        progress: Callable[[Iterable], Iterator] | None = None,
    ) -> list[dict]:
        """Compute ``work(item)`` for each ``(key, item)`` not yet stored.

        Returns every case's value in the order of ``items``, whether it was
        computed now or loaded from an earlier, interrupted run.
        """
        items = list(items)
        todo = [(k, it) for k, it in items if k not in self._cases]
        for key, item in progress(todo) if progress else todo:
            self.put(key, work(item))
        return [self._cases[k] for k, _ in items]


_CORRUPT = object()


def _parse(raw: bytes):
    """One line's JSON value, or ``_CORRUPT`` (bad bytes, bad JSON, absurd nesting)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _CORRUPT
