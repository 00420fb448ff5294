"""Language-model locators behind the :class:`~rcakit.trajectories.locators.Locator` interface.

Who&When's three prompting baselines (Zhang et al. 2025, §4; LongRCA §6.1)
and an RCTA-style pipeline (LongRCA §5 and Appendices D-F), each asking a
:mod:`rcakit.llm` provider for JSON through :func:`rcakit.llm.ask_json`
(validated, retried once with the error, then abstained). Choices the papers
leave open, fixed here:

- every prompt shows step indices (``[i] name: content``) and the recorded
  roles; decoding is greedy with a per-case seed from the chapter seed and the
  trajectory id (:func:`rcakit.llm.request_seed`), so cache keys do not depend on case order;
- an abstention on any question a prediction depends on makes the whole
  prediction invalid (``Prediction()``), which every metric scores as wrong;
- a prompt must fit ``provider.context_window`` minus the reply and, when set,
  a smaller ``prompt_tokens`` budget (sized with ``provider.count_tokens``).
  What does not fit is cut on purpose and marked in the prompt: first every
  shown step's content is clipped to a common length (``…[N more characters
  cut]``), then, if that is not enough, steps are left out
  (``[steps a-b not shown: ...]``). Each locator's :class:`LongInputs`
  records which trajectories were truncated, segmented or left unfinished.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Shape, ask_json, request_seed
from rcakit.trajectories.locators import EVIDENCE_TOKEN, HandoffTraceLocator, Locator
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.schema import Prediction, Step, Trajectory, normalise_role

LLM_LOCATORS = ("all_at_once", "step_by_step", "binary_search", "rcta")
MIN_CHARS = 24  # shortest clipped content before steps are left out
MAX_TOKEN_CHARS = 16  # a generous bound on characters per token, to skip hopeless prompt sizes
RETRY_TOKENS = 96  # the retry's error message, with room to spare
TASK_CHARS = 160
PURPOSES = ("planning", "searching", "executing", "verifying", "reporting", "other")  # the task as repeated in RCTA's prompts
SYSTEM = (
    "You diagnose a failed multi-agent run. Each step is shown as [index] role: content. "
    "The decisive error is the earliest step that introduced the mistake that made the run fail; "
    "an error that was corrected later is not it. Reply with one JSON object only."
)


def speakers(trajectory: Trajectory) -> tuple[str, ...]:
    """The recorded roles a model may name: distinct speakers, first spelling, sorted by normal form."""
    first = {}
    for s in trajectory.steps:
        first.setdefault(normalise_role(s.speaker), s.speaker)
    return tuple(first[k] for k in sorted(first) if k)


def llm_subset(trajectories: Sequence[Trajectory], n: int, seed: int) -> list[Trajectory]:
    """A seeded sample of at most ``n`` trajectories, kept in their original order."""
    if n >= len(trajectories):
        return list(trajectories)
    rng = np.random.default_rng([int(seed), len(trajectories)])
    return [trajectories[i] for i in sorted(rng.choice(len(trajectories), size=n, replace=False))]


@dataclass
class LongInputs:
    """Trajectories (by id) whose prompts were cut, split, or whose search stopped at its cap."""

    truncated: set = field(default_factory=set)
    segmented: set = field(default_factory=set)
    unfinished: set = field(default_factory=set)

    def counts(self) -> dict:
        return {"truncated": len(self.truncated), "segmented": len(self.segmented), "unfinished": len(self.unfinished)}


@dataclass(frozen=True)
class Block:
    """Consecutive items (``(label, text)``) shown together; ``keep`` is the end kept when steps must go."""

    items: tuple
    keep: str = "head"

    @classmethod
    def of(cls, steps: Sequence[Step], keep: str = "head") -> "Block":
        return cls(tuple((f"[{s.index}] {s.name}", s.content) for s in steps), keep)


def clip(text: str, cap: int | None) -> str:
    """``text`` cut to ``cap`` characters with a marker naming what was cut."""
    if cap is None or len(text) <= cap:
        return text
    return f"{text[:cap]} …[{len(text) - cap} more characters cut]"


def render(block: Block, cap: int | None, shown: int | None) -> str:
    """One block as lines, contents clipped to ``cap``, at most ``shown`` items (marker for the rest)."""
    items = block.items
    if shown is None or shown >= len(items):
        kept, omitted = items, ()
    elif block.keep == "head":
        kept, omitted = items[:shown], items[shown:]
    else:
        kept, omitted = items[len(items) - shown :], items[: len(items) - shown]
    lines = [f"{label}: {clip(text, cap)}" for label, text in kept]
    if omitted:
        span = f"{omitted[0][0].split()[0]} to {omitted[-1][0].split()[0]}"
        marker = f"[{len(omitted)} items ({span}) not shown: the prompt budget is full]"
        lines = lines + [marker] if block.keep == "head" else [marker] + lines
    return "\n".join(lines)


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """The largest ``v`` in ``lo..hi`` with ``ok(v)`` (``ok`` monotone decreasing), else ``None``."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


