"""The AgenticRAG-FP chapters' experiments (§6-7): one arm run end to end, and every section they show.

A chapter runs its arm once (:func:`run_arm`) and asks this package for each
section; every section comes back as a :class:`rcakit.sections.Section`
(its table, the numbers the chapter records, the facts its prose quotes, or
why it was skipped), so the notebook only glues, shows and collects.

Modules: ``arm`` (running an arm, the protocol's side-by-side runs),
``setup`` (the protocol table and the world), ``authors`` (the authors' released runs,
rescored), ``accuracy`` (exact-hop accuracy, the probes' branches, the LLM methods),
``structural`` (the coverage-collapse chapter's own sections) and ``content`` (the content-corruption chapter's).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from rcakit.rag.experiments.accuracy import (
    accuracy_section,
    branch_accuracy_section,
    branches_section,
    cost_section,
    judge_section,
    probe_budget_section,
    published_section,
    replay_section,
    views_section,
)
from rcakit.rag.experiments.arm import (
    EARLIER_PROTOCOL,
    PROTOCOL_DEFAULTS,
    ArmRun,
    heed_runs,
    protocol_runs,
    run_arm,
    show_served,
    with_all_interventions,
)
from rcakit.rag.experiments.authors import AuthorsRuns, authors_runs
from rcakit.rag.experiments.content import (
    bridge_section,
    contamination_section,
    outcomes_section,
    span_rule_section,
    strategy_section,
    type_section,
    worked_case,
    worked_section,
)
from rcakit.rag.experiments.setup import (
    describe_world,
    heed_comparison,
    protocol_comparison,
    protocol_table,
    setup_section,
    world_record,
)
from rcakit.rag.experiments.structural import (
    branch_kinds_section,
    checks_section,
    hop_scores_section,
    intervention_section,
    mechanism_section,
    reach_section,
    trace_section,
)

__all__ = [
    "ArmRun",
    "AuthorsRuns",
    "EARLIER_PROTOCOL",
    "PROTOCOL_DEFAULTS",
    "accuracy_section",
    "authors_runs",
    "branch_accuracy_section",
    "branch_kinds_section",
    "branches_section",
    "bridge_section",
    "checks_section",
    "contamination_section",
    "cost_section",
    "describe_world",
    "heed_comparison",
    "heed_runs",
    "hop_scores_section",
    "intervention_section",
    "judge_section",
    "mechanism_section",
    "outcomes_section",
    "protocol_comparison",
    "protocol_runs",
    "protocol_table",
    "probe_budget_section",
    "published_section",
    "reach_section",
    "replay_section",
    "run_arm",
    "setup_section",
    "show_served",
    "span_rule_section",
    "strategy_section",
    "trace_section",
    "type_section",
    "views_section",
    "with_all_interventions",
    "worked_case",
    "worked_section",
    "world_record",
]
