"""Fetching a data set into the data home with pooch, and re-hashing what is there.

- A file whose sha256 is known (pinned in the registry, or recorded in the
  lock file) is fetched by pooch straight into the data set's folder: pooch
  streams it into a temporary file there, checks the hash and only then moves
  it into place. A local copy with other bytes is removed first.
- A file fetched on first use is fetched into a staging folder in the data
  home, so a file already at its place is never trusted nor overwritten
  unchecked. The downloader stops reading past the registry's size range and
  then checks the range and the format (:mod:`rcakit.data.formats`) on pooch's
  temporary file. When every new file passed, they move into place and their
  sha256 goes into the lock file. One refused file discards the staging folder:
  nothing is kept and nothing is recorded, so the data set stays not fetched.
- Every name is checked before anything is written: a Hub listing's names, the
  registry's and the lock file's paths must stay inside the data set's folder
  (``rcakit.data.catalog.inside``).

A failure (hash mismatch, refused bytes, HTTP error, unreachable host, full
disk, Ctrl-C) is one ``RcakitError`` line naming the file. After a network
failure the new files that passed their checks are kept and recorded, so a
second fetch resumes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
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
    path_problem,
    read_lock,
)
from rcakit.data.formats import Expectation, size_words
from rcakit.io import MIN_FREE_BYTES, atomic_write, fsync_dir, writable_dir

DATA_URL_ENV = "RCAKIT_DATA_URL"
HUB_ENV = "HF_ENDPOINT"
HUB_URL = "https://huggingface.co"
TIMEOUT = 60.0  # seconds to wait for a server to answer, per request
RETRIES = 1  # pooch retries a dropped connection, a 5xx or a hash mismatch this often
CHUNK = 2**16
LISTING_LIMIT = 64 * 10**6  # bytes: a Hub file list longer than this is not one
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


class _HTTPStatus(Exception):
    """A 4xx answer: final, so pooch does not retry it (it retries only network errors)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status, self.reason = status, reason


class _Refused(Exception):
    """Bytes outside the registry's size range or format: final (pooch retries ``ValueError`` only)."""


class RefusedAtFirstFetch(RcakitError):
    """A file fetched on first use failed its size or format check: nothing is kept or recorded."""


@dataclass(frozen=True)
class FileCheck:
    """One file of :func:`verify`: its path and what is wrong with it (``None``: it matches)."""

    path: str
    problem: str | None = None


# ---------------------------------------------------------------- fetch


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
            store = _pooch(ds, folder(ds), known)
            for entry in known:
                _fetch_known(ds, store, entry, bar, lock_path(ds) if entry.path in recorded else None)
            if new:
                assert staging is not None  # _staging made a folder: there are new files
                store = _pooch(ds, staging, new)
                for entry in new:
                    staged[entry.path] = _fetch_new(ds, store, staging, entry, bar)
        except RefusedAtFirstFetch:
            raise  # the staging folder goes with everything in it; no lock file is written
        except BaseException:
            if not ds.pinned:  # keep what passed; a second failure must not hide the first
                with contextlib.suppress(OSError, RcakitError):
                    _commit(ds, staging, staged, recorded)
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
        paths = expected_paths(ds, lock) or _hub_listing(ds)
        plan = [FileEntry(p, recorded.get(p, {}).get("sha256"), recorded.get(p, {}).get("size")) for p in paths]
    for entry in plan:
        inside(ds, entry.path, f"{ds.name}: {entry.path}")
        if not entry.sha256 and ds.expectation(entry.path) is None:
            raise RcakitError(
                f"{ds.name}: {entry.path}: the registry gives no size range or format to check "
                "at first fetch; nothing was fetched"
            )
    return plan


def _base_url(ds: DataSet) -> str:
    base = os.environ.get(DATA_URL_ENV) or ds.base_url
    return base if base.endswith("/") else base + "/"


def _pooch(ds: DataSet, path: Path, entries: list[FileEntry]) -> Any:
    import pooch

    base = _base_url(ds)
    return pooch.create(
        path=path,
        base_url=base,
        registry={e.path: e.sha256 for e in entries},
        urls={e.path: base + urllib.parse.quote(e.path) for e in entries},
        retry_if_failed=RETRIES,
    )


