r"""The car-shapley chapter's sections, each as one :class:`~rcakit.sections.Section` (CAR §3-5).

One function per section of the chapter: the table a reader sees, the facts
the prose quotes, and the numbers the chapter records (named in
:mod:`rcakit.scm.records`). The estimates a section reads (a contrastive
estimate, a Shapley estimate, a coverage study, a support report) come from
:mod:`rcakit.scm`; the chapter draws its figures from the same estimates.

- :func:`contrastive_locus`: the pivotal SCM's effects and locus (§4-5);
- :func:`shapley_split`: Monte-Carlo Shapley of the two-step AND failure (§5);
- :func:`coverage`: how often the intervals hold the analytic values (§4);
- :func:`efficiency_check`: the efficiency sum as one minus :math:`\hat v(\emptyset)` (§5);
- :func:`contrastive_over_count` and :func:`or_failure_split`: single-step
  effects against Shapley, and the OR failure's split (§5);
- :func:`convergence`: antithetic against plain sampling per rollout budget;
- :func:`rollouts`: CAR's estimator against pooled and paired values of :math:`v(S)`, by rollouts;
- :func:`support_agent`, :func:`replay_action_match` and
  :func:`language_model_support`: the incident report of Figure 1 and the
  replay action-match rate of §3.

Used in the chapters: ``car-shapley``.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd
from IPython.display import Markdown
from scipy import stats as scipy_stats

from rcakit import stats
from rcakit.llm.accounting import Accounting
from rcakit.llm.base import Provider
from rcakit.llm.cache import cached
from rcakit.llm.spec import provider_from_spec
from rcakit.scm import records
from rcakit.scm.contrastive import Contrastive, analytic_effects, contrastive_effects
from rcakit.scm.examples import or_failure_scm
from rcakit.scm.model import SCM
from rcakit.scm.shapley_sweeps import SCMShapley, closed_form, efficiency_from_v_empty, rmse_ratio
from rcakit.scm.support_agent import SupportReport, llm_support_report
from rcakit.sections import Section
from rcakit.shapley import shapley_exact

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


def contrastive_locus(model: SCM, contrast: Contrastive) -> Section:
    """The pivotal SCM's contrastive effects and point-of-commitment locus (CAR §4-5).

    Facts: ``effect`` (per step) and ``locus_text`` (Markdown naming the
    step, or "no step").
    """
    locus = contrast.locus
    text = "no step" if locus is None else f"step {locus}, `{model.step_names[locus]}`"
    return Section(
        table=_effects_table(contrast, list(EFFECT_LABELS)),
        numbers=records.pivotal_numbers(contrast),
        facts={"effect": dict(enumerate(contrast.table["effect"])), "locus_text": Markdown(text)},
    )


def shapley_split(model: SCM, estimate: SCMShapley) -> Section:
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
    return Section(table=table, numbers=records.split_numbers(estimate, analytic), facts=facts)


def coverage_reading(low: float, high: float, level: float = 0.95) -> str:
    """Where the nominal ``level`` lies against a coverage's Wilson interval ``[low, high]``, in words."""
    if high < level:
        return "below the nominal level"
    if low > level:
        return "above the nominal level"
    return "consistent with the nominal level"


def coverage_summary(study: pd.DataFrame, level: float = 0.95) -> dict[str, Any]:
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
    """One setting of :func:`coverage_summary` with a :func:`coverage_reading` beside each step's coverage."""
    return {
        key: {
            step: {**row, "reading": Markdown(coverage_reading(row["lo"], row["hi"], level))}
            for step, row in value.items()
        }
        if isinstance(value, dict)
        else value
        for key, value in entry.items()
    }


def coverage(study: pd.DataFrame, setting: str = "chapter", level: float = 0.95) -> Section:
    r"""How often each interval of the study held the analytic Shapley values (CAR §4).

    ``setting`` labels the study's setting whose coverage of :math:`\phi_0` by
    CAR's interval is recorded (the chapter's own). Facts:
    :func:`coverage_summary`, each step's entry with a ``reading``
    (:func:`coverage_reading`, Markdown), so ``<setting>_<variant>_<step>_coverage``
    and ``..._reading`` once flattened.
    """
    summary = coverage_summary(study, level)
    facts = {label: _with_readings(entry, level) for label, entry in summary.items()}
    table = study.drop(columns=["variant", "value", "reruns"]).set_index(["setting", "interval", "step"])
    return Section(table=table, numbers=records.coverage_numbers(summary, setting), facts=facts)


EFFICIENCY_LABELS = {  # rcakit.scm.efficiency_from_v_empty's keys as the page shows them
    "v_empty": r"\(\hat v(\emptyset)\)",
    "v_full": r"\(\hat v(N)\)",
    "efficiency_gap": r"gap: sum against \(1 - \hat v(\emptyset)\)",
    "efficiency_ci": "Wilson interval of the sum",
    "walks": "walks",
    "empty_rollouts": r"rollouts of \(\emptyset\)",
    "empty_bad": "bad among them",
}


def efficiency_check(model: SCM, estimate: SCMShapley) -> Section:
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
        numbers=records.efficiency_numbers(check, analytic_efficiency),
        facts=facts,
        decimals=4,
    )


def contrastive_over_count(model: SCM, *, k_samples: int, seed: int) -> Section:
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
    return Section(table=table, numbers=records.over_count_numbers(abs_sum), facts=facts)


