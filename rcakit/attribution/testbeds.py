"""Three testbeds with certified ground truth, each exposing a replay oracle.

Repair semantics are GCJR's on all three (GCJR §Core problem): repairing a
player removes its own injected fault; a player with no fault of its own is
repaired to what it already was, so repairing it changes nothing. A case's
ground truth is the family of inclusion-minimal repair sets of size <= 2,
certified by replaying every subset before the case is accepted (free, not
charged to any method).

- ``rag_hops``: players are the hops of an AgenticRAG-FP agent (§4). A fault is
  an intervention at hop h (the structural kinds and certified content
  corruption); a double fault applies a second intervention at a later hop of
  the already corrupted run. Replaying S applies, in hop order, only the
  faults at hops outside S, and resumes the agent (deterministic: r = 1).
  Cases are kept by the family replay certifies: ``single`` {{h}},
  ``double_joint`` {{h1, h2}} (jointly necessary), ``double_either``
  {{h1}, {h2}} (either repair suffices).
- ``controlled_dag``: GCJR's Controlled-DAG generator, its four types, players
  the intervenable events, the replay its oracle (noise and r as given).
- ``support_agent``: CAR's four-step support agent (CAR Figure 1) with the
  injected instruction in the order tool's observation (``single``) or also in
  the ticket the first step reads (``double``). Repairing S replaces the
  observations of S by their clean counterparts, holds the steps before the
  first changed one and the actions of S, and lets every other later step
  re-decide; one seed replay is one rollout. The truth is certified with
  ``CERTIFY_ROLLOUTS`` rollouts per set.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from rcakit import RcakitError
from rcakit.attribution.oracle import FailedCase, Oracle, ReplayMemo
from rcakit.rag.interventions import CONTENT, STRUCTURAL, corrupt_content, inject
from rcakit.rag.protocol import Lab, build_lab, eligible
from rcakit.rag.trace import Trace
from rcakit.repair.benchmark import controlled_dag_benchmark
from rcakit.repair.graph import KIND_LABELS, Case
from rcakit.repair.oracle import ReplayOracle, replay
from rcakit.repair.search import minimal_sets
from rcakit.scm.model import SCM, Do, PolicyStep
from rcakit.scm.replay import record_failing_run
from rcakit.scm.support_agent import INJECTED_NOTE, TICKET, support_agent_scm

if TYPE_CHECKING:
    from rcakit.rag import Agent, Hop
    from rcakit.rag.world import Question

TESTBEDS = ("rag_hops", "controlled_dag", "support_agent")
FAULT_TYPES = {
    "rag_hops": ("single", "double_joint", "double_either"),
    "controlled_dag": ("single", "joint_and", "alt_or", "sequential_joint"),
    "support_agent": ("single", "double"),
}
TESTBED_NAMES = {"rag_hops": "RAG hops", "controlled_dag": "Controlled-DAG", "support_agent": "support agent"}
FAULT_TYPE_NAMES = {  # a reader's name for each fault type; the Controlled-DAG types by GCJR's names
    "single": "single",
    "double_joint": "jointly necessary",
    "double_either": "either suffices",
    **{kind: KIND_LABELS[kind] for kind in FAULT_TYPES["controlled_dag"][1:]},
    "double": "double",
}
CERTIFY_ROLLOUTS = 2000  # rollouts per set when certifying the support agent's family
SUPPORT_THETA = 2 / 3  # the success share a repair must reach (GCJR's θ)


@dataclass(frozen=True)
class TestbedCase:
    """A failed case, its fault type, its certified family, and how to build its oracle."""

    case: FailedCase
    fault_type: str
    truth: frozenset
    oracle: Callable[[ReplayMemo], Oracle]


def chain_case(case_id: str, players: list[str], sink: str, edges: Iterable[tuple[str, str]], *, seed: int) -> Case:
    """A GCJR ``Case`` over ``players`` (one agent, no fault marks): the view a method gets."""
    g = nx.DiGraph(list(edges))
    for v in g:
        g.add_node(v, agent="agent", intervenable=v != sink, fault=False, gate="any")
    order = tuple(nx.lexicographical_topological_sort(g, key=lambda v: (players + [sink]).index(v)))
    return Case(case_id, "failed", g, sink, frozenset(), (order,), seed)


def certified_family(players: Iterable[Hashable], succeeds: Callable[[frozenset], bool], q: int = 2) -> frozenset:
    """The inclusion-minimal repair sets of size <= q, by replaying each set."""
    sets = (frozenset(c) for k in range(1, q + 1) for c in itertools.combinations(players, k))
    return minimal_sets(s for s in sets if succeeds(s))


# --- RAG hops ---------------------------------------------------------------------------------------


def hop_name(h: int) -> str:
    """The player name of hop ``h`` (1-based)."""
    return f"hop{h}"


def _apply(lab: Lab, trace: Trace, hop: int, kind: str) -> Trace | None:
    """The trace after fault ``kind`` at ``hop`` (seeded by the lab seed, question, hop and kind)."""
    if hop > len(trace.hops):
        return None
    rng = random.Random(f"{lab.seed}:{trace.question.id}:{hop}:{kind}")
    if kind != CONTENT:
        return inject(lab.agent, trace, hop, kind, rng)
    made = corrupt_content(lab.agent, trace, hop, [q.answer for q in lab.world.questions], rng)
    return None if made is None else lab.agent.resume_from(trace.question, trace.hops[: hop - 1] + (made[1],), hop + 1)


def rag_replay(lab: Lab, qid: str, faults: tuple, repaired: frozenset) -> Trace | None:
    """The run with the faults at hops outside ``repaired`` applied in hop order (None: not applicable)."""
    trace = lab.clean[qid]
    for hop, kind in faults:
        if hop_name(hop) not in repaired:
            trace = _apply(lab, trace, hop, kind)
            if trace is None:
                return None
    return trace


def _suffix_words(trace: Trace, start: int) -> int:
    """Words the agent spends re-executing from hop ``start`` (the replay's token cost)."""
    return sum(h.word_cost for h in trace.hops[start - 1 :]) + trace.extra_words


def _rag_case(lab: Lab, qid: str, faults: tuple, depth: int) -> TestbedCase | None:
    players = [hop_name(h) for h in range(1, depth + 1)]
    outcomes = {}

    def run(s: frozenset) -> Trace | None:
        if s not in outcomes:
            outcomes[s] = rag_replay(lab, qid, faults, s)
        return outcomes[s]

    failed = run(frozenset())
    if failed is None or failed.correct:
        return None
    if any(run(frozenset([hop_name(h)])) is None for h, _ in faults):
        return None
    truth = certified_family(players, lambda s: bool((t := run(s)) is not None and t.correct))
    hops = [h for h, _ in faults]
    fault_type = _rag_type(truth, hops)
    if fault_type is None:
        return None
    case_id = f"rag:{qid}:" + "+".join(f"{h}{k}" for h, k in faults)
    edges = list(itertools.pairwise(players + ["answer"]))
    dag = chain_case(case_id, players, "answer", edges, seed=0)
    first = min(hops)

    def oracle(memo: ReplayMemo) -> Oracle:
        def replay_one(s: frozenset, j: int) -> tuple[bool, int]:
            trace = run(s)
            start = min([first] + [int(p[3:]) for p in s])
            return bool(trace is not None and trace.correct), _suffix_words(trace, start) if trace else 0

        made = Oracle(dag, replay_one, r=1, memo=memo)
        made.agent = CountingAgent(lab.agent, made)
        return made

    return TestbedCase(FailedCase(case_id, "rag_hops", tuple(players), dag, failed), fault_type, truth, oracle)


def _rag_type(truth: frozenset, hops: list[int]) -> str | None:
    sets = [frozenset([hop_name(h)]) for h in hops]
    if len(hops) == 1:
        return "single" if truth == frozenset(sets) else None
    if truth == frozenset([sets[0] | sets[1]]):
        return "double_joint"
    if truth == frozenset(sets):
        return "double_either"
    return None


class CountingAgent:
    """The lab's agent, charging each re-execution to an oracle (one replay plus its words).

    A probe (Propagation-Aware, Suf-Regen) runs on it unchanged; its resumed and
    forced runs are then counted at the oracle like any other replay.
    """

    def __init__(self, agent: Agent, oracle: Oracle) -> None:
        self._agent, self._oracle = agent, oracle

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    def resume_from(self, q: Question, prefix: Sequence[Hop], start_hop: int) -> Trace:
        trace = self._agent.resume_from(q, prefix, start_hop)
        self._oracle.charge(replays=1)
        return trace

    def force_answer(self, q: Question, prefix: Sequence[Hop]) -> Trace:
        trace = self._agent.force_answer(q, prefix)
        self._oracle.charge(replays=1)
        return trace


def _rag_candidates(lab: Lab, depth: int, kinds: tuple) -> dict[str, list[tuple]]:
    """Every (question, faults) placement, by how many faults it has."""
    qids = [qid for qid, t in lab.clean.items() if eligible(t, depth)]
    singles = [(qid, ((h, k),)) for qid in qids for h in range(1, depth + 1) for k in kinds]
    pairs = [
        (qid, ((h1, k1), (h2, k2)))
        for qid in qids
        for h1, h2 in itertools.combinations(range(1, depth + 1), 2)
        for k1 in kinds
        if k1 != "early_termination"
        for k2 in kinds
        if k2 != CONTENT
    ]
    return {"single": singles, "double": pairs}


def rag_testbed(
    seed: int, cases_per_type: int, n_entities: int = 600, n_questions: int = 40, *, hops: int = 3, max_tries: int = 400
) -> list[TestbedCase]:
    """Up to ``cases_per_type`` certified RAG cases of each type, placements tried in a seeded order.

    The single faults use the six structural interventions and content
    corruption; the double faults pair a structural or content fault with a
    later structural one (early termination cannot come first: it ends the run).
    """
    lab = build_lab(seed, n_entities=n_entities, n_questions=n_questions, hops=hops)
    kinds = STRUCTURAL + (CONTENT,)
    found: dict[str, list[TestbedCase]] = {t: [] for t in FAULT_TYPES["rag_hops"]}
    rng = np.random.default_rng([seed, 14])
    for group, placements in _rag_candidates(lab, hops, kinds).items():
        wanted = ["single"] if group == "single" else ["double_joint", "double_either"]
        for i in rng.permutation(len(placements))[:max_tries]:
            if all(len(found[t]) >= cases_per_type for t in wanted):
                break
            qid, faults = placements[i]
            made = _rag_case(lab, qid, faults, hops)
            if made is not None and len(found[made.fault_type]) < cases_per_type:
                found[made.fault_type].append(made)
    return [c for t in FAULT_TYPES["rag_hops"] for c in found[t]]


# --- Controlled-DAG -----------------------------------------------------------------------------------


def method_view(case: Case) -> Case:
    """The case as a method sees it: the planted family emptied and the fault marks cleared."""
    g = case.graph.copy()
    for v in g:  # every node, as nx.set_node_attributes(g, value, name) does (its stubs take only mappings)
        g.nodes[v]["fault"] = False
        g.nodes[v]["gate"] = "any"
    return replace(case, kind="failed", graph=g, family=frozenset())


def dag_testbed(seed: int, cases_per_type: int, r: int = 3, noise: float = 0.0) -> list[TestbedCase]:
    """GCJR's Controlled-DAG benchmark as a testbed (the generator's four types)."""
    out = []
    for case in controlled_dag_benchmark(cases_per_type, seed):
        view = method_view(case)

        def oracle(memo: ReplayMemo, case: Case = case, view: Case = view) -> Oracle:
            def replay_one(s: frozenset, j: int) -> tuple[bool, int]:
                return replay(case, s, j, noise), 0

            return Oracle(
                view,
                replay_one,
                r=r,
                memo=memo,
                table=lambda rr: ReplayOracle(case, rr, noise=noise).replay_every_subset(),
            )

        out.append(
            TestbedCase(
                FailedCase(case.case_id, "controlled_dag", view.candidates, view), case.kind, case.family, oracle
            )
        )
    return out


# --- Support agent ------------------------------------------------------------------------------------


def _noted_ticket(context: tuple, action: object) -> dict:
    """The ticket as the first step reads it in the double variant: the injected note appended."""
    return {"ticket": TICKET, "customer_note": INJECTED_NOTE}


def support_scm(variant: str) -> SCM:
    """The support agent (``single``: one injected observation; ``double``: also one in the ticket)."""
    scm = support_agent_scm()
    if variant == "double":
        first = scm.steps[0]
        scm.steps = [PolicyStep(first.name, first.policy, _noted_ticket), *scm.steps[1:]]
    elif variant != "single":
        raise RcakitError(f"support_scm: variant {variant!r} is not 'single' or 'double'")
    return scm


def clean_observation(observation: Any) -> Any:
    """The clean counterpart of an observation: the injected note removed (else unchanged)."""
    if isinstance(observation, Mapping) and observation.get("customer_note") == INJECTED_NOTE:
        return {k: v for k, v in observation.items() if k != "customer_note"}
    return observation


def repair_do(scm: SCM, steps: frozenset) -> Do:
    """The replay of repair set ``steps`` as a do-intervention (see the module docstring)."""
    observed = scm.observed
    changed = [k for k in steps if clean_observation(observed[k].observation) != observed[k].observation]
    if not changed:
        return Do(hold=frozenset(range(scm.n_steps)))
    return Do(
        hold=frozenset(range(min(changed))),
        actions={k: observed[k].action for k in steps},
        observations={k: clean_observation(observed[k].observation) for k in steps},
    )


def _injected_at(variant: str) -> Callable[[tuple], bool]:
    need = {"single": (1,), "double": (0, 1)}[variant]
    return lambda records: all(clean_observation(records[k].observation) != records[k].observation for k in need)


class CountingSCM:
    """An SCM whose rollouts are charged to an oracle (for contrastive resampling, CAR §4)."""

    def __init__(self, scm: SCM, oracle: Oracle) -> None:
        self._scm, self._oracle = scm, oracle

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scm, name)

    def sample_bad(self, rng: np.random.Generator, do: Do, k: int) -> np.ndarray:
        self._oracle.charge(replays=k)
        return self._scm.sample_bad(rng, do, k)


