"""The data registry (``data/registry.yaml``) and where each data set lives in the data home.

Every path that names a file of a data set, whether it comes from the
registry, from a lock file or from a remote listing, is a relative POSIX path
that must stay inside the data set's folder: :func:`path_problem` says why a
name is not one (it also refuses control, bidi and other invisible characters,
a component over :data:`MAX_PART_BYTES` and a name over :data:`MAX_PATH_BYTES`),
:func:`names_problem` why a list of names cannot be one data set's files (a
name listed twice, or both as a file and as a folder), and :func:`inside`
refuses a symbolic link that leads out.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.data import formats
from rcakit.data.formats import Expectation
from rcakit.io import read_regular, read_yaml
from rcakit.paths import project_root, resolve

DATA_DIR_ENV = "RCAKIT_DATA_DIR"
MAX_PART_BYTES = 255  # a path component: the most common file systems allow
MAX_PATH_BYTES = 1024  # a whole name below the data set's folder, UTF-8
_INVISIBLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, format (bidi) characters, surrogates, separators
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
_FIELDS = (
    "title",
    "description",
    "source",
    "revision",
    "base_url",
    "root",
    "reader",
    "licence",
    "licence_note",
    "bibkey",
    "citation",
)


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
    """A registry entry (see the header of ``data/registry.yaml``).

    ``expect`` maps a file-name pattern (``fnmatch``) to the size range and
    format a file fetched on first use must have; every data set whose hashes
    are recorded at first fetch has one for each of its files.
    """

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
    expect: tuple[tuple[str, Expectation], ...] = ()

    @property
    def pinned(self) -> bool:
        """Every file and its sha256 are in the registry (no lock file needed)."""
        return bool(self.files) and all(f.sha256 for f in self.files)

    def expectation(self, path: str) -> Expectation | None:
        """The size range and format the file ``path`` must have at first fetch (the first pattern that fits)."""
        return next((e for pattern, e in self.expect if fnmatch.fnmatchcase(path, pattern)), None)


# ---------------------------------------------------------------- file names


def path_problem(path: object) -> str | None:
    """Why ``path`` cannot name a file inside a data set's folder, or ``None`` when it can."""
    if not isinstance(path, str) or not path:
        return "not a file name"
    if path.startswith("/"):
        return "an absolute path"
    if "\\" in path:
        return "it holds a backslash"
    odd = next((c for c in path if unicodedata.category(c) in _INVISIBLE), None)
    if odd is not None:
        return f"it holds U+{ord(odd):04X}, a control or invisible formatting character"
    parts = path.split("/")
    if ".." in parts:
        return "'..' leads out of the folder"
    if any(part in ("", ".") for part in parts):
        return "an empty or '.' path component"
    return _length_problem(path, parts)


def _length_problem(path: str, parts: list[str]) -> str | None:
    size = len(path.encode("utf-8"))
    if size > MAX_PATH_BYTES:
        return f"{size} bytes long, more than the {MAX_PATH_BYTES} allowed"
    longest = max(len(part.encode("utf-8")) for part in parts)
    if longest > MAX_PART_BYTES:
        return f"a path component of {longest} bytes, more than the {MAX_PART_BYTES} a file system allows"
    return None


def names_problem(names: Iterable[object]) -> str | None:
    """Why ``names`` cannot be the files of one data set, worded to follow "lists": the first name that
    :func:`path_problem` refuses, one listed twice, or one that is also another's folder; ``None`` if none.
    Names equal once case and Unicode normalisation are ignored count as one (one file on macOS, Windows)."""
    seen: dict[str, str] = {}
    for name in names:
        why = path_problem(name)
        if why:
            return f"{shown(name)}, which is not a path inside the data set's folder ({why})"
        assert isinstance(name, str)  # path_problem refused any other
        key = unicodedata.normalize("NFC", name).casefold()
        if key in seen and seen[key] == name:
            return f"{shown(name)} twice (a data set names each file once)"
        if key in seen:
            return f"{shown(seen[key])} and {shown(name)}, one file where case or Unicode normalisation is ignored"
        seen[key] = name
    for key, name in seen.items():
        parts = key.split("/")
        folder_of = next((seen[p] for p in ("/".join(parts[:i]) for i in range(1, len(parts))) if p in seen), None)
        if folder_of is not None:
            return f"{shown(folder_of)} both as a file and as the folder of {shown(name)}"
    return None


