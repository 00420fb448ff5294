"""A four-agent arithmetic workflow whose messages can be replayed (GCJR §Experiments, DualSolve-MAS pilot).

Planner A splits an arithmetic task into two sub-problems, Solvers B and C
each work one out step by step, and Aggregator D turns their results into the
final answer; a rule checks it. Every agent message is an event of the
execution DAG A -> {B, C} -> D with its agent label and the parents the agent
read, so the graph the search sees is the one the run used:

- ``A0``, the plan, reads the task;
- ``B0..Bk`` (and ``C0..Cm``): step i applies the i-th operation of the
  solver's sub-problem; it reads the plan (for the operand) and the solver's
  previous step;
- ``D0``, the answer, reads the plan and both solvers' last steps. It is the
  failure sink: replacing the answer itself is no diagnosis, so it is not a
  candidate.

Mechanics chosen here (the paper does not describe its pilot's workflow):

- Tasks come in two forms. *Split*: ``(p·q ± s …) + (p'·q' ± s' …)``; A gives
  each solver one bracket, D adds the two results. *Dual*: one expression
  and the last digit of its value; A gives both solvers the whole expression,
  D answers the first result (B's, then C's) whose last digit matches, and
  B's when none does.
- Faults are planted on solvers' last steps only, as a fixed offset added to
  that step's value whenever it executes (in the failed run and in any replay
  that re-executes it): Single, one solver's result in a split task, family
  {{f}}; Joint-AND, both solvers' results in a split task (offsets of one
  sign, so they never cancel), family {{b, c}}; Alternative-OR, both results
  in a dual task (offsets that change the last digit), family {{b}, {c}}.
  A fault on an earlier step would not be planted: the clean message of any
  later step of the same solver would also repair it, so the planted set
  would not be the whole family.
- The clean counterpart of an event is its message in the clean run. A
  replay of a set S copies the failed run, puts the clean messages of S in
  place and re-executes only the events downstream of S, in topological
  order, under replay seed j; upstream events are never re-executed. With r
  shared seeds, h_θ(S) = 1[(1/r) Σ_j Y_j(S) >= θ], θ = 2/3.
- Calls are counted where agents execute: the ``llm`` policy sends every chat
  through a counting wrapper of its provider, the ``scripted`` policy counts
  each agent execution; the oracle reads the count, the search cannot touch it.
  Replaying ∅ re-executes nothing, so it costs no call.

Nodes carry the attributes of :mod:`rcakit.repair.graph` (``agent``,
``intervenable``, ``fault``, ``gate``) so its graph rules apply; replay
outcomes come from the agents, never from the symbolic propagation of
:mod:`rcakit.repair.oracle` (which would read D's plan input differently), so
the pilot reports FEM, RS@1 and MV of :func:`rcakit.repair.family_scores`
and not its symbolic ``repair_success1``.

Policies: ``scripted`` (default, offline) computes exactly, except that with
``slip > 0`` a step is off by one with that probability, drawn per (case,
event, replay seed); ``llm`` makes each agent one chat through
:mod:`rcakit.llm`, JSON replies parsed by :func:`rcakit.llm.ask_json`, the
sampling seed :func:`rcakit.llm.request_seed` of (case, event, replay seed),
so a rerun is served by the response cache.

With the scripted policy and no slip, the planted family is the family under
replay by construction, so FEM = 1 for GCJR holds by the exactness argument
(GCJR §Technical contribution); the call counts are what the workflow's graph
gives.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Shape, ask_json, cached, provider_from_spec, request_seed
from rcakit.repair.graph import IN_SCOPE_KINDS, Case
from rcakit.repair.metrics import family_scores
from rcakit.repair.oracle import THETA, Replay, threshold
from rcakit.repair.search import exhaustive, gcjr

POLICIES = ("scripted", "llm")
PLANNER, SINK = "A0", "D0"
RECORD = "record"  # the replay label of the recorded (clean and failed) runs
_EXPRESSION = re.compile(r"^\s*(\d+)((?:\s*[*+-]\s*\d+){1,3})\s*$")
_OPERATION = re.compile(r"([*+-])\s*(\d+)")
SYSTEM = "You are {role} in a team of four agents that solve arithmetic tasks. Reply with one JSON object only."
ROLES = {"A": "Planner A", "B": "Solver B", "C": "Solver C", "D": "Aggregator D"}


# --- tasks and expressions ------------------------------------------------------------------------

def parse_expression(text) -> tuple[int, tuple[tuple[str, int], ...]] | None:
    """``"12 * 7 + 5"`` -> ``(12, (("*", 7), ("+", 5)))``, read left to right; ``None`` if it does not parse."""
    match = _EXPRESSION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return int(match[1]), tuple((op, int(n)) for op, n in _OPERATION.findall(match[2]))


def apply(op: str, left: int, right: int) -> int:
    """One arithmetic step."""
    return left * right if op == "*" else left + right if op == "+" else left - right


def evaluate(text: str) -> int:
    """The value of an expression, left to right."""
    start, ops = parse_expression(text)
    value = start
    for op, n in ops:
        value = apply(op, value, n)
    return value


@dataclass(frozen=True)
class Task:
    """An arithmetic task: its text, its form (``split`` or ``dual``), its sub-problems and answer."""

    text: str
    form: str
    parts: tuple[str, str]  # the reference split: B's and C's sub-problems
    answer: int

    @property
    def check(self) -> int:
        """The last digit a dual task states (-1 for a split task)."""
        return self.answer % 10 if self.form == "dual" else -1


def random_expression(rng: np.random.Generator) -> str:
    """``p * q`` followed by 0-2 additions or subtractions (1-3 operations)."""
    terms = [f"{int(rng.integers(2, 20))} * {int(rng.integers(2, 10))}"]
    terms += [f"{'+-'[int(rng.integers(2))]} {int(rng.integers(1, 21))}" for _ in range(int(rng.integers(0, 3)))]
    return " ".join(terms)


def make_task(form: str, rng: np.random.Generator) -> Task:
    """A split task (two brackets added) or a dual task (one expression and its last digit)."""
    if form == "split":
        b, c = random_expression(rng), random_expression(rng)
        return Task(f"Compute ({b}) + ({c}).", form, (b, c), evaluate(b) + evaluate(c))
    if form == "dual":
        b = random_expression(rng)
        value = evaluate(b)
        return Task(f"Compute {b}. The last digit of the result is {value % 10}.", form, (b, b), value)
    raise RcakitError(f"make_task: form = {form!r} is not split or dual")


# --- the call counter and the policies -----------------------------------------------------------

class CallCounter:
    """Agent executions (scripted) or chats (llm); only ``tick`` adds, and there is no setter."""

    __slots__ = ("__count",)

    def __init__(self):
        self.__count = 0

    @property
    def count(self) -> int:
        return self.__count

    def tick(self) -> None:
        self.__count += 1


class CountingProvider:
    """A provider that adds one to a :class:`CallCounter` per chat, whatever answers it (cache or model)."""

    def __init__(self, provider, counter: CallCounter):
        self._provider, self._counter = provider, counter
        self.name, self.model = provider.name, provider.model
        self.context_window = provider.context_window
        self.accounting = getattr(provider, "accounting", None)

    def count_tokens(self, messages) -> int:
        return self._provider.count_tokens(messages)

    def chat(self, messages, **options):
        self._counter.tick()
        return self._provider.chat(messages, **options)


@dataclass(frozen=True)
class Key:
    """What a request seed is derived from: case, event, replay seed (or ``RECORD``)."""

    case_id: str
    event: str
    label: int | str

    def text(self) -> str:
        return f"{self.case_id}/{self.event}/{self.label}"


class ScriptedPolicy:
    """Exact agents, with an optional off-by-one slip per step drawn from (case, event, replay seed)."""

    name = "scripted"

    def __init__(self, slip: float = 0.0, seed: int = 0, counter: CallCounter | None = None):
        if not 0.0 <= slip < 1.0:
            raise RcakitError(f"slip = {slip!r} is outside [0, 1)")
        self.slip, self.seed, self.counter = slip, int(seed), counter or CallCounter()

    def bound(self, counter: CallCounter) -> ScriptedPolicy:
        return ScriptedPolicy(self.slip, self.seed, counter)

    def plan(self, task: Task, key: Key) -> dict:
        self.counter.tick()
        combine = "sum" if task.form == "split" else "pick"
        return {"b": task.parts[0], "c": task.parts[1], "combine": combine, "check": task.check}

    def step(self, agent: str, left: int, op: str, right: int, key: Key) -> dict:
        self.counter.tick()
        return {"value": apply(op, left, right) + self._slipped(key)}

    def aggregate(self, plan: dict, b: int, c: int, key: Key) -> dict:
        self.counter.tick()
        return {"answer": aggregate(plan, b, c)}

    def _slipped(self, key: Key) -> int:
        if self.slip == 0.0:
            return 0
        label = -1 if key.label == RECORD else int(key.label)
        u = np.random.default_rng([self.seed, zlib.crc32(key.case_id.encode()), zlib.crc32(key.event.encode()),
                                   label + 1]).random()
        return int(u < self.slip)


def aggregate(plan: dict, b: int, c: int) -> int:
    """D's rule: add the results (``sum``), or answer the first whose last digit is the check (``pick``)."""
    if plan["combine"] == "sum":
        return b + c
    return c if b % 10 != plan["check"] and c % 10 == plan["check"] else b


