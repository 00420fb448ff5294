"""Fetching a data set into the data home with pooch: the plan, the staging folder, the lock file.

- Every download goes into this fetch's staging folder,
  ``<data home>/.<name>.<pid>.staging``: pooch streams it into a temporary
  file there and the downloader (:mod:`rcakit.data.remote`) stops reading past
  the registry's size range and keeps to the deadline (``$RCAKIT_FETCH_TIMEOUT``).
  The folder is removed however the fetch ends (SIGTERM included); one that a
  killed fetch left is removed by the next fetch of that data set once its
  process is gone (a link or another kind of file at that name is left alone).
- A file whose sha256 is known (pinned in the registry, or recorded in the
  lock file) is checked by pooch against it and only then moved into place. A
  local copy with other bytes is removed first.
- A file fetched on first use is checked against the range and the format
  (:mod:`rcakit.data.formats`) and waits in the staging folder, so a file
  already at its place is never trusted nor overwritten unchecked. When every
  new file passed, they move into place and their sha256 goes into the lock
  file. One refused file discards them all: nothing of them is kept or
  recorded, so the data set stays not fetched.
- Every name is checked before anything is written: a Hub listing's names, the
  registry's and the lock file's paths must stay inside the data set's folder
  (``rcakit.data.catalog.inside``), each once.

A failure (hash mismatch, refused bytes, HTTP error, a server too slow,
unreachable host, full disk, Ctrl-C, SIGTERM) is one ``RcakitError`` line
naming the file and saying what the fetch kept. After a network failure the
files that passed their checks are kept (and recorded), so a second fetch
resumes. :mod:`rcakit.data.integrity` re-hashes what is there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from rcakit.data.formats import Expectation
from rcakit.data.integrity import digest
from rcakit.data.remote import (
    Deadline,
    Downloader,
    Refused,
    check_urls,
    download,
    fetch_timeout,
    hub_listing,
    store_for,
)
from rcakit.io import MIN_FREE_BYTES, atomic_write, fresh_folder, fsync_dir, held_by_live_process, writable_dir

STAGING_SUFFIX = ".staging"


class RefusedAtFirstFetch(RcakitError):
    """A file fetched on first use failed its size or format check: nothing of the new files is kept or recorded."""


@dataclass
class _Run:
    """One fetch under way: its staging folder, bar and deadline, and what it has kept and staged so far."""

    ds: DataSet
    staging: Path
    bar: Any
    deadline: Deadline
    recorded: dict[str, Any]  # path -> digest: the lock file's files, then each new file once it is in place
    kept: list[str] = field(default_factory=list)  # the files this fetch moved into place
    staged: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # new files that passed, waiting in the staging folder

    def downloader(self, limit: int | None, expectation: Expectation | None = None) -> Downloader:
        return Downloader(self.bar, limit, expectation, self.deadline)


def fetch(name: str, show_progress: bool = False) -> Path:
    """Download data set ``name`` into the data home (files already there are verified); its root.

    Pinned files are checked against the registry's sha256. For an unpinned
    data set, files the lock file knows are checked against it; each new file
    must pass the registry's size range and format before its sha256 is
    recorded there. ``show_progress`` draws one tqdm bar (bytes) on stderr.
    """
    ds = get(name)
    fetch_timeout()  # a bad $RCAKIT_FETCH_TIMEOUT is one line before anything is touched
    check_urls()  # so is a base URL that cannot be parsed
    writable_dir(data_home(), f"data home (${DATA_DIR_ENV})")
    _remove_stale(ds)
    lock = None if ds.pinned else read_lock(ds)
    plan = _plan(ds, lock)
    _check_space(ds, plan)
    deadline = Deadline.for_sizes(_most(ds, e) for e in plan)
    listing = [e.path for e in plan]
    with _progress_bar(ds, plan, show_progress) as bar, _quiet_pooch(), _staging(ds) as staging:
        run = _Run(ds, staging, bar, deadline, dict(lock["files"]) if lock else {})
        _fetch_all(run, plan, listing)
    if not ds.pinned:
        _write_lock(ds, listing, run.recorded)
    for parent in sorted({(folder(ds) / e.path).parent for e in plan}):
        fsync_dir(parent)
    return folder(ds) / ds.root


def _fetch_all(run: _Run, plan: list[FileEntry], listing: list[str]) -> None:
    """Fetch the known files, then the new ones; on a failure keep what passed and say so in its line."""
    known, new = [e for e in plan if e.sha256], [e for e in plan if not e.sha256]
    locked = lock_path(run.ds)
    try:
        store = store_for(run.ds, run.staging, known)
        for entry in known:
            _fetch_known(run, store, entry, lock=locked if entry.path in run.recorded else None)
        store = store_for(run.ds, run.staging, new)
        for entry in new:
            _fetch_new(run, store, entry)
    except RefusedAtFirstFetch as err:  # the staging folder goes with the new files; no lock file is written
        raise RcakitError(f"{err}; {_kept_words(run, recorded=True)}" if run.kept else str(err)) from None
    except RcakitError as err:
        recorded = _keep_passed(run, listing)
        raise RcakitError(f"{err}; {_kept_words(run, recorded)}") from None
    except BaseException:  # Ctrl-C, SIGTERM: the CLI says so in one line
        _keep_passed(run, listing)
        raise
    _commit(run)


def _plan(ds: DataSet, lock: dict[str, Any] | None) -> list[FileEntry]:
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


def _fetch_known(run: _Run, store: Any, entry: FileEntry, *, lock: Path | None) -> None:
    """A file whose sha256 is known: kept if the local copy matches, else fetched, checked and moved into place."""
    local = folder(run.ds) / entry.path
    if local.is_file():
        if digest(local)["sha256"] == entry.sha256:
            return
        _remove(local)  # a damaged local copy never stays: it is fetched anew or not at all
    try:
        download(run.ds, store, entry, downloader=run.downloader(entry.size), lock=lock)
    except Refused as err:
        raise RcakitError(
            f"{run.ds.name}: {entry.path}: the bytes from {store.get_url(entry.path)} are {err}"
        ) from None
    _place(run, entry.path)


def _fetch_new(run: _Run, store: Any, entry: FileEntry) -> None:
    """A file fetched on first use, checked against its expectation, left staged with its digest."""
    expected = run.ds.expectation(entry.path)
    assert expected is not None  # _plan refused every file fetched on first use without one
    try:
        download(run.ds, store, entry, downloader=run.downloader(expected.high, expected), lock=None)
    except Refused as err:
        raise RefusedAtFirstFetch(
            f"{run.ds.name}: {entry.path}: refused at first fetch ({err}); nothing from "
            f"{store.get_url(entry.path)} was kept or recorded"
        ) from None
    run.staged[entry.path] = digest(run.staging / entry.path)


def _commit(run: _Run) -> None:
    """Move the checked new files from the staging folder into place and record their digests."""
    for path, found in list(run.staged.items()):
        _place(run, path)
        run.recorded[path] = found
        del run.staged[path]


def _place(run: _Run, path: str) -> None:
    """Move the checked file ``path`` from the staging folder into the data set's folder."""
    local = inside(run.ds, path, f"{run.ds.name}: {path}")
    local.parent.mkdir(parents=True, exist_ok=True)
    os.replace(run.staging / path, local)
    run.kept.append(path)


