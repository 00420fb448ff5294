r"""The car-shapley chapter (``notebooks/car_shapley.md``): its sections, what they record, and its figures (CAR §2-5).

One function per section of the chapter, each returning one
:class:`~rcakit.sections.Section`: the table a reader sees, the facts the prose
quotes, and the numbers the chapter records in ``results/car-shapley.json``
under the keys ``data/claims.yaml`` reads. The estimates a section reads (a
contrastive estimate, a Shapley estimate, a coverage study, a support report)
come from :mod:`rcakit.scm`; the chapter draws its figures from the same
estimates.

- :func:`contrastive_locus_section`: the pivotal SCM's effects and locus (§4-5);
- :func:`shapley_split_section`: Monte-Carlo Shapley of the two-step AND failure (§5);
- :func:`interval_coverage_section`: how often the intervals hold the analytic values (§4);
- :func:`efficiency_check_section`: the efficiency sum as one minus :math:`\hat v(\emptyset)` (§5);
- :func:`contrastive_over_count_section` and :func:`or_failure_split_section`: single-step
  effects against Shapley, and the OR failure's split (§5);
- :func:`convergence_section`: antithetic against plain sampling per rollout budget;
- :func:`rollouts_section`: CAR's estimator against pooled and paired values of :math:`v(S)`, by rollouts;
- :func:`support_report_section`, :func:`replay_action_match_section` and
  :func:`language_model_support_section`: the incident report of Figure 1 and the
  replay action-match rate of §3.

What each section records is built by one private function (``_pivotal_numbers``,
``_split_numbers``, ...): ``pivotal`` (the contrastive locus, CAR §4-5),
``interaction`` (the Shapley split, its efficiency check, the coverage of its
intervals and the over-count of contrastive effects, §4-5) and
``support_agent`` (the incident report of Figure 1 and the replay
action-match rate of §3). Each key is named once;
:func:`rcakit.sections.collect` merges the sections that share a key into the
results dict.

The figures: :func:`contrastive_figure` (the pivotal SCM's effects),
:func:`interval_coverage_figure` (coverage of the Shapley intervals),
:func:`convergence_figure` (error against the rollout budget) and
:func:`support_report_figure` (CAR's incident report, Figure 1).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from scipy import stats as scipy_stats

from rcakit import stats
from rcakit.fidelity import ActionMatch
from rcakit.llm.accounting import Accounting
from rcakit.llm.base import Provider
from rcakit.llm.cache import cached
from rcakit.llm.settings import LLMSettings, model_for
from rcakit.plotting import BLUE, ORANGE, OUTCOME_COLOURS, TEXT_WIDTH, VERMILION, ci_errorbar
from rcakit.scm.causal_model import SCM
from rcakit.scm.contrastive import Contrastive, analytic_effects, contrastive_effects
from rcakit.scm.examples import or_failure_scm
from rcakit.scm.shapley_sweeps import SCMShapley, closed_form, efficiency_from_v_empty, rmse_ratio
from rcakit.scm.support_agent import SupportReport, decision_lines, is_injected, llm_support_report
from rcakit.sections import Section
from rcakit.shapley import KnownFull, shapley_exact


class CarStreams(NamedTuple):
    """The chapter's seed streams, drawn in this order from its master seed by :func:`rcakit.stats.seed_streams`."""

    refund_run: int  # the pivotal refund run's observed failure
    contrasts: int  # its contrastive effects
    interaction: int  # the AND interaction run's observed failure
    rollout_values: int  # the rollouts behind the Shapley values' coalition values
    permutation_order: int  # the permutations the Shapley estimate walks
    over_count: int  # the contrastive effects of the interaction run
    or_failure: int  # the OR failure run
    reserved: int  # drawn and unused, so the streams after it keep their values
    rollout_pricing: int  # CAR's estimator priced in rollouts against pooled values
    shapley_reruns: int  # the Shapley estimate rerun with fresh seeds


def seed_streams(seed: int) -> CarStreams:
    """The chapter's named seed streams of the master ``seed``."""
    return stats.seed_streams(seed, CarStreams)


# --- what each section records (results/car-shapley.json) ---------------------


def _contrast_numbers(contrast: Contrastive) -> dict[str, Any]:
    """A contrastive estimate's locus, per-step effects and their bootstrap intervals (CAR §4)."""
    return {
        "locus": contrast.locus,
        "effects": contrast.table["effect"],
        "effect_ci": contrast.table[["effect_lo", "effect_hi"]].to_numpy(),
    }


def _pivotal_numbers(contrast: Contrastive) -> dict[str, Any]:
    """``pivotal``: the pivotal SCM's contrastive effects and locus (CAR §5)."""
    return {"pivotal": _contrast_numbers(contrast)}


def _split_numbers(estimate: SCMShapley, analytic: Sequence[float] | np.ndarray) -> dict[str, Any]:
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


def _efficiency_numbers(check: Mapping[str, Any], analytic_efficiency: float) -> dict[str, Any]:
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