def _plan_shape(obj) -> dict:
    plan = Shape(b=str, c=str, combine=("sum", "pick"), check=range(-1, 10))(obj)
    for name in ("b", "c"):
        if parse_expression(plan[name]) is None:
            raise ValueError(f"field {name!r} must be an expression such as '12 * 7 + 5'")
    return plan


_PLAN_SCHEMA = Shape(b=str, c=str, combine=("sum", "pick"), check=range(-1, 10)).schema
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


class LLMPolicy:
    """Each agent is one chat (plus ask_json's one retry) through a provider, at temperature 0."""

    name = "llm"

    def __init__(self, provider, seed: int = 0, counter: CallCounter | None = None, max_tokens: int = 128):
        if not provider:
            raise RcakitError("provider: the llm policy needs a language model (e.g. llamacpp:smollm2)")
        self.provider, self.seed, self.max_tokens = provider, int(seed), max_tokens
        self.counter = counter or CallCounter()
        self.chat = CountingProvider(provider, self.counter)

    def bound(self, counter: CallCounter) -> LLMPolicy:
        return LLMPolicy(self.provider, self.seed, counter, self.max_tokens)

    def _ask(self, agent: str, prompt: str, validate, key: Key, schema=None):
        messages = [{"role": "system", "content": SYSTEM.format(role=ROLES[agent])},
                    {"role": "user", "content": prompt}]
        return ask_json(self.chat, messages, validate, seed=request_seed(self.seed, key.text()),
                        max_tokens=self.max_tokens, schema=schema)

    def plan(self, task: Task, key: Key) -> dict | None:
        return self._ask("A", PLAN_PROMPT.format(task=task.text), _plan_shape, key, _PLAN_SCHEMA)

    def step(self, agent: str, left: int, op: str, right: int, key: Key) -> dict | None:
        return self._ask(agent, STEP_PROMPT.format(left=left, op=op, right=right), Shape(value=int), key)

    def aggregate(self, plan: dict, b: int, c: int, key: Key) -> dict | None:
        prompt = (SUM_PROMPT if plan["combine"] == "sum" else PICK_PROMPT).format(b=b, c=c, check=plan["check"])
        return self._ask("D", prompt, Shape(answer=int), key)


