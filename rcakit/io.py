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

Every file rcakit reads goes through one reader: :func:`read_text` (a regular
file, at most a size cap, UTF-8) and :func:`read_yaml` (that, then YAML with
``safe_load`` after a pass over its events that refuses a file expanding,
aliases and all, to more than :data:`YAML_MAX_NODES` values (a billion
laughs) or nesting deeper than :data:`MAX_DEPTH`), each fault one line naming
the file; a caller checks the value against its file's schema.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from rcakit import RcakitError

_NEW_FILE_MODE = 0o644
MAX_READ_BYTES = 16 * 2**20  # a data or claims registry, a results file: more is not a file rcakit wrote
YAML_MAX_NODES = 10**6  # values in a YAML file, each alias counted as what it repeats (rcakit's have thousands)
MAX_DEPTH = 64  # nesting of a YAML or JSON file rcakit reads (its own files nest under 10)
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
        return _NEW_FILE_MODE & ~current_umask()


def current_umask() -> int:
    """The process's umask (a new file's mode is 0644 less it, as ``open`` would make it): read from
    ``/proc/self/status`` where Linux has it, else set and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def read_text(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_READ_BYTES) -> str:
    """The text of the regular file ``path``: at most ``max_bytes`` bytes of UTF-8, else one ``RcakitError``
    line naming the file (a missing file is one too)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise RcakitError(f"{path}: cannot read this {what}: {err.strerror or err}") from None
    if size > max_bytes:
        raise RcakitError(f"{path}: this {what} is {size:,} bytes, more than the {max_bytes:,} rcakit reads")
    try:
        data = read_regular(path, what)
    except FileNotFoundError:
        raise RcakitError(f"{path}: cannot read this {what}: it does not exist") from None
    if len(data) > max_bytes:  # it grew since the stat
        raise RcakitError(f"{path}: this {what} is more than the {max_bytes:,} bytes rcakit reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RcakitError(f"{path}: this {what} is not UTF-8 text (byte {err.start})") from None


def read_yaml(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_READ_BYTES) -> Any:
    """The YAML file ``path`` as plain values (``safe_load``: no tag makes an object), read with
    :func:`read_text`; more than :data:`YAML_MAX_NODES` values (aliases expanded), nesting deeper than
    :data:`MAX_DEPTH` or a syntax error is one ``RcakitError`` line naming the file."""
    import yaml

    text = read_text(path, what, max_bytes)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML has it: ten times faster
    try:
        _check_yaml_events(yaml.parse(text, Loader=loader), path, what)
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise RcakitError(
            f"{path}: this {what} is not valid YAML: {' '.join(str(problem).split())[:160]}{where}"
        ) from None
    except RecursionError:
        raise RcakitError(f"{path}: this {what} is nested more than {MAX_DEPTH} levels deep") from None


def _check_yaml_events(events: Any, path: str | os.PathLike[str], what: str) -> None:
    """Refuse a YAML stream whose nodes, each alias counted as the node it repeats, exceed
    :data:`YAML_MAX_NODES` (a billion laughs: a few lines that expand a billionfold), or that nests
    deeper than :data:`MAX_DEPTH`."""
    import yaml

    sizes: dict[str, int] = {}  # an anchor -> the nodes under it, aliases expanded
    open_: list[list[Any]] = [[None, 0]]  # [anchor, nodes so far] of each collection being read
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append([event.anchor, 1])
            if len(open_) - 1 > MAX_DEPTH:
                raise RcakitError(f"{path}: this {what} is nested more than {MAX_DEPTH} levels deep")
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = open_.pop()
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        else:
            continue
        if anchor is not None:
            sizes[anchor] = nodes
        open_[-1][1] += nodes
        if open_[-1][1] > YAML_MAX_NODES:
            raise RcakitError(f"{path}: this {what} expands to more than {YAML_MAX_NODES:,} YAML nodes (aliases?)")
