"""An RCTA-style pipeline on a language model (LongRCA §5, Appendices D-F).

Root-Cause Tracing Attribution reads a long log in segments, recalls error
candidates, traces each back to the handoff instruction and the step that
introduced its evidence, and asks a final question over the candidates; see
:class:`RCTALocator` for the four stages as implemented here. Shared
plumbing (budget, seeds, accounting) comes from
``LLMLocator`` (:mod:`rcakit.trajectories.llm_locators`).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from rcakit.llm import Provider, Shape
from rcakit.llm.prompts import Block, PromptTooLong, clip, largest, render
from rcakit.trajectories.llm_locators import LLMLocator, roles_line, step_block, user
from rcakit.trajectories.locators import HandoffTraceLocator
from rcakit.trajectories.schema import Prediction, Trajectory
from rcakit.trajectories.signals import evidence_tokens

TASK_CHARS = 160  # characters of the task repeated in every segment prompt
PURPOSES = ("planning", "searching", "executing", "verifying", "reporting", "other")
Summary = tuple[int, int, str, int | None]  # a segment's (start, stop, purpose, candidate)
Trace = tuple[int | None, tuple[int, str] | None]  # a candidate's (nearest handoff, (introduction, rule))


class StepChoice:
    """Validator (and schema) for ``{role, step}`` with the step one of ``allowed``."""

    def __init__(self, roles: Sequence[str], allowed: Collection[int]) -> None:
        self.allowed = sorted(set(allowed))
        self.shape = Shape(role=tuple(roles), step=int)
        self.schema = self.shape.schema
        self.schema["properties"]["step"] = {"type": "integer", "enum": self.allowed}

    def __call__(self, obj: Any) -> dict[str, Any]:
        answer = self.shape(obj)
        if answer["step"] not in self.allowed:
            raise ValueError(f"field 'step' must be one of the listed steps {self.allowed}; got {answer['step']}")
        return answer


class RCTALocator(LLMLocator):
    """An RCTA-style pipeline (LongRCA §5, Appendices D-F), four stages:

    1. **Segment summaries.** The log is cut into consecutive segments of at
       most ``max_segment`` (80) steps, each as long as fits the budget with
       contents clipped to ``step_chars`` (200); more segments than the
       80-step rule alone needs count as *segmented*. To bound the calls, a
       log that would need more than ``max_segments`` (8) is cut into that
       many equal segments instead, clipped further to fit. One call per segment returns
       ``{"purpose", "candidate"}``: what the segment does, as one of
       :data:`PURPOSES` (a label rather than free text, so a small local
       model spends no output on prose and its JSON is never cut mid-string),
       and its step most likely to hold an error. (The paper's outline call, which only groups
       summaries into phases, is left out; its candidates come from the
       segments too.)
    2. **Candidate recall.** The segments' candidates, then the rule-based
       error candidates of :class:`HandoffTraceLocator` (error words, repaired
       ones dropped), at most ``max_candidates`` in that priority.
    3. **Handoff tracing.** Each candidate gets its nearest earlier handoff
       addressed to its role (else the nearest earlier one) and, when its
       backquoted evidence occurs earlier, the step that introduced it, with
       the Appendix D rule (:meth:`HandoffTraceLocator.trace`).
    4. **Final attribution.** One call sees the summaries, the candidates
       with their traces and the Appendix D rules, and returns
       ``{"role", "step"}``, the step one of the candidates, handoffs or
       introductions shown; validated, retried once, else no prediction.

    A segment question that abstains only loses that segment's candidate.
    """

    name = "rcta"
    max_tokens = 64
    RULES = (
        "Rules: an error already in a handoff instruction is rooted at the handoff; a departure from it, at the "
        "departing step; a corrected error is never the root; pick the earliest."
    )

    def __init__(
        self,
        provider: Provider,
        seed: int = 0,
        prompt_tokens: int | None = None,
        *,
        max_segment: int = 80,
        step_chars: int = 200,
        max_candidates: int = 8,
        max_segments: int = 8,
    ) -> None:
        super().__init__(provider, seed, prompt_tokens)
        self.max_segment, self.step_chars, self.max_candidates = max_segment, step_chars, max_candidates
        self.max_segments = max_segments
        self.rules = HandoffTraceLocator()

    def segments(self, trajectory: Trajectory) -> list[tuple[int, int]]:
        """Stage 1's ``(start, stop)`` ranges: greedy, each fitting the budget at ``step_chars``."""
        bounds, start, T = [], 0, len(trajectory)
        while start < T:
            most = min(T, start + self.max_segment)
            stop = largest(start + 1, most, self._segment_fits(trajectory, start)) or start + 1
            bounds.append((start, stop))
            start = stop
        if len(bounds) > self.max_segments:  # bound the calls: fewer, harder-clipped segments
            size = -(-T // self.max_segments)
            bounds = [(a, min(a + size, T)) for a in range(0, T, size)]
        if len(bounds) > -(-T // self.max_segment):
            self.inputs.segmented.add(trajectory.id)
        return bounds

    def _segment_fits(self, trajectory: Trajectory, start: int) -> Callable[[int], bool]:
        """Whether the segment ``start..stop-1``, clipped to ``step_chars``, fits the budget (as a function of stop)."""

        def fits(stop: int) -> bool:
            block = step_block(trajectory.steps[start:stop])
            build = self._segment_build(trajectory, start, stop)
            return self.budget.fits(build([render(block, self.step_chars, None)]))

        return fits

    @staticmethod
    def _segment_build(trajectory: Trajectory, start: int, stop: int) -> Callable[[list[str]], list[dict[str, Any]]]:
        def build(parts: list[str]) -> list[dict[str, Any]]:
            return user(
                f"Task: {clip(trajectory.steps[0].content, TASK_CHARS)}\n\n"
                f"Segment (steps {start}-{stop - 1}):\n{parts[0]}\n\n"
                f"What is this segment's purpose ({', '.join(PURPOSES)}), and which of its steps most likely holds "
                'an error? Reply {"purpose": ..., "candidate": step index}.'
            )

        return build

    def summarise_segments(self, trajectory: Trajectory, seed: int) -> list[Summary]:
        """Stage 1: ``(start, stop, purpose, candidate)`` per segment (``""``, ``None`` after an abstention)."""
        out: list[Summary] = []
        for start, stop in self.segments(trajectory):
            block = step_block(trajectory.steps[start:stop])
            if block.clipped(self.step_chars):
                self.inputs.truncated.add(trajectory.id)
            clipped = Block(tuple((label, clip(text, self.step_chars)) for label, text in block.items))
            shape = Shape(purpose=PURPOSES, candidate=range(start, stop))
            answer = self.ask(trajectory, [clipped], self._segment_build(trajectory, start, stop), shape, seed=seed)
            purpose, candidate = ("", None) if answer is None else (answer["purpose"], answer["candidate"])
            out.append((start, stop, purpose, candidate))
        return out

    def recall(self, trajectory: Trajectory, summaries: Sequence[Summary], tokens: list[set[str]]) -> list[int]:
        """Stage 2: segment candidates first, then rule-based ones; at most ``max_candidates``."""
        picked = [c for *_, c in summaries if c is not None]
        picked += [s.index for s in self.rules.candidates(trajectory, tokens)]
        return sorted(dict.fromkeys(picked[: self.max_candidates]))

    def trace(self, trajectory: Trajectory, candidates: Sequence[int], tokens: list[set[str]]) -> dict[int, Trace]:
        """Stage 3: ``{candidate: (nearest handoff or None, (introduction, rule) or None)}``."""
        steps = trajectory.steps
        return {
            c: (self.rules.nearest_handoff(trajectory, steps[c]), self.rules.trace(trajectory, steps[c], tokens))
            for c in candidates
        }

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        tokens = evidence_tokens(trajectory)
        summaries = self.summarise_segments(trajectory, seed)
        candidates = self.recall(trajectory, summaries, tokens) or [len(trajectory) - 1]
        traces = self.trace(trajectory, candidates, tokens)
        return self.attribute(trajectory, seed, summaries, traces)

    def attribute(
        self, trajectory: Trajectory, seed: int, summaries: Sequence[Summary], traces: Mapping[int, Trace]
    ) -> Prediction:
        """Stage 4: the validated final ``{role, step}`` over the candidates and their traces.

        When the question with all candidates does not fit the budget, the
        latest candidates are dropped (and the trajectory counted as
        truncated) until it does.
        """
        ordered = list(traces.items())
        for keep in range(len(ordered), 0, -1):
            try:
                prediction = self._attribute(trajectory, seed, summaries, dict(ordered[:keep]))
            except PromptTooLong:
                self.inputs.truncated.add(trajectory.id)
                continue
            return prediction
        raise PromptTooLong(f"prompt budget of {self.budget.limit} tokens: too small for RCTA's final question")

    def _attribute(
        self, trajectory: Trajectory, seed: int, summaries: Sequence[Summary], traces: Mapping[int, Trace]
    ) -> Prediction:
        steps, roles = trajectory.steps, trajectory.speakers
        outline = Block(tuple((f"steps {a}-{b - 1}", p or "(no answer)") for a, b, p, _ in summaries))
        notes = []
        for c, (handoff, intro) in traces.items():
            traced = [] if handoff is None else [f"nearest handoff [{handoff}]"]
            traced += [] if intro is None else [f"evidence first at [{intro[0]}] ({intro[1]})"]
            notes.append((f"candidate [{c}] {steps[c].name} ({'; '.join(traced) or 'no trace'})", steps[c].content))
        linked = sorted({h for h, _ in traces.values() if h is not None} - set(traces))
        allowed = set(traces) | set(linked) | {i[0] for _, i in traces.values() if i is not None}
        blocks = [step_block(steps[:1]), outline, Block(tuple(notes)), step_block([steps[h] for h in linked])]

        def build(parts: list[str]) -> list[dict[str, Any]]:
            return user(
                f"Task:\n{parts[0]}\n\nOutline:\n{parts[1]}\n\nCandidates:\n{parts[2]}\n\n"
                f"Handoff instructions:\n{parts[3] or '(none)'}\n\n{self.RULES}\n{roles_line(roles)} "
                f"Steps you may choose: {', '.join(map(str, sorted(allowed)))}. "
                'Reply {"role": ..., "step": ...}.'
            )

        answer = self.ask(trajectory, blocks, build, StepChoice(roles, allowed), seed=seed)
        return Prediction() if answer is None else Prediction(role=answer["role"], step=answer["step"])