def _fetch_known(ds: DataSet, store: Any, entry: FileEntry, bar: Any, lock: Path | None) -> None:
    """A file whose sha256 is known: kept if the local copy matches, else fetched and checked."""
    local = folder(ds) / entry.path
    if local.is_file():
        if _digest(local)["sha256"] == entry.sha256:
            return
        _remove(local)  # a damaged local copy never stays: it is fetched anew or not at all
    try:
        _download(ds, store, entry, _Downloader(bar, entry.size), lock)
    except _Refused as err:
        raise RcakitError(
            f"{ds.name}: {entry.path}: the bytes from {store.get_url(entry.path)} are {err}; nothing was kept"
        ) from None


def _fetch_new(ds: DataSet, store: Any, staging: Path, entry: FileEntry, bar: Any) -> dict:
    """A file fetched on first use, into ``staging``, checked against its expectation; its digest."""
    expected = ds.expectation(entry.path)
    assert expected is not None  # _plan refused every file fetched on first use without one
    try:
        _download(ds, store, entry, _Downloader(bar, expected.high, expected), None)
    except _Refused as err:
        raise RefusedAtFirstFetch(
            f"{ds.name}: {entry.path}: refused at first fetch ({err}); nothing from "
            f"{store.get_url(entry.path)} was kept or recorded"
        ) from None
    return _digest(staging / entry.path)


def _download(ds: DataSet, store: Any, entry: FileEntry, downloader: _Downloader, lock: Path | None) -> None:
    """One ``store.fetch``, every failure but a refusal turned into one line naming the file."""
    import requests

    where = f"{ds.name}: {entry.path}"
    url = store.get_url(entry.path)
    try:
        store.fetch(entry.path, downloader=downloader)
    except _HTTPStatus as err:
        raise RcakitError(f"{where}: {url} answered HTTP {err.status} {err.reason}") from None
    except requests.exceptions.RequestException as err:
        host = urllib.parse.urlsplit(url).netloc
        raise RcakitError(f"{where}: cannot download from {host}: {_reason(err)}") from None
    except ValueError as err:
        if "hash" not in str(err):
            raise
        against = f"the sha256 recorded at the first fetch in {lock}" if lock else "the registry's sha256"
        raise RcakitError(f"{where}: the bytes from {url} do not match {against}; nothing was kept") from None
    except OSError as err:
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the file system is full" if full else (err.strerror or str(err))
        raise RcakitError(f"{where}: cannot write into {folder(ds)}: {what}; nothing was kept") from None


def _commit(ds: DataSet, staging: Path | None, staged: dict[str, dict], recorded: dict) -> None:
    """Move the checked new files from ``staging`` into place and record their digests."""
    for path, digest in list(staged.items()):
        assert staging is not None  # files were staged, so a staging folder exists
        local = inside(ds, path, f"{ds.name}: {path}")
        local.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / path, local)
        recorded[path] = digest
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


def _reason(err: Exception) -> str:
    """A short cause for a requests error: the OS's words ("Connection refused") when present."""
    import requests

    if isinstance(err, requests.exceptions.Timeout):
        return f"no answer within {TIMEOUT:g} s"
    found = _ERRNO_TEXT.search(str(err))
    if found:
        return found.group(1).strip().rstrip(".").lower()
    return type(err).__name__


class _Downloader:
    """A pooch downloader: streams ``url`` into pooch's temporary file, fsyncs it, moves one bar.

    It reads at most ``limit`` bytes (the known size, or the top of the
    expected range) and, given an ``expectation``, checks the finished
    temporary file against it; either failure is a :class:`_Refused`.
    """

    def __init__(self, bar: Any, limit: int | None = None, expectation: Expectation | None = None) -> None:
        self.bar, self.limit, self.expectation = bar, limit, expectation

    def __call__(self, url: str, output_file: str, pooch_store: Any = None, check_only: bool = False) -> None:
        import requests

        with requests.get(url, stream=True, timeout=TIMEOUT) as response:
            if 400 <= response.status_code < 500:
                raise _HTTPStatus(response.status_code, response.reason or "")
            response.raise_for_status()  # a 5xx: requests' HTTPError, which pooch retries
            self._check_declared(response)
            written = 0
            try:
                with open(output_file, "wb") as fh:
                    for chunk in response.iter_content(CHUNK):
                        if self.limit is not None and written + len(chunk) > self.limit:
                            raise _Refused(f"more than {size_words(self.limit)}, the most the registry allows")
                        _write(fh, chunk)
                        written += len(chunk)
                        self.bar.update(len(chunk))
                    fh.flush()
                    os.fsync(fh.fileno())
            except BaseException:
                self.bar.update(-written)
                raise
            _check_length(response, written)
        problem = self.expectation.problem(Path(output_file)) if self.expectation else None
        if problem:
            raise _Refused(problem)

    def _check_declared(self, response: Any) -> None:
        declared = response.headers.get("Content-Length")
        if (
            self.limit is not None
            and declared
            and declared.isdigit()
            and not response.headers.get("Content-Encoding")
            and int(declared) > self.limit
        ):
            raise _Refused(
                f"{size_words(int(declared))} by its Content-Length, more than the "
                f"{size_words(self.limit)} the registry allows"
            )


