"""A sweep's cases on a Dask cluster, and the objects built where a case runs.

``work`` is shipped to the cluster's workers once; each case is a Dask task
that runs ``rcakit.parallel.tally.attempt_case`` there, so its retries and
its served-calls tally stay with it, and the results stream back to the driver
as they finish. A case whose worker dies is rescheduled by Dask
(``distributed.scheduler.allowed-failures``); a case that Dask cancels because
the workers holding the shipped ``work`` died is resubmitted by its index,
with ``work`` shipped again, up to ``retries`` times.

Every wait on the cluster has a deadline: the connect
(``CONNECT_SECONDS``), the shipping of ``work`` (``WORKER_SECONDS``), the
teardown, and the wait for the next case to finish, :func:`stall_timeout`
seconds (``$RCAKIT_DASK_TIMEOUT``, default :data:`DEFAULT_STALL_SECONDS`). A
frozen worker or scheduler keeps its connections open, so Dask itself would
wait for it for minutes (its ``worker-ttl``) or for ever: the run says every
:data:`NOTICE_SECONDS` how long it has waited, and once no case has finished
within the deadline it stops with one line. The cases that finished are kept
by the driver's store, so the rerun starts where it stopped.

Where the model lives: ``work`` builds nothing host-specific in the driver. A
model client made with :class:`PerProcess` is built in the process that runs
the case, so a Dask worker reads ``OLLAMA_HOST`` from its own environment.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rcakit import RcakitError
from rcakit.deadlines import seconds_from_env
from rcakit.parallel.failures import one_line
from rcakit.parallel.scheduler import CONNECT_SECONDS, probe_scheduler
from rcakit.parallel.tally import Served, Stream, announce, attempt_case

if TYPE_CHECKING:
    from distributed import Future

T = TypeVar("T")
WORKER_SECONDS = 60  # how long to wait for a live Dask worker to take a sweep's work (a restart included)
STALL_ENV = "RCAKIT_DASK_TIMEOUT"
DEFAULT_STALL_SECONDS = 600.0  # the longest wait for the next case to finish on a cluster
NOTICE_SECONDS = 60.0  # how often a run waiting on its cluster says so


def stall_timeout() -> float:
    """How long a run on a Dask cluster waits for its next case to finish: ``$RCAKIT_DASK_TIMEOUT``
    seconds, default :data:`DEFAULT_STALL_SECONDS`; anything else than seconds > 0 is one line."""
    return seconds_from_env(STALL_ENV, DEFAULT_STALL_SECONDS)


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


def on_cluster(
    items: Sequence[Any], work: Callable[..., Any], *, address: str, retries: int, stop: threading.Event
) -> Stream:
    """Cases as Dask tasks on the cluster at ``address``; results stream back as they finish.

    ``work`` is scattered to every worker once. When the workers holding it die,
    Dask cancels the cases that needed it: each is resubmitted under a new key,
    ``work`` scattered again, at most ``retries`` times per case. Once ``stop`` is
    set the unfinished tasks are cancelled (a task running on a worker is dropped:
    the rerun computes it again).
    """
    try:
        from distributed import Client
    except ImportError:
        raise RcakitError("scheduler: Dask distributed is not installed; pip install 'rcakit[cluster]'") from None
    stall = stall_timeout()
    probe_scheduler(address, CONNECT_SECONDS)  # a peer that is not Dask fails here, within the timeout
    try:
        client = Client(address, timeout=f"{CONNECT_SECONDS}s", set_as_default=False)
    except Exception as exc:  # OSError, TimeoutError, or whatever a scheduler that went away mid-handshake gives
        raise RcakitError(f"scheduler: cannot reach the Dask scheduler at {address} ({one_line(exc)})") from None
    run = uuid.uuid4().hex[:8]
    futures: dict[Any, tuple[int, int, int]] = {}  # future -> (index, attempt, the shipped generation it read)
    shipped: list[Any] = []  # the scattered ``work`` of each generation

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

    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()  # each future once it is done, errs or is cancelled

    def submit(index: int, attempt: int) -> None:
        future = client.submit(
            attempt_case,
            shipped[-1],
            items[index][1],
            retries,
            pure=False,
            key=f"rcakit-case-{run}-{index}" + (f"-{attempt}" if attempt else ""),
        )
        futures[future] = (index, attempt, len(shipped))
        future.add_done_callback(finished.put)

    try:
        announce(f"rcakit: Dask cluster at {address}, dashboard {client.dashboard_link}")
        ship()
        for i in range(len(items)):
            submit(i, 0)
        for unfinished in range(len(items), 0, -1):
            while True:  # the next case of this index that the cluster did not lose
                future = _next_finished(finished, unfinished, address, stall)
                if stop.is_set():
                    return
                index, attempt, generation = futures[future]
                got = _gathered(future, address, stall)
                if got is not None or attempt >= retries:
                    break
                if generation == len(shipped):  # the workers holding ``work`` died: ship it again, resubmit
                    ship()
                submit(index, attempt + 1)
            if got is None:
                yield index, False, f"the cluster lost the case {attempt + 1} times (its workers died)", Served(), 1
            else:
                yield (index, *got)
    finally:
        _close(client, [*futures, *shipped], CONNECT_SECONDS)


def _next_finished(finished: queue.SimpleQueue[Any], unfinished: int, address: str, stall: float) -> Future[Any]:
    """The next future to finish; one ``RcakitError`` line once ``stall`` seconds pass without one.

    Every :data:`NOTICE_SECONDS` of waiting the terminal hears how long the run has waited.
    """
    waited = 0.0
    while True:
        step = min(NOTICE_SECONDS, stall - waited)
        start = time.monotonic()
        try:
            return finished.get(timeout=step)
        except queue.Empty:
            waited += time.monotonic() - start
        if waited >= stall:
            raise _stalled(address, stall, f"no case finished ({unfinished} unfinished)")
        announce(
            f"rcakit: no case has finished on the Dask cluster at {address} for {waited:.0f} s "
            f"({unfinished} unfinished); the run stops after {stall:g} s (${STALL_ENV})"
        )


def _close(client: Any, futures: list[Any], seconds: float) -> None:
    """Cancel ``futures`` and close ``client``, waiting at most about ``seconds`` (a frozen scheduler never answers)."""

    def close() -> None:
        with contextlib.suppress(Exception):  # a cluster that is gone has nothing left to cancel
            client.cancel(futures)
        with contextlib.suppress(Exception):
            client.close(timeout=seconds)

    thread = threading.Thread(target=close, daemon=True, name="rcakit-close-cluster")
    thread.start()
    thread.join(seconds * 2)


def _gathered(future: Future[Any], address: str, stall: float) -> tuple[Any, ...] | None:
    """A finished task's ``(ok, value, served, attempts)``; ``None`` when Dask cancelled it (its input was lost).

    The value is fetched from the worker that holds it: a frozen worker never sends it, so after ``stall``
    seconds the run stops with the stall's one line.
    """
    from concurrent.futures import CancelledError

    if future.status == "error":
        return False, _dask_error(future), Served(), 1
    try:
        return None if future.status == "cancelled" else future.result(timeout=stall)
    except CancelledError:  # finished, then lost with its worker before it was gathered
        return None
    except TimeoutError:
        raise _stalled(address, stall, "a finished case's value never came from its worker") from None


def _stalled(address: str, stall: float, what: str) -> RcakitError:
    return RcakitError(
        f"scheduler: {what} on the Dask cluster at {address} within {stall:g} s (did a worker or the "
        f"scheduler stop?); the finished cases are kept for the rerun, and ${STALL_ENV} sets this deadline"
    )


def _dask_error(future: Future[Any]) -> str:
    """One line for a task that Dask gave up on (its worker died each time it ran it)."""
    exc = future.exception()
    if type(exc).__name__ == "KilledWorker":
        return "its worker died each time it ran the case (KilledWorker)"
    # a synchronous Client's future gives the exception; distributed annotates exception() as its coroutine
    return one_line(exc)  # pyright: ignore[reportArgumentType]
