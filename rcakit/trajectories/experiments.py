"""The longrca-strata chapter's sections, each a :class:`~rcakit.sections.Section`.

In the chapter's order: the published Figure 6 (Tables 4, 7, 8 with Wilson
intervals, LongRCA §6.3), the Who&When logs (:mod:`~rcakit.trajectories.real_logs`),
the public LongRCA Bench release (:mod:`~rcakit.trajectories.release`), the
synthetic long-horizon benchmark (§5, Table 4), the language-model locators on
every set, and the Explore sweep. Built on
:mod:`rcakit.trajectories.evaluation` (scoring) and
:mod:`rcakit.trajectories.llm_evaluation` (the language models).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from rcakit.sections import Section
from rcakit.trajectories.evaluation import (
    ScoredSet,
    knob_sweep,
    planted_by_distance,
    score_synthetic,
    strata_long,
    strata_table,
)
from rcakit.trajectories.llm_evaluation import compare_llm
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.real_logs import WhoAndWhen, who_and_when
from rcakit.trajectories.release import ReleaseRun, longrca_release
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA, nested_bins, published_strata, published_total, separated_pairs
from rcakit.trajectories.synthetic import GeneratorConfig, calibration_table, generate_benchmark, shape_statistics

if TYPE_CHECKING:
    from rcakit.llm import Accounting, Provider
    from rcakit.parallel import Runner

__all__ = [
    "ReleaseRun",
    "Synthetic",
    "WhoAndWhen",
    "explore",
    "generator_from_params",
    "language_models",
    "longrca_release",
    "published_bins",
    "published_figure6",
    "rcta_length",
    "separated_strata",
    "synthetic",
    "table4",
    "who_and_when",
]


def generator_from_params(params: Mapping[str, Any]) -> GeneratorConfig:
    """The generator the chapter's parameters describe: ``n_trajectories`` and every knob of
    :class:`~rcakit.trajectories.synthetic.GeneratorConfig` the parameters name."""
    knobs = {f.name: params[f.name] for f in dataclasses.fields(GeneratorConfig) if f.name in params}
    return GeneratorConfig(**{**knobs, "n": params["n_trajectories"]})


# -- Figure 6 from the published numbers (§6.3, Tables 4, 7, 8)


def table4(table: Mapping[str, Mapping[str, float]]) -> Section:
    """LongRCA Table 4 as printed (percent; MAE in steps), one row per method."""
    return Section(table=pd.DataFrame(table).T.rename_axis("method (N = 1,140)"), decimals=1)


def published_bins(table7: Mapping[str, Any], table8: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 7 and 8 (percent per bin, bin counts) as whole numbers of trajectories with their 95%
    Wilson intervals: rows ``method, bin, acc, n, k, lo, hi`` by length and by root-to-end distance."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    distance = published_strata(table8["accuracy"], table8["counts"], STRATA["distance"][2])
    return length, distance


def published_figure6(table4: Mapping[str, Any], table7: Mapping[str, Any], table8: Mapping[str, Any]) -> Section:
    """Each method's bins summed back to a full-benchmark exact accuracy beside Table 4 (LongRCA §6.3,
    Appendix C); records the bins and the totals under ``published``."""
    length, distance = published_bins(table7, table8)
    totals = pd.DataFrame(
        {
            "length bins": published_total(length),
            "distance bins": published_total(distance),
            "Table 4 exact": pd.DataFrame(table4).T["exact"] / 100,
        }
    )
    numbers = {
        "length_bins": nested_bins(length),
        "distance_bins": nested_bins(distance),
        "bins_total": {"length": totals["length bins"].to_dict(), "distance": totals["distance bins"].to_dict()},
    }
    return Section(table=totals, numbers={"published": numbers}, decimals=4)


def separated_strata(table7: Mapping[str, Any], table8: Mapping[str, Any]) -> Section:
    """Per method, the pairs of published bins whose 95% Wilson intervals are disjoint
    (:func:`~rcakit.trajectories.strata.separated_pairs`), with a ``stratum`` column (§6.3)."""
    length, distance = published_bins(table7, table8)
    pairs = pd.concat(
        [separated_pairs(length).assign(stratum="length"), separated_pairs(distance).assign(stratum="distance")],
        ignore_index=True,
    )
    return Section(table=pairs)


def rcta_length(table7: Mapping[str, Any]) -> Section:
    """RCTA across the published length bins (§6.3, Table 7): the table shows each bin's hits, size,
    accuracy and 95% Wilson interval; the facts give the first three bins' accuracies (percent) and
    the ``>400`` bin's hits, size, interval width in points, and whether that interval holds every
    other bin's estimate."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    rcta = length.query("method == 'RCTA'").set_index("bin")
    last, acc = rcta.loc[">400"].to_dict(), rcta["acc"].to_dict()
    facts = {
        "rcta_length_le100": 100 * float(acc["<=100"]),
        "rcta_length_101_200": 100 * float(acc["101-200"]),
        "rcta_length_201_400": 100 * float(acc["201-400"]),
        "rcta_gt400_k": int(last["k"]),
        "rcta_gt400_n": int(last["n"]),
        "rcta_gt400_acc": float(last["acc"]),
        "rcta_gt400_lo": float(last["lo"]),
        "rcta_gt400_hi": float(last["hi"]),
        "rcta_gt400_width": float(100 * (last["hi"] - last["lo"])),
        "rcta_gt400_holds_others": bool(rcta.drop(index=">400")["acc"].between(last["lo"], last["hi"]).all()),
    }
    names = {"k": "hits", "n": "n", "acc": "accuracy", "lo": "95% low", "hi": "95% high"}
    table = rcta[list(names)].rename(columns=names).rename_axis("RCTA, length bin")
    return Section(table=table, facts=facts)