class PromptTooLong(RcakitError):
    """Even with every item cut, the question does not fit the prompt budget."""


class Budget:
    """How many prompt tokens a call may use: the smaller of ``prompt_tokens`` and the window
    less room for the reply and for :func:`~rcakit.llm.ask_json`'s retry (which adds the first
    reply and a short error message to the prompt)."""

    def __init__(self, provider, max_tokens: int, prompt_tokens: int | None = None):
        window = provider.context_window
        room = 2 * max_tokens + RETRY_TOKENS
        limits = [x for x in (window - room if window else None, prompt_tokens) if x]
        self.provider, self.limit = provider, min(limits) if limits else None

    def fits(self, messages) -> bool:
        return self.limit is None or self.provider.count_tokens(messages) <= self.limit

    def fit(self, blocks: Sequence[Block], build: Callable[[list[str]], list]) -> tuple[list, bool]:
        """Messages ``build([rendered block, ...])`` within the budget, and whether anything was cut.

        Clips every content to the largest common length that fits; if even
        :data:`MIN_CHARS` does not, shows the largest common number of items
        per block (the block's ``keep`` end; possibly none, leaving only the
        marker). Fails only if the question without any item does not fit.
        """
        def at(cap, shown=None):
            return build([render(b, cap, shown) for b in blocks])

        chars = [len(t) for b in blocks for _, t in b.items]
        # no token is shorter than a character, nor (in practice) longer than MAX_TOKEN_CHARS: skip hopeless sizes
        hopeless = self.limit is not None and sum(chars) > MAX_TOKEN_CHARS * self.limit
        if not hopeless and self.fits(at(None)):
            return at(None), False
        top = max(chars, default=MIN_CHARS) if self.limit is None else min(max(chars, default=0), MAX_TOKEN_CHARS * self.limit)
        cap = _largest(MIN_CHARS, max(top, MIN_CHARS), lambda c: self.fits(at(c)))
        if cap is not None:
            return at(cap), True
        most = max(len(b.items) for b in blocks)
        shown = _largest(0, most, lambda n: self.fits(at(MIN_CHARS, n)))
        if shown is None:
            raise PromptTooLong(
                f"prompt budget of {self.limit} tokens (the prompt cap or the context window): too small for the question itself"
            )
        return at(MIN_CHARS, shown), True


