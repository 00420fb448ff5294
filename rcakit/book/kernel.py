"""The kernel a chapter runs in: private sockets, Ctrl-C, and warnings kept for the terminal.

``rcakit.book.runner`` hands papermill :func:`ipc_kernel_manager` so the kernel
talks over Unix sockets in a private folder (no localhost TCP, no
unencrypted-TCP warning, no socket shared by two runs), routes Ctrl-C to the
running cell (:class:`interrupts_reach_the_kernel`) and prints the kernel's
``rcakit.progress.warn`` lines on the terminal afterwards
(:class:`kernel_warnings`), never in the notebook.

Both temporary things carry the pid of the run that made them
(``rcakit-kernel-<pid>-*``, ``rcakit-warnings-<pid>-*.log`` in the temporary
folder); a run that was killed cannot remove its own, so every run first
removes those of runs that are gone (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from rcakit.progress import WARNINGS_ENV

RUNNING_KERNELS: list[int] = []  # pids of the kernels this process started, for Ctrl-C
_TEMPORARY = re.compile(r"rcakit-(kernel|warnings)-(\d{1,10})-[A-Za-z0-9_]+(\.log)?")  # what a run makes here


def remove_stale_temporaries(folder: str | None = None) -> list[str]:
    """Remove the kernel socket folders and warning logs of runs that are gone from ``folder`` (the
    temporary folder); the names removed.

    Only what rcakit makes is touched: a name of its pattern, owned by this user, a real folder or file
    (never a link), whose run's pid is not alive (``rcakit.io.held_by_live_process``).
    """
    from rcakit.io import held_by_live_process

    folder = folder or tempfile.gettempdir()
    removed = []
    with os.scandir(folder) as entries:
        for entry in entries:
            match = _TEMPORARY.fullmatch(entry.name)
            if match is None or entry.is_symlink():
                continue
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != os.getuid() or held_by_live_process(entry.path, int(match[2])):
                continue
            if match[1] == "kernel" and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif match[1] == "warnings" and entry.is_file(follow_symlinks=False):
                Path(entry.path).unlink(missing_ok=True)
            else:
                continue
            removed.append(entry.name)
    return removed


def _signal_kernels(signum: int) -> bool:
    """Send ``signum`` to the kernels this process started; whether one was still running."""
    reached = False
    for pid in RUNNING_KERNELS:
        try:
            os.kill(pid, signum)
            reached = True
        except ProcessLookupError:
            pass
    return reached


def stop_kernels() -> bool:
    """End the kernels this process started (SIGKILL): a SIGTERM or SIGHUP ends the run, and papermill
    returns once its kernel is gone (``rcakit.book.staging.deferred_termination``). Whether one was running."""
    return _signal_kernels(signal.SIGKILL)


class interrupts_reach_the_kernel:
    """Ctrl-C interrupts the running cell, so the run stops where a cell would.

    The kernel runs in its own session (jupyter_client), so the terminal's
    SIGINT reaches only this process; raising ``KeyboardInterrupt`` in the
    middle of papermill's event loop would leave tasks that print tracebacks
    at exit. The first Ctrl-C is passed on to the kernel instead: the cell
    raises ``KeyboardInterrupt``, papermill reports it, and the runner turns
    it back into ``KeyboardInterrupt`` with every file consistent. A second
    Ctrl-C, or one before the kernel runs, interrupts at once.
    """

    def __enter__(self) -> interrupts_reach_the_kernel:
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        self.hits = 0
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.hits += 1
        if self.hits > 1 or not RUNNING_KERNELS:
            raise KeyboardInterrupt
        _signal_kernels(signal.SIGINT)

    def __exit__(self, *exc: object) -> None:
        RUNNING_KERNELS.clear()
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def ipc_kernel_manager(log: IO[bytes]) -> type:
    """A kernel manager that talks to the kernel over Unix sockets, not localhost TCP.

    Other local users cannot connect to the kernel, and the kernel has no
    reason to print its unencrypted-TCP warning. The kernel's own stderr (its
    log, not the cells' output, which goes into the notebook) goes to ``log``,
    so a user's terminal gets rcakit's one line, not a kernel traceback.

    Each kernel's sockets live in a private temporary folder: jupyter_client's
    default (``kernel-ipc-N`` in the current folder) makes two runs started
    from one folder share sockets, and the second fails with "Invalid Signature".
    """
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner
    from traitlets import CaselessStrEnum

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self._sockets = tempfile.mkdtemp(prefix=f"rcakit-kernel-{os.getpid()}-")
            self.ip = os.path.join(self._sockets, "kernel")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:
                shutil.rmtree(self._sockets, ignore_errors=True)

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            kw["stderr"] = log
            await super()._async_launch_kernel(kernel_cmd, **kw)
            process = self.provisioner.process if isinstance(self.provisioner, LocalProvisioner) else None
            assert process is not None  # jupyter_client's local provisioner (the only one used) has launched it
            RUNNING_KERNELS.append(process.pid)

    return IPCKernelManager


class kernel_warnings:
    """Collect the kernel's ``rcakit.progress.warn`` lines and print them on our stderr."""

    def __enter__(self) -> kernel_warnings:
        remove_stale_temporaries()  # what killed runs left
        fd, self.path = tempfile.mkstemp(prefix=f"rcakit-warnings-{os.getpid()}-", suffix=".log")
        os.close(fd)
        self.before = os.environ.get(WARNINGS_ENV)
        os.environ[WARNINGS_ENV] = self.path
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        if self.before is None:
            os.environ.pop(WARNINGS_ENV, None)
        else:
            os.environ[WARNINGS_ENV] = self.before
        path = Path(self.path)
        try:
            sys.stderr.write(path.read_text(encoding="utf-8", errors="replace"))
        finally:
            path.unlink(missing_ok=True)


