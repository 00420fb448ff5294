"""Named data sets: a registry of pinned, hashed files fetched with pooch.

``data/registry.yaml`` names each data set the papers use (Who&When, LongRCA
Bench, MuSiQue) with its source pinned to one revision, its licence and
citation, and the sha256 of every file where the bytes are known here. A data
set whose hashes cannot be known in advance is trusted on first use: its first
fetch records each file's sha256 in ``<data home>/<name>.lock.json`` and every
later fetch verifies against that lock file.

- The data home is ``pooch.os_cache("rcakit")``; ``$RCAKIT_DATA_DIR`` moves it.
  A data set lives in ``<data home>/<name>/`` with the source's own layout.
- ``$RCAKIT_DATA_URL`` replaces a data set's base URL (a mirror holding a
  plain copy of the source tree at the pinned revision, or a test server).
  A Hub listing is read from ``$HF_ENDPOINT`` (default the Hugging Face Hub).
- pooch streams each file into a temporary file in the destination folder,
  checks the hash and only then moves it into place; the downloader here
  fsyncs the bytes first. A failure (hash mismatch, HTTP error, unreachable
  host, full disk, Ctrl-C) is one ``RcakitError`` line and leaves no partial
  or unverified file behind.

A chapter parameter that takes a data path also takes a registry name:
:func:`locate` maps either to a local path. Used in the chapters:
`longrca-strata` (Who&When).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import sys
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rcakit import RcakitError
from rcakit.io import MIN_FREE_BYTES, atomic_write, fsync_dir, writable_dir
from rcakit.paths import project_root, resolve

__all__ = [
    "DataSet",
    "FileEntry",
    "Listing",
    "add_commands",
    "data_home",
    "fetch",
    "fetch_hint",
    "get",
    "is_fetched",
    "local_path",
    "locate",
    "lock_path",
    "registry",
]

DATA_DIR_ENV = "RCAKIT_DATA_DIR"
DATA_URL_ENV = "RCAKIT_DATA_URL"
HUB_ENV = "HF_ENDPOINT"
HUB_URL = "https://huggingface.co"
TIMEOUT = 60.0  # seconds to wait for a server to answer, per request
RETRIES = 1  # pooch retries a dropped connection, a 5xx or a hash mismatch this often
CHUNK = 2**16
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


@dataclass(frozen=True)
class FileEntry:
    """One file of a data set: its path below the base URL, sha256 and size (``None`` if unknown)."""

    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Listing:
    """A file list read from the Hugging Face Hub at the pinned revision: ``extra`` plus the
    ``count`` files under ``prefix`` whose names end in ``suffix``."""

    repo: str
    prefix: str
    suffix: str
    count: int
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataSet:
    """A registry entry (see the header of ``data/registry.yaml``)."""

    name: str
    title: str
    description: str
    source: str
    revision: str
    base_url: str
    root: str
    reader: str
    licence: str
    licence_note: str
    bibkey: str
    citation: str
    files: tuple[FileEntry, ...] = ()
    listing: Listing | None = None
    size_hint: str | None = None

    @property
    def pinned(self) -> bool:
        """Every file and its sha256 are in the registry (no lock file needed)."""
        return bool(self.files) and all(f.sha256 for f in self.files)


# ---------------------------------------------------------------- the registry


def registry_path() -> Path:
    return project_root() / "data" / "registry.yaml"


def registry() -> dict[str, DataSet]:
    """Every data set by name, read from ``data/registry.yaml`` (re-read when it changes)."""
    path = registry_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as err:
        raise RcakitError(f"{path}: cannot read the data registry: {err.strerror or err}") from None
    return _read_registry(str(path), stamp)


@functools.lru_cache(maxsize=4)
def _read_registry(path: str, _stamp: int) -> dict[str, DataSet]:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise RcakitError(f"{path}: the data registry must map names to entries")
    return {name: _entry(path, name, spec) for name, spec in raw.items()}


def _entry(path: str, name: str, spec: Any) -> DataSet:
    where = f"{path}: {name}"
    try:
        files = tuple(FileEntry(p, f.get("sha256"), f.get("size")) for p, f in (spec.get("files") or {}).items())
        listing = spec.get("listing")
        listing = Listing(**{**listing, "extra": tuple(listing.get("extra", ()))}) if listing else None
        keys = ("title", "description", "source", "revision", "base_url", "root", "reader",
                "licence", "licence_note", "bibkey", "citation")
        fields = {k: str(spec[k]) for k in keys}
    except KeyError as err:
        raise RcakitError(f"{where}: missing field {err.args[0]!r}") from None
    except (AttributeError, TypeError) as err:
        raise RcakitError(f"{where}: malformed entry ({err})") from None
    if bool(files) == bool(listing):
        raise RcakitError(f"{where}: needs exactly one of 'files' and 'listing'")
    if not fields["base_url"].endswith("/"):
        raise RcakitError(f"{where}: base_url must end with '/'")
    return DataSet(name=name, files=files, listing=listing, size_hint=spec.get("size_hint"), **fields)


def get(name: str) -> DataSet:
    """The data set called ``name``, or a one-line ``RcakitError`` listing the known names."""
    sets = registry()
    if name not in sets:
        raise RcakitError(f"unknown data set {name!r} (known: {', '.join(sets)})")
    return sets[name]


# ---------------------------------------------------------------- where the data lives


def data_home() -> Path:
    """``$RCAKIT_DATA_DIR`` if set, else pooch's per-user cache folder for rcakit."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().absolute()
    import pooch

    return Path(pooch.os_cache("rcakit"))


