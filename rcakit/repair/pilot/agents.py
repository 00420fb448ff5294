"""The pilot's four agents: the scripted and the LLM policy, and what each charges (GCJR §Experiments).

A policy plays all four roles: Planner A (``plan``), Solvers B and C
(``step``, one operation per message) and Aggregator D (``aggregate``).
Every execution is one model call, charged to the replay oracle through the
``charge`` hook the policy is bound to (:meth:`AgentPolicy.bound`); recording the
clean and failed runs is set-up and charged to no one.

- ``scripted`` (default, offline) computes exactly, except that with
  ``slip > 0`` a step is off by one with that probability, drawn per (case,
  event, replay seed); each agent execution charges one call.
- ``llm`` makes each agent one chat through :mod:`rcakit.llm`, JSON replies
  parsed by :func:`rcakit.llm.ask_json` (one validated retry, then an
  abstention), the sampling seed :func:`rcakit.llm.request_seed` of (case,
  event, replay seed), so a rerun is served by the response cache. Each chat
  charges one call, whoever answers it (cache or model); tokens stay in the
  provider's :mod:`rcakit.llm.accounting`.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rcakit import RcakitError
from rcakit.llm import LLMSettings, Shape, ask_json, cached, model_for, request_seed
from rcakit.llm.base import Message, Provider, Reply
from rcakit.repair.pilot.tasks import Task, apply, parse_expression

POLICIES = ("scripted", "llm")
RECORD = "record"  # the replay label of the recorded (clean and failed) runs
SYSTEM = "You are {role} in a team of four agents that solve arithmetic tasks. Reply with one JSON object only."
ROLES = {"A": "Planner A", "B": "Solver B", "C": "Solver C", "D": "Aggregator D"}

Charge = Callable[[int], None]  # the oracle's cost hook: charge(calls)
AgentMessage = dict[str, Any] | None  # an agent's message; None when it is unusable


def uncharged(calls: int) -> None:
    """The hook of runs nobody pays for (recording the clean and failed runs)."""


@dataclass(frozen=True)
class Key:
    """What a request seed is derived from: case, event, replay seed (or ``RECORD``)."""

    case_id: str
    event: str
    label: int | str

    def text(self) -> str:
        return f"{self.case_id}/{self.event}/{self.label}"


class AgentPolicy(Protocol):
    """The four agents of the workflow, charging each execution to a hook."""

    name: str

    def bound(self, charge: Charge) -> AgentPolicy:
        """The same agents, charging to ``charge``."""
        ...

    def plan(self, task: Task, key: Key) -> AgentMessage: ...

    def step(self, agent: str, left: int, op: str, right: int, key: Key) -> AgentMessage: ...

    def aggregate(self, plan: dict[str, Any], b: int, c: int, key: Key) -> AgentMessage: ...


def aggregate(plan: dict[str, Any], b: int, c: int) -> int:
    """D's rule: add the results (``sum``), or answer the first whose last digit is the check (``pick``)."""
    if plan["combine"] == "sum":
        return b + c
    return c if b % 10 != plan["check"] and c % 10 == plan["check"] else b


class ScriptedPolicy:
    """Exact agents, with an optional off-by-one slip per step drawn from (case, event, replay seed)."""

    name = "scripted"

    def __init__(self, slip: float = 0.0, seed: int = 0, charge: Charge = uncharged) -> None:
        if not 0.0 <= slip < 1.0:
            raise RcakitError(f"slip = {slip!r} is outside [0, 1)")
        self.slip, self.seed, self.charge = slip, int(seed), charge

    def bound(self, charge: Charge) -> ScriptedPolicy:
        return ScriptedPolicy(self.slip, self.seed, charge)

    def plan(self, task: Task, key: Key) -> AgentMessage:
        self.charge(1)
        combine = "sum" if task.form == "split" else "pick"
        return {"b": task.parts[0], "c": task.parts[1], "combine": combine, "check": task.check}

    def step(self, agent: str, left: int, op: str, right: int, key: Key) -> AgentMessage:
        self.charge(1)
        return {"value": apply(op, left, right) + self._slipped(key)}

    def aggregate(self, plan: dict[str, Any], b: int, c: int, key: Key) -> AgentMessage:
        self.charge(1)
        return {"answer": aggregate(plan, b, c)}

    def _slipped(self, key: Key) -> int:
        if self.slip == 0.0:
            return 0
        label = -1 if key.label == RECORD else int(key.label)
        u = np.random.default_rng(
            [self.seed, zlib.crc32(key.case_id.encode()), zlib.crc32(key.event.encode()), label + 1]
        ).random()
        return int(u < self.slip)


_PLAN_SHAPE = Shape(b=str, c=str, combine=("sum", "pick"), check=range(-1, 10))


