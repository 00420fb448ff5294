"""Minimal repair families by graph-constrained joint replay (GCJR).

Li et al., *Localizing Emergent Failures in Agentic AI: Recovering Minimal
Repair Families via Counterfactual Replay*. Submodules, by concept:

- ``graph``: execution DAGs (``Case``), the failure slice, pair admission,
  hidden-edge views and schedules;
- ``benchmark``: the seeded Controlled-DAG generator and hand-built cases;
- ``shared_seeds``: replay under r shared seeds, θ = 2/3 and the rule h_θ,
  the ``Oracle`` interface and ``SharedSeedOracle``, the one base class of
  every replay oracle, which counts its own calls;
- ``oracle``: the symbolic counterfactual replay of a Controlled-DAG case,
  with noise (``ReplayOracle``);
- ``families``: repair families, the inclusion-minimality filter, the
  ranking and ``RepairResult``;
- ``search``: GCJR, exhaustive search and the ablation switches;
- ``baselines``: singleton, execution-window, Shapley top-2, centrality,
  random pairs at a matched budget;
- ``metrics``: FEM, macro FEM, AJ, RS@1, SC, MV, replays, per-type means;
- ``cost``: GCJR's replay cost r(1+m+p) and exhaustive search's, read from
  the graph, against the oracle's counted calls;
- ``summaries``: the tables derived from the evaluations (main, per type,
  ablations, beside the paper, hidden-edge curve, noise summary);
- ``records``: what each section records, under the keys the claims read;
- ``experiments``: the chapter's runs (comparison, ablations, baselines,
  hidden-edge and noise sweeps) and its sections, one ``Section`` each;
- ``figures``: a hash-order-free drawing of an execution DAG and the sweep figures;
- ``pilot``: the four-agent DualSolve-style workflow (planner, two solvers,
  aggregator) whose messages are replayed, its scripted and LLM policies, its
  replay oracle, and the pilot run by GCJR and exhaustive search on it.

Used in the chapters: `primer`, `gcjr-ablations`.
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
from rcakit.repair.figures import (
    draw_case,
    hidden_edge_figure,
    layered_layout,
    noise_figure,
)
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
    scoped,
    summarise,
    summary_table,
)
from rcakit.repair.oracle import ReplayOracle, clean_success, replay
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
from rcakit.repair.shared_seeds import THETA, Oracle, Replay, SharedSeedOracle, threshold

__all__ = [
    "ABLATIONS",
    "Case",
    "EXHAUSTIVE",
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
    "baseline_methods",
    "benchmark_table",
    "centrality",
    "clean_success",
    "controlled_dag_benchmark",
    "counted_run",
    "distinct_schedules",
    "draw_case",
    "evaluate_method",
    "evaluate_pilot",
    "execution_graph",
    "execution_window",
    "exhaustive",
    "failure_slice",
    "family_scores",
    "format_family",
    "gcjr",
    "gcjr_cost_terms",
    "hand_built_case",
    "hidden_edge_figure",
    "hide_edges",
    "in_domain",
    "is_schedule",
    "layered_layout",
    "make_case",
    "make_policy",
    "minimal_sets",
    "noise_figure",
    "per_kind",
    "pilot_cases",
    "random_pairs",
    "random_topological_order",
    "ranked",
    "replay",
    "replay_search",
    "run_pilot",
    "scoped",
    "shapley_top2",
    "singleton_replay",
    "summarise",
    "summary_table",
    "threshold",
    "true_family",
]
