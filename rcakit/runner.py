"""Execute chapters with papermill and build the book.

A chapter's MyST source is read with jupytext and handed to papermill as a
notebook; the executed copy lands in ``book/chapters/<id with _>.ipynb`` with
the injected parameters visible. Before any kernel starts, ``preflight``
checks everything a user can get wrong: parameter names, types, bounds and
rules, the output, store and data folders, and (when a model is chosen) one
cheap probe of the model server.

papermill writes into a hidden temporary notebook beside the executed one.
Only a run that finishes replaces ``<stem>.ipynb`` (atomically, ``rcakit.io``);
a run whose code fails leaves its notebook as ``<stem>.failed.ipynb`` for
inspection, which ``build_book`` refuses to publish; a killed or interrupted
run leaves the last good notebook as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError, chapters
from rcakit.io import publish, writable_dir
from rcakit.llm.spec import TIMEOUT_ENV, default_timeout
from rcakit.paths import book_dir, project_root, resolve
from rcakit.progress import WARNINGS_ENV

FAILED_SUFFIX = ".failed.ipynb"


class ChapterFailed(RuntimeError):
    """A chapter's code raised while executing (not a user input error)."""


def chapters_dir() -> Path:
    """Where executed chapters land: ``<book>/chapters``."""
    return book_dir() / "chapters"


def run_parameters(chapter_id: str, overrides: Mapping[str, Any] | None = None, quick: bool = False) -> dict:
    """The checked parameters of a run: defaults, then ``quick`` values, then overrides.

    ``$RCAKIT_LLM_TIMEOUT`` replaces the default of a chapter's ``llm_timeout``
    parameter; an explicit ``-p llm_timeout`` still wins.
    """
    chapter = chapters.get(chapter_id)
    merged = {**(chapter.quick if quick else {}), **(overrides or {})}
    if "llm_timeout" in chapter.parameters and "llm_timeout" not in merged and os.environ.get(TIMEOUT_ENV):
        merged["llm_timeout"] = default_timeout()
    return chapters.validate(chapter_id, merged)


def preflight(chapter_id: str, params: Mapping[str, Any], output_dir: Path | None = None) -> None:
    """Every check that needs no kernel, each failure a one-line ``RcakitError``.

    The executed-notebook and results folders, the chapter's ``paths``
    (``dir``: writable folder; ``store``: writable folder, relative to the
    results folder; ``data``: a data set name, or a path that must exist unless it is the default), and one
    probe per language model the parameters choose.
    """
    from rcakit.results import results_dir
    from rcakit.store import store_folder

    chapter = chapters.get(chapter_id)
    writable_dir(output_dir or chapters_dir(), "book folder (RCAKIT_BOOK_DIR)")
    writable_dir(results_dir(), "results folder (RCAKIT_RESULTS_DIR)")
    for name, kind in chapter.paths.items():
        where = f"{chapter_id}: parameter {name!r}"
        if kind == "dir":
            writable_dir(resolve(params[name]), where)
        elif kind == "store":
            writable_dir(store_folder(params[name]), where)
        elif params[name] != chapter.parameters[name].default:
            _check_data(params[name], name, where)
    _probe_models(chapter_id, params)


def _check_data(value: Any, name: str, where: str) -> None:
    """A data parameter the user chose: a registry name, or a path that must exist and be readable.

    A registry name goes through :func:`rcakit.data.locate` (an unusable lock
    file is an error here); when it is not fetched, the chapter says how to
    fetch it and runs its other sections.
    """
    from rcakit import data

    if str(value) in data.registry():
        try:
            data.locate(str(value), name)
        except RcakitError as err:
            raise RcakitError(f"{where}: {err}") from None
        return
    path = resolve(value)
    try:
        if not path.exists():
            raise RcakitError(f"{where}: {path} does not exist")
        if path.is_dir():
            os.listdir(path)
        elif path.is_file():
            with path.open("rb") as fh:
                fh.read(1)
        else:  # a FIFO or a device would block or never end
            raise RcakitError(f"{where}: {path} is not a regular file or folder")
    except OSError as err:
        raise RcakitError(f"{where}: {path} cannot be read: {err.strerror or err}") from None


