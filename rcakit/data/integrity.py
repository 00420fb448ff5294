"""Re-hashing what is on disk: a file's sha256 and size, and :func:`verify` of a whole data set.

A file is checked against the registry's sha256 when the registry pins it, or
against the one recorded at its first fetch in ``<data home>/<name>.lock.json``
(``rcakit.data.catalog.lock_path``); a file fetched on first use is also
checked against the registry's size range and format
(:mod:`rcakit.data.formats`), so a lock file cannot vouch for bytes the
registry would refuse.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.data.catalog import DataSet, FileEntry, folder, get, lock_path, read_lock


@dataclass(frozen=True)
class FileCheck:
    """One file of :func:`verify`: its path and what is wrong with it (``None``: it matches)."""

    path: str
    problem: str | None = None


def digest(path: Path) -> dict[str, Any]:
    """``{"sha256": ..., "size": ...}`` of the file at ``path``, as a lock file records it."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            sha.update(block)
    return {"sha256": sha.hexdigest(), "size": path.stat().st_size}


def verify(name: str) -> list[FileCheck]:
    """Re-hash every file of data set ``name`` on disk against the registry's or the lock file's sha256.

    A file fetched on first use is also checked against the registry's size
    range and format. One :class:`FileCheck` per file, in the registry's or the
    lock file's order; a one-line ``RcakitError`` when nothing is fetched.
    """
    ds = get(name)
    lock = None if ds.pinned else read_lock(ds)
    unfetched = RcakitError(f"data set {name!r} is not fetched (run 'rcakit data fetch {name}')")
    if not ds.pinned and lock is None:
        raise unfetched
    recorded = lock["files"] if lock else {}
    if ds.pinned:
        entries = list(ds.files)
    else:
        assert lock is not None  # refused above
        entries = [
            FileEntry(p, recorded.get(p, {}).get("sha256"), recorded.get(p, {}).get("size")) for p in lock["listing"]
        ]
    base = folder(ds)
    if not any((base / e.path).is_file() for e in entries):
        raise unfetched
    against = "the registry's" if ds.pinned else f"the one recorded at first fetch in {lock_path(ds)}"
    return [FileCheck(e.path, _file_problem(ds, base / e.path, e, against)) for e in entries]


def _file_problem(ds: DataSet, local: Path, entry: FileEntry, against: str) -> str | None:
    if entry.sha256 is None:
        return "not fetched yet (no sha256 recorded)"
    if not local.is_file():
        return "missing"
    found = digest(local)["sha256"]
    if found != entry.sha256:
        return f"sha256 {found} differs from {against}, {entry.sha256}"
    if ds.pinned:
        return None
    expectation = ds.expectation(entry.path)
    assert expectation is not None  # a file fetched on first use had one (fetch refuses any other)
    problem = expectation.problem(local)
    return f"matches its recorded sha256, but is {problem}" if problem else None