class quiet_loggers:
    """Silence library loggers (nbclient's "Kernel died ...") for the length of a run."""

    def __init__(self, *names: str) -> None:
        self.loggers = [logging.getLogger(name) for name in names]

    def __enter__(self) -> None:
        self.levels = [logger.level for logger in self.loggers]
        for logger in self.loggers:
            logger.setLevel(logging.CRITICAL)

    def __exit__(self, *exc: object) -> None:
        for logger, level in zip(self.loggers, self.levels, strict=True):
            logger.setLevel(level)


MATPLOTLIB_ENV = "MPLCONFIGDIR"


class matplotlib_home:
    """Give the kernel a matplotlib configuration folder it can write when its own cannot be written.

    matplotlib keeps its settings and font cache under ``$MPLCONFIGDIR``, else under ``~/.config`` and
    ``~/.cache`` (or their ``XDG_`` variables); when that cannot be written (a read-only or missing
    ``HOME``), it makes a temporary folder and warns on stderr with its path, a warning that would land on
    a page. When the user
    set no ``MPLCONFIGDIR`` and the default is not writable, the kernel gets ``<results>/.matplotlib``, a
    folder rcakit makes, kept so the font cache is built once.
    """

    def __enter__(self) -> matplotlib_home:
        self.before = os.environ.get(MATPLOTLIB_ENV)
        if self.before is None and not all(map(_writable, _default_matplotlib_dirs())):
            from rcakit.io import real_folder
            from rcakit.results import results_dir

            os.environ[MATPLOTLIB_ENV] = str(real_folder(results_dir() / ".matplotlib", "matplotlib's folder"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.before is None:
            os.environ.pop(MATPLOTLIB_ENV, None)


def _default_matplotlib_dirs() -> list[Path]:
    """matplotlib's configuration and cache folders when ``$MPLCONFIGDIR`` is not set (on Linux)."""
    home = os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return [Path(config) / "matplotlib", Path(cache) / "matplotlib"]


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be made, and can be written (as matplotlib checks it)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK) and folder.is_dir()