def _keep_passed(run: _Run, listing: list[str]) -> bool:
    """After a failure, keep the new files that passed and record them; whether the lock file was written.

    A second failure here must not hide the first, so it only makes the answer ``False``.
    """
    if run.ds.pinned:
        return False
    try:
        _commit(run)
        if run.recorded:  # a first fetch that kept no file records no listing either
            _write_lock(run.ds, listing, run.recorded)
    except (OSError, RcakitError):
        return False
    return True


def _kept_words(run: _Run, recorded: bool) -> str:
    """What a failed fetch kept, for the end of its line: "nothing was kept" only when that is so."""
    if not run.kept:
        return "nothing was kept"
    files = f"kept {len(run.kept)} file{'' if len(run.kept) == 1 else 's'} fetched before it"
    if run.ds.pinned:
        return f"{files} (each matched the registry's sha256)"
    if recorded:
        return f"{files} (each passed its checks; its sha256 is in {lock_path(run.ds)})"
    return f"{files} (each passed its checks, but {lock_path(run.ds)} could not be written: not recorded)"


def _most(ds: DataSet, entry: FileEntry) -> int | None:
    """The most bytes ``entry`` may have: its known size, else the top of its expected range."""
    if entry.sha256:
        return entry.size
    expected = ds.expectation(entry.path)
    return expected.high if expected else None


@contextlib.contextmanager
def _staging(ds: DataSet) -> Iterator[Path]:
    """This fetch's folder for its downloads, ``<data home>/.<name>.<pid>.staging``, made afresh; removed at the end."""
    path = fresh_folder(data_home() / f".{ds.name}.{os.getpid()}{STAGING_SUFFIX}")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _remove_stale(ds: DataSet) -> None:
    """Remove the staging folders that killed fetches of ``ds`` left: real folders named
    ``.<name>.<pid>.staging`` whose process has ended (pid and start time, ``rcakit.io.held_by_live_process``).
    A link, a file, or a folder one cannot remove stays."""
    home = data_home()
    if not home.is_dir():
        return
    prefix = f".{ds.name}."
    for path in home.iterdir():
        pid = path.name.removeprefix(prefix).removesuffix(STAGING_SUFFIX)
        if path.name != f"{prefix}{pid}{STAGING_SUFFIX}" or not (pid.isascii() and pid.isdigit()):
            continue
        if not held_by_live_process(path, int(pid)) and stat.S_ISDIR(path.lstat().st_mode):
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


def _write_lock(ds: DataSet, listing: list[str], files: dict[str, Any]) -> None:
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
