"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Every file rcakit writes goes through :func:`atomic_write` (or, for a file
another library wrote to a temporary path, :func:`publish`): the bytes go to a
temporary file in the destination's folder, are fsynced, replace the old file
with ``os.replace`` (atomic on POSIX within one file system), and the folder
is fsynced so the rename itself survives a power cut. On any failure (a full
disk, a kill signal turned into an exception) the temporary file is removed
and the previous file is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rcakit import RcakitError

_NEW_FILE_MODE = 0o644
MIN_FREE_BYTES = 2**20  # below this a folder counts as full: a chapter's results need more


def atomic_write(path: str | os.PathLike, data: bytes | str) -> Path:
    """Replace ``path`` by ``data`` (str is written as UTF-8) atomically; return the path."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _write_all(fd, payload)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        _remove(tmp)
        raise
    fsync_dir(path.parent)
    return path


def publish(tmp: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Move a finished temporary file ``tmp`` (same folder) over ``path`` atomically."""
    tmp, path = Path(tmp), Path(path)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, _mode_for(path))
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return path


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename or a new file) to disk."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def writable_dir(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a folder rcakit can write in, or a one-line ``RcakitError`` naming ``what``.

    The folder need not exist yet: then its nearest existing parent must be a
    writable folder. Nothing is created or left behind by the check: an
    existing folder gets a probe file that is written, fsynced and removed, so
    a read-only or full file system (under ``MIN_FREE_BYTES`` free) is found
    here rather than in the last cell of a chapter.
    """
    path = Path(path)
    existing = _nearest_existing(path, what)
    if not existing.is_dir():
        if existing == path:
            raise RcakitError(f"{what}: {path} is a file, not a folder")
        raise RcakitError(f"{what}: {path} cannot be created: {existing} is a file")
    try:
        atomic_write(existing / f".rcakit-write-probe-{os.getpid()}", b"probe\n").unlink()
        free = os.statvfs(existing)
    except OSError as err:
        raise RcakitError(f"{what}: {existing} is not writable: {err.strerror or err}") from None
    if free.f_bavail * free.f_frsize < MIN_FREE_BYTES:
        raise RcakitError(f"{what}: the file system of {existing} is full (under {MIN_FREE_BYTES // 2**20} MiB free)")
    return path


def _nearest_existing(path: Path, what: str) -> Path:
    try:
        while not path.exists():
            if path.is_symlink():
                raise RcakitError(f"{what}: {path} is a dangling symbolic link")
            path = path.parent
    except OSError as err:
        raise RcakitError(f"{what}: {path} cannot be inspected: {err.strerror or err}") from None
    return path


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return _NEW_FILE_MODE


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
