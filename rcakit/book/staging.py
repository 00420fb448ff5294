"""A run's temporary files: the notebook papermill writes and the results staged beside it.

``rcakit.book.runner`` executes a chapter into ``.<stem>.<pid>.running.ipynb`` and
points ``rcakit.results.record`` at ``.<chapter>.<pid>.staged/``; only a run
in which every cell succeeded publishes both. :class:`cleanup` removes them
however the run ends: normally, on an exception, at interpreter exit, or on
SIGTERM or SIGHUP (turned into :class:`Terminated` by :func:`catch_termination`,
which the CLI installs for every command, so every ``finally`` runs).
:func:`remove_stale` removes what a killed process left, recognising it by the
pid in its name and that process's start time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.io import held_by_live_process, real_folder, remove_entry
from rcakit.results import STAGE_ENV

RUNNING_SUFFIX = ".running.ipynb"
STAGE_SUFFIX = ".staged"
_TEMPORARY: set[Path] = set()  # this process's running notebooks and staging folders, for SIGTERM and exit


class cleanup:
    """Remove a run's temporary notebook and staging folder however the run ends (atexit and SIGTERM too)."""

    def __init__(self, *paths: Path) -> None:
        self.paths = paths

    def __enter__(self) -> None:
        _TEMPORARY.update(self.paths)
        catch_termination()

    def __exit__(self, *exc: object) -> None:
        for path in self.paths:
            _discard(path)
            _TEMPORARY.discard(path)


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        remove_entry(path)  # the entry itself: a link planted at its name is unlinked, its target untouched


def _discard_all() -> None:
    for path in list(_TEMPORARY):
        _discard(path)
    _TEMPORARY.clear()


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached rcakit: unwind (removing temporary files), then exit with 128 + the signal."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


TERMINATING = (signal.SIGTERM, signal.SIGHUP)  # a kill, a closed terminal: both unwind as Terminated


_DEFERRING: list[Callable[[], bool]] = []  # while a kernel may run: how to stop it (True: one was stopped)
_PENDING: list[int] = []  # a SIGTERM or SIGHUP that came while a kernel ran


def _on_terminate(signum: int, frame: Any) -> None:
    """Raise :class:`Terminated`, or, while a kernel runs, stop the kernel and let :class:`deferred_termination`
    raise it: an exception raised inside papermill's event loop may land in one of its background tasks,
    where asyncio keeps it and nobody reads it (a precaution; the one hang seen in CI came from a run under
    ``nohup``, which ignores SIGHUP, not from this)."""
    if not _DEFERRING or not _DEFERRING[-1]():  # no kernel to stop yet: unwind from here
        raise Terminated(signum)
    _PENDING.append(signum)


class deferred_termination:
    """While a kernel runs: a SIGTERM or SIGHUP calls ``stop`` (which ends the kernel, so papermill returns)
    and is raised as :class:`Terminated` when the block ends, in place of whatever the block raised. When
    ``stop`` finds no kernel to end, the signal is raised at once, as outside the block."""

    def __init__(self, stop: Callable[[], bool]) -> None:
        self.stop = stop

    def __enter__(self) -> None:
        _DEFERRING.append(self.stop)

    def __exit__(self, *exc: object) -> None:
        _DEFERRING.pop()
        if _PENDING:
            signum = _PENDING[0]
            _PENDING.clear()
            raise Terminated(signum)


_HANDLER_INSTALLED = False


def catch_termination() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (where they still have their default action) and
    remove this process's temporary files at exit; once per process, from the main thread."""
    global _HANDLER_INSTALLED
    if _HANDLER_INSTALLED:
        return
    atexit.register(_discard_all)
    if threading.current_thread() is threading.main_thread():
        for signum in TERMINATING:
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_terminate)
    _HANDLER_INSTALLED = True


class staged_results:
    """Point ``rcakit.results.record`` at the staging folder for the length of the run."""

    def __init__(self, stage: Path) -> None:
        self.stage = stage

    def __enter__(self) -> None:
        self.before = os.environ.get(STAGE_ENV)
        os.environ[STAGE_ENV] = str(self.stage)

    def __exit__(self, *exc: object) -> None:
        if self.before is None:
            os.environ.pop(STAGE_ENV, None)
        else:
            os.environ[STAGE_ENV] = self.before


def _owner(path: Path) -> int | None:
    """The pid recorded in a temporary file's name (``.<stem>.<pid>.running.ipynb``), if any."""
    parts = path.name.split(".")
    digits = [p for p in parts if p.isdigit()]
    return int(digits[-1]) if digits else None


def _planted(path: Path) -> bool:
    """Whether ``path`` is something no run of rcakit makes: a link, a FIFO or a device at a temporary name."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def remove_stale(folders: Iterable[Path]) -> list[Path]:
    """Remove running notebooks and staging folders that dead runs left in ``folders``; return them.

    A file whose recorded pid is a live process that started before the file
    was last written belongs to a run in progress and is left alone; a later
    process with the same pid has only reused it. One that cannot be removed is a one-line ``RcakitError``
    naming it (it would break the book build).
    """
    removed = []
    for where in folders:
        if not where.is_dir():
            continue
        for path in sorted([*where.glob(f".*{RUNNING_SUFFIX}"), *where.glob(f".*{STAGE_SUFFIX}")]):
            if held_by_live_process(path, _owner(path)) and not _planted(path):
                continue
            try:
                remove_entry(path)
            except FileNotFoundError:
                continue
            except OSError as err:
                raise RcakitError(
                    f"{path}: a dead run's temporary file cannot be removed ({err.strerror or err}); remove it by hand"
                ) from None
            removed.append(path)
    return removed


LOCK_SUFFIX = ".lock"


@contextlib.contextmanager
def chapter_lock(folder: Path, chapter_id: str) -> Iterator[Path]:
    """Hold ``<folder>/.<chapter_id>.lock`` for the length of a run: a second run of the chapter while one
    runs is one ``RcakitError`` line (nothing of the first is touched). ``fcntl.flock`` is released by the
    kernel when the holder dies, however it dies; the file is removed when the run ends, and a holder checks
    that the lock it took is still the file's (another run may have removed it in between)."""
    import fcntl

    path = real_folder(folder, "the results folder") / f".{chapter_id}{LOCK_SUFFIX}"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as err:
            raise RcakitError(f"{chapter_id}: cannot take the run lock {path}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RcakitError(
                f"{chapter_id}: another rcakit run of this chapter is running (it holds {path}); "
                "wait for it to finish, then run again"
            ) from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the file was removed by the run that held it: take the new one
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