def make_policy(policy: str = "scripted", provider=None, seed: int = 0, slip: float = 0.0,
                timeout: float | None = None):
    """The policy a chapter parameter names; ``provider`` is a spec string or a provider object.

    A spec string is built with :func:`rcakit.llm.provider_from_spec` (each
    reply bounded by ``timeout`` seconds) and put behind the response cache;
    the scripted policy ignores ``provider`` and ``timeout``.
    """
    if policy == "scripted":
        return ScriptedPolicy(slip, seed)
    if policy == "llm":
        chat = cached(provider_from_spec(provider, timeout=timeout, param="provider")) \
            if isinstance(provider, str) else provider
        return LLMPolicy(chat, seed)
    raise RcakitError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")


# --- runs --------------------------------------------------------------------------------------

def workflow_graph(task: Task) -> nx.DiGraph:
    """The execution DAG of a task's run: plan, the solvers' steps, the answer (see the module doc)."""
    g = nx.DiGraph()
    g.add_node(PLANNER, agent="A", intervenable=True, fault=False, gate="any")
    for agent, part in zip("BC", task.parts, strict=True):
        steps = [f"{agent}{i}" for i in range(len(parse_expression(part)[1]))]
        for i, event in enumerate(steps):
            g.add_node(event, agent=agent, intervenable=True, fault=False, gate="any")
            g.add_edge(PLANNER, event)
            if i:
                g.add_edge(steps[i - 1], event)
    g.add_node(SINK, agent="D", intervenable=False, fault=False, gate="all" if task.form == "dual" else "any")
    g.add_edges_from([(PLANNER, SINK), (last_step(g, "B"), SINK), (last_step(g, "C"), SINK)])
    return g


