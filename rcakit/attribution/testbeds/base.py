"""What the three testbeds share: their names and fault types, the case type, the method's view and the truth.

Repair semantics are GCJR's on all three (GCJR §Core problem): repairing a
player removes its own injected fault; a player with no fault of its own is
repaired to what it already was, so repairing it changes nothing. A case's
ground truth is the family of inclusion-minimal repair sets of size <= 2,
certified by replaying every subset before the case is accepted (free, not
charged to any method).

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from rcakit.attribution.interface import FailedCase
from rcakit.attribution.oracle import Oracle, ReplayMemo
from rcakit.repair.graph import KIND_LABELS, Case
from rcakit.repair.search import minimal_sets

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


@dataclass(frozen=True)
class TestbedCase:
    """A failed case, its fault type, its certified family, and how to build its oracle."""

    case: FailedCase
    fault_type: str
    truth: frozenset[Any]
    oracle: Callable[[ReplayMemo], Oracle]


def chain_case(case_id: str, players: list[str], sink: str, edges: Iterable[tuple[str, str]], *, seed: int) -> Case:
    """A GCJR ``Case`` over ``players`` (one agent, no fault marks): the view a method gets."""
    g = nx.DiGraph(list(edges))
    for v in g:
        g.add_node(v, agent="agent", intervenable=v != sink, fault=False, gate="any")
    order = tuple(nx.lexicographical_topological_sort(g, key=lambda v: (players + [sink]).index(v)))
    return Case(case_id, "failed", g, sink, frozenset(), (order,), seed)


def certified_family(
    players: Iterable[Hashable], succeeds: Callable[[frozenset[Any]], bool], q: int = 2
) -> frozenset[Any]:
    """The inclusion-minimal repair sets of size <= q, by replaying each set."""
    sets = (frozenset(c) for k in range(1, q + 1) for c in itertools.combinations(players, k))
    return minimal_sets(s for s in sets if succeeds(s))
