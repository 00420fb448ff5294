"""Who&When's prompting baselines behind the :class:`~rcakit.trajectories.locators.Locator` interface.

All-at-once, step-by-step and binary search (Zhang et al. 2025, §4; LongRCA
§6.1), and the plumbing every language-model locator shares
(:class:`LLMLocator`; the RCTA-style pipeline is in
:mod:`rcakit.trajectories.rcta`). Each asks a :mod:`rcakit.llm` provider for
JSON through :func:`rcakit.llm.ask_json` (validated, retried once with the
error, then abstained). Choices the papers leave open, fixed here:

- every prompt shows step indices (``[i] name: content``) and the recorded
  roles; decoding is greedy with a per-case seed from the chapter seed and the
  trajectory id (:func:`rcakit.llm.request_seed`), so cache keys do not depend on case order;
- an abstention on any question a prediction depends on makes the whole
  prediction invalid (``Prediction()``), which every metric scores as wrong;
- a prompt must fit ``provider.context_window`` minus the reply and, when set,
  a smaller ``prompt_tokens`` budget (sized with ``provider.count_tokens``).
  What does not fit is cut on purpose and marked in the prompt
  (:mod:`rcakit.llm.prompts`): first every shown step's content is clipped to
  a common length (``…[N more characters cut]``), then, if that is not
  enough, steps are left out (``[N items (a to b) not shown: ...]``). Each
  locator's :class:`LongInputs` records which trajectories were truncated,
  segmented or left unfinished.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rcakit import RcakitError
from rcakit.llm import Provider, Shape, ask_json, request_seed
from rcakit.llm.prompts import Block, Budget, chat_messages
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.schema import Prediction, Step, Trajectory

LLM_LOCATORS = ("all_at_once", "step_by_step", "binary_search", "rcta")
SYSTEM = (
    "You diagnose a failed multi-agent run. Each step is shown as [index] role: content. "
    "The decisive error is the earliest step that introduced the mistake that made the run fail; "
    "an error that was corrected later is not it. Reply with one JSON object only."
)


@dataclass
class LongInputs:
    """Trajectories (by id) whose prompts were cut, split, or whose search stopped at its cap."""

    truncated: set[Any] = field(default_factory=set)
    segmented: set[Any] = field(default_factory=set)
    unfinished: set[Any] = field(default_factory=set)

    def counts(self) -> dict[str, Any]:
        """How many trajectories fall under each heading."""
        return {"truncated": len(self.truncated), "segmented": len(self.segmented), "unfinished": len(self.unfinished)}


def step_block(steps: Sequence[Step], keep: str = "head") -> Block:
    """Steps as prompt items ``([index] name, content)``."""
    return Block(tuple((f"[{s.index}] {s.name}", s.content) for s in steps), keep)


def user(text: str) -> list[dict[str, Any]]:
    """The locators' system prompt and ``text`` as the user message."""
    return chat_messages(SYSTEM, text)


class LLMLocator(Locator):
    """Shared plumbing: provider, seed, budget, accounting and the long-input report.

    ``provider`` is any :mod:`rcakit.llm` provider, normally ``cached(...)``
    with a :class:`~rcakit.llm.MethodUsage`; each :meth:`locate` charges one
    case to it, so its calls and tokens per case are per diagnosis.
    """

    max_tokens = 32

    def __init__(self, provider: Provider, seed: int = 0, prompt_tokens: int | None = None) -> None:
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

    def ask(
        self,
        trajectory: Trajectory,
        blocks: Sequence[Block],
        build: Callable[[list[str]], list[Any]],
        validate: Callable[[Any], Any],
        *,
        seed: int,
        max_tokens: int | None = None,
    ) -> Any:
        """Fit the prompt (recording a cut), then ``ask_json``; ``None`` is an abstention."""
        fitted = self.budget.fit(blocks, build)
        if fitted.cut:
            self.inputs.truncated.add(trajectory.id)
        return ask_json(self.chat, fitted.messages, validate, seed=seed, max_tokens=max_tokens or self.max_tokens)


def roles_line(roles: Sequence[str]) -> str:
    """The sentence that lists the roles a model may name."""
    return "Roles: " + ", ".join(roles) + "."


class AllAtOnceLocator(LLMLocator):
    """Who&When all-at-once: the whole log in one prompt, one JSON ``{role, step}``.

    When the log does not fit, contents are clipped and then the latest steps
    are left out (the head, with the task, is kept).
    """

    name = "all_at_once"

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        roles = trajectory.speakers

        def build(parts: list[str]) -> list[dict[str, Any]]:
            return user(
                f"Run log:\n{parts[0]}\n\n{roles_line(roles)} Which role is responsible for the failure, and which "
                'step index holds the decisive error? Reply {"role": ..., "step": ...}.'
            )

        shape = Shape(role=roles, step=range(len(trajectory)))
        answer = self.ask(trajectory, [step_block(trajectory.steps)], build, shape, seed=seed)
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

    def __init__(
        self, provider: Provider, seed: int = 0, prompt_tokens: int | None = None, max_questions: int | None = None
    ) -> None:
        super().__init__(provider, seed, prompt_tokens)
        self.max_questions = max_questions

    def diagnose(self, trajectory: Trajectory, seed: int) -> Prediction:
        steps = trajectory.steps

        def build(parts: list[str]) -> list[dict[str, Any]]:
            task, history, current = parts
            return user(
                f"Task:\n{task}\n\nLog so far:\n{history or '(nothing yet)'}\n\nCurrent step:\n{current}\n\n"
                "Is the current step the decisive error that made the run fail? "
                'Reply {"error": "yes"} or {"error": "no"}.'
            )

        for i, step in enumerate(steps):
            if self.max_questions is not None and i >= self.max_questions:
                self.inputs.unfinished.add(trajectory.id)
                return Prediction()
            blocks = [step_block(steps[:1]), step_block(steps[1:i], keep="tail"), step_block([step])]
            answer = self.ask(trajectory, blocks, build, self.ANSWER, seed=seed)
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
        steps = trajectory.steps
        lo: int = 0
        hi: int = len(trajectory) - 1
        while lo < hi:
            mid: int = (lo + hi) // 2

            def build(parts: list[str], lo: int = lo, mid: int = mid, hi: int = hi) -> list[dict[str, Any]]:
                return user(
                    f"Task:\n{parts[0]}\n\nFirst half (steps {lo}-{mid}):\n{parts[1]}\n\n"
                    f"Second half (steps {mid + 1}-{hi}):\n{parts[2]}\n\n"
                    'Which half contains the decisive error? Reply {"half": "first"} or {"half": "second"}.'
                )

            blocks = [step_block(steps[:1]), step_block(steps[lo : mid + 1]), step_block(steps[mid + 1 : hi + 1])]
            answer = self.ask(trajectory, blocks, build, self.ANSWER, seed=seed)
            if answer is None:
                return Prediction()
            lo, hi = (lo, mid) if answer["half"] == "first" else (mid + 1, hi)
        return Prediction(role=steps[lo].speaker, step=lo)
