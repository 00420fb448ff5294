"""Agent runs as structural causal models, and attribution by intervention (CAR).

- :mod:`rcakit.scm.causal_model`: steps, records, the SCM, and the do-operations (CAR §2);
- :mod:`rcakit.scm.contrastive`: the contrastive estimator and the
  point-of-commitment locus (CAR §4);
- :mod:`rcakit.scm.shapley_sweeps`: Shapley values of an SCM's failure by
  replay, reruns, interval coverage and convergence (CAR §4-5), on top of the generic
  estimators in :mod:`rcakit.shapley`;
- :mod:`rcakit.scm.examples`: the validation SCMs with planted ground truth (CAR §5);
- :mod:`rcakit.scm.llm_policy`: a step decided by a language model, and the
  refund run (CAR §2-3);
- :mod:`rcakit.scm.fidelity`: recorded runs, faithful replay and the
  action-match rate (CAR §3);
- :mod:`rcakit.scm.support_agent`: the four-step support agent with an
  injected instruction, and its incident report (CAR Figure 1, §5);

The car-shapley chapter's sections, records and figures are in
:mod:`rcakit.chapters.car_shapley`.

Used in the chapters: ``car-shapley`` and ``primer``.
"""

from rcakit.scm.causal_model import (
    NO_INTERVENTION,
    SCM,
    Do,
    PolicyStep,
    Record,
    RefundPolicy,
    bernoulli_policy,
    do_edit_context,
    do_force_action,
    do_hold,
    do_replace_observation,
    do_resample,
    do_swap_policy,
    uniform_policy,
)
from rcakit.scm.contrastive import Contrastive, contrastive_effects
from rcakit.scm.examples import interaction_scm, or_failure_scm, pivotal_scm
from rcakit.scm.fidelity import (
    RecordedRun,
    action_match_rate,
    record_failing_run,
    record_run,
    step_seeds,
)
from rcakit.scm.llm_policy import (
    REFUND_MAX_TRIES,
    REFUND_REQUEST,
    REFUND_SYSTEM,
    llm_refund_scm,
    parse_refund,
    policy_from_llm,
    refund_attribution,
    refund_messages,
)
from rcakit.scm.shapley_sweeps import (
    COVERAGE_VARIANTS,
    CoverageVariant,
    RolloutValue,
    SCMShapley,
    binomial_floor,
    coverage_study,
    efficiency_from_v_empty,
    full_replay,
    interval_coverage,
    permutation_budgets,
    player_bias,
    player_coverage,
    rmse_ratio,
    rollout_study,
    scm_draw,
    scm_paired_draw,
    scm_shapley,
    shapley_convergence,
    shapley_reruns,
    worst_player_coverage,
)
from rcakit.scm.support_agent import (
    SupportReport,
    decision_lines,
    llm_support_report,
    support_agent_scm,
    support_report,
)

__all__ = [
    "COVERAGE_VARIANTS",
    "Contrastive",
    "CoverageVariant",
    "Do",
    "NO_INTERVENTION",
    "PolicyStep",
    "REFUND_MAX_TRIES",
    "REFUND_REQUEST",
    "REFUND_SYSTEM",
    "Record",
    "RecordedRun",
    "RefundPolicy",
    "RolloutValue",
    "SCM",
    "SCMShapley",
    "SupportReport",
    "action_match_rate",
    "bernoulli_policy",
    "binomial_floor",
    "contrastive_effects",
    "coverage_study",
    "decision_lines",
    "do_edit_context",
    "do_force_action",
    "do_hold",
    "do_replace_observation",
    "do_resample",
    "do_swap_policy",
    "efficiency_from_v_empty",
    "full_replay",
    "interaction_scm",
    "interval_coverage",
    "llm_refund_scm",
    "llm_support_report",
    "or_failure_scm",
    "parse_refund",
    "permutation_budgets",
    "player_bias",
    "player_coverage",
    "pivotal_scm",
    "policy_from_llm",
    "record_failing_run",
    "record_run",
    "refund_attribution",
    "refund_messages",
    "scm_shapley",
    "shapley_convergence",
    "shapley_reruns",
    "rollout_study",
    "rmse_ratio",
    "scm_draw",
    "scm_paired_draw",
    "step_seeds",
    "support_agent_scm",
    "support_report",
    "uniform_policy",
    "worst_player_coverage",
]