def or_failure_split(q: float, seed: int) -> Section:
    """The exact Shapley values of the OR failure (:func:`rcakit.scm.or_failure_scm`), for contrast."""
    model = or_failure_scm(q=q, seed=seed)
    phi = shapley_exact(closed_form(model), model.n_steps)
    return Section(table=pd.DataFrame({r"\(\phi_i\), exact": phi}, index=pd.Index(model.step_names, name="step")))


def convergence(table: pd.DataFrame) -> Section:
    """:func:`rcakit.scm.shapley_convergence`'s errors, averaged over seeds, per rollout budget and sampling."""
    means = table.groupby(["sampling", "rollouts"]).mean().unstack(0)
    return Section(table=cast(pd.DataFrame, means), decimals=4)


def rollouts(study: pd.DataFrame, car_budget: int) -> Section:
    r"""CAR's estimator against pooled and paired values of :math:`v(S)` by rollouts
    (:func:`rcakit.scm.rollout_study`).

    The table: RMSE (``car-t`` has CAR's values, so only CAR's column) and coverage (mean over players)
    per estimator and budget; the rollouts each spent (whole pairs only, so at most the budget) are
    recorded beside them. Recorded too, for ``pooled`` and, when the study has it, ``paired`` (common
    random numbers, rcakit's default where the policy is seeded): the ratio of its RMSE to CAR's at
    ``car_budget`` and at half of it to CAR at ``car_budget``, each with its bootstrap interval, and its
    interval's coverage of :math:`\phi_0` at ``car_budget`` with its Wilson interval. The one fact is
    ``reading``, the paragraph that states them (Markdown); a study in which CAR's estimator did not run
    at ``car_budget`` (too few rollouts for two pairs) records nothing and its reading says why.
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
    grouped = study.groupby(["estimator", "budget"])
    rmse = cast(pd.DataFrame, grouped["squared error"].mean().pow(0.5).unstack(0))
    coverage = cast(pd.DataFrame, grouped["covered"].mean().unstack(0))
    spent = cast(pd.DataFrame, grouped["rollouts"].mean().unstack(0)).drop(columns="car-t")
    compared = {
        name: _against_car(study, name, car_budget)
        for name in ("pooled", "paired")
        if ran(name, car_budget) and ran(name, half)
    }
    table = pd.concat({"RMSE": rmse.drop(columns="car-t"), "coverage": coverage}, axis=1)  # car-t: car's values
    table.index.name = "rollouts"
    words = {"pooled": "pooling", "paired": "common random numbers inside each pair"}
    interval = {"pooled": "jackknife", "paired": "padded"}
    seeds = study["seed"].nunique()
    reading = f"Over {seeds} seeds, at CAR's budget ({car_budget:,} rollouts) and with half of it ({half:,}):"
    for name, (same, halved, phi_0) in compared.items():
        reading += (
            f"\n\n- {words[name]} gives **{same[0]:.2f}** times CAR's RMSE at the same budget (95% bootstrap "
            f"interval [{same[1]:.2f}, {same[2]:.2f}]) and **{halved[0]:.2f}** times it with half the rollouts "
            f"([{halved[1]:.2f}, {halved[2]:.2f}]); its {interval[name]} interval held the analytic $\\phi_0$ in "
            f"**{phi_0['coverage']:.3f}** of the runs at CAR's budget (Wilson [{phi_0['lo']:.3f}, {phi_0['hi']:.3f}])."
        )
    numbers = records.rollout_numbers(rmse.to_dict(), coverage.to_dict(), spent.to_dict(), compared)
    return Section(table=table, numbers=numbers, facts={"reading": Markdown(reading)}, decimals=4)


def _against_car(
    study: pd.DataFrame, name: str, car_budget: int
) -> tuple[tuple[float, float, float], tuple[float, float, float], dict[str, float]]:
    """``name``'s RMSE ratio to CAR at CAR's budget and at half of it, and its coverage of phi_0 there."""
    same = rmse_ratio(study, (name, car_budget), ("car", car_budget))
    halved = rmse_ratio(study, (name, car_budget // 2), ("car", car_budget))
    held = study[(study["estimator"] == name) & (study["budget"] == car_budget)]["covered phi_0"]
    cov = stats.accuracy_with_ci(list(held))
    return same, halved, {"coverage": cov["acc"], "lo": cov["lo"], "hi": cov["hi"]}


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


def support_agent(report: SupportReport) -> Section:
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
        numbers={"support_agent": records.attribution_numbers(report)},
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


def replay_action_match(report: SupportReport) -> Section:
    """The replay action-match rate of the report's runs, with its Wilson interval (CAR §3).

    Facts: ``amr``, ``amr_lo`` and ``replayed`` (the replayed steps).
    """
    numbers = records.replay_numbers(report.replay)
    facts = {"amr": report.replay.rate, "amr_lo": report.replay.ci()[0], "replayed": report.replay.n}
    return Section(table=_replay_table(numbers), numbers={"support_agent": numbers}, facts=facts)


def language_model_support(
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

    ``provider`` is a spec (:func:`rcakit.llm.provider_from_spec`, with
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
    chat = provider_from_spec(provider, timeout=timeout, base_url=base_url)
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
    numbers = {"support_agent": {"llm": {**records.support_numbers(report), "cost": cost}}}
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