def last_step(graph: nx.DiGraph, agent: str) -> str:
    """A solver's result event: its step with the highest index."""
    return max((v for v in graph if graph.nodes[v]["agent"] == agent), key=lambda v: int(v[1:]))


def execute(event: str, graph: nx.DiGraph, task: Task, messages: Mapping[str, dict | None], policy,
            key: Key) -> dict | None:
    """One agent execution from the messages it reads; an unusable input gives ``None`` without a call."""
    if event == PLANNER:
        return policy.plan(task, key)
    plan = messages[PLANNER]
    if event == SINK:
        b, c = (messages[last_step(graph, agent)] for agent in "BC")
        if plan is None or b is None or c is None:
            return None
        return policy.aggregate(plan, b["value"], c["value"], key)
    agent, i = event[0], int(event[1:])
    parsed = parse_expression(plan[agent.lower()]) if plan is not None else None
    if parsed is None or i >= len(parsed[1]):
        return None
    prev = parsed[0] if i == 0 else (messages[f"{agent}{i - 1}"] or {}).get("value")
    if prev is None:
        return None
    op, right = parsed[1][i]
    return policy.step(agent, prev, op, right, key)


def corrupted(message: dict | None, offset: int) -> dict | None:
    """A step's message with ``offset`` added to its value (an unusable message stays unusable)."""
    return None if message is None else {"value": message["value"] + offset}


def run(graph: nx.DiGraph, task: Task, policy, key: tuple[str, int | str], faults: Mapping[str, int],
        base: Mapping[str, dict | None] | None = None, redo: Iterable[str] | None = None) -> dict:
    """Execute the events of ``redo`` (default: all) in topological order, the rest taken from ``base``.

    A faulty event adds its offset every time it executes.
    """
    case_id, label = key
    messages = dict(base or {})
    redo = set(graph) if redo is None else set(redo)
    for event in nx.lexicographical_topological_sort(graph):
        if event in redo:
            message = execute(event, graph, task, messages, policy, Key(case_id, event, label))
            messages[event] = corrupted(message, faults[event]) if event in faults else message
    return messages


def correct(task: Task, messages: Mapping[str, dict | None]) -> bool:
    """The rule: the final answer equals the task's value."""
    answer = messages.get(SINK)
    return answer is not None and answer["answer"] == task.answer


# --- cases, the oracle and the pilot ----------------------------------------------------------------

FORMS = {"single": "split", "joint_and": "split", "alt_or": "dual"}


@dataclass(frozen=True, eq=False)
class WorkflowCase:
    """A failed run of the workflow, its clean run and the planted faults.

    ``case`` is the :class:`rcakit.repair.graph.Case` the search reads
    (graph, sink, planted family, schedules); ``faults`` maps each faulty
    event to its offset.
    """

    case: Case
    task: Task
    faults: dict
    clean: dict = field(repr=False)
    failed: dict = field(repr=False)

    @property
    def clean_correct(self) -> bool:
        return correct(self.task, self.clean)

    @property
    def failed_correct(self) -> bool:
        return correct(self.task, self.failed)


