"""Root-cause locators: each maps a trajectory to a ``(role, step)`` prediction.

A :class:`Locator` returns a :class:`Prediction` whose role and step are
separate outputs (LongRCA §3.1); either may be ``None`` (an abstention, scored
as wrong). The offline locators here need no language model; the LLM-backed
ones implement the same interface: Who&When's all-at-once, step-by-step and
binary search in :mod:`rcakit.trajectories.llm_locators`, an RCTA-style
pipeline in :mod:`rcakit.trajectories.rcta`.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import zlib
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from rcakit.trajectories.schema import Prediction, Step, Trajectory, normalise_role
from rcakit.trajectories.signals import ERROR_SIGNAL, REPAIR_SIGNAL, evidence_tokens


class Locator(Protocol):
    """The interface every locator implements (offline here, LLM-backed elsewhere): a ``name`` and
    :meth:`locate`. Locators here derive from it for :meth:`locate_all`; any object with the two conforms."""

    name: str = "locator"

    @abstractmethod
    def locate(self, trajectory: Trajectory) -> Prediction:
        """Predict the responsible role and the earliest decisive step."""

    def locate_all(self, trajectories: Iterable[Trajectory]) -> list[Prediction]:
        return [self.locate(t) for t in trajectories]


class RandomLocator(Locator):
    """A uniform step in ``0..T-1`` and a uniform role among the distinct (normalised) speakers.

    Each trajectory gets its own generator seeded with ``(seed, crc32(id))``, so
    a prediction does not depend on the order of the list.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def locate(self, trajectory: Trajectory) -> Prediction:
        rng = np.random.default_rng([self.seed, zlib.crc32(trajectory.id.encode("utf-8"))])
        roles = trajectory.speakers
        return Prediction(role=roles[int(rng.integers(len(roles)))], step=int(rng.integers(len(trajectory))))


def expected_random_accuracy(trajectories: Iterable[Trajectory], k: int = 0) -> dict[str, Any]:
    """Analytic expectation of :class:`RandomLocator`'s scores.

    Step within ``k``: mean over trajectories of ``|[r-k, r+k] ∩ [0, T-1]| / T``
    (``k = 0`` gives the exact rate ``mean 1/T``). Role: mean of
    ``1 / |recorded roles|`` when the label is one of them, else 0.
    """
    step, role = [], []
    for t in trajectories:
        T, r = len(t), t.truth.step
        step.append((min(T - 1, r + k) - max(0, r - k) + 1) / T)
        role.append(1 / len(t.roles) if normalise_role(t.truth.role) in t.roles else 0.0)
    return {"step": float(np.mean(step)), "role": float(np.mean(role))}


class TerminalLocator(Locator):
    """The last step, and the role that emitted it: what a symptom-only reading blames."""

    name = "terminal"

    def locate(self, trajectory: Trajectory) -> Prediction:
        last = trajectory.steps[-1]
        return Prediction(role=last.speaker, step=last.index)


def error_steps(trajectory: Trajectory) -> list[Step]:
    """Steps after the task (step 0) whose text carries an explicit error signal."""
    return [s for s in trajectory.steps[1:] if ERROR_SIGNAL.search(s.content)]


def error_word(step: Step) -> str | None:
    """The first error word of a step, lower-cased, or ``None`` when its text carries none."""
    match = ERROR_SIGNAL.search(step.content)
    return None if match is None else match.group(0).lower()


class FirstErrorSignalLocator(Locator):
    """The first step with an explicit error signal (and its emitter); the last step if none."""

    name = "first_error_signal"

    def locate(self, trajectory: Trajectory) -> Prediction:
        hits = error_steps(trajectory)
        step = hits[0] if hits else trajectory.steps[-1]
        return Prediction(role=step.speaker, step=step.index)


