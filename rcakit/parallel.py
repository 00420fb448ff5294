"""Running a sweep's cases: one after another, on a thread pool, or on a Dask cluster, with the same results.

A sweep is a list of ``(key, item)`` pairs and a function ``work(item) -> value``.
Each case's randomness and model seed derive from (chapter seed, case key), never
from the order the cases run in, so :func:`run_cases` may run them in any order:

- ``workers = 1`` (the default) runs them one after another in this process;
- ``workers = N`` runs them on N threads of this process: a case waits on model
  calls, not on the CPU, so threads are enough to keep a model server busy;
- ``scheduler = "tcp://HOST:PORT"`` (or ``$RCAKIT_DASK_SCHEDULER``) submits them to
  a Dask cluster through ``distributed.Client``; ``workers`` is then unused, the
  cluster's own threads decide how many run at once.

Whatever the setting, the values come back in the order of the items, so a
results file built from them is byte-identical for every setting. The driver
(the process that called :func:`run_cases`) calls ``on_result(key, value)`` as each
case arrives, so it alone writes a case store, and a killed run resumes from the
store like a serial one (``rcakit.store.CaseStore.run``).

Failure: a case that raises is retried up to ``retries`` more times; on a cluster,
a case whose worker dies is rescheduled by Dask (``distributed.scheduler.allowed-
failures``), and a case that Dask cancels because the workers holding the shipped
``work`` died is resubmitted by its index, with ``work`` shipped again, up to
``retries`` times. A case that fails every attempt stops the run: no new case starts,
those in flight on this machine finish and reach ``on_result``, and
:class:`CaseFailed` names the key and the last error in one line.

Bounded waits: :func:`probe_scheduler` makes a Dask handshake with the scheduler
and asks its identity, on a thread of its own, so a peer that accepts and never
answers, or that answers bytes that are not Dask's, fails within the timeout.
Preflight calls it before a kernel starts, and a run calls it before its client
connects.

Where the model lives: ``work`` builds nothing host-specific in the driver. A
model client made with :class:`PerProcess` is built in the process that runs the
case, so a Dask worker reads ``OLLAMA_HOST`` from its own environment. Every call
through ``rcakit.llm.CachedProvider`` is counted per (machine, server) in the case's
:class:`Served` tally, which a run returns: the chapter can print which hosts
served how many calls. The ``calls`` column depends only on the requests, the
``model_calls`` column (cache misses) on the cache's state: only ``calls`` may go
into a notebook's outputs.

Used in the chapters: `coverage-collapse`, `content-corruption`, `longrca-strata`.
"""

from __future__ import annotations

import asyncio
import math
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rcakit import RcakitError

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Future

T = TypeVar("T")
Progress = Callable[[Iterable], Iterable]  # wraps the stream of finished cases (a progress bar), items unchanged
Stream = Generator[tuple, None, None]  # (index, ok, value or error, served, attempts) per finished case

SCHEDULER_ENV = "RCAKIT_DASK_SCHEDULER"
RETRIES = 2  # extra attempts of a case that raised, before the run stops
MAX_WORKERS = 256  # a thread per in-flight case; beyond this a cluster is the tool
CONNECT_SECONDS = 10  # how long to wait for a Dask scheduler to answer
WORKER_SECONDS = 60  # how long to wait for a live Dask worker to take a sweep's work (a restart included)


class CaseFailed(RcakitError):
    """A case failed on every attempt; ``key`` names it, ``error`` is its last error in one line."""

    def __init__(self, key: str, error: str, attempts: int) -> None:
        self.key, self.error, self.attempts = key, error, attempts
        super().__init__(
            f"case {key!r} failed after {attempts} attempt{'s' * (attempts > 1)}: {error}; "
            "the finished cases are saved, rerun to resume"
        )


# --- the served-calls tally --------------------------------------------------------------------