def _coverage_numbers(summary: Mapping[str, Any], setting: str) -> dict[str, Any]:
    r"""``interaction.coverage``: CAR's interval for :math:`\phi_0` at ``setting`` (the chapter's), with
    its Wilson interval, and the whole study (:func:`_coverage_summary`, CAR §4)."""
    car = summary[setting]["car"][0]
    return {
        "interaction": {
            "coverage": {"car_phi_0": car["coverage"], "car_phi_0_ci": [car["lo"], car["hi"]], "study": summary}
        }
    }


def _rollout_numbers(
    tables: Mapping[str, Mapping[Any, Mapping[Any, Any]]],
    compared: Mapping[str, tuple[Sequence[float], Sequence[float], Mapping[str, Any]]],
    full: KnownFull | None,
) -> dict[str, Any]:
    """``interaction.by_rollouts``: per estimator and budget (``tables``) the RMSE, the coverage of the
    worst-covered player (``coverage``), every player's coverage (``coverage_by_player``) and the rollouts
    spent (``rollouts``, the mean over seeds); per estimator compared with CAR (``pooled``, ``paired``),
    its RMSE ratios to CAR at CAR's budget and at half of it (each ``[ratio, lo, hi]``), its interval's
    coverage of phi_0 and of its worst-covered player at CAR's budget, each with its Wilson interval; and
    how v(N) entered (``v_full``: the proven value, or None when it was rolled out, ``v_full_proven``).
    The pooled ratio keys keep their names (``same_budget_ratio``); the others carry the estimator's name
    first (``paired_same_budget_ratio``)."""
    found: dict[str, Any] = {
        key: {name: {str(b): v for b, v in row.items()} for name, row in table.items()} for key, table in tables.items()
    }
    found |= {"v_full": None if full is None else full.value, "v_full_proven": full is not None}
    for name, (same, halved, cover) in compared.items():
        ratio = "" if name == "pooled" else f"{name}_"
        found |= {
            f"{ratio}same_budget_ratio": same[0],
            f"{ratio}same_budget_ratio_ci": list(same[1:]),
            f"{ratio}half_budget_ratio": halved[0],
            f"{ratio}half_budget_ratio_ci": list(halved[1:]),
            f"{name}_phi_0_coverage": cover["phi_0"]["coverage"],
            f"{name}_phi_0_coverage_ci": [cover["phi_0"]["lo"], cover["phi_0"]["hi"]],
            f"{name}_worst_coverage": cover["worst"]["coverage"],
            f"{name}_worst_coverage_ci": [cover["worst"]["lo"], cover["worst"]["hi"]],
            f"{name}_worst_player": cover["worst"]["player"],
        }
    return {"interaction": {"by_rollouts": found}}


def _over_count_numbers(abs_sum: float) -> dict[str, Any]:
    """``interaction``: the sum of the absolute contrastive effects of the interaction SCM (CAR §5)."""
    return {"interaction": {"contrastive_abs_sum": abs_sum}}


def _replay_numbers(match: ActionMatch) -> dict[str, Any]:
    """The replay action-match rate, its Wilson interval, and the replayed steps (CAR §3)."""
    return {"action_match_rate": match.rate, "action_match_ci": list(match.ci()), "replayed_steps": match.n}


def _attribution_numbers(report: SupportReport) -> dict[str, Any]:
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
        **_contrast_numbers(contrast),
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


def _support_numbers(report: SupportReport) -> dict[str, Any]:
    """A support report's attribution and replay numbers together (the language-model run's record)."""
    return {**_attribution_numbers(report), **_replay_numbers(report.replay)}


# --- the sections ---------------------------------------------------------------


NO_STEP = "none"  # the locus's name when no step's interval lies below 0


def _locus_name(model: SCM, locus: int | None) -> str:
    return NO_STEP if locus is None else model.step_names[locus]


EFFECT_LABELS = {  # the contrastive estimate's columns as the page shows them (eq-car-contrastive)
    "p_bad_do": "P(bad | do)",
    "p_lo": "Wilson low",
    "p_hi": "Wilson high",
    "p_bad_observed": "P(bad | observed)",
    "effect": r"\(\Delta_k\)",
    "effect_lo": "95% low",
    "effect_hi": "95% high",
}


def _effects_table(contrast: Contrastive, columns: list[str]) -> pd.DataFrame:
    """``columns`` of a contrastive estimate, one row per step named in words, headed as a reader reads them."""
    table = contrast.table.set_index("name")[columns].rename(columns=EFFECT_LABELS)
    return table.rename_axis("step")


def contrastive_locus_section(model: SCM, contrast: Contrastive) -> Section:
    """The pivotal SCM's contrastive effects and point-of-commitment locus (CAR §4-5).

    Facts: ``effect`` (per step) and ``locus_text`` (Markdown naming the
    step, or "no step").
    """
    locus = contrast.locus
    text = "no step" if locus is None else f"step {locus}, `{model.step_names[locus]}`"
    return Section(
        table=_effects_table(contrast, list(EFFECT_LABELS)),
        numbers=_pivotal_numbers(contrast),
        facts={"effect": dict(enumerate(contrast.table["effect"])), "locus_text": Markdown(text)},
    )