def shown(name: object, limit: int = 80) -> str:
    """``repr(name)`` (control and bidi characters escaped), cut to about ``limit`` characters for one line."""
    text = repr(name)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(name) if isinstance(name, str) else len(text)} characters)"


def inside(ds: DataSet, path: str, where: str) -> Path:
    """``<data set folder>/<path>``, refused with one line (naming ``where``) unless it stays inside."""
    why = path_problem(path)
    base = folder(ds)
    if why:
        raise RcakitError(f"{where}: {shown(path)} is not a path inside {base} ({why}); nothing was written")
    if base.is_symlink():  # its files would be checked, replaced and removed in the link's target
        raise RcakitError(f"{where}: {base} is a symbolic link; rcakit keeps a data set in a real folder of its own")
    local = base / path
    if not local.resolve().is_relative_to(base.resolve()):
        raise RcakitError(f"{where}: {local} leads out of {base} through a symbolic link; nothing was written")
    return local


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
    raw = read_yaml(path, "data registry")
    if not isinstance(raw, dict):
        raise RcakitError(f"{path}: the data registry must map names to entries")
    return {name: _entry(path, name, spec) for name, spec in raw.items()}


def _entry(path: str, name: Any, spec: Any) -> DataSet:
    where = f"{path}: {name}"
    try:
        files = tuple(FileEntry(p, f.get("sha256"), f.get("size")) for p, f in (spec.get("files") or {}).items())
        listing = spec.get("listing")
        listing = Listing(**{**listing, "extra": tuple(listing.get("extra", ()))}) if listing else None
        fields = {k: str(spec[k]) for k in _FIELDS}
        expect = tuple(
            (str(p), formats.parse(f"{where}: expect: {p}", e)) for p, e in (spec.get("expect") or {}).items()
        )
    except KeyError as err:
        raise RcakitError(f"{where}: missing field {err.args[0]!r}") from None
    except ValueError as err:
        raise RcakitError(str(err)) from None
    except (AttributeError, TypeError) as err:
        raise RcakitError(f"{where}: malformed entry ({err})") from None
    ds = DataSet(name=name, files=files, listing=listing, size_hint=spec.get("size_hint"), expect=expect, **fields)
    _check_entry(where, ds)
    return ds


def _check_entry(where: str, ds: DataSet) -> None:
    """The entry's own shape: names that stay inside its folder, and an expectation for every unpinned file."""
    if not isinstance(ds.name, str) or not _NAME.match(ds.name):
        raise RcakitError(f"{where}: a data set's name is lower-case letters, digits, '.', '_' and '-'")
    if bool(ds.files) == bool(ds.listing):
        raise RcakitError(f"{where}: needs exactly one of 'files' and 'listing'")
    if not ds.base_url.endswith("/"):
        raise RcakitError(f"{where}: base_url must end with '/'")
    named = [("root", ds.root), *(("file", f.path) for f in ds.files)]
    if ds.listing:
        named += [("listing extra", p) for p in ds.listing.extra]
        named += [("listing prefix", ds.listing.prefix.rstrip("/"))]
    for what, value in named:
        why = path_problem(value)
        if why:
            raise RcakitError(f"{where}: {what} {value!r} is not a path inside the data set's folder ({why})")
    unpinned = [f.path for f in ds.files if not f.sha256]
    if ds.listing:  # the listing's extra files and a file like those it selects
        unpinned += [*ds.listing.extra, f"{ds.listing.prefix}0{ds.listing.suffix}"]
    missing = [p for p in unpinned if ds.expectation(p) is None]
    if missing:
        raise RcakitError(
            f"{where}: {missing[0]!r} is recorded at first fetch and needs an 'expect' entry "
            "(its size range and format)"
        )


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


def folder(ds: DataSet) -> Path:
    """The data set's folder in the data home, ``<data home>/<name>``."""
    return data_home() / ds.name


def lock_path(ds: DataSet) -> Path:
    """The lock file recording the hashes of a data set that the registry does not pin."""
    return data_home() / f"{ds.name}.lock.json"