# -- the synthetic long horizon (§5, Table 4)


@dataclass(frozen=True)
class Synthetic:
    """The seeded synthetic benchmark under the offline locators, and the sections the chapter shows.

    ``calibration``: the generator's shape beside LongRCA's; ``scores``: the
    overall table, recorded under ``synthetic`` with the calibration, and the
    tracing locator's lead and role gap (points); ``strata``: exact accuracy
    by length and by root-to-end bin; ``planted``: what was planted, per
    root-to-end bin, beside the tracing locator's hits.
    """

    bench: list[Trajectory]
    scored: ScoredSet
    calibration: Section
    scores: Section
    strata: Section
    planted: Section

    def strata_rows(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The length and root-to-end rows of every locator (the synthetic Figure 6)."""
        return strata_long(self.scored.cases, "length"), strata_long(self.scored.cases, "distance")


def synthetic(locators: Sequence[Locator], seed: int, config: GeneratorConfig) -> Synthetic:
    """Generate the benchmark (``seed``, ``config``) and score ``locators`` on it (LongRCA §5, §6.3)."""
    bench = generate_benchmark(seed, config)
    scored = score_synthetic(locators, bench)
    facts = {
        "syn_gain": 100 * scored.numbers["handoff_trace_gain"],
        "syn_role_gap": 100 * scored.numbers["handoff_trace_role_gap"],
    }
    numbers = {"synthetic": {**scored.numbers, "calibration": shape_statistics(bench)}}
    strata = pd.concat({by: strata_table(scored.cases, by) for by in ("length", "distance")}, axis=1)
    return Synthetic(
        bench,
        scored,
        Section(table=calibration_table(bench), decimals=1),
        Section(table=scored.table, numbers=numbers, facts=facts),
        Section(table=strata),
        Section(table=planted_by_distance(bench, scored.cases["handoff_trace"]["exact"])),
    )


# -- the language-model locators on every set


@dataclass(frozen=True)
class LanguageModels:
    """The LLM locators on a seeded subset of each set (:func:`~rcakit.trajectories.llm_evaluation.compare_llm`).

    ``costs``: per set, the offline locators then each LLM locator's accuracy
    and cost, recorded under ``llm``; ``spread``: per set and method, the
    distribution of the predicted steps. Both skipped without a model.
    """

    costs: Section
    spread: Section


def language_models(
    provider: Provider | None,
    sets: Mapping[str, Sequence[Trajectory]],
    offline: Sequence[Locator],
    accounting: Accounting,
    *,
    max_cases: int,
    seed: int = 0,
    prompt_tokens: int | None = None,
    max_questions: int | None = None,
    runner: Runner | None = None,
) -> LanguageModels:
    """:func:`~rcakit.trajectories.llm_evaluation.compare_llm` on every set with ``provider``;
    both sections skipped when there is no provider (``provider = none``)."""
    if not provider:
        reason = "no language model was given (provider = none)"
        return LanguageModels(Section.skip(reason), Section.skip(reason))
    compared = compare_llm(
        provider,
        sets,
        offline,
        accounting,
        max_cases=max_cases,
        seed=seed,
        prompt_tokens=prompt_tokens,
        max_questions=max_questions,
        runner=runner,
    )
    return LanguageModels(
        Section(table=compared.table, numbers={"llm": compared.numbers}), Section(table=compared.spread)
    )


# -- Explore


def explore(locators: Sequence[Locator], base: GeneratorConfig, n: int, seed: int) -> Section:
    """:func:`~rcakit.trajectories.evaluation.knob_sweep`: exact accuracy of every locator with one
    knob changed at a time, recorded under ``explore`` with ``n``."""
    sweep = knob_sweep(locators, base, n, seed)
    return Section(table=sweep, numbers={"explore": {"exact": sweep.to_dict(orient="index"), "n": n}})
