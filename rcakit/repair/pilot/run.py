"""Running and replaying the four-agent workflow: its execution DAG, its cases and its replay oracle.

Every agent message is an event of the execution DAG A -> {B, C} -> D with
its agent label and the parents the agent read, so the graph the search sees
is the one the run used:

- ``A0``, the plan, reads the task;
- ``B0..Bk`` (and ``C0..Cm``): step i applies the i-th operation of the
  solver's sub-problem; it reads the plan (for the operand) and the solver's
  previous step;
- ``D0``, the answer, reads the plan and both solvers' last steps. It is the
  failure sink: replacing the answer itself is no diagnosis, so it is not a
  candidate.

Faults are planted on solvers' last steps only, as a fixed offset added to
that step's value whenever it executes (in the failed run and in any replay
that re-executes it): Single, one solver's result in a split task, family
{{f}}; Joint-AND, both solvers' results in a split task (offsets of one sign,
so they never cancel), family {{b, c}}; Alternative-OR, both results in a dual
task (offsets that change the last digit), family {{b}, {c}}. A fault on an
earlier step would not be planted: the clean message of any later step of the
same solver would also repair it, so the planted set would not be the whole
family.

The clean counterpart of an event is its message in the clean run. A replay
of a set S copies the failed run, puts the clean messages of S in place and
re-executes only the events downstream of S, in topological order, under
replay seed j; upstream events are never re-executed. :class:`WorkflowOracle`
is a :class:`~rcakit.repair.SharedSeedOracle` that implements
only the successes of a set; its cost is what the agents execute (each
execution charges one call through the oracle's hook), so replaying ∅ costs
nothing. Nodes carry the attributes of :mod:`rcakit.repair.graph` (``agent``,
``intervenable``, ``fault``, ``gate``) so its graph rules apply; replay
outcomes come from the agents, never from the symbolic propagation of
:mod:`rcakit.repair.oracle.controlled_dag`.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.llm.base import Provider
from rcakit.repair.graph import IN_SCOPE_KINDS, Case
from rcakit.repair.oracle import THETA, SharedSeedOracle, ThetaLike, is_count
from rcakit.repair.pilot.agents import RECORD, AgentMessage, AgentPolicy, Key, ScriptedPolicy, make_policy, uncharged
from rcakit.repair.pilot.tasks import FORMS, Task, hand_task, make_task, operations, parse_expression

PLANNER, SINK = "A0", "D0"
Messages = Mapping[str, AgentMessage]  # event -> its message in one run


def workflow_graph(task: Task) -> nx.DiGraph[Any]:
    """The execution DAG of a task's run: plan, the solvers' steps, the answer (see the module doc)."""
    g = nx.DiGraph()
    g.add_node(PLANNER, agent="A", intervenable=True, fault=False, gate="any")
    for agent, part in zip("BC", task.parts, strict=True):
        steps = [f"{agent}{i}" for i in range(len(operations(part)))]
        for i, event in enumerate(steps):
            g.add_node(event, agent=agent, intervenable=True, fault=False, gate="any")
            g.add_edge(PLANNER, event)
            if i:
                g.add_edge(steps[i - 1], event)
    g.add_node(SINK, agent="D", intervenable=False, fault=False, gate="all" if task.form == "dual" else "any")
    g.add_edges_from([(PLANNER, SINK), (last_step(g, "B"), SINK), (last_step(g, "C"), SINK)])
    return g


def last_step(graph: nx.DiGraph[Any], agent: str) -> str:
    """A solver's result event: its step with the highest index."""
    return max((v for v in graph if graph.nodes[v]["agent"] == agent), key=lambda v: int(v[1:]))


def execute(
    event: str, graph: nx.DiGraph[Any], task: Task, messages: Messages, *, policy: AgentPolicy, key: Key
) -> AgentMessage:
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


def corrupted(message: AgentMessage, offset: int) -> AgentMessage:
    """A step's message with ``offset`` added to its value (an unusable message stays unusable)."""
    return None if message is None else {"value": message["value"] + offset}


def run(
    graph: nx.DiGraph[Any],
    task: Task,
    policy: AgentPolicy,
    key: tuple[str, int | str],
    *,
    faults: Mapping[str, int],
    base: Messages | None = None,
    redo: Iterable[str] | None = None,
) -> dict[str, AgentMessage]:
    """Execute the events of ``redo`` (default: all) in topological order, the rest taken from ``base``.

    A faulty event adds its offset every time it executes.
    """
    case_id, label = key
    messages = dict(base or {})
    redo = set(graph) if redo is None else set(redo)
    for event in nx.lexicographical_topological_sort(graph):
        if event in redo:
            message = execute(event, graph, task, messages, policy=policy, key=Key(case_id, event, label))
            messages[event] = corrupted(message, faults[event]) if event in faults else message
    return messages


def correct(task: Task, messages: Messages) -> bool:
    """The rule: the final answer equals the task's value."""
    answer = messages.get(SINK)
    return answer is not None and answer["answer"] == task.answer


@dataclass(frozen=True, eq=False)
class WorkflowCase:
    """A failed run of the workflow, its clean run and the planted faults.

    ``case`` is the :class:`rcakit.repair.graph.Case` the search reads
    (graph, sink, planted family, schedules); ``faults`` maps each faulty
    event to its offset.
    """

    case: Case
    task: Task
    faults: dict[str, Any]
    clean: dict[str, Any] = field(repr=False)
    failed: dict[str, Any] = field(repr=False)

    @property
    def clean_correct(self) -> bool:
        return correct(self.task, self.clean)

    @property
    def failed_correct(self) -> bool:
        return correct(self.task, self.failed)