def read_lock(ds: DataSet) -> dict[str, Any] | None:
    """The data set's lock file, checked (``None`` if there is none); one line naming it when unusable."""
    path = lock_path(ds)
    anew = f"remove it and {folder(ds)} to fetch {ds.name} anew"
    try:
        lock = json.loads(read_regular(path, "lock file").decode("utf-8"))
        if not (
            isinstance(lock["files"], dict)
            and isinstance(lock["listing"], list)
            and all(
                isinstance(f, dict) and isinstance(f["sha256"], str) and type(f["size"]) is int
                for f in lock["files"].values()
            )
        ):
            raise TypeError
        revision = lock["revision"]
    except FileNotFoundError:
        return None
    except OSError as err:
        raise RcakitError(f"{path}: cannot read the lock file: {err.strerror or err}") from None
    except RcakitError as err:  # not a regular file: say what it is
        raise RcakitError(f"{err}; {anew}") from None
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{path}: not an rcakit lock file; {anew}") from None
    if revision != ds.revision:
        raise RcakitError(f"{path}: records revision {revision} but the registry pins {ds.revision}; {anew}")
    why = names_problem(lock["listing"]) or names_problem(lock["files"])
    if why:
        raise RcakitError(f"{path}: names {why}; {anew}")
    for name, entry in lock["files"].items():
        expected = ds.expectation(name)
        why = (
            f"{formats.size_words(entry['size'])}, but the registry gives no size range for it"
            if expected is None
            else expected.size_problem(entry["size"])
        )
        if why:
            raise RcakitError(f"{path}: records {name} as {why}; {anew}")
    return lock


def expected_paths(ds: DataSet, lock: dict[str, Any] | None) -> list[str] | None:
    """The paths of a data set's files, or ``None`` while a Hub listing is still unread."""
    if ds.files:
        return [f.path for f in ds.files]
    return list(lock["listing"]) if lock else None


def is_fetched(name: str) -> bool:
    """Every file of the data set is in the data home (and, if unpinned, in its lock file).

    Only presence is checked here; :func:`rcakit.data.verify` re-hashes the files.
    """
    ds = get(name)
    lock = None if ds.pinned else read_lock(ds)
    paths = expected_paths(ds, lock)
    if paths is None or (not ds.pinned and lock is None):
        return False
    recorded = lock["files"] if lock else {}
    base = folder(ds)
    try:
        return all((base / p).is_file() and (ds.pinned or p in recorded) for p in paths)
    except OSError as err:
        raise RcakitError(f"{base}: cannot inspect the data set's files: {err.strerror or err}") from None


def local_path(name: str) -> Path:
    """The fetched data set's ``root`` (what its reader takes); ``RcakitError`` if not fetched."""
    ds = get(name)
    if not is_fetched(name):
        raise RcakitError(f"data set {name!r} is not fetched (run 'rcakit data fetch {name}')")
    return folder(ds) / ds.root


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
        raise RcakitError(
            f"parameter {param!r}: {value!r} is neither a data set ({', '.join(registry())}) "
            f"nor an existing path ({path} does not exist)"
        )
    if not path.exists():
        raise RcakitError(f"parameter {param!r}: {path} is a dangling symbolic link")
    return path


def fetch_hint(name: str, param: str) -> str:
    """One line telling the user how to get data set ``name`` for parameter ``param``."""
    ds = get(name)
    return (
        f"{ds.title} ({ds.licence}) is not fetched, so this section is skipped. Run "
        f"'rcakit data fetch {name}' and rerun the chapter, or pass -p {param} PATH "
        f"(see 'rcakit data list')."
    )


def size_text(ds: DataSet) -> str:
    """The data set's size: exact when the registry or the lock file knows it."""
    sizes = [f.size for f in ds.files]
    if not ds.pinned:
        try:
            lock = read_lock(ds)
            fetched = bool(lock) and is_fetched(ds.name)
        except RcakitError:  # the listing says why on its state line
            lock, fetched = None, False
        if lock and fetched:
            paths = expected_paths(ds, lock)
            assert paths is not None  # a lock file lists the paths
            sizes = [lock["files"][p]["size"] for p in paths]
    known = [s for s in sizes if s is not None]
    if sizes and len(known) == len(sizes):
        return f"{mb(sum(known))}, {len(sizes)} files"
    return ds.size_hint or "unknown until fetched"


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
