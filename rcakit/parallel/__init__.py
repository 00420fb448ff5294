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
connects. A run waits for its next case at most :func:`stall_timeout` seconds
(``$RCAKIT_DASK_TIMEOUT``), saying every minute that it waits: a frozen worker
or scheduler ends the run with one line, not a silent hang.

Where the model lives: ``work`` builds nothing host-specific in the driver. A
model client made with :class:`PerProcess` is built in the process that runs the
case, so a Dask worker reads ``OLLAMA_HOST`` from its own environment. Every call
through ``rcakit.llm.CachedProvider`` is counted per (machine, server) in the case's
:class:`Served` tally, which a run returns: the chapter can print which hosts
served how many calls. The ``calls`` column depends only on the requests, the
``model_calls`` column (cache misses) on the cache's state: only ``calls`` may go
into a notebook's outputs.

Modules, each one concept: :mod:`~rcakit.parallel.executor` (:func:`run_cases`,
:class:`Runner`), :mod:`~rcakit.parallel.cluster` (the Dask path and
:class:`PerProcess`), :mod:`~rcakit.parallel.scheduler` (the settings and the
probe), :mod:`~rcakit.parallel.tally` (:class:`Served`, one case's attempts) and
:mod:`~rcakit.parallel.failures` (:class:`CaseFailed`, :func:`one_line`).
Every name below is imported from ``rcakit.parallel``.

Used in the chapters: `coverage-collapse`, `content-corruption`, `longrca-strata`.
"""

from __future__ import annotations

from rcakit.parallel.cluster import DEFAULT_STALL_SECONDS, STALL_ENV, WORKER_SECONDS, PerProcess, stall_timeout
from rcakit.parallel.executor import RETRIES, Outcome, Runner, report_served, run_cases
from rcakit.parallel.executor import Progress as Progress  # a type alias: importable, not on the API page
from rcakit.parallel.failures import CaseFailed, one_line
from rcakit.parallel.scheduler import (
    CONNECT_SECONDS,
    MAX_WORKERS,
    SCHEDULER_ENV,
    check_scheduler,
    check_workers,
    probe_scheduler,
    scheduler_address,
)
from rcakit.parallel.tally import MACHINE, Served, announce, count_call

__all__ = [
    "CONNECT_SECONDS",
    "DEFAULT_STALL_SECONDS",
    "MACHINE",
    "MAX_WORKERS",
    "RETRIES",
    "SCHEDULER_ENV",
    "STALL_ENV",
    "WORKER_SECONDS",
    "run_cases",
    "Outcome",
    "Runner",
    "report_served",
    "CaseFailed",
    "one_line",
    "PerProcess",
    "check_workers",
    "check_scheduler",
    "scheduler_address",
    "probe_scheduler",
    "stall_timeout",
    "Served",
    "count_call",
    "announce",
]
