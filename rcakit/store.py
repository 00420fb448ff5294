"""An append-only JSONL case store, so a killed sweep resumes where it stopped.

Each finished case is one JSON line, flushed and fsynced before the sweep goes
on. A torn last line (the process died mid-write) is ignored on reload and
overwritten by the rerun of that case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Hashable, Iterable, Iterator


class CaseStore:
    """Finished cases keyed by a string id, persisted to ``path``."""

    def __init__(self, path: str | os.PathLike, fingerprint: dict | None = None):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self._cases: dict[str, dict] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        good_bytes = 0
        with self.path.open("rb") as fh:
            for raw in fh:
                try:
                    row = json.loads(raw)
                except json.JSONDecodeError:
                    break  # torn tail from a killed writer
                if not raw.endswith(b"\n"):
                    break
                good_bytes += len(raw)
                if "__fingerprint__" in row:
                    self._check_fingerprint(row["__fingerprint__"])
                else:
                    self._cases[row["key"]] = row["value"]
        with self.path.open("r+b") as fh:
            fh.truncate(good_bytes)

    def _check_fingerprint(self, stored: dict) -> None:
        if self.fingerprint is not None and stored != self.fingerprint:
            from rcakit import RcakitError

            raise RcakitError(
                f"{self.path}: case store was written with other parameters; "
                "delete it or choose another store path"
            )

    def _append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
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
        if not self.path.exists() and self.fingerprint is not None:
            self._append({"__fingerprint__": self.fingerprint})
        self._append({"key": key, "value": value})
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