def plant_offsets(kind: str, graph: nx.DiGraph[Any], rng: np.random.Generator) -> dict[str, int]:
    """Faulty events and their offsets for ``kind`` (see the module doc); 1-9 never leaves a last digit unchanged."""
    results = [last_step(graph, "B"), last_step(graph, "C")]
    sign = 1 if rng.random() < 0.5 else -1
    events = [results[int(rng.integers(2))]] if kind == "single" else results
    return {event: sign * int(rng.integers(1, 10)) for event in events}


def schedules_of(graph: nx.DiGraph[Any], k: int = 3) -> tuple[Any, ...]:
    """Up to ``k`` distinct topological orders, the lexicographic one first (A, B's steps, C's steps, D)."""
    first = tuple(nx.lexicographical_topological_sort(graph))
    others = (tuple(o) for o in nx.all_topological_sorts(graph) if tuple(o) != first)
    return (first, *itertools.islice(others, k - 1))


def build_case(
    kind: str, task: Task, policy: AgentPolicy, *, case_id: str, seed: int, offsets: Mapping[str, int]
) -> WorkflowCase:
    """Record the clean run, corrupt the chosen events, re-execute their downstream: the failed run."""
    graph = workflow_graph(task)
    for event in offsets:
        graph.nodes[event]["fault"] = True
    recorder = policy.bound(uncharged)  # recording is set-up, not the search's cost
    clean = run(graph, task, recorder, (case_id, RECORD), faults={})
    downstream = set(offsets).union(*(nx.descendants(graph, v) for v in offsets))
    failed = run(graph, task, recorder, (case_id, RECORD), faults=offsets, base=clean, redo=downstream)
    family = (
        frozenset(frozenset([v]) for v in offsets) if kind in ("single", "alt_or") else frozenset([frozenset(offsets)])
    )
    case = Case(case_id, kind, graph, SINK, family, schedules_of(graph), seed)
    return WorkflowCase(case, task, dict(offsets), clean, failed)


def pilot_cases(
    n_cases: int = 24,
    seed: int = 0,
    policy: str | AgentPolicy = "scripted",
    *,
    provider: str | Provider | None = None,
    slip: float = 0.0,
) -> list[WorkflowCase]:
    """``n_cases`` workflow cases cycling Single, Joint-AND, Alternative-OR; case i depends on (seed, i) only.

    ``policy`` is ``"scripted"``, ``"llm"`` (with ``provider``, a spec string
    or a provider object) or a policy object (``ScriptedPolicy``, ``LLMPolicy``).
    """
    if not is_count(n_cases):
        raise RcakitError(f"n_cases = {n_cases!r} must be an integer >= 1")
    if not is_count(seed, 0):
        raise RcakitError(f"seed = {seed!r} must be an integer >= 0")
    agents = make_policy(policy, provider, seed=seed, slip=slip) if isinstance(policy, str) else policy
    cases = []
    for i in range(n_cases):
        kind = IN_SCOPE_KINDS[i % len(IN_SCOPE_KINDS)]
        rng = np.random.default_rng([seed, i])
        task = make_task(FORMS[kind], rng)
        offsets = plant_offsets(kind, workflow_graph(task), rng)
        cases.append(
            build_case(kind, task, agents, case_id=f"{kind}-{i:03d}", seed=int(rng.integers(2**31)), offsets=offsets)
        )
    return cases


def hand_pilot_case(
    faults: Mapping[str, int], b: str, c: str | None = None, policy: AgentPolicy | None = None
) -> WorkflowCase:
    """A hand-built workflow case: the task of :func:`hand_task`, ``faults`` offsets on chosen steps.

    Its kind, and so its planted family, is Joint-AND for a split task with
    two faults, Single for one, and Alternative-OR for a dual task; the case
    id is ``"hand"``.
    """
    task = hand_task(b, c)
    kind = "joint_and" if task.form == "split" and len(faults) == 2 else "single" if task.form == "split" else "alt_or"
    return build_case(kind, task, policy or ScriptedPolicy(), case_id="hand", seed=0, offsets=dict(faults))


class WorkflowOracle(SharedSeedOracle):
    """h_θ over r shared seeds by replaying the workflow's agents (GCJR §Core problem).

    ``calls`` is what the agents executed (scripted) or the chats sent (llm)
    for this oracle's replays: the policy is bound to the oracle's ``charge``
    hook. ``seed_splits`` lists the sets whose seeds disagreed.
    """

    __slots__ = ("wcase", "__policy", "seed_splits")
    charges_seeds = False  # the agents charge each execution; replaying ∅ executes none

    def __init__(
        self, wcase: WorkflowCase, policy: AgentPolicy, *, r: int = 3, theta: ThetaLike = THETA, schedule: int = 0
    ) -> None:
        super().__init__(wcase.case, r, theta, schedule)
        self.wcase = wcase
        self.__policy = policy.bound(self.charge)
        self.seed_splits: list[frozenset[Any]] = []

    def messages(self, events: Iterable[str], seed: int) -> dict[str, AgentMessage]:
        """The messages of one replay of ``events`` under replay seed ``seed``."""
        w = self.wcase
        events = frozenset(events)
        self.case.mask(events)  # a non-candidate is a one-line error
        base = dict(w.failed) | {v: w.clean[v] for v in events}
        downstream = set().union(*(nx.descendants(self.case.graph, v) for v in events)) - events
        return run(
            self.case.graph,
            w.task,
            self.__policy,
            (self.case.case_id, seed),
            faults=w.faults,
            base=base,
            redo=downstream,
        )

    def successes(self, events: frozenset[str]) -> int:
        """Σ_j Y_j(S): the replays under the r seeds whose answer is right."""
        successes = sum(correct(self.wcase.task, self.messages(events, j)) for j in range(self.r))
        if 0 < successes < self.r:
            self.seed_splits.append(events)
        return successes