def plant_offsets(kind: str, graph: nx.DiGraph, rng: np.random.Generator) -> dict[str, int]:
    """Faulty events and their offsets for ``kind`` (see the module doc); 1-9 never leaves a last digit unchanged."""
    results = [last_step(graph, "B"), last_step(graph, "C")]
    sign = 1 if rng.random() < 0.5 else -1
    events = [results[int(rng.integers(2))]] if kind == "single" else results
    return {event: sign * int(rng.integers(1, 10)) for event in events}


def build_case(kind: str, task: Task, policy, case_id: str, seed: int, offsets: Mapping[str, int]) -> WorkflowCase:
    """Record the clean run, corrupt the chosen events, re-execute their downstream: the failed run."""
    graph = workflow_graph(task)
    for event in offsets:
        graph.nodes[event]["fault"] = True
    recorder = policy.bound(CallCounter())  # recording is set-up, not the search's cost
    clean = run(graph, task, recorder, (case_id, RECORD), {})
    downstream = set(offsets).union(*(nx.descendants(graph, v) for v in offsets))
    failed = run(graph, task, recorder, (case_id, RECORD), offsets, base=clean, redo=downstream)
    family = frozenset(frozenset([v]) for v in offsets) if kind in ("single", "alt_or") else \
        frozenset([frozenset(offsets)])
    case = Case(case_id, kind, graph, SINK, family, schedules_of(graph), seed)
    return WorkflowCase(case, task, dict(offsets), clean, failed)


def schedules_of(graph: nx.DiGraph, k: int = 3) -> tuple:
    """Up to ``k`` distinct topological orders, the lexicographic one first (A, B's steps, C's steps, D)."""
    first = tuple(nx.lexicographical_topological_sort(graph))
    others = (tuple(o) for o in nx.all_topological_sorts(graph) if tuple(o) != first)
    return (first, *itertools.islice(others, k - 1))


def pilot_cases(n_cases: int = 24, seed: int = 0, policy="scripted", provider=None, slip: float = 0.0) -> list:
    """``n_cases`` workflow cases cycling Single, Joint-AND, Alternative-OR; case i depends on (seed, i) only.

    ``policy`` is ``"scripted"``, ``"llm"`` (with ``provider``, a spec string
    or a provider object) or a policy object (``ScriptedPolicy``, ``LLMPolicy``).
    """
    if not (isinstance(n_cases, (int, np.integer)) and not isinstance(n_cases, bool) and n_cases >= 1):
        raise RcakitError(f"n_cases = {n_cases!r} must be an integer >= 1")
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise RcakitError(f"seed = {seed!r} must be an integer >= 0")
    agents = make_policy(policy, provider, seed, slip) if isinstance(policy, str) else policy
    cases = []
    for i in range(n_cases):
        kind = IN_SCOPE_KINDS[i % len(IN_SCOPE_KINDS)]
        rng = np.random.default_rng([seed, i])
        task = make_task(FORMS[kind], rng)
        offsets = plant_offsets(kind, workflow_graph(task), rng)
        cases.append(build_case(kind, task, agents, f"{kind}-{i:03d}", int(rng.integers(2**31)), offsets))
    return cases


