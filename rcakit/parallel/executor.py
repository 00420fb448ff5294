"""Running a sweep's cases: one after another, on a thread pool, or on a Dask cluster, with the same results.

:func:`run_cases` picks where the cases run from its settings
(:mod:`rcakit.parallel.scheduler`), runs each with its retries and its tally
(``rcakit.parallel.tally.attempt_case``), and puts the values back in the
order of the items; a :class:`Runner` holds a chapter's settings and sums the
calls of every run it made.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rcakit import RcakitError
from rcakit.parallel.cluster import on_cluster
from rcakit.parallel.failures import CaseFailed, one_line
from rcakit.parallel.scheduler import check_scheduler, check_workers, scheduler_address
from rcakit.parallel.tally import Served, Stream, announce, attempt_case

Progress = Callable[
    [Iterable[Any]], Iterable[Any]
]  # wraps the stream of finished cases (a progress bar), items unchanged
RETRIES = 2  # extra attempts of a case that raised, before the run stops


@dataclass
class Outcome:
    """What a run gives back: ``values`` in the order of the items, and the calls it made."""

    values: list[Any]
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
        stream = on_cluster(items, work, address=address, retries=retries, stop=stop)
    elif workers == 1 or len(items) <= 1:
        stream = _serial(items, work, retries, stop)
    else:
        stream = _threads(items, work, workers=min(workers, len(items)), retries=retries, stop=stop)
    values: list[Any] = [None] * len(items)
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

    def __init__(self, stream: Iterator[Any], n: int) -> None:
        self.stream, self.n = stream, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Any]:
        return self.stream


def _serial(items: Sequence[Any], work: Callable[..., Any], retries: int, stop: threading.Event) -> Stream:
    for index, (_, item) in enumerate(items):
        if stop.is_set():
            return
        yield (index, *attempt_case(work, item, retries))


def _threads(
    items: Sequence[Any], work: Callable[..., Any], *, workers: int, retries: int, stop: threading.Event
) -> Stream:
    """Cases on ``workers`` daemon threads, so an interrupted driver does not wait for them.

    Once ``stop`` is set no thread takes a new case; the cases in flight still
    come out of the stream.
    """
    todo: queue.SimpleQueue[Any] = queue.SimpleQueue()
    done: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for index, (_, item) in enumerate(items):
        todo.put((index, item))
    for _ in range(workers):
        todo.put(None)

    def worker() -> None:
        try:
            while not stop.is_set() and (task := todo.get()) is not None:
                done.put((task[0], *attempt_case(work, task[1], retries)))
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
    ) -> list[Any]:
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
