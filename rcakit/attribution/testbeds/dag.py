"""The Controlled-DAG testbed: GCJR's Controlled-DAG generator and its four types.

The players are the intervenable events, the replay is the generator's oracle
(noise and r as given), and a method sees each case with its planted family
emptied and its fault marks cleared (:func:`method_view`).

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rcakit.attribution.interface import FailedCase
from rcakit.attribution.oracle import Oracle, ReplayMemo
from rcakit.attribution.testbeds.base import TestbedCase
from rcakit.repair.benchmark import controlled_dag_benchmark
from rcakit.repair.graph import Case
from rcakit.repair.oracle import ReplayOracle, replay_once


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
            def replay_one(s: frozenset[Any], j: int) -> tuple[bool, int]:
                return replay_once(case, s, j, noise), 0

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
