"""One attribution interface over three testbeds with certified ground truth.

- ``oracle``: the ``Attribution`` answer type, the ``FailedCase`` a method reads,
  the counting replay oracle ``AttributionOracle``, the shared ``ReplayMemo`` and
  the ``Method`` protocol every method meets;
- ``adapters``: the existing methods of CAR, GCJR and AgenticRAG-FP behind one
  signature ``method(case, oracle, budget=None)``, and loading (and checking)
  a user's method by import path;
- ``testbeds``: RAG hops, Controlled-DAG events and support-agent steps;
- ``scoring``: one method on one case against a fresh oracle (a user's method
  under a per-case time limit), whether its answer is right, and the summary;
- ``experiments``: the chapter's comparison of every method on every testbed,
  each of its sections as a ``rcakit.sections.Section``, the tables and the
  cost frontier;
- ``plotting``: accuracy against replay cost per testbed.

Used in the chapters: `attribution-families`.
"""

from rcakit.attribution.adapters import BUILT_IN, FAMILY_OF, METHOD_NAMES, check_methods, load_method, load_methods
from rcakit.attribution.experiments import (
    Comparison,
    accuracy_table,
    compare_methods,
    cost_frontier,
    families_table,
    results_tree,
)
from rcakit.attribution.oracle import (
    Attribution,
    AttributionOracle,
    Cost,
    FailedCase,
    Method,
    NotApplicable,
    ReplayMemo,
)
from rcakit.attribution.scoring import correct, run_method, score_methods, summary
from rcakit.attribution.testbeds import FAULT_TYPES, TESTBEDS, TestbedCase, build_testbeds

__all__ = [
    "Attribution",
    "AttributionOracle",
    "BUILT_IN",
    "Comparison",
    "Cost",
    "FAMILY_OF",
    "FAULT_TYPES",
    "FailedCase",
    "METHOD_NAMES",
    "Method",
    "NotApplicable",
    "ReplayMemo",
    "TESTBEDS",
    "TestbedCase",
    "accuracy_table",
    "build_testbeds",
    "check_methods",
    "compare_methods",
    "correct",
    "cost_frontier",
    "families_table",
    "load_method",
    "load_methods",
    "results_tree",
    "run_method",
    "score_methods",
    "summary",
]