def _write(fh: Any, chunk: bytes) -> None:
    fh.write(chunk)


def _check_length(response: Any, written: int) -> None:
    """A body shorter than its Content-Length is a dropped connection (retried), never a file."""
    import requests

    declared = response.headers.get("Content-Length")
    if declared and not response.headers.get("Content-Encoding") and int(declared) != written:
        raise requests.exceptions.ConnectionError(f"got {written} of {declared} bytes")


def _hub_listing(ds: DataSet) -> list[str]:
    """The listing's file names at the pinned revision, from the Hub's revision API.

    Every name the Hub lists must be a path inside the data set's folder, or the
    whole list is refused before anything is written.
    """
    listing = ds.listing
    assert listing is not None  # the registry gives a data set either pinned files or a listing
    url = f"{os.environ.get(HUB_ENV, HUB_URL).rstrip('/')}/api/datasets/{listing.repo}/revision/{ds.revision}"
    where = f"{ds.name}: file list"
    try:
        names = [s["rfilename"] for s in json.loads(_read_capped(url, where))["siblings"]]
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{where}: {url} did not return a Hub file list") from None
    for name in names:
        why = path_problem(name)
        if why:
            raise RcakitError(
                f"{where}: {url} lists {name!r}, which is not a path inside the data set's "
                f"folder ({why}); nothing was fetched"
            )
    chosen = sorted((n for n in names if n.startswith(listing.prefix) and n.endswith(listing.suffix)), key=_natural_key)
    if len(chosen) != listing.count:
        raise RcakitError(
            f"{where}: the Hub lists {len(chosen)} '{listing.suffix}' files under "
            f"{listing.prefix} at revision {ds.revision}; the registry expects {listing.count}"
        )
    missing = [n for n in listing.extra if n not in names]
    if missing:
        raise RcakitError(f"{where}: {', '.join(missing)} not at revision {ds.revision}")
    return [*listing.extra, *chosen]


def _read_capped(url: str, where: str) -> bytes:
    """The body of a 200 answer from ``url``, at most :data:`LISTING_LIMIT` bytes; one line otherwise."""
    import requests

    try:
        with requests.get(url, timeout=TIMEOUT, stream=True) as response:
            if response.status_code != 200:
                raise RcakitError(f"{where}: {url} answered HTTP {response.status_code} {response.reason}")
            body = bytearray()
            for chunk in response.iter_content(CHUNK):
                body += chunk
                if len(body) > LISTING_LIMIT:
                    raise RcakitError(f"{where}: {url} sent more than {size_words(LISTING_LIMIT)}, not a Hub file list")
    except requests.exceptions.RequestException as err:
        raise RcakitError(f"{where}: cannot reach {urllib.parse.urlsplit(url).netloc}: {_reason(err)}") from None
    return bytes(body)


def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


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


def _digest(path: Path) -> dict:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            sha.update(block)
    return {"sha256": sha.hexdigest(), "size": path.stat().st_size}


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


# ---------------------------------------------------------------- verify


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
    found = _digest(local)["sha256"]
    if found != entry.sha256:
        return f"sha256 {found} differs from {against}, {entry.sha256}"
    if ds.pinned:
        return None
    expectation = ds.expectation(entry.path)
    assert expectation is not None  # a file fetched on first use had one (fetch refuses any other)
    problem = expectation.problem(local)
    return f"matches its recorded sha256, but is {problem}" if problem else None