class WorkflowOracle:
    """h_θ over r shared seeds by replaying the workflow; the interface of ``ReplayOracle`` the search uses.

    ``calls`` is what the agents executed (scripted) or the chats sent
    (llm) for this oracle's replays, read from a counter the policy holds;
    ``seed_splits`` lists the sets whose seeds disagreed.
    """

    def __init__(self, wcase: WorkflowCase, policy, r: int = 3, theta=THETA, schedule: int = 0):
        if not (isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 1):
            raise RcakitError(f"WorkflowOracle: r = {r!r} must be an integer >= 1")
        if not 0 <= schedule < len(wcase.case.schedules):
            raise RcakitError(f"WorkflowOracle: schedule = {schedule!r} is not one of the case's schedules")
        self.wcase, self.case, self.r, self.schedule = wcase, wcase.case, int(r), schedule
        self.theta = threshold(theta)
        self.__counter = CallCounter()
        self.__policy = policy.bound(self.__counter)
        self.seed_splits: list[frozenset] = []

    @property
    def calls(self) -> int:
        """Model calls (agent executions) charged so far (read-only)."""
        return self.__counter.count

    def passes(self, successes):
        """The θ rule in integers: successes / r >= θ."""
        return successes * self.theta.denominator >= self.theta.numerator * self.r

    def messages(self, events: Iterable[str], seed: int) -> dict:
        """The messages of one replay of ``events`` under replay seed ``seed``."""
        w = self.wcase
        events = frozenset(events)
        self.case.mask(events)  # a non-candidate is a one-line error
        base = dict(w.failed) | {v: w.clean[v] for v in events}
        downstream = set().union(*(nx.descendants(self.case.graph, v) for v in events)) - events
        return run(self.case.graph, w.task, self.__policy, (self.case.case_id, seed), w.faults, base, downstream)

    def replay(self, events: Iterable[str]) -> Replay:
        """Replay one set under the r shared seeds."""
        events = frozenset(events)
        successes = sum(correct(self.wcase.task, self.messages(events, j)) for j in range(self.r))
        if 0 < successes < self.r:
            self.seed_splits.append(events)
        return Replay(events, successes, self.r, bool(self.passes(successes)))

    def h(self, events: Iterable[str]) -> bool:
        """h_θ(S)."""
        return self.replay(events).success


def evaluate_pilot(cases: list[WorkflowCase], policy="scripted", provider=None, *, seed: int = 0,
                   slip: float = 0.0, r: int = 3, theta=THETA) -> pd.DataFrame:
    """GCJR and exhaustive search on each case, each with its own oracle; one row per case.

    The reference family is exhaustive search's (the paper's FEM in the
    pilot); ``planted`` says whether it equals the planted family.
    """
    agents = make_policy(policy, provider, seed, slip) if isinstance(policy, str) else policy
    rows = []
    for w in cases:
        runs = {}
        for name, method in (("gcjr", gcjr), ("exhaustive", exhaustive)):
            oracle = WorkflowOracle(w, agents, r=r, theta=theta)
            runs[name] = (method(w.case, oracle), oracle)
        truth = runs["exhaustive"][0].family
        rows.append({
            "case_id": w.case.case_id,
            "kind": w.case.kind,
            "n": len(w.case.candidates),
            **{f"gcjr_{k}": v for k, v in family_scores(w.case, runs["gcjr"][0], truth).items() if k in SCORED},
            **{f"exhaustive_{k}": v for k, v in family_scores(w.case, runs["exhaustive"][0], w.case.family).items()
               if k in SCORED},
            "gcjr_calls": runs["gcjr"][1].calls,
            "exhaustive_calls": runs["exhaustive"][1].calls,
            "planted": truth == w.case.family,
            "clean_fails": not w.clean_correct,
            "failed_passes": w.failed_correct,
            "seeds_disagree": bool(runs["exhaustive"][1].seed_splits or runs["gcjr"][1].seed_splits),
        })
    return pd.DataFrame(rows)


SCORED = ("fem", "rs1", "mv")


