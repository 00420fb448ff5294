"""What each section of the car-shapley chapter records in ``results/car-shapley.json``, in one place.

Every function here returns one section's numbers under the results keys
``data/claims.yaml`` reads: ``pivotal`` (the contrastive locus, CAR §4-5),
``interaction`` (the Shapley split, its efficiency check, the coverage of its
intervals and the over-count of contrastive effects, §4-5) and
``support_agent`` (the incident report of Figure 1 and the replay
action-match rate of §3). Each key is named once, here;
``rcakit.scm.experiments`` wraps these numbers with the section's table and
prose facts, and :func:`rcakit.sections.collect` merges the sections that
share a key into the results dict.

Used in the chapters: ``car-shapley``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rcakit.fidelity import ActionMatch
from rcakit.scm.contrastive import Contrastive
from rcakit.scm.shapley_sweeps import SCMShapley
from rcakit.scm.support_agent import SupportReport, is_injected
from rcakit.shapley import shapley_exact


def contrast_numbers(contrast: Contrastive) -> dict[str, Any]:
    """A contrastive estimate's locus, per-step effects and their bootstrap intervals (CAR §4)."""
    return {
        "locus": contrast.locus,
        "effects": contrast.table["effect"],
        "effect_ci": contrast.table[["effect_lo", "effect_hi"]].to_numpy(),
    }


def pivotal_numbers(contrast: Contrastive) -> dict[str, Any]:
    """``pivotal``: the pivotal SCM's contrastive effects and locus (CAR §5)."""
    return {"pivotal": contrast_numbers(contrast)}


def split_numbers(estimate: SCMShapley, analytic: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """``interaction``: the Monte-Carlo Shapley values with their interval and its method, the analytic values,
    the efficiency sum and what the estimate spent (CAR §4-5)."""
    return {
        "interaction": {
            "phi": estimate.values,
            "phi_ci": np.column_stack([estimate.ci_low, estimate.ci_high]),
            "phi_interval": estimate.interval_method,
            "efficiency": estimate.efficiency,
            "analytic_phi": analytic,
            "rollouts": estimate.spent,
            "permutations": estimate.permutations,
            "truncated": estimate.truncated,
        }
    }


def efficiency_numbers(check: Mapping[str, Any], analytic_efficiency: float) -> dict[str, Any]:
    r"""``interaction``: the analytic efficiency sum, the gap between the sum and one minus
    :math:`\hat v(\emptyset)`, and the sum's interval from that count
    (:func:`rcakit.scm.efficiency_from_v_empty`, CAR §5)."""
    return {
        "interaction": {
            "analytic_efficiency": analytic_efficiency,
            "efficiency_gap": check["efficiency_gap"],
            "efficiency_ci_from_v_empty": check["efficiency_ci"],
        }
    }


def coverage_numbers(summary: Mapping[str, Any], setting: str) -> dict[str, Any]:
    r"""``interaction.coverage``: CAR's interval for :math:`\phi_0` at ``setting`` (the chapter's), with
    its Wilson interval, and the whole study (``rcakit.scm.experiments.coverage_summary``, CAR §4)."""
    car = summary[setting]["car"][0]
    return {
        "interaction": {
            "coverage": {"car_phi_0": car["coverage"], "car_phi_0_ci": [car["lo"], car["hi"]], "study": summary}
        }
    }


def rollout_numbers(
    rmse: Mapping[Any, Mapping[Any, float]],
    coverage: Mapping[Any, Mapping[Any, float]],
    spent: Mapping[Any, Mapping[Any, float]],
    compared: Mapping[str, tuple[Sequence[float], Sequence[float], Mapping[str, Any]]],
) -> dict[str, Any]:
    """``interaction.by_rollouts``: RMSE, coverage and rollouts spent (``rollouts``, the mean over seeds)
    per estimator and budget and, per estimator compared
    with CAR (``pooled``, ``paired``), its RMSE ratios to CAR at CAR's budget and at half of it (each
    ``[ratio, lo, hi]``) and its interval's coverage of phi_0 at CAR's budget with its Wilson interval.
    The pooled keys keep their names (``same_budget_ratio``, ``pooled_phi_0_coverage``); the
    others carry the estimator's name first (``paired_same_budget_ratio``, ``paired_phi_0_coverage``)."""
    found: dict[str, Any] = {
        key: {name: {str(b): v for b, v in row.items()} for name, row in table.items()}
        for key, table in (("rmse", rmse), ("coverage", coverage), ("rollouts", spent))
    }
    for name, (same, halved, phi_0) in compared.items():
        ratio = "" if name == "pooled" else f"{name}_"
        found |= {
            f"{ratio}same_budget_ratio": same[0],
            f"{ratio}same_budget_ratio_ci": list(same[1:]),
            f"{ratio}half_budget_ratio": halved[0],
            f"{ratio}half_budget_ratio_ci": list(halved[1:]),
            f"{name}_phi_0_coverage": phi_0["coverage"],
            f"{name}_phi_0_coverage_ci": [phi_0["lo"], phi_0["hi"]],
        }
    return {"interaction": {"by_rollouts": found}}


def over_count_numbers(abs_sum: float) -> dict[str, Any]:
    """``interaction``: the sum of the absolute contrastive effects of the interaction SCM (CAR §5)."""
    return {"interaction": {"contrastive_abs_sum": abs_sum}}


def replay_numbers(match: ActionMatch) -> dict[str, Any]:
    """The replay action-match rate, its Wilson interval, and the replayed steps (CAR §3)."""
    return {"action_match_rate": match.rate, "action_match_ci": list(match.ci()), "replayed_steps": match.n}


def attribution_numbers(report: SupportReport) -> dict[str, Any]:
    """The support agent's recorded run, contrastive effects, locus and Shapley values (CAR Figure 1).

    ``locus`` and ``observed`` are None when no run refunded after the note, so
    nothing was attributed; with the scripted policy the analytic Shapley values
    follow, and rcakit's default estimate with common random numbers (``paired_shapley``, its
    ``paired_shapley_ci`` and the ``paired_rollouts`` it spent).
    """
    if report.contrast is None:
        return {"locus": None, "observed": None}
    contrast, shap = report.attributed()
    model = report.scm
    out = {
        "observed": [r.action for r in model.observed],
        **contrast_numbers(contrast),
        "locus_context_injected": contrast.locus is not None and is_injected(model.observed[contrast.locus].context),
        "p_bad_do": contrast.table["p_bad_do"],
        "shapley": shap.values,
        "shapley_ci": np.column_stack([shap.ci_low, shap.ci_high]),
    }
    if model.analytic_v is not None:
        out["analytic_shapley"] = shapley_exact(model.analytic_v, model.n_steps)
    if report.paired is not None:
        out["paired_shapley"] = report.paired.values
        out["paired_shapley_ci"] = np.column_stack([report.paired.ci_low, report.paired.ci_high])
        out["paired_rollouts"] = report.paired.rollouts
    return out


def support_numbers(report: SupportReport) -> dict[str, Any]:
    """A support report's attribution and replay numbers together (the language-model run's record)."""
    return {**attribution_numbers(report), **replay_numbers(report.replay)}