def _folder(ds: DataSet) -> Path:
    return data_home() / ds.name


def lock_path(ds: DataSet) -> Path:
    """The lock file recording the hashes of a data set that the registry does not pin."""
    return data_home() / f"{ds.name}.lock.json"


def _read_lock(ds: DataSet) -> dict | None:
    path = lock_path(ds)
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
        if not (isinstance(lock["files"], dict) and isinstance(lock["listing"], list)
                and all(isinstance(f, dict) and isinstance(f["sha256"], str) for f in lock["files"].values())):
            raise TypeError
        revision = lock["revision"]
    except FileNotFoundError:
        return None
    except OSError as err:
        raise RcakitError(f"{path}: cannot read the lock file: {err.strerror or err}") from None
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{path}: not an rcakit lock file; remove it and {_folder(ds)} "
                          f"to fetch {ds.name} anew") from None
    if revision != ds.revision:
        raise RcakitError(f"{path}: records revision {revision} but the registry pins {ds.revision}; "
                          f"remove it and {_folder(ds)} to fetch {ds.name} anew")
    return lock


def _expected(ds: DataSet, lock: dict | None) -> list[str] | None:
    """The paths of a data set's files, or ``None`` while a Hub listing is still unread."""
    if ds.files:
        return [f.path for f in ds.files]
    return list(lock["listing"]) if lock else None


def is_fetched(name: str) -> bool:
    """Every file of the data set is in the data home (and, if unpinned, in its lock file).

    Only presence is checked here; :func:`fetch` verifies the hashes.
    """
    ds = get(name)
    lock = None if ds.pinned else _read_lock(ds)
    paths = _expected(ds, lock)
    if paths is None or (not ds.pinned and lock is None):
        return False
    recorded = lock["files"] if lock else {}
    folder = _folder(ds)
    return all((folder / p).is_file() and (ds.pinned or p in recorded) for p in paths)


def local_path(name: str) -> Path:
    """The fetched data set's ``root`` (what its reader takes); ``RcakitError`` if not fetched."""
    ds = get(name)
    if not is_fetched(name):
        raise RcakitError(f"data set {name!r} is not fetched (run 'rcakit data fetch {name}')")
    return _folder(ds) / ds.root


def locate(value: str, param: str) -> Path | None:
    """The local path a data parameter names: a registry name or a file or folder path.

    A registry name gives its fetched ``root``, or ``None`` when it is not
    fetched (the caller says how to fetch it, see :func:`fetch_hint`, and skips
    what needs it). Registry names take precedence over relative paths. Any
    other value is a path, relative ones taken from the project root; it must
    exist, else a one-line ``RcakitError`` naming ``param``.
    """
    if value in registry():
        return local_path(value) if is_fetched(value) else None
    path = resolve(value)
    if not os.path.lexists(path):
        raise RcakitError(f"parameter {param!r}: {value!r} is neither a data set ({', '.join(registry())}) "
                          f"nor an existing path ({path} does not exist)")
    if not path.exists():
        raise RcakitError(f"parameter {param!r}: {path} is a dangling symbolic link")
    return path


def fetch_hint(name: str, param: str) -> str:
    """One line telling the user how to get data set ``name`` for parameter ``param``."""
    ds = get(name)
    return (f"{ds.title} ({ds.licence}) is not fetched, so this section is skipped. Run "
            f"'rcakit data fetch {name}' and rerun the chapter, or pass -p {param} PATH "
            f"(see 'rcakit data list').")


def size_text(ds: DataSet) -> str:
    """The data set's size: exact when the registry or the lock file knows it."""
    sizes = [f.size for f in ds.files]
    if not ds.pinned:
        try:
            lock = _read_lock(ds)
        except RcakitError:
            lock = None
        if lock and is_fetched(ds.name):
            sizes = [lock["files"][p]["size"] for p in _expected(ds, lock)]
    if sizes and all(s is not None for s in sizes):
        return f"{_mb(sum(sizes))}, {len(sizes)} files"
    return ds.size_hint or "unknown until fetched"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


