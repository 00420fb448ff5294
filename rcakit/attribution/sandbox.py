"""A user's attribution method imported for the preflight in a child process, with a deadline.

A plug-in (``-p methods package.module:callable``) is the user's code, and
rcakit runs it twice: the preflight imports it before any kernel starts, and
the chapter's kernel imports and calls it on every case. Neither may reach
rcakit's own process or page:

- :func:`check_methods_isolated` is the preflight. It runs
  :func:`rcakit.attribution.check_methods` in a child Python, in its
  own session, from the project folder (the kernel's working folder), with
  its output thrown away and a deadline of :func:`plugin_timeout` seconds
  (``$RCAKIT_PLUGIN_TIMEOUT``, default :data:`DEFAULT_PLUGIN_TIMEOUT`). A
  plug-in that exits, sleeps, forks or floods the terminal as it is imported
  is one line, and the child's whole session is killed after the check.
- in the kernel, ``rcakit.attribution.muting.muted`` discards what a user's
  method prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

from rcakit import RcakitError
from rcakit.deadlines import seconds_from_env

TIMEOUT_ENV = "RCAKIT_PLUGIN_TIMEOUT"
DEFAULT_PLUGIN_TIMEOUT = 60.0  # seconds for the preflight to import every plug-in
MAX_REPORT_BYTES = 1 << 16  # the child's report is a line or two; more is not a report


def plugin_timeout() -> float:
    """``$RCAKIT_PLUGIN_TIMEOUT`` as seconds (a finite number > 0), else the default; a bad value is one line."""
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_PLUGIN_TIMEOUT)


def check_methods_isolated(specs: str, cwd: str | os.PathLike[str], timeout: float | None = None) -> None:
    """Check ``specs`` as :func:`~rcakit.attribution.adapters.check_methods` does, in a child process.

    The child imports every plug-in from ``cwd`` and reports one JSON line on
    a pipe of its own; its stdout and stderr go nowhere. No report, a report
    from another process (the plug-in forked), or no end within ``timeout``
    seconds is a one-line :class:`RcakitError`, as is the check's own error.
    """
    seconds = plugin_timeout() if timeout is None else timeout
    command = [sys.executable, "-c", f"from {__name__} import _child; _child()", specs]
    with subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as child:
        try:
            report, _ = child.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise RcakitError(
                f"methods: importing {specs!r} did not finish within {seconds:g} s ({TIMEOUT_ENV})"
            ) from None
        finally:
            _kill_session(child)
    _read_report(report, child.pid, child.returncode, specs)


def _kill_session(child: subprocess.Popen[bytes]) -> None:
    """End the child and whatever it started in its session, and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def _read_report(report: bytes, pid: int, status: int, specs: str) -> None:
    """Raise the child's verdict on ``specs``: its error line, or why it gave none."""
    lines = [
        json.loads(line)
        for line in report[:MAX_REPORT_BYTES].decode("utf-8", "replace").splitlines()
        if line.startswith("{") and line.endswith("}")
    ]
    if any(entry.get("pid") != pid for entry in lines):
        raise RcakitError(f"methods: importing {specs!r} started another process (a fork); a plug-in may not fork")
    if not lines:
        raise RcakitError(f"methods: importing {specs!r} ended the check with exit status {status} and no answer")
    error = lines[0].get("error")
    if error:
        raise RcakitError(" ".join(str(error).split()))


def _child() -> None:
    """The child's side: check ``sys.argv[1]`` and write one JSON line to the original stdout."""
    from rcakit.attribution.adapters import check_methods

    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    nowhere = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nowhere, 1)
    os.dup2(nowhere, 2)
    sys.path.insert(0, os.getcwd())
    try:
        check_methods(sys.argv[1])
        error = ""
    except RcakitError as err:
        error = str(err)
    report.write(json.dumps({"pid": os.getpid(), "error": error}) + "\n")
    report.flush()


__all__ = ["DEFAULT_PLUGIN_TIMEOUT", "TIMEOUT_ENV", "check_methods_isolated", "plugin_timeout"]