@dataclass
class Served:
    """Model calls per (machine, server): ``calls`` (all chats) and ``model_calls`` (cache misses)."""

    rows: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, machine: str, server: str, calls: int = 1, model_calls: int = 0) -> None:
        row = self.rows.setdefault((machine, server), [0, 0])
        row[0] += calls
        row[1] += model_calls

    def update(self, other: Served) -> None:
        for (machine, server), (calls, model_calls) in other.rows.items():
            self.add(machine, server, calls, model_calls)

    @property
    def calls(self) -> int:
        return sum(row[0] for row in self.rows.values())

    def table(self, runtime: bool = False) -> pd.DataFrame:
        """One row per (machine, server), sorted; ``model_calls`` only with ``runtime`` (cache-dependent)."""
        import pandas as pd

        columns = ["machine", "server", "calls"] + (["model_calls"] if runtime else [])
        rows = [(m, s, c, mc) for (m, s), (c, mc) in sorted(self.rows.items())]
        return pd.DataFrame([r[: len(columns)] for r in rows], columns=columns)


_CASE = threading.local()  # the running case's Served tally, in the thread that runs it
MACHINE = socket.gethostname()


def count_call(server: str, model_call: bool) -> None:
    """Charge one chat to the running case's tally (a no-op outside :func:`run_cases`)."""
    tally = getattr(_CASE, "served", None)
    if tally is not None:
        tally.add(MACHINE, server, 1, int(model_call))


def _attempts(work: Callable, item: object, retries: int) -> tuple[bool, object, Served, int]:
    """Run ``work(item)`` up to ``1 + retries`` times: ``(ok, value or last error, served, attempts)``."""
    served = Served()
    _CASE.served = served
    try:
        for attempt in range(1, retries + 2):
            try:
                return True, work(item), served, attempt
            except Exception as exc:  # any error of a case: a server hiccup as much as a bug
                error = exc
        return False, error, served, attempt
    finally:
        _CASE.served = None


def one_line(exc: BaseException) -> str:
    """An error as one line: an ``RcakitError``'s own message, else ``Type: message``."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, RcakitError) else f"{type(exc).__name__}: {text}".rstrip(": ")


# --- objects built where the case runs ---------------------------------------------------------


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


# --- settings ----------------------------------------------------------------------------------


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


def scheduler_address(scheduler: str | None = None) -> str:
    """``scheduler`` if set, else ``$RCAKIT_DASK_SCHEDULER``, else ``""`` (no cluster); checked."""
    if scheduler:
        return check_scheduler(scheduler)
    return check_scheduler(os.environ.get(SCHEDULER_ENV, ""), param=SCHEDULER_ENV)


# --- the runner --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a run gives back: ``values`` in the order of the items, and the calls it made."""

    values: list
    served: Served


def run_cases(
    items: Iterable[tuple[str, object]],
    work: Callable[[Any], object],
    *,
    workers: int = 1,
    scheduler: str | None = None,
    retries: int = RETRIES,
    progress: Progress | None = None,
    on_result: Callable[[str, Any], None] | None = None,
) -> Outcome:
    """``work(item)`` for every ``(key, item)``, serially, on ``workers`` threads or on a Dask cluster.

    ``progress`` wraps the stream of finished cases (``rcakit.progress.track``
    draws cases done, rate and ETA on the terminal); ``on_result(key, value)`` is
    called in this process as each case finishes, in completion order. Keys must
    be distinct. Raises :class:`CaseFailed` once a case fails every attempt.
    """
    items = list(items)
    keys = [key for key, _ in items]
    if len(set(keys)) != len(keys):
        raise RcakitError("run_cases: two cases share a key; every case needs its own key")
    check_workers(workers)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise RcakitError(f"retries: expected a whole number >= 0, got {retries!r}")
    address = scheduler_address(scheduler)
    stop = threading.Event()  # set after a case failed for good: no new case starts
    if address:
        stream = _on_cluster(items, work, address, retries, stop)
    elif workers == 1 or len(items) <= 1:
        stream = _serial(items, work, retries, stop)
    else:
        stream = _threads(items, work, min(workers, len(items)), retries, stop)
    values: list = [None] * len(items)
    served, failed = Served(), None
    try:
        for index, ok, value, tally, attempts in progress(_Sized(stream, len(items))) if progress else stream:
            served.update(tally)
            if not ok:
                stop.set()
                if failed is None:
                    failed = CaseFailed(keys[index], value if isinstance(value, str) else one_line(value), attempts)
                    failed.__cause__ = value if isinstance(value, BaseException) else None
                continue
            values[index] = value
            if on_result is not None:
                on_result(keys[index], value)
    finally:
        stop.set()
        stream.close()
    if failed is not None:
        raise failed
    return Outcome(values, served)


