"""An agent run as a structural causal model, and the do-operations on it (CAR §2).

An agent run is a sequence of steps. At each step a stochastic policy draws an
action from the decision context (the earlier steps' records), and the
environment returns an observation. A user-supplied outcome function scores
the finished trace; *bad* means a score of at least 0.5.

An intervention (:class:`Do`) holds the steps before ``k`` at their observed
values and changes step ``k``; every later step re-decides under its policy,
so one intervention yields an outcome *distribution* over forward rollouts.
The ``do_*`` functions build the interventions CAR §2 lists: resample, force
an action, replace an observation, edit the context, swap the policy, and
hold an arbitrary coalition (the value of a coalition in CAR §4's Shapley).

Used in the chapters: ``car-shapley`` and ``primer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class RefundPolicy(Protocol):
    """A step's stochastic policy (CAR §2): the action drawn from the decision ``context`` (the earlier
    steps' records) with the generator ``rng``; all its randomness comes from ``rng``, so a seed replays it."""

    def __call__(self, context: tuple[Any, ...], rng: np.random.Generator, /) -> Any: ...


def bernoulli_policy(p: float, yes: Any, no: Any) -> RefundPolicy:
    """A context-free policy: ``yes`` with probability ``p``, else ``no``."""
    return lambda context, rng: yes if rng.random() < p else no


def uniform_policy(choices: Sequence[Any]) -> RefundPolicy:
    """A context-free policy: one of ``choices``, uniformly."""
    return lambda context, rng: choices[int(rng.integers(len(choices)))]


@dataclass(frozen=True)
class Record:
    """One executed step: its name, the context it decided from, action, observation."""

    name: str
    context: tuple[Any, ...]
    action: Any
    observation: Any = None


@dataclass(frozen=True)
class PolicyStep:
    """A step of an SCM: a stochastic ``policy(context, rng) -> action`` and a
    deterministic environment ``observe(context, action) -> observation`` (None if absent)."""

    name: str
    policy: RefundPolicy
    observe: Callable[[tuple[Any, ...], Any], Any] | None = None


@dataclass(frozen=True)
class Do:
    """An intervention: which steps are held at their observed values, and what
    is forced, replaced, edited or swapped. Build it with the ``do_*`` functions."""

    hold: frozenset[Any] = frozenset()
    actions: Mapping[int, Any] = field(default_factory=dict)
    observations: Mapping[int, Any] = field(default_factory=dict)
    contexts: Mapping[int, Callable[[tuple[Any, ...]], tuple[Any, ...]]] = field(default_factory=dict)
    policies: Mapping[int, RefundPolicy] = field(default_factory=dict)


NO_INTERVENTION = Do()  # the run replayed under its own policies


def do_resample(k: int) -> Do:
    """Hold steps before ``k``; redraw step ``k`` from its unchanged policy (the null do)."""
    return Do(hold=frozenset(range(k)))


def do_force_action(k: int, action: Any) -> Do:
    """Hold steps before ``k``; set step ``k``'s action to ``action``."""
    return Do(hold=frozenset(range(k)), actions={k: action})


def do_replace_observation(k: int, observation: Any, observed_action: Any) -> Do:
    """Hold steps before ``k`` and step ``k``'s action; replace what the tool returned."""
    return Do(hold=frozenset(range(k)), actions={k: observed_action}, observations={k: observation})


def do_edit_context(k: int, edit: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> Do:
    """Hold steps before ``k``; step ``k`` decides from ``edit(context)`` instead."""
    return Do(hold=frozenset(range(k)), contexts={k: edit})


def do_swap_policy(k: int, policy: RefundPolicy, n_steps: int) -> Do:
    """Hold steps before ``k``; steps ``k`` onward act under ``policy``."""
    return Do(hold=frozenset(range(k)), policies={i: policy for i in range(k, n_steps)})


def do_hold(steps: frozenset[Any] | set[Any] | range) -> Do:
    """Hold an arbitrary coalition of steps; all others re-decide (Shapley's v(S), CAR §4)."""
    return Do(hold=frozenset(steps))


@dataclass
class SCM:
    """An agent run as an SCM: steps, an outcome score in [0, 1], the observed trace.

    ``analytic_v``, when the model is small enough to have one, is the closed
    form of v(S) = P(bad | steps in S held at their observed actions).
    """

    steps: Sequence[PolicyStep]
    outcome: Callable[[tuple[Record, ...]], float]
    observed: tuple[Record, ...] = ()
    analytic_v: Callable[[frozenset[Any]], float] | None = None

    @property
    def n_steps(self) -> int:
        """The number of steps (the players of the Shapley game)."""
        return len(self.steps)

    @property
    def step_names(self) -> list[str]:
        """The steps' names, in order."""
        return [step.name for step in self.steps]

    def rollout(
        self, rng: np.random.Generator, do: Do = NO_INTERVENTION, streams: Sequence[np.random.Generator] | None = None
    ) -> tuple[Record, ...]:
        """One forward execution under ``do``; with ``streams``, step ``i``'s policy draws from
        ``streams[i]`` instead of ``rng`` (common random numbers: two coalitions rolled out with the same
        streams differ only where their held steps do)."""
        trace: list[Record] = []
        for i, step in enumerate(self.steps):
            context = tuple(trace)
            if i in do.contexts:
                context = do.contexts[i](context)
            if i in do.hold:
                seen = self.observed[i]
                trace.append(Record(step.name, context, seen.action, seen.observation))
                continue
            if i in do.actions:
                action = do.actions[i]
            else:
                action = do.policies.get(i, step.policy)(context, rng if streams is None else streams[i])
            if i in do.observations:
                obs = do.observations[i]
            else:
                obs = step.observe(context, action) if step.observe else None
            trace.append(Record(step.name, context, action, obs))
        return tuple(trace)

    def is_bad(self, trace: tuple[Record, ...]) -> bool:
        """Whether a trace's outcome score is at least 0.5."""
        return self.outcome(trace) >= 0.5

    def sample_bad(self, rng: np.random.Generator, do: Do, k: int) -> np.ndarray:
        """Bad-outcome indicators of ``k`` rollouts under ``do``."""
        return np.array([self.is_bad(self.rollout(rng, do)) for _ in range(k)], dtype=bool)

    def observe_run(self, rng: np.random.Generator, max_tries: int = 1_000_000) -> SCM:
        """Draw runs until one fails and keep it as the observed trace.

        ``max_tries`` finds a failure of probability 1e-4 (the AND run at its
        smallest ``q``, 0.01) all but surely: it is missed with probability
        :math:`e^{-100}`. Only an outcome that is never bad reaches the error.
        """
        for _ in range(max_tries):
            trace = self.rollout(rng)
            if self.is_bad(trace):
                self.observed = trace
                return self
        raise RuntimeError(f"no failing run in {max_tries} draws; is the outcome ever bad?")
