"""Fetching a data set into the data home with pooch: the plan, the staging folder, the lock file.

- A file whose sha256 is known (pinned in the registry, or recorded in the
  lock file) is fetched by pooch straight into the data set's folder: pooch
  streams it into a temporary file there, checks the hash and only then moves
  it into place. A local copy with other bytes is removed first.
- A file fetched on first use is fetched into a staging folder in the data
  home, so a file already at its place is never trusted nor overwritten
  unchecked. The downloader (:mod:`rcakit.data.remote`) stops reading past the
  registry's size range and then checks the range and the format
  (:mod:`rcakit.data.formats`) on pooch's temporary file. When every new file
  passed, they move into place and their sha256 goes into the lock file. One
  refused file discards the staging folder: nothing is kept and nothing is
  recorded, so the data set stays not fetched.
- Every name is checked before anything is written: a Hub listing's names, the
  registry's and the lock file's paths must stay inside the data set's folder
  (``rcakit.data.catalog.inside``).

A failure (hash mismatch, refused bytes, HTTP error, unreachable host, full
disk, Ctrl-C) is one ``RcakitError`` line naming the file. After a network
failure the new files that passed their checks are kept and recorded, so a
second fetch resumes. :mod:`rcakit.data.integrity` re-hashes what is there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.data.catalog import (
    DATA_DIR_ENV,
    DataSet,
    FileEntry,
    data_home,
    expected_paths,
    folder,
    get,
    inside,
    lock_path,
    mb,
    read_lock,
)
from rcakit.data.integrity import digest
from rcakit.data.remote import Downloader, Refused, download, hub_listing, store_for
from rcakit.io import MIN_FREE_BYTES, atomic_write, fsync_dir, writable_dir


class RefusedAtFirstFetch(RcakitError):
    """A file fetched on first use failed its size or format check: nothing is kept or recorded."""


def fetch(name: str, show_progress: bool = False) -> Path:
    """Download data set ``name`` into the data home (files already there are verified); its root.

    Pinned files are checked against the registry's sha256. For an unpinned
    data set, files the lock file knows are checked against it; each new file
    must pass the registry's size range and format before its sha256 is
    recorded there. ``show_progress`` draws one tqdm bar (bytes) on stderr.
    """
    ds = get(name)
    writable_dir(data_home(), f"data home (${DATA_DIR_ENV})")
    lock = None if ds.pinned else read_lock(ds)
    plan = _plan(ds, lock)
    _check_space(ds, plan)
    recorded = dict(lock["files"]) if lock else {}
    known, new = [e for e in plan if e.sha256], [e for e in plan if not e.sha256]
    listing = [e.path for e in plan]
    with _progress_bar(ds, plan, show_progress) as bar, _quiet_pooch(), _staging(ds, bool(new)) as staging:
        staged: dict[str, dict] = {}
        try:
            store = store_for(ds, folder(ds), known)
            for entry in known:
                _fetch_known(ds, store, entry, bar=bar, lock=lock_path(ds) if entry.path in recorded else None)
            if new:
                assert staging is not None  # _staging made a folder: there are new files
                store = store_for(ds, staging, new)
                for entry in new:
                    staged[entry.path] = _fetch_new(ds, store, entry, bar=bar, staging=staging)
        except RefusedAtFirstFetch:
            raise  # the staging folder goes with everything in it; no lock file is written
        except BaseException:
            if not ds.pinned:  # keep what passed; a second failure must not hide the first
                with contextlib.suppress(OSError, RcakitError):
                    _commit(ds, staging, staged, recorded)
                    if recorded:  # a first fetch that kept no file records no listing either
                        _write_lock(ds, listing, recorded)
            raise
        _commit(ds, staging, staged, recorded)
    if not ds.pinned:
        _write_lock(ds, listing, recorded)
    for parent in sorted({(folder(ds) / e.path).parent for e in plan}):
        fsync_dir(parent)
    return folder(ds) / ds.root


def _plan(ds: DataSet, lock: dict | None) -> list[FileEntry]:
    """The files to fetch, each with the hash it must match (``None``: checked, then recorded).

    Every path is checked to stay inside the data set's folder, and every file
    fetched on first use to have an expectation, before anything is written.
    """
    if ds.pinned:
        plan = list(ds.files)
    else:
        recorded = lock["files"] if lock else {}
        paths = expected_paths(ds, lock) or hub_listing(ds)
        plan = [FileEntry(p, recorded.get(p, {}).get("sha256"), recorded.get(p, {}).get("size")) for p in paths]
    for entry in plan:
        inside(ds, entry.path, f"{ds.name}: {entry.path}")
        if not entry.sha256 and ds.expectation(entry.path) is None:
            raise RcakitError(
                f"{ds.name}: {entry.path}: the registry gives no size range or format to check "
                "at first fetch; nothing was fetched"
            )
    return plan


def _fetch_known(ds: DataSet, store: Any, entry: FileEntry, *, bar: Any, lock: Path | None) -> None:
    """A file whose sha256 is known: kept if the local copy matches, else fetched and checked."""
    local = folder(ds) / entry.path
    if local.is_file():
        if digest(local)["sha256"] == entry.sha256:
            return
        _remove(local)  # a damaged local copy never stays: it is fetched anew or not at all
    try:
        download(ds, store, entry, downloader=Downloader(bar, entry.size), lock=lock)
    except Refused as err:
        raise RcakitError(
            f"{ds.name}: {entry.path}: the bytes from {store.get_url(entry.path)} are {err}; nothing was kept"
        ) from None


def _fetch_new(ds: DataSet, store: Any, entry: FileEntry, *, bar: Any, staging: Path) -> dict:
    """A file fetched on first use, into ``staging``, checked against its expectation; its digest."""
    expected = ds.expectation(entry.path)
    assert expected is not None  # _plan refused every file fetched on first use without one
    try:
        download(ds, store, entry, downloader=Downloader(bar, expected.high, expected), lock=None)
    except Refused as err:
        raise RefusedAtFirstFetch(
            f"{ds.name}: {entry.path}: refused at first fetch ({err}); nothing from "
            f"{store.get_url(entry.path)} was kept or recorded"
        ) from None
    return digest(staging / entry.path)


def _commit(ds: DataSet, staging: Path | None, staged: dict[str, dict], recorded: dict) -> None:
    """Move the checked new files from ``staging`` into place and record their digests."""
    for path, found in list(staged.items()):
        assert staging is not None  # files were staged, so a staging folder exists
        local = inside(ds, path, f"{ds.name}: {path}")
        local.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / path, local)
        recorded[path] = found
        del staged[path]


@contextlib.contextmanager
def _staging(ds: DataSet, needed: bool) -> Iterator[Path | None]:
    """A fresh hidden folder in the data home for the files fetched on first use; removed at the end."""
    if not needed:
        yield None
        return
    data_home().mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f".{ds.name}.", suffix=".staging", dir=data_home()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _check_space(ds: DataSet, plan: list[FileEntry]) -> None:
    """Refuse before downloading when the known sizes of the missing files do not fit."""
    base = folder(ds)
    need = sum(e.size or 0 for e in plan if not (base / e.path).is_file())
    free = _free_bytes(data_home())
    if need and need + MIN_FREE_BYTES > free:
        raise RcakitError(
            f"{ds.name}: needs {mb(need)} in {data_home()}, but its file system has "
            f"{mb(free)} free (set ${DATA_DIR_ENV} to another folder)"
        )


def _free_bytes(path: Path) -> int:
    while not path.exists():
        path = path.parent
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _write_lock(ds: DataSet, listing: list[str], files: dict) -> None:
    lock = {"name": ds.name, "revision": ds.revision, "listing": listing, "files": files}
    atomic_write(lock_path(ds), json.dumps(lock, indent=1, sort_keys=True) + "\n")


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def _progress_bar(ds: DataSet, plan: list[FileEntry], show: bool) -> Iterator[Any]:
    from tqdm import tqdm

    base = folder(ds)
    sizes = [e.size for e in plan if not (e.sha256 and (base / e.path).is_file())]  # what will be downloaded
    known = [s for s in sizes if s is not None]
    total = sum(known) if len(known) == len(sizes) else None
    with tqdm(
        total=total,
        desc=ds.name,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        disable=not show,
        leave=False,
    ) as bar:
        yield bar


@contextlib.contextmanager
def _quiet_pooch() -> Iterator[None]:
    """pooch logs one line per file; the bar and the final path say enough."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel("WARNING")
    try:
        yield
    finally:
        logger.setLevel(level)
