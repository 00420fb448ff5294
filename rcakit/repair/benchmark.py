"""The Controlled-DAG benchmark (GCJR §Experiments), rebuilt from its description.

Four agents A -> {B, C} -> D. Each agent's events form a chain (an agent reads
its own earlier messages); A's last event is the plan sent to B and C; the last
events of B and C meet at D's first event, the join; D's last event feeds the
failure sink ``out``. Randomness adds what real runs have: tool observations
inside a chain (events that cannot be intervened on), extra plan reads from
earlier A events, an occasional B -> C peer message, and off-slice events
(logs that reach nothing) among the candidates. Each case has 6-14 intervenable
candidates.

The failure is planted per type, as injected errors plus the join's gate:

- ``single``: one faulty event anywhere in the slice; family {{f}}.
- ``joint_and``: faulty u in B and v in C, incomparable, join gate ``any``
  (D needs both inputs right); family {{u, v}}.
- ``alt_or``: the same, but the join is redundant (``all``: D recovers when
  either input is right); family {{u}, {v}}.
- ``sequential_joint``: faulty u and v of different agents with u upstream of
  v; repairing v alone still relays u's corruption; family {{u, v}}, outside
  GCJR's domain (the pair is comparable).

Every planted family is checked against the noiseless replay (``true_family``)
before a case is accepted, so the type label and the mechanism cannot drift
apart. Each case carries three *distinct* topological orders (GCJR
§Experiments: "three valid topological schedules"); a graph with fewer than
three orders is never accepted, and another graph is drawn from the same
generator, so the benchmark stays seeded and deterministic.

``hand_built_case`` makes a case from an edge list, for small examples worked
by hand.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.repair.families import minimal_sets
from rcakit.repair.graph import KINDS, Case, Structure, distinct_schedules, failure_slice, is_schedule
from rcakit.repair.oracle import clean_success

SINK = "out"
N_SCHEDULES = 3
MAX_GRAPHS = 50


def true_family(case: Case, q: int = 2) -> frozenset[Any]:
    """F_{q,θ} under noiseless replay: all inclusion-minimal successes of size <= q.

    The reference every method is scored against (MRFR, GCJR §Technical
    contribution); replay here is free and is not counted.
    """
    return minimal_sets(
        frozenset(s)
        for k in range(1, q + 1)
        for s in itertools.combinations(case.candidates, k)
        if clean_success(case, case.mask(s))
    )


def _add_chain(g: nx.DiGraph[Any], agent: str, k: int, rng: np.random.Generator, *, p_tool: float) -> list[str]:
    events, prev = [], None
    for i in range(k):
        name = f"{agent}{i}"
        g.add_node(name, agent=agent, intervenable=True, fault=False, gate="any")
        if prev is not None:
            if rng.random() < p_tool:  # a tool observation between two messages
                tool = f"{agent}{i}t"
                g.add_node(tool, agent=agent, intervenable=False, fault=False, gate="any")
                g.add_edges_from([(prev, tool), (tool, name)])
            else:
                g.add_edge(prev, name)
        events.append(name)
        prev = name
    return events


def execution_graph(rng: np.random.Generator) -> tuple[nx.DiGraph[Any], dict[str, list[str]]]:
    """One random A -> {B, C} -> D execution DAG with 6-14 candidates, fault-free."""
    n = int(rng.integers(6, 15))
    n_off = int(rng.integers(0, 3))
    counts = 1 + rng.multinomial(n - n_off - 4, [0.2, 0.3, 0.3, 0.2])
    g = nx.DiGraph()
    chains = {a: _add_chain(g, a, int(k), rng, p_tool=0.2) for a, k in zip("ABCD", counts, strict=True)}
    a, b, c, d = (chains[x] for x in "ABCD")
    g.add_edges_from([(a[-1], b[0]), (a[-1], c[0]), (b[-1], d[0]), (c[-1], d[0])])
    for ev in a[:-1]:
        if rng.random() < 0.3:  # a later step re-reads an earlier plan message
            g.add_edge(ev, str(rng.choice(b + c)))
    if rng.random() < 0.3:  # a peer message from solver B to solver C
        g.add_edge(str(rng.choice(b)), str(rng.choice(c)))
    g.add_node(SINK, agent="D", intervenable=False, fault=False, gate="any")
    g.add_edge(d[-1], SINK)
    for i in range(n_off):  # a log line or memory write that nothing downstream reads
        agent = str(rng.choice(list("ABCD")))
        off = f"{agent}x{i}"
        g.add_node(off, agent=agent, intervenable=True, fault=False, gate="any")
        g.add_edge(str(rng.choice(chains[agent])), off)
    return g, chains


def _plantings(kind: str, g: nx.DiGraph[Any], chains: dict[str, list[str]]) -> list[tuple[str, ...]]:
    """Every fault placement of ``kind`` this graph allows, in a fixed order."""
    s = Structure(g)
    in_slice = [v for v in sorted(failure_slice(g, SINK)) if g.nodes[v]["intervenable"]]
    if kind == "single":
        return [(v,) for v in in_slice]
    if kind in ("joint_and", "alt_or"):
        return [(u, v) for u in chains["B"] for v in chains["C"] if not s.comparable(u, v)]
    return [
        (u, v)
        for u, v in itertools.permutations(in_slice, 2)
        if g.nodes[u]["agent"] != g.nodes[v]["agent"] and v in s.desc[u]
    ]


def _planted(kind: str, faults: tuple[str, ...]) -> frozenset[Any]:
    if kind in ("single", "alt_or"):
        return frozenset(frozenset([f]) for f in faults)
    return frozenset([frozenset(faults)])


def make_case(kind: str, rng: np.random.Generator, case_id: str) -> Case:
    """One case of ``kind``; redraws the placement (then the graph) until the mechanism matches the type."""
    if kind not in KINDS:
        raise RcakitError(f"make_case: kind {kind!r} is not one of {', '.join(KINDS)}")
    for _ in range(MAX_GRAPHS):
        g, chains = execution_graph(rng)
        if _n_orders(g) < N_SCHEDULES:
            continue
        options = _plantings(kind, g, chains)
        for i in rng.permutation(len(options)):
            case = _build(kind, g, chains, faults=options[i], rng=rng, case_id=case_id)
            if true_family(case) == case.family:
                return case
    raise RcakitError(f"make_case: no {kind} placement matched its planted family in {MAX_GRAPHS} graphs")


def _n_orders(g: nx.DiGraph[Any]) -> int:
    """How many topological orders ``g`` has, counted up to ``N_SCHEDULES``."""
    return len(list(itertools.islice(nx.all_topological_sorts(g), N_SCHEDULES)))


def _build(
    kind: str,
    g: nx.DiGraph[Any],
    chains: dict[str, list[str]],
    *,
    faults: tuple[str, ...],
    rng: np.random.Generator,
    case_id: str,
) -> Case:
    """A case of ``kind`` on a copy of ``g`` with ``faults`` planted, its join gate and three schedules."""
    g = g.copy()
    for f in faults:
        g.nodes[f]["fault"] = True
    g.nodes[chains["D"][0]]["gate"] = "all" if kind == "alt_or" else "any"
    schedules = distinct_schedules(g, rng, N_SCHEDULES)
    return Case(case_id, kind, g, SINK, _planted(kind, faults), schedules, int(rng.integers(2**31)))


def controlled_dag_benchmark(cases_per_type: int = 30, seed: int = 0) -> list[Case]:
    """``cases_per_type`` cases of each of the four types (default 120 cases).

    Case i of a type depends only on (seed, type, i), so a smaller benchmark
    is a prefix of a larger one with the same seed.
    """
    if not (isinstance(cases_per_type, (int, np.integer)) and cases_per_type >= 1):
        raise RcakitError(f"controlled_dag_benchmark: cases_per_type = {cases_per_type!r} must be an integer >= 1")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise RcakitError(f"controlled_dag_benchmark: seed = {seed!r} must be an integer >= 0")
    return [
        make_case(kind, np.random.default_rng([seed, k, i]), f"{kind}-{i:03d}")
        for k, kind in enumerate(KINDS)
        for i in range(cases_per_type)
    ]


def benchmark_table(cases: list[Case]) -> pd.DataFrame:
    """Per type: cases, mean candidates, mean edges, and how many cases have three distinct schedules."""
    frame = pd.DataFrame(
        {
            "kind": [case.kind for case in cases],
            "candidates (mean)": [len(case.candidates) for case in cases],
            "edges (mean)": [case.graph.number_of_edges() for case in cases],
            "distinct schedules": [len(set(case.schedules)) == N_SCHEDULES for case in cases],
        }
    )
    table = frame.groupby("kind").agg(
        {"kind": "size", "candidates (mean)": "mean", "edges (mean)": "mean", "distinct schedules": "sum"}
    )
    return table.rename(columns={"kind": "cases"}).reindex([k for k in KINDS if k in table.index])


def hand_built_case(
    edges: Iterable[tuple[str, str]],
    faults: Iterable[str],
    *,
    redundant: Iterable[str] = (),
    schedules: Iterable[tuple[str, ...]] | None = None,
    sink: str = SINK,
    case_id: str = "hand",
    seed: int = 0,
) -> Case:
    """A case from an edge list; an event's agent is its name without the trailing digits (``B1`` -> ``B``).

    Every event but the sink is intervenable; ``faults`` carry injected
    errors, ``redundant`` joins recover when any input is clean. The family
    is the noiseless one (``true_family``), kind ``"hand"``. ``schedules``
    default to three distinct topological orders drawn with ``seed``.
    """
    g = nx.DiGraph(list(edges))
    if sink not in g:
        raise RcakitError(f"hand_built_case: sink {sink!r} is not an endpoint of any edge")
    for v in g:
        g.add_node(v, agent=re.sub(r"\d+$", "", v), intervenable=v != sink, fault=False, gate="any")
    for v, attr, value in [*((f, "fault", True) for f in faults), *((j, "gate", "all") for j in redundant)]:
        if v not in g:
            raise RcakitError(f"hand_built_case: event {v!r} is not in the graph")
        g.nodes[v][attr] = value
    if schedules is None:
        schedules = distinct_schedules(g, np.random.default_rng(seed), N_SCHEDULES)
    schedules = tuple(map(tuple, schedules))
    if not all(is_schedule(g, order) for order in schedules):
        raise RcakitError("hand_built_case: a schedule is not a topological order of the graph")
    case = Case(case_id, "hand", g, sink, frozenset(), schedules, seed)
    return replace(case, family=true_family(case))
