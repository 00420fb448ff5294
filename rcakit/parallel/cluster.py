"""A sweep's cases on a Dask cluster, and the objects built where a case runs.

``work`` is shipped to the cluster's workers once; each case is a Dask task
that runs ``rcakit.parallel.tally.attempt_case`` there, so its retries and
its served-calls tally stay with it, and the results stream back to the driver
as they finish. A case whose worker dies is rescheduled by Dask
(``distributed.scheduler.allowed-failures``); a case that Dask cancels because
the workers holding the shipped ``work`` died is resubmitted by its index,
with ``work`` shipped again, up to ``retries`` times.

Where the model lives: ``work`` builds nothing host-specific in the driver. A
model client made with :class:`PerProcess` is built in the process that runs
the case, so a Dask worker reads ``OLLAMA_HOST`` from its own environment.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rcakit import RcakitError
from rcakit.parallel.failures import one_line
from rcakit.parallel.scheduler import CONNECT_SECONDS, probe_scheduler
from rcakit.parallel.tally import Served, Stream, announce, attempt_case

if TYPE_CHECKING:
    from distributed import Future

T = TypeVar("T")
WORKER_SECONDS = 60  # how long to wait for a live Dask worker to take a sweep's work (a restart included)


class PerProcess(Generic[T]):
    """``factory(*args)`` built once in each process that asks for it (a Dask worker, or this one).

    Pickling ships the factory and its arguments, never the object, so a model
    client is made on the worker, from the worker's environment. Threads of one
    process share one object (the factory runs once, under a lock).
    """

    _built: dict[str, Any] = {}
    _lock = threading.Lock()

    def __init__(self, factory: Callable[..., T], *args: object) -> None:
        self.factory, self.args = factory, args
        self.token = uuid.uuid4().hex

    def get(self) -> T:
        with PerProcess._lock:
            if self.token not in PerProcess._built:
                PerProcess._built[self.token] = self.factory(*self.args)
            return PerProcess._built[self.token]


def on_cluster(items: Sequence, work: Callable, *, address: str, retries: int, stop: threading.Event) -> Stream:
    """Cases as Dask tasks on the cluster at ``address``; results stream back as they finish.

    ``work`` is scattered to every worker once. When the workers holding it die,
    Dask cancels the cases that needed it: each is resubmitted under a new key,
    ``work`` scattered again, at most ``retries`` times per case. Once ``stop`` is
    set the unfinished tasks are cancelled (a task running on a worker is dropped:
    the rerun computes it again).
    """
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise RcakitError("scheduler: Dask distributed is not installed; pip install 'rcakit[cluster]'") from None
    probe_scheduler(address, CONNECT_SECONDS)  # a peer that is not Dask fails here, within the timeout
    try:
        client = Client(address, timeout=f"{CONNECT_SECONDS}s", set_as_default=False)
    except Exception as exc:  # OSError, TimeoutError, or whatever a scheduler that went away mid-handshake gives
        raise RcakitError(f"scheduler: cannot reach the Dask scheduler at {address} ({one_line(exc)})") from None
    run = uuid.uuid4().hex[:8]
    futures: dict = {}  # future -> (index, attempt, the shipped generation it read)
    shipped: list = []  # the scattered ``work`` of each generation

    def ship() -> None:
        try:
            # a synchronous Client returns the futures; distributed annotates scatter as its coroutine
            scattered = client.scatter([work], broadcast=True, hash=False, timeout=WORKER_SECONDS)
            shipped.append(scattered[0])  # pyright: ignore[reportIndexIssue]
        except TimeoutError:
            raise RcakitError(
                f"scheduler: no Dask worker at {address} took the sweep's work within "
                f"{WORKER_SECONDS} s (does the cluster have running workers?)"
            ) from None

    def submit(index: int, attempt: int) -> object:
        future = client.submit(
            attempt_case,
            shipped[-1],
            items[index][1],
            retries,
            pure=False,
            key=f"rcakit-case-{run}-{index}" + (f"-{attempt}" if attempt else ""),
        )
        futures[future] = (index, attempt, len(shipped))
        return future

    try:
        announce(f"rcakit: Dask cluster at {address}, dashboard {client.dashboard_link}")
        ship()
        pending = as_completed([submit(i, 0) for i in range(len(items))], loop=client.loop)
        for future in pending:
            if stop.is_set():
                return
            index, attempt, generation = futures[future]
            got = _gathered(future)
            if got is None and attempt < retries:  # the workers holding ``work`` died: ship it again, resubmit
                if generation == len(shipped):
                    ship()
                pending.add(submit(index, attempt + 1))
            elif got is None:
                yield index, False, f"the cluster lost the case {attempt + 1} times (its workers died)", Served(), 1
            else:
                yield (index, *got)
    finally:
        client.cancel([*futures, *shipped])
        client.close()


def _gathered(future: Future) -> tuple | None:
    """A finished task's ``(ok, value, served, attempts)``; ``None`` when Dask cancelled it (its input was lost)."""
    from concurrent.futures import CancelledError

    if future.status == "error":
        return False, _dask_error(future), Served(), 1
    try:
        return None if future.status == "cancelled" else future.result()
    except CancelledError:  # finished, then lost with its worker before it was gathered
        return None


def _dask_error(future: Future) -> str:
    """One line for a task that Dask gave up on (its worker died each time it ran it)."""
    exc = future.exception()
    if type(exc).__name__ == "KilledWorker":
        return "its worker died each time it ran the case (KilledWorker)"
    # a synchronous Client's future gives the exception; distributed annotates exception() as its coroutine
    return one_line(exc)  # pyright: ignore[reportArgumentType]
