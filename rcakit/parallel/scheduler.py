"""Where a sweep may run: the ``workers`` and ``scheduler`` settings checked, and a bounded probe of a Dask scheduler.

:func:`check_workers` and :func:`check_scheduler` read the settings without the
network. :func:`probe_scheduler` makes Dask's handshake with the scheduler and
asks its identity, on a thread of its own, so a peer that accepts and never
answers, or that answers bytes that are not Dask's, fails within the timeout.
Preflight (``rcakit.book.inputs``) calls it before a kernel starts, and a run on a
cluster calls it before its client connects.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import threading
import time

from rcakit import RcakitError
from rcakit.parallel.failures import one_line

SCHEDULER_ENV = "RCAKIT_DASK_SCHEDULER"
MAX_WORKERS = 256  # a thread per in-flight case; beyond this a cluster is the tool
CONNECT_SECONDS = 10  # how long to wait for a Dask scheduler to answer


def check_workers(workers: object, param: str = "workers") -> int:
    """``workers`` as an int in [1, MAX_WORKERS]; anything else is a one-line error."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise RcakitError(f"{param}: expected a whole number from 1 to {MAX_WORKERS}, got {workers!r}")
    return workers


def check_scheduler(scheduler: object, param: str = "scheduler") -> str:
    """``scheduler`` as given: ``""`` (none) or a Dask address ``tcp://HOST:PORT`` (no network)."""
    if not isinstance(scheduler, str):
        raise RcakitError(f"{param}: expected a string, got {type(scheduler).__name__}")
    if scheduler:
        host, _, port = scheduler.removeprefix("tcp://").rpartition(":")
        if not scheduler.startswith("tcp://") or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise RcakitError(f"{param}: expected '' or a Dask scheduler address tcp://HOST:PORT, got {scheduler!r}")
    return scheduler


def scheduler_address(scheduler: str | None = None) -> str:
    """``scheduler`` if set, else ``$RCAKIT_DASK_SCHEDULER``, else ``""`` (no cluster); checked."""
    if scheduler:
        return check_scheduler(scheduler)
    return check_scheduler(os.environ.get(SCHEDULER_ENV, ""), param=SCHEDULER_ENV)


def probe_scheduler(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """A Dask handshake with the scheduler at ``address`` (``tcp://HOST:PORT``), within ``timeout`` seconds.

    Connects over TCP, exchanges Dask's handshake and asks the peer's identity,
    which must be a scheduler's. The exchange runs on a daemon thread with its
    own event loop and this call waits for it at most ``timeout`` seconds of
    wall time, whatever the peer does: a closed port, a port that accepts and
    never answers, or one that answers bytes that are not Dask's each give a
    one-line :class:`RcakitError` naming the address.
    """
    check_scheduler(address, param="scheduler")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise RcakitError(f"timeout: expected a number of seconds > 0, got {timeout!r}")
    try:
        import distributed  # noqa: F401 - only its presence is checked here
    except ImportError:
        raise RcakitError("scheduler: Dask distributed is not installed; pip install 'rcakit[cluster]'") from None
    answer: list[str] = []
    thread = threading.Thread(
        target=lambda: answer.append(_handshake(address, timeout)), daemon=True, name="rcakit-probe-scheduler"
    )
    thread.start()
    thread.join(timeout)
    problem = answer[0] if answer else _silent(address, timeout)
    if problem:
        raise RcakitError(f"scheduler: {problem}")


def _silent(address: str, timeout: float) -> str:
    return (
        f"{address} accepted a connection but gave no Dask handshake within {timeout:g} s "
        "(is it a Dask scheduler's address?)"
    )


def _handshake(address: str, timeout: float) -> str:
    """``""`` when a Dask scheduler answers at ``address``, else what went wrong (one line, no prefix)."""
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    deadline = time.monotonic() + timeout
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:  # refused, unreachable, unknown host: no need to wait for the handshake
        return f"cannot reach the Dask scheduler at {address} ({one_line(exc)})"
    left = max(deadline - time.monotonic(), 0.001)
    try:
        identity = asyncio.run(asyncio.wait_for(_identity(address, left), left))
    except TimeoutError:
        return _silent(address, timeout)
    except Exception as exc:  # a closed stream, a frame too large to allocate, bytes msgpack cannot read
        return f"{address} accepted a connection but does not speak Dask's protocol ({one_line(exc)[:160]})"
    kind = identity.get("type") if isinstance(identity, dict) else None
    if kind == "Scheduler":
        return ""
    what = f"a Dask {kind}" if isinstance(kind, str) and kind.isidentifier() else "something else"
    return f"{address} answered Dask's handshake but is {what}, not a scheduler"


async def _identity(address: str, timeout: float) -> object:
    """Dask's handshake, then the ``identity`` request; the peer's answer as read."""
    from distributed.comm.core import connect

    comm = await connect(address, timeout=timeout)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()
