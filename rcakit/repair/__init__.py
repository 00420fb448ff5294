"""Minimal repair families by graph-constrained joint replay (GCJR).

Li et al., *Localizing Emergent Failures in Agentic AI: Recovering Minimal
Repair Families via Counterfactual Replay*. Submodules, by concept:

- ``graph``: execution DAGs (``Case``), the failure slice, pair admission,
  hidden-edge views and schedules;
- ``benchmark``: the seeded Controlled-DAG generator and hand-built cases;
- ``oracle``: the replay oracles. ``oracle.base``: replay under r shared
  seeds, θ = 2/3 and the rule h_θ, the ``Oracle`` interface and
  ``SharedSeedOracle``, the one base class of every replay oracle, which
  counts its own calls; ``oracle.controlled_dag``: the symbolic
  counterfactual replay of a Controlled-DAG case, with noise
  (``ReplayOracle``), and one seed's replay of one set (``replay_once``);
- ``families``: repair families, the inclusion-minimality filter, the
  ranking and ``RepairResult``;
- ``search``: GCJR, exhaustive search and the ablation switches;
- ``baselines``: singleton, execution-window, Shapley top-2, centrality,
  random pairs at a matched budget;
- ``metrics``: FEM, macro FEM, AJ, RS@1, SC, MV, replays, per-type means,
  the replay reduction;
- ``cost``: GCJR's replay cost r(1+m+p) and exhaustive search's, read from
  the graph, against the oracle's counted calls;
- ``sweeps``: each method evaluated on every case (GCJR and exhaustive
  search, ablations, baselines) and the hidden-edge and noise sweeps;
- ``pilot``: the four-agent DualSolve-style workflow (planner, two solvers,
  aggregator) whose messages are replayed, its scripted and LLM policies, its
  replay oracle, and the pilot run by GCJR and exhaustive search on it.

The chapter's sections, records and figures are in
:mod:`rcakit.chapters.gcjr_ablations`.

Used in the chapters: `primer`, `gcjr-ablations`, `attribution-families`.
"""

from rcakit.repair.baselines import (
    baseline_methods,
    centrality,
    execution_window,
    random_pairs,
    shapley_top2,
    singleton_replay,
)
from rcakit.repair.benchmark import (
    benchmark_table,
    controlled_dag_benchmark,
    execution_graph,
    hand_built_case,
    make_case,
    true_family,
)
from rcakit.repair.cost import gcjr_cost_terms
from rcakit.repair.families import RepairResult, minimal_sets, ranked
from rcakit.repair.graph import (
    IN_SCOPE_KINDS,
    KIND_LABELS,
    KINDS,
    Case,
    Structure,
    distinct_schedules,
    failure_slice,
    hide_edges,
    is_schedule,
    random_topological_order,
)
from rcakit.repair.metrics import (
    counted_run,
    evaluate_method,
    family_scores,
    format_family,
    per_kind,
    replay_reduction,
    scoped,
    summarise,
    summary_table,
    theta_label,
)
from rcakit.repair.oracle import (
    THETA,
    Oracle,
    Replay,
    ReplayOracle,
    SharedSeedOracle,
    clean_success,
    replay_once,
    threshold,
)
from rcakit.repair.pilot import (
    LLMPolicy,
    ScriptedPolicy,
    WorkflowCase,
    WorkflowOracle,
    evaluate_pilot,
    make_policy,
    pilot_cases,
    run_pilot,
)
from rcakit.repair.search import (
    ABLATIONS,
    EXHAUSTIVE,
    GCJR,
    Method,
    SearchConfig,
    ablation_configs,
    exhaustive,
    gcjr,
    in_domain,
    replay_search,
)
from rcakit.repair.sweeps import (
    PAPER_HIDDEN_FRACTION,
    ablation_runs,
    baseline_runs,
    gcjr_and_exhaustive,
    hidden_edge_sweep,
    noise_sweep,
    scoped_cases,
)

__all__ = [
    "ABLATIONS",
    "Case",
    "EXHAUSTIVE",
    "PAPER_HIDDEN_FRACTION",
    "GCJR",
    "IN_SCOPE_KINDS",
    "KINDS",
    "KIND_LABELS",
    "LLMPolicy",
    "Method",
    "Oracle",
    "RepairResult",
    "Replay",
    "ReplayOracle",
    "ScriptedPolicy",
    "SearchConfig",
    "SharedSeedOracle",
    "Structure",
    "THETA",
    "WorkflowCase",
    "WorkflowOracle",
    "ablation_configs",
    "ablation_runs",
    "baseline_runs",
    "baseline_methods",
    "benchmark_table",
    "centrality",
    "clean_success",
    "controlled_dag_benchmark",
    "counted_run",
    "distinct_schedules",
    "evaluate_method",
    "evaluate_pilot",
    "execution_graph",
    "execution_window",
    "exhaustive",
    "failure_slice",
    "family_scores",
    "format_family",
    "gcjr",
    "gcjr_and_exhaustive",
    "hidden_edge_sweep",
    "noise_sweep",
    "gcjr_cost_terms",
    "hand_built_case",
    "hide_edges",
    "in_domain",
    "is_schedule",
    "make_case",
    "make_policy",
    "minimal_sets",
    "per_kind",
    "pilot_cases",
    "random_pairs",
    "random_topological_order",
    "ranked",
    "replay_once",
    "replay_reduction",
    "replay_search",
    "run_pilot",
    "scoped",
    "scoped_cases",
    "shapley_top2",
    "singleton_replay",
    "summarise",
    "summary_table",
    "theta_label",
    "threshold",
    "true_family",
]
