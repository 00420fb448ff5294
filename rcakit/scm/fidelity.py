r"""Faithful replay of a recorded run, and its action-match rate (CAR §3).

A recorded run keeps, for each step, the context it decided from, the action
it took, the observation its tool returned, and the seed of the generator its
policy drew from (:class:`RecordedRun`). Replaying step :math:`k` feeds the
recorded context back to the step's policy with a generator built from the
same seed. The action-match rate is the share of replayed steps whose action
equals the recorded one,

.. math:: \mathrm{AMR} = \frac{1}{|K|} \sum_{k \in K} \mathbf{1}[\hat a_k = a_k],

with a Wilson interval. CAR reports this rate rather than assuming replay is
exact: a scripted policy and a single-stream local model with a fixed seed
replay exactly, while hosted inference may not (§3).

The rate itself (:class:`rcakit.fidelity.ActionMatch`) and the replay's own
cache name for a model (:class:`rcakit.llm.ReplayChannel`) live outside the
SCMs, since the RAG lab's replay uses them too.

Used in the chapter ``car-shapley``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rcakit import RcakitError
from rcakit.fidelity import ActionMatch
from rcakit.llm.base import request_seed
from rcakit.scm.causal_model import SCM, Record


@dataclass(frozen=True)
class RecordedRun:
    """A run's records and, per step, the seed its policy's generator was built from."""

    records: tuple[Record, ...]
    seeds: tuple[int, ...]


def step_seeds(seed: int, scm: SCM, attempt: int | str = 0) -> tuple[int, ...]:
    """One seed per step, from the master seed, the attempt and the step's index and name."""
    return tuple(request_seed(seed, f"{attempt}/{i}/{name}") for i, name in enumerate(scm.step_names))


def _check_seeds(scm: SCM, seeds: Sequence[int], n: int | None = None) -> None:
    if len(seeds) != scm.n_steps:
        raise RcakitError(f"seeds: {len(seeds)} seeds for an SCM of {scm.n_steps} steps")
    if n is not None and n != scm.n_steps:
        raise RcakitError(f"record: {n} records for an SCM of {scm.n_steps} steps")


def record_run(scm: SCM, seeds: Sequence[int]) -> RecordedRun:
    """Execute the SCM once, step ``k``'s policy drawing from ``default_rng(seeds[k])``."""
    _check_seeds(scm, seeds)
    trace: list[Record] = []
    for step, seed in zip(scm.steps, seeds, strict=True):
        context = tuple(trace)
        action = step.policy(context, np.random.default_rng(int(seed)))
        observation = step.observe(context, action) if step.observe else None
        trace.append(Record(step.name, context, action, observation))
    return RecordedRun(tuple(trace), tuple(int(s) for s in seeds))


def record_failing_run(
    scm: SCM, seed: int, max_tries: int, accept: Callable[[tuple[Record, ...]], bool] | None = None
) -> RecordedRun | None:
    """Record runs (attempt ``t`` with :func:`step_seeds` of ``(seed, t)``) until one is bad
    and, if given, ``accept(records)`` holds; keep it as ``scm.observed``.

    Returns None, leaving ``scm.observed`` unchanged, when no attempt qualifies.
    """
    for attempt in range(max_tries):
        run = record_run(scm, step_seeds(seed, scm, attempt))
        if scm.is_bad(run.records) and (accept is None or accept(run.records)):
            scm.observed = run.records
            return run
    return None


def action_match_rate(
    scm: SCM, record: Sequence[Record], seeds: Sequence[int], steps: Sequence[int] | None = None
) -> ActionMatch:
    """Replay every step (or those in ``steps``) of ``record`` from its recorded context (CAR §3).

    Step ``k``'s policy in ``scm`` re-decides from ``record[k].context`` with a
    generator built from ``seeds[k]``, the seed the recorded run drew from; the
    result compares the replayed action with ``record[k].action``. The SCM
    may differ from the one that recorded the run (a model behind a
    :class:`ReplayChannel`, a perturbed policy): that is what the rate tests.
    """
    _check_seeds(scm, seeds, len(record))
    chosen = tuple(range(scm.n_steps)) if steps is None else tuple(int(k) for k in steps)
    replayed = tuple(scm.steps[k].policy(record[k].context, np.random.default_rng(int(seeds[k]))) for k in chosen)
    return ActionMatch(chosen, tuple(record[k].action for k in chosen), replayed)