class _Sized:
    """A stream with a length, so a progress bar knows the total (and so the ETA)."""

    def __init__(self, stream: Iterator, n: int) -> None:
        self.stream, self.n = stream, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator:
        return self.stream


def _serial(items: Sequence, work: Callable, retries: int, stop: threading.Event) -> Stream:
    for index, (_, item) in enumerate(items):
        if stop.is_set():
            return
        yield (index, *_attempts(work, item, retries))


def _threads(items: Sequence, work: Callable, workers: int, retries: int, stop: threading.Event) -> Stream:
    """Cases on ``workers`` daemon threads, so an interrupted driver does not wait for them.

    Once ``stop`` is set no thread takes a new case; the cases in flight still
    come out of the stream.
    """
    todo: queue.SimpleQueue = queue.SimpleQueue()
    done: queue.SimpleQueue = queue.SimpleQueue()
    for index, (_, item) in enumerate(items):
        todo.put((index, item))
    for _ in range(workers):
        todo.put(None)

    def worker() -> None:
        try:
            while not stop.is_set() and (task := todo.get()) is not None:
                done.put((task[0], *_attempts(work, task[1], retries)))
        except BaseException as exc:  # noqa: B036 - a SystemExit in a case must reach the driver, not vanish
            done.put(exc)
        finally:
            done.put(None)

    for n in range(workers):
        threading.Thread(target=worker, daemon=True, name=f"rcakit-case-{n}").start()
    running = workers
    while running:
        got = done.get()
        if got is None:
            running -= 1
        elif isinstance(got, BaseException):
            stop.set()
            raise got
        else:
            yield got


def _on_cluster(items: Sequence, work: Callable, address: str, retries: int, stop: threading.Event) -> Stream:
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
            _attempts,
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


def announce(line: str) -> None:
    """One line on the terminal, where the progress bars go (never into a notebook's outputs)."""
    from rcakit.progress import _terminal

    tty = _terminal()
    if tty is not None:
        tty.write(line + "\n")
        tty.flush()


def report_served(runner: Runner) -> None:
    """Which hosts served how many calls: displayed when a Dask scheduler is set, else written only to
    the terminal (the hosts differ between machines, so they stay out of a local notebook's outputs)."""
    table = runner.served.table()
    if table.empty:
        return
    if runner.scheduler:
        from IPython.display import display

        display(table)
    else:
        announce("model calls served:\n" + table.to_string(index=False))


@dataclass
class Runner:
    """A chapter's ``workers`` and ``scheduler`` settings, checked; sums the calls of every run it made."""

    workers: int = 1
    scheduler: str = ""
    retries: int = RETRIES
    served: Served = field(default_factory=Served)

    def __post_init__(self) -> None:
        check_workers(self.workers)
        check_scheduler(self.scheduler)

    def run(
        self,
        items: Iterable[tuple[str, object]],
        work: Callable[[Any], object],
        progress: Progress | None = None,
        on_result: Callable[[str, Any], None] | None = None,
    ) -> list:
        """:func:`run_cases` with these settings; returns the values in the order of ``items``."""
        outcome = run_cases(
            items,
            work,
            workers=self.workers,
            scheduler=self.scheduler or None,
            retries=self.retries,
            progress=progress,
            on_result=on_result,
        )
        self.served.update(outcome.served)
        return outcome.values
