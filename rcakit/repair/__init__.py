"""Minimal repair families by graph-constrained joint replay (GCJR).

Li et al., *Localizing Emergent Failures in Agentic AI: Recovering Minimal
Repair Families via Counterfactual Replay*. Submodules, by concept:

- ``graph``: execution DAGs (``Case``), the failure slice, pair admission,
  hidden-edge views and schedules;
- ``benchmark``: the seeded Controlled-DAG generator;
- ``oracle``: counterfactual replay with r shared seeds, θ = 2/3 and noise;
  the oracle counts its own calls;
- ``search``: GCJR, exhaustive search and the ablation switches;
- ``baselines``: singleton, execution-window, Shapley top-2, centrality,
  random pairs at a matched budget;
- ``metrics``: FEM, macro FEM, AJ, RS@1, SC, MV, replays;
- ``experiments``: the chapter's hidden-edge, noise and cost sweeps;
- ``figures``: a hash-order-free drawing of an execution DAG.
"""

from rcakit.repair.baselines import (
    baseline_methods,
    centrality,
    execution_window,
    random_pairs,
    shapley_top2,
    singleton_replay,
)
from rcakit.repair.benchmark import controlled_dag_benchmark, execution_graph, make_case
from rcakit.repair.figures import draw_case, layered_layout
from rcakit.repair.graph import (
    IN_SCOPE_KINDS,
    KINDS,
    Case,
    Structure,
    distinct_schedules,
    failure_slice,
    hide_edges,
    is_schedule,
    random_topological_order,
)
from rcakit.repair.metrics import counted_run, describe, evaluate, family_scores, summarize
from rcakit.repair.oracle import THETA, Replay, ReplayOracle, clean_success, replay, threshold, true_family
from rcakit.repair.search import (
    ABLATIONS,
    EXHAUSTIVE,
    GCJR,
    RepairResult,
    SearchConfig,
    ablation_configs,
    exhaustive,
    gcjr,
    in_domain,
    minimal_sets,
    replay_search,
)

__all__ = [
    "ABLATIONS",
    "Case",
    "EXHAUSTIVE",
    "GCJR",
    "IN_SCOPE_KINDS",
    "KINDS",
    "RepairResult",
    "Replay",
    "ReplayOracle",
    "SearchConfig",
    "Structure",
    "THETA",
    "ablation_configs",
    "baseline_methods",
    "centrality",
    "clean_success",
    "controlled_dag_benchmark",
    "counted_run",
    "describe",
    "distinct_schedules",
    "draw_case",
    "evaluate",
    "execution_graph",
    "execution_window",
    "exhaustive",
    "failure_slice",
    "family_scores",
    "gcjr",
    "hide_edges",
    "in_domain",
    "is_schedule",
    "layered_layout",
    "make_case",
    "minimal_sets",
    "random_pairs",
    "random_topological_order",
    "replay",
    "replay_search",
    "shapley_top2",
    "singleton_replay",
    "summarize",
    "threshold",
    "true_family",
]
