"""Execution DAGs of agent events and the graph rules GCJR reads from them.

A failed execution is a networkx ``DiGraph`` whose nodes are events. Each node
carries ``agent`` (who emitted it), ``intervenable`` (whether a clean
counterpart can replace it), ``fault`` (it carries its own injected error in
the failed run) and ``gate`` (``"any"``: corrupted when any input is;
``"all"``: a redundant join, corrupted only when every input is). One node is
the failure sink. GCJR §Methodology: the failure slice B(o) = Anc(o) ∪ {o};
pair admission needs different agents, incomparable events and a downstream
join (in-degree >= 2) that both reach.

Used in the chapters: `primer`, `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from rcakit import RcakitError

KINDS = ("single", "joint_and", "alt_or", "sequential_joint")
IN_SCOPE_KINDS = KINDS[:3]  # Sequential-Joint lies outside GCJR's declared domain
KIND_LABELS = {
    "single": "Single",
    "joint_and": "Joint-AND",
    "alt_or": "Alternative-OR",
    "sequential_joint": "Sequential-Joint",
}  # the paper's names of the four types, for tables


@dataclass(frozen=True, eq=False)
class Case:
    """One failed execution with its planted minimal repair family.

    ``schedules`` are three valid topological orders of the events (the orders
    in which the run could have been logged); ``seed`` keys the replay noise.
    """

    case_id: str
    kind: str
    graph: nx.DiGraph[Any]
    sink: str
    family: frozenset[Any]
    schedules: tuple[Any, ...]
    seed: int

    @cached_property
    def candidates(self) -> tuple[str, ...]:
        """Intervenable events in the order of the first schedule (bit i of a mask)."""
        return tuple(v for v in self.schedules[0] if self.graph.nodes[v]["intervenable"])

    @cached_property
    def index(self) -> dict[str, int]:
        """Candidate -> its bit in a set bitmask."""
        return {v: i for i, v in enumerate(self.candidates)}

    def order(self, schedule: int = 0, before: str | None = None) -> list[str]:
        """The candidates in the order schedule ``schedule`` logged them, only those logged before ``before``."""
        logged = self.schedules[schedule]
        if before is not None:
            logged = logged[: logged.index(before)]
        return [v for v in logged if v in self.index]

    def mask(self, events: Iterable[str]) -> int:
        """The bitmask of a candidate set; a non-candidate is a one-line error."""
        bits = 0
        for v in events:
            if v not in self.index:
                raise RcakitError(f"case {self.case_id}: event {v!r} is not an intervenable candidate")
            bits |= 1 << self.index[v]
        return bits


def failure_slice(graph: nx.DiGraph[Any], sink: str) -> set[str]:
    """B(o) = Anc_G(o) ∪ {o} (GCJR §Methodology, slice)."""
    if sink not in graph:
        raise RcakitError(f"failure_slice: sink {sink!r} is not a node of the graph")
    return nx.ancestors(graph, sink) | {sink}


class Structure:
    """Reachability facts of one (possibly incomplete) view of a graph.

    Descendant sets are computed once, so the pair rules cost set look-ups.
    """

    def __init__(self, graph: nx.DiGraph[Any]) -> None:
        self.graph = graph
        self.desc = {v: nx.descendants(graph, v) for v in graph}
        self.joins = {v for v in graph if graph.in_degree(v) >= 2}

    def comparable(self, u: str, v: str) -> bool:
        """u <_G v or v <_G u: one event lies on a path to the other."""
        return v in self.desc[u] or u in self.desc[v]

    def converge(self, u: str, v: str) -> bool:
        """Both events reach a common downstream join node (in-degree >= 2).

        For incomparable events this is the same as having any common
        descendant: a lowest common descendant must have two parents.
        """
        return bool(self.desc[u] & self.desc[v] & self.joins)

    def admissible(self, u: str, v: str) -> bool:
        """GCJR pair rule: a(u) != a(v), u ∥_G v, and both reach a shared join."""
        nodes = self.graph.nodes
        return nodes[u]["agent"] != nodes[v]["agent"] and not self.comparable(u, v) and self.converge(u, v)

    def admissible_set(self, events: tuple[str, ...]) -> bool:
        """A set is admitted when every pair in it is (the q = 2 rule, pairwise for q > 2)."""
        return all(self.admissible(u, v) for u, v in itertools.combinations(events, 2))


def hide_edges(graph: nx.DiGraph[Any], fraction: float, rng: np.random.Generator) -> nx.DiGraph[Any]:
    """A copy of ``graph`` with ``round(fraction · |E|)`` edges removed at random.

    The edges are removed in the order of one random permutation, so with the
    same ``rng`` seed a larger fraction hides a superset of a smaller one
    (nested draws make the hidden-edge curve a paired comparison).
    """
    if not 0.0 <= fraction <= 1.0:
        raise RcakitError(f"hide_edges: fraction = {fraction!r} is outside [0, 1]")
    edges = sorted(graph.edges)
    order = rng.permutation(len(edges))
    view = graph.copy()
    view.remove_edges_from(edges[i] for i in order[: round(fraction * len(edges))])
    return view


def random_topological_order(graph: nx.DiGraph[Any], rng: np.random.Generator) -> tuple[str, ...]:
    """Kahn's algorithm with a random choice among the ready events."""
    indeg = dict(graph.in_degree)
    ready = sorted(v for v, d in indeg.items() if d == 0)
    order = []
    while ready:
        v = ready.pop(int(rng.integers(len(ready))))
        order.append(v)
        for w in sorted(graph.successors(v)):
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    return tuple(order)


def distinct_schedules(
    graph: nx.DiGraph[Any], rng: np.random.Generator, k: int = 3, tries: int = 100
) -> tuple[Any, ...]:
    """``k`` distinct topological orders of ``graph``, drawn with ``rng``.

    Random Kahn orders are drawn until k distinct ones are found; after
    ``tries`` draws the rest are taken from the lexicographic enumeration of
    all orders, so the result is deterministic and always distinct. A graph
    with fewer than k orders is a ``RcakitError`` (the generator then draws
    another graph).
    """
    available = list(itertools.islice(nx.all_topological_sorts(graph), k))
    if len(available) < k:
        raise RcakitError(f"distinct_schedules: the graph has only {len(available)} topological order(s), {k} needed")
    orders: list[tuple[str, ...]] = []
    for _ in range(tries):
        order = random_topological_order(graph, rng)
        if order not in orders:
            orders.append(order)
        if len(orders) == k:
            return tuple(orders)
    for order in map(tuple, nx.all_topological_sorts(graph)):
        if order not in orders:
            orders.append(order)
        if len(orders) == k:
            break
    return tuple(orders)


def is_schedule(graph: nx.DiGraph[Any], order: tuple[str, ...]) -> bool:
    """Whether ``order`` lists every event once with each edge pointing forward."""
    pos = {v: i for i, v in enumerate(order)}
    return len(pos) == len(order) == graph.number_of_nodes() and all(pos[u] < pos[v] for u, v in graph.edges)