def shapley_split_section(model: SCM, estimate: SCMShapley) -> Section:
    """Monte-Carlo Shapley values of the model's failure, with the estimate's intervals, beside the
    closed form (CAR §5).

    Facts: ``phi`` (per step), ``analytic_phi`` (step 0's analytic value),
    ``shapley_permutations`` and ``shapley_rollouts``.
    """
    analytic = shapley_exact(closed_form(model), model.n_steps)
    table = pd.DataFrame(
        {
            r"\(\hat\phi_i\)": estimate.values,
            "95% low": estimate.ci_low,
            "95% high": estimate.ci_high,
            r"\(\phi_i\), closed form": analytic,
        },
        index=pd.Index(model.step_names, name="step"),
    )
    facts = {
        "phi": dict(enumerate(estimate.values)),
        "analytic_phi": analytic[0],
        "shapley_permutations": estimate.permutations,
        "shapley_rollouts": estimate.spent,
    }
    return Section(table=table, numbers=_split_numbers(estimate, analytic), facts=facts)


def _coverage_reading(low: float, high: float, level: float = 0.95) -> str:
    """Where the nominal ``level`` lies against a coverage's Wilson interval ``[low, high]``, in words."""
    if high < level:
        return "below the nominal level"
    if low > level:
        return "above the nominal level"
    return "consistent with the nominal level"


def _coverage_summary(study: pd.DataFrame, level: float = 0.95) -> dict[str, Any]:
    """:func:`rcakit.scm.coverage_study`'s table as nested numbers.

    ``{setting: {"reruns", "permutations", "t_quantile", variant: {step: {coverage, lo, hi, width}}}}``;
    ``t_quantile`` is Student's quantile at the setting's permutations, beside the normal 1.96.
    """
    summary: dict[str, Any] = {}
    for (setting, key), group in study.groupby(["setting", "variant"], sort=False):
        m = int(group["permutations"].iloc[0])
        entry = summary.setdefault(
            str(setting),
            {
                "reruns": int(group["reruns"].iloc[0]),
                "permutations": m,
                "t_quantile": float(scipy_stats.t.ppf(0.5 + level / 2, max(m - 1, 1))),
            },
        )
        entry[str(key)] = {
            int(r["step"]): {
                "coverage": r["coverage"],
                "lo": r["Wilson low"],
                "hi": r["Wilson high"],
                "width": r["mean width"],
            }
            for _, r in group.iterrows()
        }
    return summary


def _with_readings(entry: dict[str, Any], level: float) -> dict[str, Any]:
    """One setting of :func:`_coverage_summary` with a :func:`_coverage_reading` beside each step's coverage."""
    return {
        key: {
            step: {**row, "reading": Markdown(_coverage_reading(row["lo"], row["hi"], level))}
            for step, row in value.items()
        }
        if isinstance(value, dict)
        else value
        for key, value in entry.items()
    }


def interval_coverage_section(study: pd.DataFrame, setting: str = "chapter", level: float = 0.95) -> Section:
    r"""How often each interval of the study held the analytic Shapley values (CAR §4).

    ``setting`` labels the study's setting whose coverage of :math:`\phi_0` by
    CAR's interval is recorded (the chapter's own). Facts:
    :func:`_coverage_summary`, each step's entry with a ``reading``
    (:func:`_coverage_reading`, Markdown), so ``<setting>_<variant>_<step>_coverage``
    and ``..._reading`` once flattened.
    """
    summary = _coverage_summary(study, level)
    facts = {label: _with_readings(entry, level) for label, entry in summary.items()}
    table = study.drop(columns=["variant", "value", "reruns"]).set_index(["setting", "interval", "step"])
    return Section(table=table, numbers=_coverage_numbers(summary, setting), facts=facts)


EFFICIENCY_LABELS = {  # rcakit.scm.efficiency_from_v_empty's keys as the page shows them
    "v_empty": r"\(\hat v(\emptyset)\)",
    "v_full": r"\(\hat v(N)\)",
    "efficiency_gap": r"gap: sum against \(1 - \hat v(\emptyset)\)",
    "efficiency_ci": "Wilson interval of the sum",
    "walks": "walks",
    "empty_rollouts": r"rollouts of \(\emptyset\)",
    "empty_bad": "bad among them",
}