def run_pilot(cases: list[WorkflowCase] | None = None, *, n_cases: int = 24, seed: int = 0, policy="scripted",
              provider=None, slip: float = 0.0, r: int = 3, theta=THETA, timeout: float | None = None) -> dict:
    """The pilot's numbers (GCJR §Key results, DualSolve-MAS): FEM, RS@1, MV and mean calls, and the saving.

    GCJR is scored against exhaustive search's family, exhaustive search
    against the planted one. Cases whose clean run fails, whose failed run
    passes, or whose replays disagree across seeds are counted apart, and
    FEM is also given over the cases with none of these (``fem_regular``).
    ``timeout`` bounds each model reply when ``provider`` is a spec string.
    """
    agents = make_policy(policy, provider, seed, slip, timeout) if isinstance(policy, str) else policy
    if cases is None:
        cases = pilot_cases(n_cases, seed, agents)
    frame = evaluate_pilot(cases, agents, r=r, theta=theta)
    irregular = frame["clean_fails"] | frame["failed_passes"] | frame["seeds_disagree"]
    regular = frame[~irregular]
    gcjr_calls, exh_calls = frame["gcjr_calls"].mean(), frame["exhaustive_calls"].mean()
    return {
        "n_cases": len(frame),
        "gcjr": {**{k: float(frame[f"gcjr_{k}"].mean()) for k in SCORED}, "mean_calls": float(gcjr_calls),
                 "fem_regular": float(regular["gcjr_fem"].mean()) if len(regular) else float("nan")},
        "exhaustive": {**{k: float(frame[f"exhaustive_{k}"].mean()) for k in SCORED},
                       "mean_calls": float(exh_calls)},
        "saving": float(1 - gcjr_calls / exh_calls) if exh_calls else float("nan"),
        "planted_recovered": int(frame["planted"].sum()),
        "clean_failures": int(frame["clean_fails"].sum()),
        "failed_runs_passing": int(frame["failed_passes"].sum()),
        "seed_disagreements": int(frame["seeds_disagree"].sum()),
    }


def hand_task(b: str, c: str | None = None) -> Task:
    """A split task ``(b) + (c)``, or with ``c`` omitted a dual task on ``b`` (for hand-built cases)."""
    if c is None:
        value = evaluate(b)
        return Task(f"Compute {b}. The last digit of the result is {value % 10}.", "dual", (b, b), value)
    return Task(f"Compute ({b}) + ({c}).", "split", (b, c), evaluate(b) + evaluate(c))


def hand_pilot_case(faults: Mapping[str, int], b: str, c: str | None = None, policy=None) -> WorkflowCase:
    """A hand-built workflow case: the task of :func:`hand_task`, ``faults`` offsets on chosen steps.

    Its kind, and so its planted family, is Joint-AND for a split task with
    two faults, Single for one, and Alternative-OR for a dual task; the case
    id is ``"hand"``.
    """
    task = hand_task(b, c)
    kind = "joint_and" if task.form == "split" and len(faults) == 2 else "single" if task.form == "split" else "alt_or"
    return build_case(kind, task, policy or ScriptedPolicy(), "hand", 0, dict(faults))


PILOT_ROWS = {  # label: (key in run_pilot's numbers, key in the paper's pilot block or None)
    "FEM, GCJR against exhaustive search": ("gcjr.fem", "gcjr.fem"),
    "RS@1, GCJR": ("gcjr.rs1", "gcjr.rs1"),
    "MV, GCJR": ("gcjr.mv", "gcjr.mv"),
    "mean model calls, GCJR": ("gcjr.mean_calls", "gcjr.mean_calls"),
    "mean model calls, exhaustive search": ("exhaustive.mean_calls", "exhaustive.mean_calls"),
    "saving, 1 - GCJR/exhaustive": ("saving", "saving"),
    "cases": ("n_cases", "n_cases"),
    "shown apart: clean runs that fail": ("clean_failures", None),
    "shown apart: failed runs that pass": ("failed_runs_passing", None),
    "shown apart: cases whose replay seeds disagree": ("seed_disagreements", None),
    "FEM over the cases with none of these": ("gcjr.fem_regular", None),
    "exhaustive family = planted family (cases)": ("planted_recovered", None),
}


def pilot_beside_paper(numbers: Mapping, paper: Mapping) -> pd.DataFrame:
    """The pilot's numbers beside the paper's (GCJR §Key results, DualSolve-MAS).

    The counts shown apart (and FEM over the regular cases) have no paper value.
    """
    def get(tree, dotted):
        for part in dotted.split("."):
            tree = tree[part]
        return tree

    rows = {label: {"paper": float("nan") if theirs is None else get(paper, theirs), "workbench": get(numbers, ours)}
            for label, (ours, theirs) in PILOT_ROWS.items()}
    return pd.DataFrame.from_dict(rows, orient="index").astype(float)