# ---------------------------------------------------------------- fetching


class _HTTPStatus(Exception):
    """A 4xx answer: final, so pooch does not retry it (it retries only network errors)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status, self.reason = status, reason


def fetch(name: str, show_progress: bool = False) -> Path:
    """Download data set ``name`` into the data home (files already there are verified); its root.

    Pinned files are checked against the registry's sha256. For an unpinned
    data set, files the lock file knows are checked against it, and each new
    file's sha256 is recorded there. ``show_progress`` draws one tqdm bar
    (bytes) on stderr.
    """
    ds = get(name)
    writable_dir(data_home(), f"data home (${DATA_DIR_ENV})")
    lock = None if ds.pinned else _read_lock(ds)
    plan = _plan(ds, lock)
    _check_space(ds, plan)
    recorded = dict(lock["files"]) if lock else {}
    try:
        with _progress_bar(ds, plan, show_progress) as bar, _quiet_pooch():
            store, downloader = _pooch(ds, plan), _Downloader(bar)
            for entry in plan:
                _fetch_file(ds, store, downloader, entry, lock_path(ds) if entry.path in recorded else None)
                if not ds.pinned and entry.path not in recorded:
                    recorded[entry.path] = _digest(_folder(ds) / entry.path)
    except BaseException:
        if not ds.pinned:  # keep what was verified; a second failure must not hide the first
            with contextlib.suppress(OSError):
                _write_lock(ds, [e.path for e in plan], recorded)
        raise
    if not ds.pinned:
        _write_lock(ds, [e.path for e in plan], recorded)
    for parent in sorted({(_folder(ds) / e.path).parent for e in plan}):
        fsync_dir(parent)
    return _folder(ds) / ds.root


def _plan(ds: DataSet, lock: dict | None) -> list[FileEntry]:
    """The files to fetch, each with the hash it must match (``None``: record it)."""
    if ds.pinned:
        return list(ds.files)
    recorded = lock["files"] if lock else {}
    paths = _expected(ds, lock) or _hub_listing(ds)
    plan = [FileEntry(p, recorded.get(p, {}).get("sha256"), recorded.get(p, {}).get("size")) for p in paths]
    for entry in plan:  # a file with no recorded hash is fetched anew, never trusted as found
        if entry.sha256 is None:
            _remove(_folder(ds) / entry.path)
    return plan


def _base_url(ds: DataSet) -> str:
    base = os.environ.get(DATA_URL_ENV) or ds.base_url
    return base if base.endswith("/") else base + "/"


def _pooch(ds: DataSet, plan: list[FileEntry]) -> Any:
    import pooch

    base = _base_url(ds)
    store = pooch.create(path=_folder(ds), base_url=base, registry={e.path: e.sha256 for e in plan},
                         urls={e.path: base + urllib.parse.quote(e.path) for e in plan},
                         retry_if_failed=RETRIES)
    return store


def _fetch_file(ds: DataSet, store: Any, downloader: _Downloader, entry: FileEntry, lock: Path | None) -> None:
    """One ``store.fetch``, every failure turned into one line naming the file."""
    import requests

    where = f"{ds.name}: {entry.path}"
    url = store.get_url(entry.path)
    local = _folder(ds) / entry.path
    if local.is_file() and entry.sha256:
        if _digest(local)["sha256"] == entry.sha256:
            return
        _remove(local)  # a damaged local copy never stays: it is fetched anew or not at all
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
        raise RcakitError(f"{where}: the bytes from {url} do not match {against}; "
                          f"nothing was kept") from None
    except OSError as err:
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the file system is full" if full else (err.strerror or str(err))
        raise RcakitError(f"{where}: cannot write into {_folder(ds)}: {what}; nothing was kept") from None


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
    """A pooch downloader: streams ``url`` into pooch's temporary file, fsyncs it, moves one bar."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def __call__(self, url: str, output_file: str, pooch_store: Any = None, check_only: bool = False) -> None:
        import requests

        with requests.get(url, stream=True, timeout=TIMEOUT) as response:
            if 400 <= response.status_code < 500:
                raise _HTTPStatus(response.status_code, response.reason or "")
            response.raise_for_status()  # a 5xx: requests' HTTPError, which pooch retries
            written = 0
            try:
                with open(output_file, "wb") as fh:
                    for chunk in response.iter_content(CHUNK):
                        _write(fh, chunk)
                        written += len(chunk)
                        self.bar.update(len(chunk))
                    fh.flush()
                    os.fsync(fh.fileno())
            except BaseException:
                self.bar.update(-written)
                raise
            _check_length(response, written)


def _write(fh: Any, chunk: bytes) -> None:
    fh.write(chunk)