def efficiency_check_section(model: SCM, estimate: SCMShapley) -> Section:
    r"""The efficiency sum read as one minus :math:`\hat v(\emptyset)` (CAR §5).

    :func:`rcakit.scm.efficiency_from_v_empty` beside the analytic sum
    :math:`v(N) - v(\emptyset)`. Facts: ``efficiency``,
    ``analytic_efficiency``, ``q2`` (the analytic :math:`v(\emptyset)`),
    ``eff_lo``, ``eff_hi`` and the check's counts.
    """
    v = closed_form(model)
    v_empty = v(frozenset())
    analytic_efficiency = v(frozenset(range(model.n_steps))) - v_empty
    check = efficiency_from_v_empty(estimate)
    counts = ("v_empty", "v_full", "walks", "empty_rollouts", "efficiency_gap")
    facts = {
        "efficiency": estimate.efficiency,
        "analytic_efficiency": analytic_efficiency,
        "q2": v_empty,
        "eff_lo": check["efficiency_ci"][0],
        "eff_hi": check["efficiency_ci"][1],
        **{k: check[k] for k in counts},
    }
    rows = {"efficiency sum": estimate.efficiency, r"closed form \(v(N) - v(\emptyset)\)": analytic_efficiency}
    rows |= {label: check[key] for key, label in EFFICIENCY_LABELS.items()}
    return Section(
        table=pd.Series(rows, name="value", dtype=object).to_frame(),
        numbers=_efficiency_numbers(check, analytic_efficiency),
        facts=facts,
        decimals=4,
    )


def contrastive_over_count_section(model: SCM, *, k_samples: int, seed: int) -> Section:
    """The absolute contrastive effects of the model's steps, summed against their closed form (CAR §5).

    Facts: ``contrastive_abs_sum`` and ``contrastive_abs_sum_analytic``
    (:func:`rcakit.scm.contrastive.analytic_effects`).
    """
    contrast = contrastive_effects(model, k_samples=k_samples, seed=seed)
    abs_sum = float(contrast.table["effect"].abs().sum())
    facts = {
        "contrastive_abs_sum": abs_sum,
        "contrastive_abs_sum_analytic": float(sum(map(abs, analytic_effects(model)))),
    }
    table = _effects_table(contrast, ["p_bad_do", "effect", "effect_lo", "effect_hi"])
    return Section(table=table, numbers=_over_count_numbers(abs_sum), facts=facts)


def or_failure_split_section(q: float, seed: int) -> Section:
    """The exact Shapley values of the OR failure (:func:`rcakit.scm.or_failure_scm`), for contrast."""
    model = or_failure_scm(q=q, seed=seed)
    phi = shapley_exact(closed_form(model), model.n_steps)
    return Section(table=pd.DataFrame({r"\(\phi_i\), exact": phi}, index=pd.Index(model.step_names, name="step")))


def convergence_section(table: pd.DataFrame) -> Section:
    """:func:`rcakit.scm.shapley_convergence`'s errors, averaged over seeds, per rollout budget and sampling."""
    means = table.groupby(["sampling", "rollouts"]).mean().unstack(0)
    return Section(table=cast(pd.DataFrame, means), decimals=4)


def rollouts_section(study: pd.DataFrame, car_budget: int, full: KnownFull | None = None) -> Section:
    r"""CAR's estimator against pooled and paired values of :math:`v(S)` by rollouts
    (:func:`rcakit.scm.rollout_study`), with ``full`` the proof of :math:`v(N)` the study used (None: it
    was rolled out).

    The table: RMSE (``car-t`` has CAR's values, so only CAR's column) and the coverage of the
    worst-covered player (not the mean over players, which idle players at 1.00 lift) per estimator and
    budget; every player's coverage and the rollouts each spent (whole pairs only, so at most the budget)
    are recorded beside them. Recorded too, for ``pooled`` and, when the study has it, ``paired``: the
    ratio of its RMSE to CAR's at ``car_budget`` and at half of it to CAR at ``car_budget``, each with its
    bootstrap interval, and its interval's coverage of :math:`\phi_0` and of its worst-covered player at
    ``car_budget`` with their Wilson intervals. The one fact is ``reading``, the paragraph that states them
    and how :math:`v(N)` entered (Markdown); a study in which CAR's estimator did not run at ``car_budget``
    (too few rollouts for two pairs) records nothing and its reading says why.
    """
    half = car_budget // 2

    def ran(name: str, budget: int) -> bool:
        return not study.empty and bool(((study["estimator"] == name) & (study["budget"] == budget)).any())

    if not ran("car", car_budget):
        reading = (
            f"No comparison: {car_budget:,} rollouts do not buy two antithetic pairs of CAR's estimator, "
            "so it has no interval; raise `budget`."
        )
        empty = pd.DataFrame({"RMSE": [float("nan")], "coverage": [float("nan")]}, index=pd.Index([car_budget]))
        empty.index.name = "rollouts"
        return Section(table=empty, facts={"reading": Markdown(reading)})
    players = [c for c in study.columns if c.startswith("covered ") and c != "covered phi_0"]
    grouped = study.groupby(["estimator", "budget"])
    rmse = cast(pd.DataFrame, grouped["squared error"].mean().pow(0.5).unstack(0))
    by_player = grouped[players].mean()
    worst = cast(pd.DataFrame, by_player.min(axis=1).unstack(0))
    spent = cast(pd.DataFrame, grouped["rollouts"].mean().unstack(0)).drop(columns="car-t")
    each = {
        name: {str(b): [float(x) for x in by_player.loc[(name, b)]] for b in by_player.loc[name].index}
        for name in by_player.index.get_level_values(0).unique()
    }
    compared = {
        name: _against_car(study, name, car_budget)
        for name in ("pooled", "paired")
        if ran(name, car_budget) and ran(name, half)
    }
    # one row per budget and estimator, so the table stays two columns wide whatever the estimators
    table = pd.concat(
        {"RMSE": rmse.drop(columns="car-t").stack(), "worst player's coverage": worst.stack()}, axis=1
    ).sort_index()
    table.index.names = ["rollouts", "estimator"]
    words = {"pooled": "pooling", "paired": "common random numbers inside each pair"}
    interval = {"pooled": "jackknife", "paired": "padded"}
    seeds = study["seed"].nunique()
    proof = (
        f"$v(N) = {full.value:g}$ was not rolled out: {full.source} (`rcakit.scm.full_replay`)."
        if full is not None
        else "$v(N)$ was rolled out like every other coalition."
    )
    reading = f"{proof} Over {seeds} seeds, at CAR's budget ({car_budget:,} rollouts) and with half of it ({half:,}):"
    for name, (same, halved, cover) in compared.items():
        phi_0, low = cover["phi_0"], cover["worst"]
        reading += (
            f"\n\n- {words[name]} gives **{same[0]:.2f}** times CAR's RMSE at the same budget (95% bootstrap "
            f"interval [{same[1]:.2f}, {same[2]:.2f}]) and **{halved[0]:.2f}** times it with half the rollouts "
            f"([{halved[1]:.2f}, {halved[2]:.2f}]); at CAR's budget its {interval[name]} interval held the analytic "
            f"$\\phi_0$ in **{phi_0['coverage']:.3f}** of the runs (Wilson [{phi_0['lo']:.3f}, {phi_0['hi']:.3f}]), "
            f"and its worst-covered player's, step {low['player']}, in **{low['coverage']:.3f}** "
            f"([{low['lo']:.3f}, {low['hi']:.3f}])."
        )
    tables = {"rmse": rmse.to_dict(), "coverage": worst.to_dict(), "rollouts": spent.to_dict()}
    numbers = _rollout_numbers(tables, compared, full)
    numbers["interaction"]["by_rollouts"]["coverage_by_player"] = each
    return Section(table=table, numbers=numbers, facts={"reading": Markdown(reading)}, decimals=4)