def _plan_shape(obj: Any) -> dict[str, Any]:
    plan = _PLAN_SHAPE(obj)
    for name in ("b", "c"):
        if parse_expression(plan[name]) is None:
            raise ValueError(f"field {name!r} must be an expression such as '12 * 7 + 5'")
    return plan


PLAN_PROMPT = (
    "Task: {task}\n"
    "Split the task between Solver B and Solver C. If the task adds two bracketed expressions, give B the first "
    'and C the second (without brackets), with combine "sum" and check -1. If the task is one expression and '
    'states a last digit, give both B and C that expression, with combine "pick" and check that digit.\n'
    'Reply as {{"b": "...", "c": "...", "combine": "sum" or "pick", "check": integer}}.'
)
STEP_PROMPT = 'Compute {left} {op} {right}.\nReply as {{"value": integer}}.'
SUM_PROMPT = 'Add the two results: B = {b}, C = {c}.\nReply as {{"answer": integer}}.'
PICK_PROMPT = (
    "The result must end in the digit {check}. B = {b}, C = {c}. Answer B if it ends in {check}; otherwise C if "
    'C ends in {check}; otherwise B.\nReply as {{"answer": integer}}.'
)


class ChargedChat:
    """A provider that charges one call per chat to a hook, whatever answers it (cache or model)."""

    def __init__(self, provider: Provider, charge: Charge) -> None:
        self._provider, self._charge = provider, charge
        self.name, self.model = provider.name, provider.model
        self.context_window: int | None = provider.context_window
        self.replays = provider.replays
        self.accounting = getattr(provider, "accounting", None)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return self._provider.count_tokens(messages)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 256,
        json_schema: dict[str, Any] | None = None,
    ) -> Reply:
        self._charge(1)
        return self._provider.chat(
            messages, temperature=temperature, seed=seed, max_tokens=max_tokens, json_schema=json_schema
        )


class LLMPolicy:
    """Each agent is one chat (plus ask_json's one retry) through a provider, at temperature 0."""

    name = "llm"

    def __init__(
        self, provider: Provider | None, seed: int = 0, charge: Charge = uncharged, max_tokens: int = 128
    ) -> None:
        if provider is None or not provider:
            raise RcakitError("provider: the llm policy needs a language model (e.g. llamacpp:smollm2)")
        self.provider, self.seed, self.max_tokens = provider, int(seed), max_tokens
        self.chat = ChargedChat(provider, charge)

    def bound(self, charge: Charge) -> LLMPolicy:
        return LLMPolicy(self.provider, self.seed, charge, self.max_tokens)

    def _ask(
        self,
        agent: str,
        prompt: str,
        validate: Callable[[Any], dict[str, Any]],
        key: Key,
        *,
        schema: dict[str, Any] | None = None,
    ) -> AgentMessage:
        messages = [
            {"role": "system", "content": SYSTEM.format(role=ROLES[agent])},
            {"role": "user", "content": prompt},
        ]
        return ask_json(
            self.chat,
            messages,
            validate,
            seed=request_seed(self.seed, key.text()),
            max_tokens=self.max_tokens,
            schema=schema,
        )

    def plan(self, task: Task, key: Key) -> AgentMessage:
        return self._ask("A", PLAN_PROMPT.format(task=task.text), _plan_shape, key, schema=_PLAN_SHAPE.schema)

    def step(self, agent: str, left: int, op: str, right: int, key: Key) -> AgentMessage:
        return self._ask(agent, STEP_PROMPT.format(left=left, op=op, right=right), Shape(value=int), key)

    def aggregate(self, plan: dict[str, Any], b: int, c: int, key: Key) -> AgentMessage:
        prompt = (SUM_PROMPT if plan["combine"] == "sum" else PICK_PROMPT).format(b=b, c=c, check=plan["check"])
        return self._ask("D", prompt, Shape(answer=int), key)


def make_policy(
    policy: str = "scripted",
    provider: str | Provider | None = None,
    *,
    seed: int = 0,
    slip: float = 0.0,
    timeout: float | None = None,
    base_url: str | None = None,
) -> AgentPolicy:
    """The policy a chapter parameter names; ``provider`` is a spec string or a provider object.

    A spec string is built with :func:`rcakit.llm.model_for` (each
    reply bounded by ``timeout`` seconds; ``base_url`` the server of an
    ``openai:`` spec) and put behind the response cache; the scripted policy
    ignores ``provider``, ``timeout`` and ``base_url``.
    """
    if policy == "scripted":
        return ScriptedPolicy(slip, seed)
    if policy == "llm":
        chat = (
            cached(model_for(LLMSettings(provider, timeout=timeout, base_url=base_url)))
            if isinstance(provider, str)
            else provider
        )
        return LLMPolicy(chat, seed)
    raise RcakitError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