def _probe_models(chapter_id: str, params: Mapping[str, Any]) -> None:
    """One connection probe per distinct model spec (``none`` needs none)."""
    specs = {}
    for name in chapters.provider_parameters(params):
        if params[name] not in chapters.UNSET:
            specs.setdefault(params[name], name)
    if not specs:
        return
    from rcakit.llm.spec import probe

    for spec, name in specs.items():
        try:
            probe(spec, timeout=params.get("llm_timeout"), param=name)
        except RcakitError as err:
            raise RcakitError(f"{chapter_id}: {err}") from None


def run_chapter(
    chapter_id: str,
    overrides: Mapping[str, Any] | None = None,
    quick: bool = False,
    output_dir: Path | None = None,
    show_progress: bool = True,
) -> Path:
    """Execute one chapter; return the path of the executed notebook.

    ``show_progress`` shows papermill's cell-by-cell bar. A failing cell raises
    ``ChapterFailed`` naming the cell and the error; the partly executed
    notebook is kept as ``<stem>.failed.ipynb`` and the last good
    ``<stem>.ipynb`` stays. Warnings the kernel raised for the person running
    it (``rcakit.progress.warn``) are printed on stderr afterwards.
    """
    import jupytext

    params = run_parameters(chapter_id, overrides, quick)
    preflight(chapter_id, params, output_dir)
    chapter = chapters.get(chapter_id)
    folder = output_dir or chapters_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / (chapter.notebook.stem + ".ipynb")
    nb = jupytext.read(chapter.notebook)
    fd, tmp = tempfile.mkstemp(prefix=f".{chapter.notebook.stem}.", suffix=".running.ipynb", dir=folder)
    os.close(fd)
    try:
        with _kernel_warnings():
            _execute(chapter_id, nb, Path(tmp), out, params, show_progress)
        publish(tmp, out)
        _remove(folder / (chapter.notebook.stem + FAILED_SUFFIX))
    except OSError as err:  # a disk that filled up during the run, say
        raise ChapterFailed(f"chapter {chapter_id!r}: cannot write {err.filename or folder}: "
                            f"{err.strerror or err}; the last good {out.name} is kept") from None
    finally:
        _remove(Path(tmp))
    return out


def _execute(chapter_id: str, nb, tmp: Path, out: Path, params: dict, show_progress: bool) -> None:
    with tempfile.TemporaryFile() as log, _interrupts_reach_the_kernel():
        try:
            _papermill(chapter_id, nb, tmp, out, params, show_progress, log)
        except ChapterFailed:
            if os.environ.get("RCAKIT_TRACEBACK"):
                log.seek(0)
                sys.stderr.write(log.read().decode("utf-8", "replace"))
            raise


def _papermill(chapter_id, nb, tmp, out, params, show_progress, log) -> None:
    import papermill
    from nbclient.exceptions import DeadKernelError

    try:
        papermill.execute_notebook(
            nb,
            str(tmp),
            parameters=params,
            cwd=str(project_root()),
            kernel_name="python3",
            progress_bar=show_progress,
            log_output=False,
            kernel_manager_class=_ipc_kernel_manager(log),
        )
    except DeadKernelError:
        raise ChapterFailed(f"chapter {chapter_id!r}: the kernel died (a crash in native code?); "
                            f"the last good {out.name} is kept; RCAKIT_TRACEBACK=1 shows the kernel's log") from None
    except papermill.PapermillExecutionError as err:
        if err.ename == "KeyboardInterrupt":
            raise KeyboardInterrupt from None
        failed = publish(tmp, out.with_name(out.stem + FAILED_SUFFIX))
        raise ChapterFailed(
            f"chapter {chapter_id!r} failed in cell {err.exec_count}: {err.ename}: "
            f"{_first_line(err.evalue)} (see {failed}; the last good {out.name} is kept)"
        ) from None


_RUNNING_KERNELS: list[int] = []  # pids of the kernels this process started, for Ctrl-C


