"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Every file rcakit writes goes through :func:`atomic_write` (or, for a file
another library wrote to a temporary path, :func:`publish`): the bytes go to a
temporary file in the destination's folder, are fsynced, replace the old file
with ``os.replace`` (atomic on POSIX within one file system), and the folder
is fsynced so the rename itself survives a power cut. On any failure (a full
disk, a kill signal turned into an exception) the temporary file is removed
and the previous file is left as it was.

Every other kind of write is guarded here too. rcakit never writes, appends
or removes through a symbolic link, nor into a FIFO or a device, at a path
it makes (:func:`check_entry`, :func:`open_append`, :func:`real_folder`);
temporary files and folders are created exclusively (:func:`create_exclusive`,
:func:`fresh_folder`); and a file rcakit reads back is opened without
blocking and checked to be a regular file first (:func:`read_regular`), so a
FIFO planted at its name is one line, not a hang. Cleanup removes only what
it can prove a dead process left: :func:`held_by_live_process` goes by the pid
in a temporary name and that process's start time.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from rcakit import RcakitError

_NEW_FILE_MODE = 0o644
MIN_FREE_BYTES = 2**20  # below this a folder counts as full: a chapter's results need more


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> Path:
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


def check_entry(path: str | os.PathLike[str], what: str = "file") -> Path:
    """``path`` if nothing is there or a regular file is, else a one-line ``RcakitError``: rcakit never writes
    through a symbolic link, nor into a FIFO, a device or a folder where it expects a ``what``."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as err:
        raise RcakitError(f"{path}: cannot inspect this {what}: {err.strerror or err}") from None
    if stat.S_ISLNK(mode):
        raise RcakitError(f"{path}: is a symbolic link; rcakit never writes through one (remove the link)")
    if not stat.S_ISREG(mode):
        raise RcakitError(f"{path}: is not a regular file (a folder, FIFO or device?); rcakit expects a {what} there")
    return path


def real_folder(path: str | os.PathLike[str], what: str = "folder", *, create: bool = True) -> Path:
    """``path`` as a real folder (created if absent and ``create``), else a one-line ``RcakitError``: a symbolic
    link or another kind of file where rcakit keeps its own files is refused, so nothing is written, moved or
    removed through it."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return path
    if stat.S_ISLNK(mode):
        raise RcakitError(f"{what}: {path} is a symbolic link; rcakit never writes through one (remove the link)")
    if not stat.S_ISDIR(mode):
        raise RcakitError(f"{what}: {path} is not a folder")
    return path


def open_append(path: str | os.PathLike[str], *, truncate_to: int | None = None) -> int:
    """A descriptor appending to the regular file ``path`` (created if absent), never through a link or into a
    FIFO; ``truncate_to`` first cuts the file to that many bytes. The caller closes it."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, _NEW_FILE_MODE)
    except OSError as err:
        check_entry(path)  # a link or a FIFO: say so in one line
        raise RcakitError(f"{path}: cannot append: {err.strerror or err}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        check_entry(path)
    if truncate_to is not None:
        os.ftruncate(fd, truncate_to)
    return fd


def create_exclusive(path: str | os.PathLike[str]) -> Path:
    """Create the empty regular file ``path`` exclusively (``O_EXCL``, no link followed). Whatever already sits
    at that name is removed first (itself, never a link's target): callers name their temporary files by their
    own pid, so nothing there can be another live run's."""
    path = Path(path)
    for attempt in (1, 2):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _NEW_FILE_MODE))
            return path
        except FileExistsError:
            if attempt == 2:
                raise
            remove_entry(path)
    return path


def fresh_folder(path: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` exclusively, removing whatever sat at that name first (see
    :func:`create_exclusive`)."""
    path = Path(path)
    remove_entry(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir(mode=0o755)
    return path


def remove_entry(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` itself: a link or a FIFO is unlinked (its target untouched), a real folder removed with
    its contents (``shutil.rmtree`` never follows links), a missing one ignored."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def held_by_live_process(path: str | os.PathLike[str], pid: int | None) -> bool:
    """Whether the temporary file or folder ``path``, named for process ``pid``, still belongs to it: the
    process runs and started before ``path`` was last written. A later process with the same pid has only
    reused it; ``None`` (no pid in the name) is no owner. Where the start time is unknown (no ``/proc``),
    a running pid is taken to hold it."""
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or a pid no process can have: not provably gone
        return True
    started = _started_at(pid)
    if started is None:
        return True
    try:
        return started <= Path(path).lstat().st_mtime + 1.0  # start times are in clock ticks; a second of slack
    except FileNotFoundError:
        return False


def _started_at(pid: int) -> float | None:
    """When process ``pid`` started, in seconds since the epoch (Linux's ``/proc``), or ``None`` where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
        return int(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def read_regular(path: str | os.PathLike[str], what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, opened without blocking and checked after opening, so a FIFO or
    a device at that name is a one-line ``RcakitError`` instead of a hang."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise RcakitError(f"{path}: cannot read this {what}: {err.strerror or err}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise RcakitError(f"{path}: is not a regular file (a FIFO or device?); rcakit expects a {what} there")
        return handle.read()


def publish(tmp: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
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


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename or a new file) to disk."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def writable_dir(path: str | os.PathLike[str], what: str) -> Path:
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
