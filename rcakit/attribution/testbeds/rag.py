"""The RAG-hops testbed: the players are the hops of an AgenticRAG-FP agent (§4).

A fault is an intervention at hop h (the structural kinds and certified content
corruption); a double fault applies a second intervention at a later hop of
the already corrupted run. Replaying S applies, in hop order, only the
faults at hops outside S, and resumes the agent (deterministic: r = 1).
Cases are kept by the family replay certifies: ``single`` {{h}},
``double_joint`` {{h1, h2}} (jointly necessary), ``double_either``
{{h1}, {h2}} (either repair suffices). A replay costs the words the agent
re-executes from the first changed hop.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rcakit.attribution.interface import FailedCase
from rcakit.attribution.oracle import Oracle, ReplayMemo
from rcakit.attribution.testbeds.base import FAULT_TYPES, TestbedCase, certified_family, chain_case
from rcakit.rag.interventions import CONTENT, STRUCTURAL, corrupt_content, inject
from rcakit.rag.protocol import Lab, build_lab, eligible
from rcakit.rag.trace import Trace

if TYPE_CHECKING:
    from rcakit.rag import Agent, Hop
    from rcakit.rag.world import Question


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


def rag_replay(lab: Lab, qid: str, faults: tuple[Any, ...], repaired: frozenset[Any]) -> Trace | None:
    """The run with the faults at hops outside ``repaired`` applied in hop order (None: not applicable)."""
    trace = lab.clean[qid]
    for hop, kind in faults:
        if hop_name(hop) not in repaired:
            trace = _apply(lab, trace, hop, kind)
            if trace is None:
                return None
    return trace


def _suffix_words(trace: Trace, start: int) -> int:
    """Words the agent spends re-executing from hop ``start`` (the replay's cost in words)."""
    return sum(h.word_cost for h in trace.hops[start - 1 :]) + trace.extra_words


def _rag_case(lab: Lab, qid: str, faults: tuple[Any, ...], depth: int) -> TestbedCase | None:
    players = [hop_name(h) for h in range(1, depth + 1)]
    outcomes = {}

    def run(s: frozenset[Any]) -> Trace | None:
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
        def replay_one(s: frozenset[Any], j: int) -> tuple[bool, int]:
            trace = run(s)
            start = min([first] + [int(p[3:]) for p in s])
            return bool(trace is not None and trace.correct), _suffix_words(trace, start) if trace else 0

        made = Oracle(dag, replay_one, r=1, memo=memo)
        made.agent = CountingAgent(lab.agent, made)
        return made

    return TestbedCase(FailedCase(case_id, "rag_hops", tuple(players), dag, failed), fault_type, truth, oracle)


def _rag_type(truth: frozenset[Any], hops: list[int]) -> str | None:
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


def _rag_candidates(lab: Lab, depth: int, kinds: tuple[Any, ...]) -> dict[str, list[tuple[Any, ...]]]:
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