class _interrupts_reach_the_kernel:
    """Ctrl-C interrupts the running cell, so the run stops where a cell would.

    The kernel runs in its own session (jupyter_client), so the terminal's
    SIGINT reaches only this process; raising ``KeyboardInterrupt`` in the
    middle of papermill's event loop would leave tasks that print tracebacks
    at exit. The first Ctrl-C is passed on to the kernel instead: the cell
    raises ``KeyboardInterrupt``, papermill reports it, and ``run_chapter``
    turns it back into ``KeyboardInterrupt`` with every file consistent. A
    second Ctrl-C, or one before the kernel runs, interrupts at once.
    """

    def __enter__(self):
        import signal
        import threading

        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        self.hits = 0
        return self

    def _handle(self, signum, frame):
        import signal

        self.hits += 1
        if self.hits > 1 or not _RUNNING_KERNELS:
            raise KeyboardInterrupt
        for pid in _RUNNING_KERNELS:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def __exit__(self, *exc):
        import signal

        _RUNNING_KERNELS.clear()
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _ipc_kernel_manager(log):
    """A kernel manager that talks to the kernel over Unix sockets, not localhost TCP.

    Other local users cannot connect to the kernel, and the kernel has no
    reason to print its unencrypted-TCP warning. The kernel's own stderr (its
    log, not the cells' output, which goes into the notebook) goes to ``log``,
    so a user's terminal gets rcakit's one line, not a kernel traceback.

    Each kernel's sockets live in a private temporary folder: jupyter_client's
    default (``kernel-ipc-N`` in the current folder) makes two runs started
    from one folder share sockets, and the second fails with "Invalid Signature".
    """
    import shutil

    from jupyter_client import AsyncKernelManager
    from traitlets import CaselessStrEnum

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def __init__(self, **kw):
            super().__init__(**kw)
            self._sockets = tempfile.mkdtemp(prefix="rcakit-kernel-")
            self.ip = os.path.join(self._sockets, "kernel")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:
                shutil.rmtree(self._sockets, ignore_errors=True)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            kw["stderr"] = log
            await super()._async_launch_kernel(kernel_cmd, **kw)
            _RUNNING_KERNELS.append(self.provisioner.process.pid)

    return IPCKernelManager


class _kernel_warnings:
    """Collect the kernel's ``rcakit.progress.warn`` lines and print them on our stderr."""

    def __enter__(self):
        fd, self.path = tempfile.mkstemp(prefix="rcakit-warnings-", suffix=".log")
        os.close(fd)
        self.before = os.environ.get(WARNINGS_ENV)
        os.environ[WARNINGS_ENV] = self.path
        return self

    def __exit__(self, *exc):
        if self.before is None:
            os.environ.pop(WARNINGS_ENV, None)
        else:
            os.environ[WARNINGS_ENV] = self.before
        try:
            sys.stderr.write(Path(self.path).read_text(encoding="utf-8", errors="replace"))
        finally:
            _remove(Path(self.path))


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def failed_notebooks(folder: Path | None = None) -> list[Path]:
    """Executed notebooks of failed runs (``*.failed.ipynb``) in the book's chapters folder."""
    return sorted((folder or chapters_dir()).glob("*" + FAILED_SUFFIX))


def build_book(strict: bool = True) -> Path:
    """Build the HTML with Jupyter Book 1 from the executed chapters.

    Refuses (``ChapterFailed``) while a failed run's notebook is present: it
    must never be published, and the book would silently show the previous run.

    ``strict`` passes ``-W -n --all``: a clean build in which any warning
    (a missing chapter, a broken reference) fails the build.
    """
    book = book_dir()
    failed = failed_notebooks(book / "chapters")
    if failed:
        names = ", ".join(p.name for p in failed)
        raise ChapterFailed(f"refusing to build the book: failed chapter runs in {book / 'chapters'}: {names}; "
                            "rerun those chapters (a good run removes its .failed notebook) or delete them")
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe), "build", str(book), "--builder", "html"]
    if strict:
        cmd += ["--all", "-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise ChapterFailed(f"jupyter-book build failed:\n{tail}")
    return book / "_build" / "html" / "index.html"