def support_testbed(seed: int, cases_per_type: int, rollouts: int = 30) -> list[TestbedCase]:
    """``cases_per_type`` recorded failing runs of each variant, certified by replay."""
    out = []
    for variant in FAULT_TYPES["support_agent"]:
        for i in range(cases_per_type):
            scm = support_scm(variant)
            run = record_failing_run(
                scm, int(np.random.default_rng([seed, 4, i]).integers(2**31)), 200, accept=_injected_at(variant)
            )
            if run is None:
                raise RcakitError(f"support_testbed: no failing run with the injection(s) for case {i}")
            out.append(_support_case(scm, variant, i, seed, rollouts))
    return out


def _support_case(scm: SCM, variant: str, i: int, seed: int, rollouts: int) -> TestbedCase:
    players = scm.step_names
    index = {name: k for k, name in enumerate(players)}
    case_id = f"support:{variant}:{i:03d}"
    edges = [*itertools.combinations(players, 2), ("lookup_order", "outcome"), ("decide_refund", "outcome")]
    dag = chain_case(case_id, players, "outcome", edges, seed=seed)

    def share_good(steps: frozenset, rng: np.random.Generator, k: int) -> float:
        do = repair_do(scm, frozenset(index[s] for s in steps))
        return 1.0 - float(scm.sample_bad(rng, do, k).mean())

    certify = np.random.default_rng([seed, 5, i])
    truth = certified_family(players, lambda s: share_good(s, certify, CERTIFY_ROLLOUTS) >= SUPPORT_THETA)

    def oracle(memo: ReplayMemo) -> Oracle:
        def replay_one(s: frozenset, j: int) -> tuple[bool, int]:
            rng = np.random.default_rng([seed, 6, i, dag.mask(s), j])
            return share_good(s, rng, 1) == 1.0, 0

        made = Oracle(dag, replay_one, r=rollouts, memo=memo)
        made.scm = CountingSCM(scm, made)
        return made

    return TestbedCase(FailedCase(case_id, "support_agent", tuple(players), dag), variant, truth, oracle)


def build_testbeds(
    *,
    seed: int,
    rag_cases: int,
    dag_cases: int,
    support_cases: int,
    r: int = 3,
    noise: float = 0.0,
    rollouts: int = 30,
    n_entities: int = 600,
    n_questions: int = 40,
) -> dict[str, list[TestbedCase]]:
    """The three testbeds, each from ``seed``."""
    return {
        "rag_hops": rag_testbed(seed, rag_cases, n_entities, n_questions),
        "controlled_dag": dag_testbed(seed, dag_cases, r, noise),
        "support_agent": support_testbed(seed, support_cases, rollouts),
    }