def _check_length(response: Any, written: int) -> None:
    """A body shorter than its Content-Length is a dropped connection (retried), never a file."""
    import requests

    declared = response.headers.get("Content-Length")
    if declared and not response.headers.get("Content-Encoding") and int(declared) != written:
        raise requests.exceptions.ConnectionError(f"got {written} of {declared} bytes")


def _hub_listing(ds: DataSet) -> list[str]:
    """The listing's file names at the pinned revision, from the Hub's revision API."""
    import requests

    listing = ds.listing
    url = f"{os.environ.get(HUB_ENV, HUB_URL).rstrip('/')}/api/datasets/{listing.repo}/revision/{ds.revision}"
    where = f"{ds.name}: file list"
    try:
        response = requests.get(url, timeout=TIMEOUT)
    except requests.exceptions.RequestException as err:
        raise RcakitError(f"{where}: cannot reach {urllib.parse.urlsplit(url).netloc}: {_reason(err)}") from None
    if response.status_code != 200:
        raise RcakitError(f"{where}: {url} answered HTTP {response.status_code} {response.reason}")
    try:
        names = [s["rfilename"] for s in response.json()["siblings"]]
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{where}: {url} did not return a Hub file list") from None
    chosen = sorted((n for n in names if n.startswith(listing.prefix) and n.endswith(listing.suffix)),
                    key=_natural_key)
    if len(chosen) != listing.count:
        raise RcakitError(f"{where}: the Hub lists {len(chosen)} '{listing.suffix}' files under "
                          f"{listing.prefix} at revision {ds.revision}; the registry expects {listing.count}")
    missing = [n for n in listing.extra if n not in names]
    if missing:
        raise RcakitError(f"{where}: {', '.join(missing)} not at revision {ds.revision}")
    return [*listing.extra, *chosen]


def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _check_space(ds: DataSet, plan: list[FileEntry]) -> None:
    """Refuse before downloading when the known sizes of the missing files do not fit."""
    folder = _folder(ds)
    need = sum(e.size or 0 for e in plan if not (folder / e.path).is_file())
    free = _free_bytes(data_home())
    if need and need + MIN_FREE_BYTES > free:
        raise RcakitError(f"{ds.name}: needs {_mb(need)} in {data_home()}, but its file system has "
                          f"{_mb(free)} free (set ${DATA_DIR_ENV} to another folder)")


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

    sizes = [e.size for e in plan if not (_folder(ds) / e.path).is_file()]  # what will be downloaded
    total = sum(sizes) if all(s is not None for s in sizes) else None
    with tqdm(total=total, desc=ds.name, unit="B", unit_scale=True, unit_divisor=1024,
              file=sys.stderr, disable=not show, leave=False) as bar:
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


# ---------------------------------------------------------------- the CLI group


def add_commands(sub: Any) -> None:
    """Add ``rcakit data list | fetch NAME | path NAME`` to the CLI's subparsers ``sub``."""
    group = sub.add_parser("data", help="named data sets: list, fetch, path")
    actions = group.add_subparsers(dest="data_command", metavar="{list,fetch,path}", required=True,
                                    parser_class=type(group))
    actions.add_parser("list", help="the data sets, their size, licence and whether fetched").set_defaults(
        func=_cli_list)
    for name, func, text in (("fetch", _cli_fetch, "download a data set (hashes checked)"),
                             ("path", _cli_path, "print a fetched data set's local path")):
        action = actions.add_parser(name, help=text)
        action.add_argument("name")
        action.set_defaults(func=func)


def _cli_list(args: Any) -> None:
    print(f"data home: {data_home()}")
    for ds in registry().values():
        try:
            state = f"fetched: {local_path(ds.name)}" if is_fetched(ds.name) else "not fetched"
        except RcakitError as err:
            state = f"unusable: {err}"
        print(f"{ds.name}: {ds.title}")
        print(f"    size {size_text(ds)}; licence {ds.licence}; {state}")
        print(f"    {ds.source} at revision {ds.revision}")
        if not ds.pinned:
            print(f"    no sha256 pinned here: the first fetch records one in {lock_path(ds)}, "
                  "later fetches verify against it")
        if ds.licence_note != ds.licence:
            print(f"    {ds.licence_note}")


def _cli_fetch(args: Any) -> None:
    ds = get(args.name)
    print(f"{ds.name}: {ds.licence_note}; cite: {ds.citation}", file=sys.stderr)
    if not ds.pinned:
        action = "verified against" if lock_path(ds).exists() else "recorded in"
        print(f"{ds.name}: no sha256 is pinned in the registry; each file's is {action} {lock_path(ds)}",
              file=sys.stderr)
    print(fetch(ds.name, show_progress=sys.stderr.isatty()))


def _cli_path(args: Any) -> None:
    print(local_path(args.name))