def user(text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


class LLMLocator(Locator):
    """Shared plumbing: provider, seed, budget, accounting and the long-input report.

    ``provider`` is any :mod:`rcakit.llm` provider, normally ``cached(...)``
    with a :class:`~rcakit.llm.MethodUsage`; each :meth:`locate` charges one
    case to it, so its calls and tokens per case are per diagnosis.
    """

    max_tokens = 32

    def __init__(self, provider, seed: int = 0, prompt_tokens: int | None = None):
        if not provider:
            raise RcakitError("provider: the LLM locators need a language model; none is set")
        self.chat, self.seed = provider, seed
        self.budget = Budget(provider, self.max_tokens, prompt_tokens)
        self.inputs = LongInputs()

    def locate(self, trajectory: Trajectory) -> Prediction:
        prediction = self.diagnose(trajectory, request_seed(self.seed, trajectory.id))
        usage = getattr(self.chat, "accounting", None)
        if usage is not None:
            usage.add_case()
        return prediction

    @abstractmethod
    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        """The prediction for one trajectory, asked with ``seed``."""

    def ask(self, trajectory: Trajectory, blocks, build, validate, seed: int, max_tokens: int | None = None):
        """Fit the prompt (recording a cut), then ``ask_json``; ``None`` is an abstention."""
        messages, cut = self.budget.fit(blocks, build)
        if cut:
            self.inputs.truncated.add(trajectory.id)
        return ask_json(self.chat, messages, validate, seed=seed, max_tokens=max_tokens or self.max_tokens)


def roles_line(roles) -> str:
    return "Roles: " + ", ".join(roles) + "."


class AllAtOnceLocator(LLMLocator):
    """Who&When all-at-once: the whole log in one prompt, one JSON ``{role, step}``.

    When the log does not fit, contents are clipped and then the latest steps
    are left out (the head, with the task, is kept).
    """

    name = "all_at_once"

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        roles = speakers(trajectory)

        def build(parts):
            return user(
                f"Run log:\n{parts[0]}\n\n{roles_line(roles)} Which role is responsible for the failure, and which "
                'step index holds the decisive error? Reply {"role": ..., "step": ...}.'
            )

        shape = Shape(role=roles, step=range(len(trajectory)))
        answer = self.ask(trajectory, [Block.of(trajectory.steps)], build, shape, seed)
        return Prediction() if answer is None else Prediction(role=answer["role"], step=answer["step"])


class StepByStepLocator(LLMLocator):
    """Who&When step-by-step: walk the log in order, asking of each step whether it is the
    decisive error; stop at the first ``yes`` and blame that step and its speaker.

    The prompt shows the task, the log so far (oldest steps left out first
    when it does not fit) and the current step. A log with no flagged step,
    an abstention, or ``max_questions`` questions without a ``yes`` (reported
    as unfinished) gives no prediction.
    """

    name = "step_by_step"
    ANSWER = Shape(error=("yes", "no"))

    def __init__(self, provider, seed: int = 0, prompt_tokens: int | None = None, max_questions: int | None = None):
        super().__init__(provider, seed, prompt_tokens)
        self.max_questions = max_questions

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        steps = trajectory.steps

        def build(parts):
            task, history, current = parts
            return user(
                f"Task:\n{task}\n\nLog so far:\n{history or '(nothing yet)'}\n\nCurrent step:\n{current}\n\n"
                'Is the current step the decisive error that made the run fail? Reply {"error": "yes"} or {"error": "no"}.'
            )

        for i, step in enumerate(steps):
            if self.max_questions is not None and i >= self.max_questions:
                self.inputs.unfinished.add(trajectory.id)
                return Prediction()
            blocks = [Block.of(steps[:1]), Block.of(steps[1:i], keep="tail"), Block.of([step])]
            answer = self.ask(trajectory, blocks, build, self.ANSWER, seed)
            if answer is None:
                return Prediction()
            if answer["error"] == "yes":
                return Prediction(role=step.speaker, step=step.index)
        return Prediction()


class BinarySearchLocator(LLMLocator):
    """Who&When binary search: halve ``[lo, hi]`` (first half ``lo..mid``, ``mid = (lo + hi) // 2``),
    ask which half holds the decisive error, recurse; blame the last step left and its speaker.

    A log of ``T`` steps takes ``ceil(log2 T)`` or ``floor(log2 T)`` questions.
    Each prompt shows the task and both halves (each half's later steps are
    left out first when they do not fit).
    """

    name = "binary_search"
    ANSWER = Shape(half=("first", "second"))

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        steps, lo, hi = trajectory.steps, 0, len(trajectory) - 1
        while lo < hi:
            mid = (lo + hi) // 2

            def build(parts, lo=lo, mid=mid, hi=hi):
                return user(
                    f"Task:\n{parts[0]}\n\nFirst half (steps {lo}-{mid}):\n{parts[1]}\n\n"
                    f"Second half (steps {mid + 1}-{hi}):\n{parts[2]}\n\n"
                    'Which half contains the decisive error? Reply {"half": "first"} or {"half": "second"}.'
                )

            blocks = [Block.of(steps[:1]), Block.of(steps[lo : mid + 1]), Block.of(steps[mid + 1 : hi + 1])]
            answer = self.ask(trajectory, blocks, build, self.ANSWER, seed)
            if answer is None:
                return Prediction()
            lo, hi = (lo, mid) if answer["half"] == "first" else (mid + 1, hi)
        return Prediction(role=steps[lo].speaker, step=lo)


class StepChoice:
    """Validator (and schema) for ``{role, step}`` with the step one of ``allowed``."""

    def __init__(self, roles: Sequence[str], allowed: Sequence[int]):
        self.allowed = sorted(set(allowed))
        self.shape = Shape(role=tuple(roles), step=int)
        self.schema = self.shape.schema
        self.schema["properties"]["step"] = {"type": "integer", "enum": self.allowed}

    def __call__(self, obj) -> dict:
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

    def __init__(self, provider, seed: int = 0, prompt_tokens: int | None = None, max_segment: int = 80,
                 step_chars: int = 200, max_candidates: int = 8, max_segments: int = 8):
        super().__init__(provider, seed, prompt_tokens)
        self.max_segment, self.step_chars, self.max_candidates = max_segment, step_chars, max_candidates
        self.max_segments = max_segments
        self.rules = HandoffTraceLocator()

    def segments(self, trajectory: Trajectory) -> list[tuple[int, int]]:
        """Stage 1's ``(start, stop)`` ranges: greedy, each fitting the budget at ``step_chars``."""
        bounds, start, T = [], 0, len(trajectory)
        while start < T:
            most = min(T, start + self.max_segment)
            fits = lambda stop: self.budget.fits(self._segment_prompt(trajectory, start, stop, self.step_chars))
            stop = _largest(start + 1, most, fits) or start + 1
            bounds.append((start, stop))
            start = stop
        if len(bounds) > self.max_segments:  # bound the calls: fewer, harder-clipped segments
            size = -(-T // self.max_segments)
            bounds = [(a, min(a + size, T)) for a in range(0, T, size)]
        if len(bounds) > -(-T // self.max_segment):
            self.inputs.segmented.add(trajectory.id)
        return bounds

    def _segment_prompt(self, trajectory: Trajectory, start: int, stop: int, cap: int | None) -> list:
        return self._segment_build(trajectory, start, stop)([render(Block.of(trajectory.steps[start:stop]), cap, None)])

    @staticmethod
    def _segment_build(trajectory: Trajectory, start: int, stop: int):
        def build(parts):
            return user(
                f"Task: {clip(trajectory.steps[0].content, TASK_CHARS)}\n\nSegment (steps {start}-{stop - 1}):\n{parts[0]}\n\n"
                f"What is this segment's purpose ({', '.join(PURPOSES)}), and which of its steps most likely holds "
                'an error? Reply {"purpose": ..., "candidate": step index}.'
            )
        return build

    def summarise(self, trajectory: Trajectory, seed: int) -> list[tuple[int, int, str, int | None]]:
        """Stage 1: ``(start, stop, purpose, candidate)`` per segment (``""``, ``None`` after an abstention)."""
        out = []
        for start, stop in self.segments(trajectory):
            block = Block.of(trajectory.steps[start:stop])
            if any(len(t) > self.step_chars for _, t in block.items):
                self.inputs.truncated.add(trajectory.id)
            clipped = Block(tuple((label, clip(text, self.step_chars)) for label, text in block.items))
            shape = Shape(purpose=PURPOSES, candidate=range(start, stop))
            answer = self.ask(trajectory, [clipped], self._segment_build(trajectory, start, stop), shape, seed)
            out.append((start, stop, "" if answer is None else answer["purpose"], None if answer is None else answer["candidate"]))
        return out

    def recall(self, trajectory: Trajectory, summaries, tokens) -> list[int]:
        """Stage 2: segment candidates first, then rule-based ones; at most ``max_candidates``."""
        picked = [c for *_, c in summaries if c is not None]
        picked += [s.index for s in self.rules.candidates(trajectory, tokens)]
        return sorted(dict.fromkeys(picked[: self.max_candidates]))

    def trace(self, trajectory: Trajectory, candidates, tokens) -> dict[int, tuple]:
        """Stage 3: ``{candidate: (nearest handoff or None, (introduction, rule) or None)}``."""
        steps = trajectory.steps
        return {c: (self.rules.nearest_handoff(trajectory, steps[c]), self.rules.trace(trajectory, steps[c], tokens))
                for c in candidates}

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        tokens = [set(EVIDENCE_TOKEN.findall(s.content)) for s in trajectory.steps]
        summaries = self.summarise(trajectory, seed)
        candidates = self.recall(trajectory, summaries, tokens) or [len(trajectory) - 1]
        traces = self.trace(trajectory, candidates, tokens)
        return self.attribute(trajectory, seed, summaries, traces)

    def attribute(self, trajectory: Trajectory, seed: int, summaries, traces) -> Prediction:
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

    def _attribute(self, trajectory: Trajectory, seed: int, summaries, traces) -> Prediction:
        steps, roles = trajectory.steps, speakers(trajectory)
        outline = Block(tuple((f"steps {a}-{b - 1}", p or "(no answer)") for a, b, p, _ in summaries))
        notes = []
        for c, (handoff, intro) in traces.items():
            traced = [] if handoff is None else [f"nearest handoff [{handoff}]"]
            traced += [] if intro is None else [f"evidence first at [{intro[0]}] ({intro[1]})"]
            notes.append((f"candidate [{c}] {steps[c].name} ({'; '.join(traced) or 'no trace'})", steps[c].content))
        linked = sorted({h for h, _ in traces.values() if h is not None} - set(traces))
        allowed = set(traces) | set(linked) | {i[0] for _, i in traces.values() if i is not None}
        blocks = [Block.of(steps[:1]), outline, Block(tuple(notes)), Block.of([steps[h] for h in linked])]

        def build(parts):
            return user(
                f"Task:\n{parts[0]}\n\nOutline:\n{parts[1]}\n\nCandidates:\n{parts[2]}\n\n"
                f"Handoff instructions:\n{parts[3] or '(none)'}\n\n{self.RULES}\n{roles_line(roles)} "
                f"Steps you may choose: {', '.join(map(str, sorted(allowed)))}. "
                'Reply {"role": ..., "step": ...}.'
            )

        answer = self.ask(trajectory, blocks, build, StepChoice(roles, allowed), seed)
        return Prediction() if answer is None else Prediction(role=answer["role"], step=answer["step"])


def llm_locators(providers: dict, seed: int = 0, prompt_tokens: int | None = None,
                 max_questions: int | None = None) -> list[LLMLocator]:
    """One locator per name in :data:`LLM_LOCATORS`; ``providers[name]`` is each one's (cached) provider.

    ``max_questions`` bounds the iterative methods' calls per diagnosis:
    step-by-step's questions and RCTA's segment summaries (binary search
    needs only about ``log2 T``).
    """
    rcta = {} if max_questions is None else {"max_segments": max_questions}
    return [
        AllAtOnceLocator(providers["all_at_once"], seed, prompt_tokens),
        StepByStepLocator(providers["step_by_step"], seed, prompt_tokens, max_questions),
        BinarySearchLocator(providers["binary_search"], seed, prompt_tokens),
        RCTALocator(providers["rcta"], seed, prompt_tokens, **rcta),
    ]


def cost_row(locator: LLMLocator, cases: pd.DataFrame) -> dict:
    """Accuracy beside cost for one LLM locator on scored ``cases`` (cost columns only: no
    cache hits or seconds, which differ between a cold and a warm run)."""
    usage = locator.chat.accounting.totals()
    per_case = max(usage["cases"], 1)
    metrics = summarise(cases)
    return {
        "exact": metrics["exact"],
        "role_acc": metrics["role_acc"],
        "within5": metrics["within5"],
        "n": metrics["n"],
        "calls_per_case": usage["calls"] / per_case,
        "input_tokens_per_case": usage["input_tokens"] / per_case,
        "output_tokens_per_case": usage["output_tokens"] / per_case,
        "abstentions": usage["abstentions"],
        "invalid": int((~cases["valid"]).sum()),
        **locator.inputs.counts(),
    }


def step_distribution(cases: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per method: the most frequent predicted step, its share of all cases, the number of
    distinct steps, invalid predictions, and the mean predicted position ``step / (T - 1)``."""
    rows = {}
    for name, frame in cases.items():
        counts = frame["step"].dropna().astype(int).value_counts()
        position = (frame["step"] / (frame["length"] - 1).clip(lower=1)).mean()
        rows[name] = {
            "modal_step": int(counts.index[0]) if len(counts) else None,
            "modal_share": float(counts.iloc[0] / len(frame)) if len(counts) else 0.0,
            "distinct_steps": int(len(counts)),
            "invalid": int((~frame["valid"]).sum()),
            "mean_position": float(position) if pd.notna(position) else None,
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")


def evaluate_llm(provider, trajectories: Sequence[Trajectory], accounting, subset: str, seed: int = 0,
                 prompt_tokens: int | None = None, max_questions: int | None = None):
    """Run every LLM locator on ``trajectories`` through the response cache, charging
    ``accounting["<subset>.<method>"]``; return ``(per-case scores, cost rows)`` by method."""
    from rcakit.llm import cached
    from rcakit.progress import track

    providers = {name: cached(provider, accounting=accounting[f"{subset}.{name}"]) for name in LLM_LOCATORS}
    cases, rows = {}, {}
    for locator in llm_locators(providers, seed, prompt_tokens, max_questions):
        predictions = [locator.locate(t) for t in track(trajectories, desc=f"{subset} {locator.name}")]
        cases[locator.name] = score_cases(trajectories, predictions)
        rows[locator.name] = cost_row(locator, cases[locator.name])
    return cases, rows
