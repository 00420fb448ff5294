"""One attribution interface over three testbeds with certified ground truth.

- ``interface``: the ``FailedCase`` a method reads, the ``Attribution`` answer
  type with its ``Cost``, ``NotApplicable`` and the ``Method`` protocol every
  method meets;
- ``oracle``: the counting replay oracle ``AttributionOracle`` and the shared
  ``ReplayMemo``;
- ``adapters``: the existing methods of CAR, GCJR and AgenticRAG-FP behind one
  signature ``method(case, oracle, budget=None)``, and loading (and checking)
  a user's method by import path;
- ``testbeds``: RAG hops, Controlled-DAG events and support-agent steps, one
  module each;
- ``scoring``: one method on one case against a fresh oracle (a user's method
  under a per-case time limit), whether its answer is right, the summary, and
  ``compare_methods``, every method on every case through one memo (a
  ``MethodComparison``).

The chapter's sections, tables and figures are in
``rcakit.chapters.attribution_families``.

Used in the chapters: `attribution-families`.
"""

from rcakit.attribution.adapters import BUILT_IN, FAMILY_OF, METHOD_NAMES, check_methods, load_method, load_methods
from rcakit.attribution.interface import Attribution, Cost, FailedCase, Method, NotApplicable
from rcakit.attribution.oracle import AttributionOracle, ReplayMemo
from rcakit.attribution.scoring import (
    MethodComparison,
    compare_methods,
    correct,
    family_text,
    run_method,
    score_methods,
    summary,
)
from rcakit.attribution.testbeds import FAULT_TYPES, TESTBEDS, TestbedCase, build_testbeds

__all__ = [
    "Attribution",
    "AttributionOracle",
    "BUILT_IN",
    "Cost",
    "FAMILY_OF",
    "FAULT_TYPES",
    "FailedCase",
    "METHOD_NAMES",
    "Method",
    "MethodComparison",
    "NotApplicable",
    "ReplayMemo",
    "TESTBEDS",
    "TestbedCase",
    "build_testbeds",
    "check_methods",
    "compare_methods",
    "correct",
    "family_text",
    "load_method",
    "load_methods",
    "run_method",
    "score_methods",
    "summary",
]