def _against_car(
    study: pd.DataFrame, name: str, car_budget: int
) -> tuple[tuple[float, float, float], tuple[float, float, float], dict[str, dict[str, Any]]]:
    """``name``'s RMSE ratio to CAR at CAR's budget and at half of it, and its coverage there of phi_0
    and of its worst-covered player (the lowest share; the first such player on a tie), with Wilson
    intervals."""
    same = rmse_ratio(study, (name, car_budget), ("car", car_budget))
    halved = rmse_ratio(study, (name, car_budget // 2), ("car", car_budget))
    chosen = study[(study["estimator"] == name) & (study["budget"] == car_budget)]
    players = [c for c in study.columns if c.startswith("covered ") and c != "covered phi_0"]
    shares = chosen[players].mean()
    worst = int(np.argmin(shares.to_numpy()))
    cover = {}
    for key, column, player in (("phi_0", "covered phi_0", 0), ("worst", players[worst], worst)):
        cov = stats.accuracy_with_ci(list(chosen[column]))
        cover[key] = {"coverage": cov["acc"], "lo": cov["lo"], "hi": cov["hi"], "player": player}
    return same, halved, cover


def _attribution_facts(report: SupportReport) -> dict[str, Any]:
    """The locus, its effect, interval and P(bad), and the Shapley values beside the closed form."""
    contrast, shap = report.attributed()
    k, row = contrast.locus, contrast.table.iloc[contrast.locus or 0]
    facts: dict[str, Any] = {
        "locus": k,
        "locus_name": _locus_name(report.scm, k),
        "locus_text": Markdown(f"`{_locus_name(report.scm, k)}`"),
        "effect": float(row["effect"]),
        "effect_lo": float(row["effect_lo"]),
        "effect_hi": float(row["effect_hi"]),
        "p_bad_locus": float(row["p_bad_do"]),
        "phi": dict(enumerate(map(float, shap.values))),
    }
    if report.scm.analytic_v is not None:
        facts["phi_exact"] = dict(enumerate(map(float, shapley_exact(report.scm.analytic_v, report.scm.n_steps))))
    if report.paired is not None:
        facts |= {
            "phi_paired": dict(enumerate(map(float, report.paired.values))),
            "phi_paired_lo": dict(enumerate(map(float, report.paired.ci_low))),
            "phi_paired_hi": dict(enumerate(map(float, report.paired.ci_high))),
            "paired_rollouts": report.paired.rollouts,
            "car_rollouts": shap.spent,
        }
    return facts


def support_report_section(report: SupportReport) -> Section:
    """The support agent's incident: its trajectory, contrastive locus and Shapley values (CAR Figure 1, §5).

    Skipped when no recorded run refunded after the note (nothing to attribute).
    Facts: ``locus``, ``locus_name``, ``locus_text``, ``effect`` with ``effect_lo``
    and ``effect_hi``, ``p_bad_locus``, ``phi`` and ``phi_exact`` (per step) and, with a seeded policy,
    rcakit's default by rollouts: ``phi_paired`` with ``phi_paired_lo`` and ``phi_paired_hi`` (per step),
    ``paired_rollouts`` and ``car_rollouts`` (what CAR's estimate spent).
    """
    if report.contrast is None:
        return Section.skip("no recorded run refunded after the injected note, so there is no incident to attribute.")
    return Section(
        table=report.trajectory(),
        numbers={"support_agent": _attribution_numbers(report)},
        facts=_attribution_facts(report),
    )


def _replay_table(numbers: dict[str, Any]) -> pd.DataFrame:
    low, high = numbers["action_match_ci"]
    rows = {
        "action-match rate": numbers["action_match_rate"],
        "Wilson low": low,
        "Wilson high": high,
        "replayed steps": numbers["replayed_steps"],
    }
    return pd.Series(rows, name="value", dtype=object).to_frame()  # object: the count prints as a whole number


def replay_action_match_section(report: SupportReport) -> Section:
    """The replay action-match rate of the report's runs, with its Wilson interval (CAR §3).

    Facts: ``amr``, ``amr_lo`` and ``replayed`` (the replayed steps).
    """
    numbers = _replay_numbers(report.replay)
    facts = {"amr": report.replay.rate, "amr_lo": report.replay.ci()[0], "replayed": report.replay.n}
    return Section(table=_replay_table(numbers), numbers={"support_agent": numbers}, facts=facts)


def language_model_support_section(
    provider: str,
    *,
    k_samples: int,
    n_permutations: int,
    seed: int,
    extra_runs: int,
    timeout: float,
    base_url: str | None = None,
) -> Section:
    """The support-agent report with a language model deciding the refund (CAR §2-3, Figure 1).

    ``provider`` is a spec (:func:`rcakit.llm.model_for` builds it, with
    ``base_url`` for an ``openai:`` server); ``none`` skips the section. The
    model answers behind the response cache; its report
    (:func:`rcakit.scm.llm_support_report`) and the tokens it cost are
    recorded under ``support_agent.llm``. Facts: ``amr``, ``amr_lo``,
    ``replayed``, ``locus_text`` (Markdown: the locus, or why there is none),
    ``replay_text`` (Markdown: whether the backend takes the seed, so whether
    an exact replay is to be expected), ``paired_text`` (Markdown: rcakit's
    default estimate by rollouts with its intervals, or why there is none) and
    ``calls`` (model calls, replay included).
    """
    chat = model_for(LLMSettings(provider, timeout=timeout, base_url=base_url))
    if not chat:
        return Section.skip("no language model was given (`provider = none`).")
    usage = Accounting()
    model = cached(chat, accounting=usage["refund_policy"])
    report = llm_support_report(
        model,
        k_samples=k_samples,
        n_permutations=n_permutations,
        seed=seed,
        extra_runs=extra_runs,
        accounting=usage["replay"],
    )
    if report.contrast is None:
        locus_text = "no step: the model never refunded after the note, so there was no incident to attribute"
    else:
        locus_text = f"`{_locus_name(report.scm, report.contrast.locus)}`"
    cost = usage.to_dict()
    facts = {
        "amr": report.replay.rate,
        "amr_lo": report.replay.ci()[0],
        "replayed": report.replay.n,
        "locus_text": Markdown(locus_text),
        "replay_text": Markdown(_replay_text(chat)),
        "paired_text": Markdown(_paired_text(report)),
        "calls": sum(method["calls"] for method in cost.values()),
    }
    numbers = {"support_agent": {"llm": {**_support_numbers(report), "cost": cost}}}
    return Section(table=report.trajectory(), numbers=numbers, facts=facts)


def _paired_text(report: SupportReport) -> str:
    """rcakit's default Shapley estimate of a model's report in words, or why it has none."""
    if report.contrast is None:
        return "nothing was attributed, so there is no Shapley estimate either"
    if report.paired is None:
        return "the backend takes no seed, so the walks of a pair cannot share their noise: CAR's estimator only"
    steps = ", ".join(
        f"`{name}` {v:.3f} [{lo:.3f}, {hi:.3f}]"
        for name, v, lo, hi in zip(
            report.scm.step_names, report.paired.values, report.paired.ci_low, report.paired.ci_high, strict=True
        )
    )
    return f"rcakit's default by rollouts, on {report.paired.rollouts:,} rollouts, gives {steps}"


def _replay_text(chat: Provider) -> str:
    """Whether ``chat``'s backend takes the seed, in words for the page (``Provider.replays``)."""
    if chat.replays:
        return (
            f"`{chat.name}` sends the seed with every request, so a server that honours it and serves one "
            "request at a time should match every step"
        )
    return f"`{chat.name}` takes no seed, so a replayed step is drawn afresh and need not match the recorded one"


# --- the figures ----------------------------------------------------------------


def contrastive_figure(table: pd.DataFrame, locus: int | None) -> Figure:
    """Contrastive effects per step with their intervals, the point-of-commitment locus shaded (CAR §4).

    ``table`` and ``locus`` are those of :func:`rcakit.scm.contrastive_effects`.
    """
    fig, ax = plt.subplots()
    ci_errorbar(
        ax, table["name"], table["effect"], table["effect_lo"], table["effect_hi"], label="effect, 95% bootstrap CI"
    )
    if locus is not None:
        ax.axvspan(locus - 0.3, locus + 0.3, color=ORANGE, alpha=0.2, label="locus")
    ax.set_ylabel("P(bad | do) − P(bad | observed)")
    ax.legend(frameon=False)
    return fig


def _lineplot_panels(
    data: pd.DataFrame,
    x: str,
    ys: Sequence[str],
    hue: str,
    seed: int,
    log_xticks: Sequence[float] | None = None,
    figsize: tuple[float, float] = (TEXT_WIDTH, 3.2),
) -> Figure:
    """One line plot per column of ``ys``, side by side, each panel labelled by its column.

    Lines are the mean over repeated rows per ``x`` and ``hue``, with a 95%
    bootstrap band that seaborn draws from ``seed`` (so the figure does not
    change between runs). ``log_xticks``: a log x axis ticked at these values.
    """
    fig, axes = plt.subplots(1, len(ys), figsize=figsize, sharex=True, squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        sns.lineplot(data, x=x, y=y, hue=hue, marker="o", ax=ax, errorbar=("ci", 95), seed=seed)
        if log_xticks is not None:
            ax.set_xscale("log")
            ax.set_xticks(log_xticks, [str(t) for t in log_xticks], rotation=45)
            ax.minorticks_off()
        ax.set_title(y)
    fig.tight_layout()
    return fig


def convergence_figure(
    table: pd.DataFrame,
    seed: int,
    log_xticks: Sequence[float] | None = None,
    figsize: tuple[float, float] = (TEXT_WIDTH, 3.2),
) -> Figure:
    """:func:`rcakit.scm.shapley_convergence`'s errors against the rollout budget: the efficiency error (left)
    and the largest per-player error (right), one line per sampling, mean over seeds with a 95% band drawn
    from ``seed``; ``log_xticks``: a log x axis ticked at these values (the budgets)."""
    return _lineplot_panels(
        table, "rollouts", ["efficiency error", "max per-player error"], "sampling", seed, log_xticks, figsize
    )


def support_report_figure(report: SupportReport, figsize: tuple[float, float] = (TEXT_WIDTH, 9.2)) -> Figure:
    """CAR's incident report (Figure 1) of a :func:`rcakit.scm.support_report` with a failing run, in four panels.

    At the text column's width, top to bottom: the factual trajectory
    (:meth:`rcakit.scm.SupportReport.trajectory`: columns ``name`` and ``action``), the locus row marked;
    the locus's decision context (:func:`rcakit.scm.decision_lines`: text and whether it
    carries the injection, boxed in red); then side by side, the outcome
    distribution under resampling from each step (``p_bad_do`` with its
    Wilson interval ``p_lo``, ``p_hi``) and the per-step effects with their
    intervals, the locus shaded. Legends sit under their panels, off the data.
    The table and locus are those of the report's :func:`rcakit.scm.contrastive_effects`.
    """
    contrast, _ = report.attributed()
    locus = contrast.locus
    context = report.scm.observed[locus].context if locus is not None else ()
    trajectory, table, context_lines = report.trajectory(), contrast.table, decision_lines(context)
    fig = plt.figure(figsize=figsize)
    grid = fig.add_gridspec(3, 2, height_ratios=[0.5, 1.0, 1.5], hspace=0.35, wspace=0.45)
    _trajectory_panel(fig.add_subplot(grid[0, :]), trajectory, locus)
    _context_panel(fig.add_subplot(grid[1, :]), context_lines, locus, trajectory)
    _outcome_panel(fig.add_subplot(grid[2, 0]), table)
    effects = fig.add_subplot(grid[2, 1])
    ci_errorbar(
        effects,
        table["name"],
        table["effect"],
        table["effect_lo"],
        table["effect_hi"],
        label="effect, 95% bootstrap CI",
    )
    if locus is not None:
        effects.axvspan(locus - 0.3, locus + 0.3, color=OUTCOME_COLOURS["bad"], alpha=0.15, label="locus")
    effects.set_ylabel("P(bad | do) − P(bad | observed)")
    _labels_below(effects)
    effects.set_title("(d) per-step effects")
    return fig


def _labels_below(ax: Axes) -> None:
    """Step names slanted so that they never overlap, and the legend under the panel, off the data."""
    ax.tick_params(axis="x", labelrotation=30)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize=8, frameon=False)


def _trajectory_panel(ax: Axes, trajectory: pd.DataFrame, locus: int | None) -> None:
    ax.set_axis_off()
    ax.set_title("(a) factual trajectory")
    n = len(trajectory)
    for i, row in enumerate(trajectory.itertuples()):
        y = 1 - (i + 0.5) / n
        is_locus = i == locus
        ax.text(
            0.02,
            y,
            f"{i}  {row.name}",
            va="center",
            fontsize=10,
            weight="bold" if is_locus else "normal",
            transform=ax.transAxes,
        )
        ax.text(
            0.3,
            y,
            f"→ {row.action}",
            va="center",
            fontsize=10,
            transform=ax.transAxes,
            bbox={"facecolor": VERMILION, "alpha": 0.15, "edgecolor": VERMILION} if is_locus else None,
        )
    if locus is not None:
        ax.text(0.02, -0.08, "bold, shaded: the causal locus", fontsize=8, color="dimgrey", transform=ax.transAxes)


def _context_panel(ax: Axes, lines: Sequence[tuple[str, bool]], locus: int | None, trajectory: pd.DataFrame) -> None:
    ax.set_axis_off()
    name = trajectory["name"].iloc[locus] if locus is not None else "no locus"
    ax.set_title(f"(b) decision context of the locus, {name}")
    line = 8.5 * 1.3 * ax.figure.dpi / 72 / ax.bbox.height  # a text line of 8.5 pt, in axes units
    y = 0.97
    for text, injected in lines:
        wrapped = textwrap.fill(text, width=58)
        style = (
            {
                "color": "tab:red",
                "weight": "bold",
                "bbox": {"facecolor": "tab:red", "alpha": 0.12, "edgecolor": "tab:red"},
            }
            if injected
            else {}
        )
        ax.text(0.01, y, wrapped, va="top", fontsize=8.5, family="monospace", transform=ax.transAxes, **style)
        y -= line * (wrapped.count("\n") + 1) + line / 2
    if any(injected for _, injected in lines):
        ax.text(
            0.01,
            max(y - line, 0.0),
            "boxed in red: the injected instruction",
            fontsize=8,
            color="tab:red",
            transform=ax.transAxes,
        )


def _outcome_panel(ax: Axes, table: pd.DataFrame) -> None:
    x = np.arange(len(table))
    bad = table["p_bad_do"].to_numpy(dtype=float)
    ax.bar(x, bad, color=OUTCOME_COLOURS["bad"], alpha=0.7, label="bad: refund against policy")
    ax.bar(x, 1 - bad, bottom=bad, color=OUTCOME_COLOURS["good"], alpha=0.5, label="good")
    below, above = (np.clip(d, 0, None) for d in (bad - table["p_lo"], table["p_hi"] - bad))  # Wilson at 1: 1 - 1e-16
    ax.errorbar(x, bad, yerr=[below, above], fmt="none", color="black", capsize=4)
    ax.set_xticks(x, list(table["name"]))
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of rollouts (95% Wilson CI)")
    _labels_below(ax)
    ax.set_title("(c) resampling from each step")


STEP_MARKERS = ("o", "s", "^", "D", "v")  # player 0, 1, 2, ... (the caption names them)


def interval_coverage_figure(study: pd.DataFrame, level: float = 0.95, panel_height: float = 2.6) -> Figure:
    """One panel per setting of :func:`rcakit.scm.coverage_study`: the share of reruns whose
    interval held the analytic value, per interval and step, with 95% Wilson intervals, and
    the nominal ``level`` as a dashed line. The panels are stacked, each the text column wide, so
    that the interval names fit under their points; the legend sits right of the first panel."""
    settings = list(dict.fromkeys(study["setting"]))
    figsize = (TEXT_WIDTH, panel_height * len(settings))
    fig, axes = plt.subplots(len(settings), 1, figsize=figsize, sharex=True, squeeze=False)
    for ax, setting in zip(axes[:, 0], settings, strict=True):
        rows = study[study["setting"] == setting]
        labels = list(dict.fromkeys(rows["interval"]))
        steps = sorted(rows["step"].unique())
        for j, step in enumerate(steps):
            part = rows[rows["step"] == step].set_index("interval").loc[labels]
            x = np.arange(len(labels)) + (j - (len(steps) - 1) / 2) * 0.18
            y = part["coverage"].to_numpy(dtype=float)
            below, above = (
                np.clip(d.to_numpy(dtype=float), 0, None)  # Wilson at 1 is 1 - 1e-16
                for d in (y - part["Wilson low"], part["Wilson high"] - y)
            )
            ax.errorbar(x, y, yerr=[below, above], fmt=STEP_MARKERS[j % 5], color=BLUE, capsize=3, label=f"φ{step}")
        ax.axhline(level, color="black", ls="--", lw=1, label=f"nominal {level:.0%}")
        ax.set_xticks(np.arange(len(labels)), [textwrap.fill(t, 22) for t in labels], fontsize=9)
        ax.set_ylim(0, 1.04)
        first = rows.iloc[0]
        ax.set_title(
            f"{int(first['permutations'])} permutations × {int(first['rollouts per v(S)'])} rollouts, "
            f"{int(first['reruns'])} reruns",
            fontsize=10,
        )
        ax.set_ylabel("share holding φ")
    axes[0][0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