class HandoffTraceLocator(Locator):
    """A deterministic, rule-based analogue of RCTA (LongRCA §5, Appendices D-E).

    Rules, in order:

    1. **Segmentation.** Cut the trajectory into consecutive segments before
       every role-changing handoff instruction (a ``X (-> Y)`` step whose
       recipient differs from the previous instruction's) and after at most
       ``max_segment`` (80) steps.
    2. **Candidate recall.** In each segment keep the first ``per_segment``
       steps (after the task) with an explicit error signal
       (``ERROR_SIGNAL``); at most ``max_candidates`` (80) in all. The
       evidence of a candidate is its backquoted tokens. A candidate is
       *repaired*, and dropped, when a later step carries a repair signal
       (``REPAIR_SIGNAL``) and quotes one of its tokens, or, for a
       candidate without tokens, when a repair signal follows within
       ``repair_window`` (3) steps.
    3. **Tracing.** The *introduction* of a candidate is the earliest step,
       up to the candidate, that quotes one of its tokens. The candidate of
       role Y is compared with the nearest earlier handoff addressed to Y (for
       a role that never receives one: the nearest earlier handoff). If that
       instruction quotes a token, the error was already in the instruction
       (Appendix D, first rule; the introduction is then that handoff or an
       earlier quoting step); if the first quote comes after it, the
       candidate's side departed from the instruction (second rule); if it
       comes before it, the error was inherited from an earlier block. A
       candidate with tokens is *supported*; one without cannot be traced.
    4. **Step.** Predict the earliest introduction over supported,
       unrepaired candidates; without any, the earliest unrepaired candidate
       itself; without candidates, the last step.
    5. **Role, by its own rule** (Appendix D: RCTA predicts the role in a
       separate field, and the emitter of the chosen step does not decide
       it). Every unrepaired candidate casts one vote: a traced one for the
       role that introduced its evidence under the rule of step 3 (the
       sender of the handoff for ``instruction``, the first quoting speaker
       otherwise), an untraced one for the sender of the nearest earlier
       handoff addressed to its role (the role it was executing for), or for
       its own speaker when none was. The role with most votes wins; ties go
       to the role whose earliest vote comes first. Without candidates, the
       role that issued most handoff instructions (the one directing the
       run), else the most frequent speaker after the task. The papers do not
       fix an offline role rule; this one is chosen here, so the role can be
       right when the step is wrong and the other way round.
    """

    name = "handoff_trace"

    def __init__(
        self, max_segment: int = 80, per_segment: int = 5, max_candidates: int = 80, repair_window: int = 3
    ) -> None:
        self.max_segment, self.per_segment = max_segment, per_segment
        self.max_candidates, self.repair_window = max_candidates, repair_window

    def segments(self, trajectory: Trajectory) -> list[tuple[int, int]]:
        """Rule 1: ``(start, stop)`` index ranges covering the trajectory."""
        bounds, start, last_recipient = [], 0, None
        for s in trajectory.steps:
            role_change = s.recipient is not None and normalise_role(s.recipient) != last_recipient
            if s.index > start and (role_change or s.index - start >= self.max_segment):
                bounds.append((start, s.index))
                start = s.index
            if s.recipient is not None:
                last_recipient = normalise_role(s.recipient)
        bounds.append((start, len(trajectory)))
        return bounds

    def candidates(self, trajectory: Trajectory, tokens: list[set[str]]) -> list[Step]:
        """Rule 2: recalled, unrepaired error steps (``tokens[i]``: evidence of step ``i``)."""
        flagged = {s.index for s in error_steps(trajectory)}
        recalled = []
        for start, stop in self.segments(trajectory):
            recalled += [i for i in range(start, stop) if i in flagged][: self.per_segment]
        steps = [trajectory.steps[i] for i in recalled[: self.max_candidates]]
        return [s for s in steps if not self._repaired(trajectory, s, tokens)]

    def _repaired(self, trajectory: Trajectory, step: Step, tokens: list[set[str]]) -> bool:
        mine = tokens[step.index]
        stop = len(trajectory) if mine else step.index + 1 + self.repair_window
        return any(
            REPAIR_SIGNAL.search(trajectory.steps[j].content) and (not mine or mine & tokens[j])
            for j in range(step.index + 1, min(stop, len(trajectory)))
        )

    def trace(self, trajectory: Trajectory, candidate: Step, tokens: list[set[str]]) -> tuple[int, str] | None:
        """Rule 3: ``(introducing step, Appendix D rule)``; ``None`` for a candidate without evidence."""
        mine = tokens[candidate.index]
        if not mine:
            return None
        first = next(j for j in range(candidate.index + 1) if mine & tokens[j])
        handoff = self.nearest_handoff(trajectory, candidate)
        if handoff is not None and mine & tokens[handoff]:
            return first, "instruction"
        return first, "departure" if handoff is None or first > handoff else "inherited"

    @staticmethod
    def nearest_handoff(trajectory: Trajectory, candidate: Step) -> int | None:
        """The nearest earlier handoff addressed to the candidate's role, else the nearest earlier one."""
        earlier = [h for h in trajectory.handoffs if h.step < candidate.index]
        mine = [h for h in earlier if normalise_role(h.recipient) == normalise_role(candidate.speaker)]
        pool = mine or earlier
        return pool[-1].step if pool else None

    def vote(self, trajectory: Trajectory, candidate: Step, traced: tuple[int, str] | None) -> tuple[int, str]:
        """Rule 5: ``(step of the vote, role voted for)`` for one unrepaired candidate."""
        if traced is not None:
            first, rule = traced
            if rule == "instruction":
                handoff = self.nearest_handoff(trajectory, candidate)
                assert handoff is not None  # trace names the rule "instruction" only after finding the handoff
                return handoff, trajectory.steps[handoff].speaker
            return first, trajectory.steps[first].speaker
        handoff = self.nearest_handoff(trajectory, candidate)
        if handoff is not None and normalise_role(trajectory.steps[handoff].recipient) == normalise_role(
            candidate.speaker
        ):
            return handoff, trajectory.steps[handoff].speaker
        return candidate.index, candidate.speaker

    def role(self, trajectory: Trajectory, votes: list[tuple[int, str]]) -> str:
        """Rule 5: the most voted role (ties: earliest vote), or the directing role without votes."""
        if not votes:
            senders = [h.sender for h in trajectory.handoffs]
            pool = senders or [s.speaker for s in trajectory.steps[1:]] or [trajectory.steps[0].speaker]
            votes = [(i, r) for i, r in enumerate(pool)]
        tally: dict[str, list[Any]] = {}
        for at, role in sorted(votes):
            key = normalise_role(role)
            entry = tally.setdefault(key, [0, at, role])
            entry[0] += 1
        return max(tally.values(), key=lambda e: (e[0], -e[1]))[2]

    def locate(self, trajectory: Trajectory) -> Prediction:
        tokens = evidence_tokens(trajectory)
        candidates = self.candidates(trajectory, tokens)
        traced = [self.trace(trajectory, c, tokens) for c in candidates]
        introductions = [i for i in traced if i is not None]
        if introductions:
            step = trajectory.steps[min(introductions)[0]]
        elif candidates:
            step = candidates[0]
        else:
            step = trajectory.steps[-1]
        votes = [self.vote(trajectory, c, t) for c, t in zip(candidates, traced, strict=True)]
        return Prediction(role=self.role(trajectory, votes), step=step.index)


OFFLINE_LOCATORS = ("random", "terminal", "first_error_signal", "handoff_trace")


def offline_locators(seed: int = 0) -> list[Locator]:
    """One instance of every offline locator, in :data:`OFFLINE_LOCATORS` order."""
    return [RandomLocator(seed), TerminalLocator(), FirstErrorSignalLocator(), HandoffTraceLocator()]
