"""Three testbeds with certified ground truth, each exposing a replay oracle.

Repair semantics are GCJR's on all three (``rcakit.attribution.testbeds.base``):
repairing a player removes its own injected fault, and a case's ground truth is
the family of inclusion-minimal repair sets of size <= 2, certified by replay.

- ``rag_hops`` (``rcakit.attribution.testbeds.rag``): the hops of an
  AgenticRAG-FP agent, one or two interventions at a time;
- ``controlled_dag`` (``rcakit.attribution.testbeds.dag``): GCJR's
  Controlled-DAG generator, its four types;
- ``support_agent`` (``rcakit.attribution.testbeds.support``): CAR's
  four-step support agent with one or two injected observations.

:func:`build_testbeds` builds all three from one seed.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

from rcakit.attribution.testbeds.base import (
    FAULT_TYPE_NAMES,
    FAULT_TYPES,
    TESTBED_NAMES,
    TESTBEDS,
    TestbedCase,
    certified_family,
    chain_case,
)
from rcakit.attribution.testbeds.dag import dag_testbed, method_view
from rcakit.attribution.testbeds.rag import CountingAgent, hop_name, rag_replay, rag_testbed
from rcakit.attribution.testbeds.support import (
    CERTIFY_ROLLOUTS,
    SUPPORT_THETA,
    CountingSCM,
    clean_observation,
    repair_do,
    support_scm,
    support_testbed,
)

__all__ = [
    "CERTIFY_ROLLOUTS",
    "FAULT_TYPES",
    "FAULT_TYPE_NAMES",
    "SUPPORT_THETA",
    "TESTBEDS",
    "TESTBED_NAMES",
    "CountingAgent",
    "CountingSCM",
    "TestbedCase",
    "build_testbeds",
    "certified_family",
    "chain_case",
    "clean_observation",
    "dag_testbed",
    "hop_name",
    "method_view",
    "rag_replay",
    "rag_testbed",
    "repair_do",
    "support_scm",
    "support_testbed",
]


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
