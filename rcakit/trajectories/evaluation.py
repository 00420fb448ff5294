"""Run locators over trajectory sets and tabulate the LongRCA metrics, strata and costs.

The chapter's experiment loops live here: the offline locators on each set
(:func:`evaluate`, :func:`score_real_logs`, :func:`score_synthetic`), the
public LongRCA Bench release read and checked against the paper
(:func:`longrca_release`), the
Explore sweep over the generator's knobs (:func:`knob_sweep`), and the
language-model locators on a seeded subset with their cost
(:func:`evaluate_llm`, :func:`compare_llm`).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Accounting, CachedProvider, Provider
from rcakit.llm.accounting import cost_table
from rcakit.trajectories.llm_locators import (
    LLM_LOCATORS,
    AllAtOnceLocator,
    BinarySearchLocator,
    LLMLocator,
    StepByStepLocator,
)
from rcakit.trajectories.loaders import WHO_AND_WHEN_SIZES
from rcakit.trajectories.locators import OFFLINE_LOCATORS, Locator, error_word, expected_random_accuracy
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.rcta import RCTALocator
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import (
    STRATA,
    bin_of,
    bins_dict,
    nested_bins,
    published_strata,
    published_total,
    stratify,
)
from rcakit.trajectories.synthetic import GeneratorConfig, generate_benchmark, planted_features

if TYPE_CHECKING:
    from rcakit.parallel import Progress, Runner


def evaluate(locators: Iterable[Locator], trajectories: Sequence[Trajectory]) -> dict[str, pd.DataFrame]:
    """``{locator name: per-case scores}`` (see :func:`~rcakit.trajectories.metrics.score_cases`)."""
    return {loc.name: score_cases(trajectories, loc.locate_all(trajectories)) for loc in locators}


def overall_table(
    cases: dict[str, pd.DataFrame], official: bool = False, official_n: int | None = None
) -> pd.DataFrame:
    """One row per locator: role accuracy, exact, ±5, source-weighted MAE, N (and the official scores).

    With ``official``, Who&When's substring scorer for agent and step over
    ``official_n`` logs (the official denominator: a log that is not scored
    counts as a miss), by default the N scored here.
    """
    rows = {}
    for name, frame in cases.items():
        rows[name] = summarise(frame)
        if official:
            n = len(frame) if official_n is None else official_n
            if n < len(frame):
                raise RcakitError(f"official_n: {n} is fewer than the {len(frame)} logs scored")
            rows[name].update(
                agent_official=float(frame["agent_official"].sum() / n),
                exact_official=float(frame["exact_official"].sum() / n),
                n_official=n,
            )
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("locator")


def tracing_margins(table: pd.DataFrame, tracer: str = "handoff_trace") -> dict:
    """How the tracing locator stands (LongRCA Table 4's two comparisons): its exact accuracy
    minus the best other locator's, and its role accuracy minus its exact accuracy."""
    others = table.drop(index=tracer)["exact"].max()
    row = table.loc[tracer].to_dict()
    return {
        "handoff_trace_gain": float(row["exact"] - others),
        "handoff_trace_role_gap": float(row["role_acc"] - row["exact"]),
    }


def strata_long(cases: dict[str, pd.DataFrame], by: str, hit: str = "exact") -> pd.DataFrame:
    """Rows ``method, bin, acc, n, lo, hi`` for every locator (the figure's input)."""
    frames = [stratify(frame, by, hit).reset_index().assign(method=name) for name, frame in cases.items()]
    long = pd.concat(frames, ignore_index=True)[["method", "bin", "acc", "n", "lo", "hi"]]
    long["bin"] = pd.Categorical(long["bin"], categories=STRATA[by][2], ordered=True)
    return long


def strata_table(cases: dict[str, pd.DataFrame], by: str, hit: str = "exact") -> pd.DataFrame:
    """Locators by bins (labelled with their size) of the ``hit`` rate."""
    long = strata_long(cases, by, hit)
    sizes = long.drop_duplicates("bin").set_index("bin")["n"]
    table = long.pivot(index="method", columns="bin", values="acc").loc[list(cases)]
    table.columns = [f"{b} (n={sizes[b]})" for b in table.columns]
    return table.rename_axis(index="locator", columns=f"{by} bin")


def results_block(
    cases: dict[str, pd.DataFrame], strata: bool = True, official: bool = False, official_n: int | None = None
) -> dict:
    """``{locator: {overall, length_bins, distance_bins}}`` or, without strata, ``{locator: metrics}``."""
    table = overall_table(cases, official, official_n)
    out = {}
    for name, frame in cases.items():
        metrics = table.loc[name].to_dict()
        metrics["n"] = int(metrics["n"])
        if "n_official" in metrics:
            metrics["n_official"] = int(metrics["n_official"])
        if not strata:
            out[name] = metrics
            continue
        out[name] = {
            "overall": metrics,
            "length_bins": bins_dict(stratify(frame, "length")),
            "distance_bins": bins_dict(stratify(frame, "distance")),
        }
    return out


def strata_numbers(cases: dict[str, pd.DataFrame]) -> dict:
    """``{locator: {length_bins, distance_bins}}`` of exact accuracy with Wilson intervals (§6.3)."""
    return {name: {f"{by}_bins": bins_dict(stratify(frame, by)) for by in STRATA} for name, frame in cases.items()}


def bin_spread(numbers: dict) -> dict:
    """Over the non-empty bins of :func:`strata_numbers`: fewest and most cases, narrowest interval."""
    bins = [b for per in numbers.values() for by in per.values() for b in by.values() if b["n"]]
    return {
        "bin_min": int(min(b["n"] for b in bins)),
        "bin_max": int(max(b["n"] for b in bins)),
        "min_width": float(min(b["hi"] - b["lo"] for b in bins)),
    }


# -- the offline locators on the real logs and on the synthetic benchmark


@dataclass(frozen=True)
class ScoredSet:
    """One trajectory set under the offline locators: per-case scores, the table shown, the numbers recorded."""

    trajectories: list
    cases: dict
    table: pd.DataFrame
    numbers: dict


def official_denominators(subsets: Mapping[str, Sequence[Trajectory]], complete: bool) -> dict[str, int]:
    """Who&When's official denominator per subset: the published size for the complete logs
    (a log that is not scored counts as a miss), else the number of logs read."""
    return {s: WHO_AND_WHEN_SIZES[s] if complete else len(ts) for s, ts in subsets.items()}


def score_real_logs(locators: Sequence[Locator], trajectories: Sequence[Trajectory], official_n: int) -> ScoredSet:
    """Who&When logs under the strict and the official scorer (Zhang et al. 2025 §4), with the
    random locator's analytic expectations (exact, ±5, role) and the tracing margins."""
    cases = evaluate(locators, trajectories)
    table = overall_table(cases, official=True, official_n=official_n)
    numbers = results_block(cases, strata=False, official=True, official_n=official_n)
    if "random" in numbers:
        within5 = expected_random_accuracy(trajectories, k=5)
        numbers["random"].update(
            expected_exact=expected_random_accuracy(trajectories)["step"],
            expected_within5=within5["step"],
            expected_role=within5["role"],
        )
    numbers.update(tracing_margins(table))
    return ScoredSet(list(trajectories), cases, table, numbers)


def score_subsets(
    locators: Sequence[Locator], subsets: Mapping[str, Sequence[Trajectory]], official_n: Mapping[str, int]
) -> dict[str, ScoredSet]:
    """:func:`score_real_logs` for every Who&When subset."""
    return {s: score_real_logs(locators, ts, official_n[s]) for s, ts in subsets.items()}


def score_synthetic(locators: Sequence[Locator], bench: Sequence[Trajectory]) -> ScoredSet:
    """The synthetic benchmark: overall metrics and both strata per locator, tracing margins,
    the random locator's analytic expectation."""
    cases = evaluate(locators, bench)
    table = overall_table(cases)
    numbers = results_block(cases)
    numbers.update(tracing_margins(table))
    numbers["expected_random"] = expected_random_accuracy(bench)
    return ScoredSet(list(bench), cases, table, numbers)


def beside_published(published: Mapping[str, Mapping], scored: Mapping[str, ScoredSet]) -> pd.DataFrame:
    """Who&When step accuracy (percent), the published rows, then ours: each offline locator under
    the strict and the official scorer, the analytic random baseline and both denominators."""
    table = pd.DataFrame(published)[[s for s in published if s in scored]]  # the subsets that were read
    subsets = list(table.columns)
    rows = {}
    for name in OFFLINE_LOCATORS:
        rows[f"{name} (strict)"] = [100 * scored[s].numbers[name]["exact"] for s in subsets]
        rows[f"{name} (official)"] = [100 * scored[s].numbers[name]["exact_official"] for s in subsets]
    rows["random (analytic, 1/T)"] = [100 * scored[s].numbers["random"]["expected_exact"] for s in subsets]
    rows["n (strict)"] = [len(scored[s].trajectories) for s in subsets]
    rows["n (official)"] = [scored[s].numbers["random"]["n_official"] for s in subsets]
    return pd.concat([table, pd.DataFrame.from_dict(rows, orient="index", columns=subsets)])


def first_error_words(trajectories: Sequence[Trajectory], cases: pd.DataFrame) -> pd.Series:
    """How often each first error word is the one a locator's predicted step carries."""
    steps = cases["step"].astype(int)
    words = [error_word(t.steps[s]) or "(no error word: last step)" for t, s in zip(trajectories, steps, strict=True)]
    return pd.Series(words).value_counts()


def planted_by_distance(bench: Sequence[Trajectory], hits: pd.Series) -> pd.DataFrame:
    """Per root-to-end bin: the share of runs with a quoted symptom, with a trap before the root,
    and the locator's ``hits`` (one boolean per trajectory of ``bench``)."""
    planted = planted_features(list(bench)).assign(
        hit=np.asarray(hits), distance_bin=lambda f: bin_of(f["root_to_end"], "distance")
    )
    return planted.groupby("distance_bin", observed=False)[["quoted_symptom", "trap_before_root", "hit"]].mean()


EXPLORE_KNOBS = (
    ("signal_clarity", 0.2),
    ("signal_clarity", 1.0),
    ("decoy_rate", 0.0),
    ("decoy_rate", 0.8),
    ("handoff_share", 0.0),
    ("handoff_share", 1.0),
    ("length_scale", 0.3),
)


def knob_sweep(
    locators: Sequence[Locator],
    base: GeneratorConfig,
    n: int,
    seed: int,
    *,
    knobs: Iterable[tuple[str, float]] = EXPLORE_KNOBS,
) -> pd.DataFrame:
    """Exact accuracy of every locator on ``n`` fresh trajectories per setting: ``base`` as it is
    ("chapter values"), then each ``(knob, value)`` changed alone. Each setting draws its
    benchmark with ``seed``, so settings differ only by the knob."""
    settings = {"chapter values": {}} | {f"{knob} = {value:g}": {knob: value} for knob, value in knobs}
    names = {f.name for f in dataclasses.fields(GeneratorConfig)} - {"n"}
    for change in settings.values():
        unknown = set(change) - names
        if unknown:
            known = ", ".join(sorted(names))
            raise RcakitError(f"knob_sweep: knobs: {sorted(unknown)[0]!r} is not a generator knob ({known})")
    rows = {}
    for label, change in settings.items():
        config = dataclasses.replace(base, n=n, **change)
        rows[label] = overall_table(evaluate(locators, generate_benchmark(seed, config)))["exact"]
    return pd.DataFrame(rows).T.rename_axis("setting")


# -- the language-model locators


def llm_subset(trajectories: Sequence[Trajectory], n: int, seed: int) -> list[Trajectory]:
    """A seeded sample of at most ``n`` trajectories, kept in their original order."""
    if n >= len(trajectories):
        return list(trajectories)
    rng = np.random.default_rng([int(seed), len(trajectories)])
    return [trajectories[i] for i in sorted(rng.choice(len(trajectories), size=n, replace=False))]


def build_llm_locators(
    providers: Mapping, seed: int = 0, prompt_tokens: int | None = None, max_questions: int | None = None
) -> list[LLMLocator]:
    """One locator per name in :data:`~rcakit.trajectories.llm_locators.LLM_LOCATORS`;
    ``providers[name]`` is each one's (cached) provider.

    ``max_questions`` bounds the iterative methods' calls per diagnosis:
    step-by-step's questions and RCTA's segment summaries (binary search
    needs only about ``log2 T``).
    """
    rcta = {} if max_questions is None else {"max_segments": max_questions}
    return [
        AllAtOnceLocator(providers["all_at_once"], seed, prompt_tokens),
        StepByStepLocator(providers["step_by_step"], seed, prompt_tokens, max_questions),
        BinarySearchLocator(providers["binary_search"], seed, prompt_tokens),
        RCTALocator(providers["rcta"], seed, prompt_tokens, **rcta),
    ]


def cost_row(locator: LLMLocator, cases: pd.DataFrame, totals: Mapping | None = None) -> dict:
    """Accuracy beside cost for one LLM locator on scored ``cases``: the LongRCA metrics, its row
    of :func:`~rcakit.llm.accounting.cost_table` (cost columns only: no cache hits or seconds,
    which differ between a cold and a warm run), invalid predictions and long inputs.

    ``totals`` is the locator's usage summed over its cases (:func:`evaluate_llm`); without it,
    the locator's chat's shared accounting."""
    if totals is None:
        if not isinstance(locator.chat, CachedProvider):
            raise RcakitError(f"cost_row: {locator.name}: without totals, the locator's chat must be a cached provider")
        totals = locator.chat.accounting.totals()
    cost = cost_table({locator.name: totals}).loc[locator.name]
    return {
        **summarise(cases),
        **{k: v.item() if hasattr(v, "item") else v for k, v in cost.items()},
        "invalid": int((~cases["valid"]).sum()),
        **locator.inputs.counts(),
    }


def step_distribution(cases: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per method: the most frequent predicted step, its share of all cases, the number of
    distinct steps, invalid predictions, and the mean predicted position ``step / (T - 1)``."""
    rows = {}
    for name, frame in cases.items():
        counts = frame["step"].dropna().astype(int).value_counts()
        position = (frame["step"] / (frame["length"] - 1).clip(lower=1)).mean()
        rows[name] = {
            "modal_step": int(counts.index[0]) if len(counts) else None,
            "modal_share": float(counts.iloc[0] / len(frame)) if len(counts) else 0.0,
            "distinct_steps": int(len(counts)),
            "invalid": int((~frame["valid"]).sum()),
            "mean_position": float(position) if pd.notna(position) else None,
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")


LONG_INPUTS = ("truncated", "segmented", "unfinished")  # the headings of a locator's LongInputs


@dataclass
class LocatorCase:
    """``work(trajectory)`` for one LLM locator: its prediction, the usage it caused (counted within
    the case alone, so concurrent cases do not mix) and the long-input headings it fell under."""

    locator: LLMLocator

    def __call__(self, trajectory: Trajectory) -> dict:
        from rcakit.llm.cache import case_usage

        with case_usage() as scope:
            prediction = self.locator.locate(trajectory)
        inputs = self.locator.inputs
        return {
            "prediction": prediction,
            "usage": scope.totals(self.locator.chat),
            "long": [h for h in LONG_INPUTS if trajectory.id in getattr(inputs, h)],
        }


def evaluate_llm(
    provider: Provider,
    trajectories: Sequence[Trajectory],
    accounting: Accounting,
    subset: str,
    *,
    seed: int = 0,
    prompt_tokens: int | None = None,
    max_questions: int | None = None,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict]]:
    """Run every LLM locator on ``trajectories`` through the response cache, charging
    ``accounting["<subset>.<method>"]``; return ``(per-case scores, cost rows)`` by method.

    ``progress`` wraps each locator's pass over the trajectories (iterable in,
    iterable out); by default :func:`rcakit.progress.track`. ``runner``
    (``rcakit.parallel.Runner``, serial by default) runs the cases serially, on
    threads or on a Dask cluster; each case's usage is summed here, so the cost
    rows are the same for every setting.
    """
    from rcakit.llm import cached
    from rcakit.parallel import Runner
    from rcakit.progress import track

    runner = runner or Runner()
    providers = {name: cached(provider, accounting=accounting[f"{subset}.{name}"]) for name in LLM_LOCATORS}
    items = [(f"{i}:{t.id}", t) for i, t in enumerate(trajectories)]
    cases, rows = {}, {}
    for locator in build_llm_locators(providers, seed, prompt_tokens, max_questions):
        bar = (lambda s, name=locator.name: track(s, desc=f"{subset} {name}")) if progress is None else progress
        done = runner.run(items, LocatorCase(locator), progress=bar)
        for t, d in zip(trajectories, done, strict=True):  # the driver's record of each case's long inputs
            for heading in d["long"]:
                getattr(locator.inputs, heading).add(t.id)
        totals = {k: sum(d["usage"][k] for d in done) for k in done[0]["usage"]} if done else None
        cases[locator.name] = score_cases(trajectories, [d["prediction"] for d in done])
        rows[locator.name] = cost_row(locator, cases[locator.name], totals)
    return cases, rows


@dataclass(frozen=True)
class LLMComparison:
    """The LLM locators on a seeded subset of each set, beside the offline ones on the same subset.

    ``table``: per set, the offline locators' metrics then each LLM locator's
    :func:`cost_row`; ``spread``: per set, :func:`step_distribution`;
    ``numbers``: ``{set: {method: cost row + predicted_steps}}`` for the results.
    """

    cases: dict
    table: pd.DataFrame
    spread: pd.DataFrame
    numbers: dict


def compare_llm(
    provider: Provider,
    sets: Mapping[str, Sequence[Trajectory]],
    offline: Sequence[Locator],
    accounting: Accounting,
    max_cases: int,
    *,
    seed: int = 0,
    prompt_tokens: int | None = None,
    max_questions: int | None = None,
    runner: Runner | None = None,
) -> LLMComparison:
    """:func:`evaluate_llm` on :func:`llm_subset` (``max_cases``) of every set, with the offline
    locators on the same trajectories and the distribution of the steps each method predicted;
    ``runner`` (``rcakit.parallel.Runner``) says where the LLM locators' cases run."""
    cases, tables, spreads, numbers = {}, {}, {}, {}
    for name, trajectories in sets.items():
        picked = llm_subset(trajectories, max_cases, seed)
        cases[name], rows = evaluate_llm(
            provider,
            picked,
            accounting,
            name,
            seed=seed,
            prompt_tokens=prompt_tokens,
            max_questions=max_questions,
            runner=runner,
        )
        offline_table = overall_table(evaluate(offline, picked))
        tables[name] = pd.concat([offline_table, pd.DataFrame.from_dict(rows, orient="index")])
        spreads[name] = step_distribution(cases[name])
        numbers[name] = {m: {**row, "predicted_steps": spreads[name].loc[m].to_dict()} for m, row in rows.items()}
    return LLMComparison(cases, pd.concat(tables), pd.concat(spreads), numbers)


def merge_comparisons(runs: Iterable[LLMComparison | None]) -> LLMComparison:
    """One :class:`LLMComparison` from several (``None`` entries, sets not run, are skipped)."""
    runs = [r for r in runs if r is not None]
    return LLMComparison(
        {k: v for r in runs for k, v in r.cases.items()},
        pd.concat([r.table for r in runs]),
        pd.concat([r.spread for r in runs]),
        {k: v for r in runs for k, v in r.numbers.items()},
    )


def who_and_when_facts(scored: Mapping[str, ScoredSet]) -> dict:
    """The numbers the chapter's prose quotes about the Who&When logs, for the subsets that were read:
    set sizes and official denominators, the analytic random baseline and the tracing lead (percent),
    how many Hand-Crafted roots lie within 10 steps of the end (percent) and the longest log, how
    many first error words sit at step 2 or earlier, the Hand-Crafted bins' fewest and most logs and
    narrowest interval (:func:`bin_spread`), how many Algorithm-Generated roots are at 0 and 1."""
    keys = {"hand": "Hand-Crafted", "algo": "Algorithm-Generated"}
    facts = {}
    for key, subset in keys.items():
        if subset not in scored:
            continue
        numbers = scored[subset].numbers
        facts[f"who_n_{key}"] = len(scored[subset].trajectories)
        facts[f"who_official_{key}"] = numbers["random"]["n_official"]
        facts[f"random_analytic_{key}"] = 100 * numbers["random"]["expected_exact"]
        facts[f"gain_{key}"] = 100 * numbers["handoff_trace_gain"]
    if "Algorithm-Generated" in scored:
        algo_roots = pd.Series([t.label.step for t in scored["Algorithm-Generated"].trajectories])
        facts |= {"algo_root0": int((algo_roots == 0).sum()), "algo_root1": int((algo_roots == 1).sum())}
    if "Hand-Crafted" not in scored:
        return facts
    spread = bin_spread(strata_numbers(scored["Hand-Crafted"].cases))
    facts |= {
        "hand_bin_min": spread["bin_min"],
        "hand_bin_max": spread["bin_max"],
        "hand_min_width": 100 * spread["min_width"],
    }
    hand = scored["Hand-Crafted"].cases["terminal"]
    return facts | {
        "hand_near_end": 100 * float((hand["root_to_end"] <= 10).mean()),
        "hand_max_length": int(hand["length"].max()),
        "hand_early_error": int((scored["Hand-Crafted"].cases["first_error_signal"]["step"] <= 2).sum()),
    }


# -- the chapter's setup and its published figure


def generator_from_params(params: Mapping) -> GeneratorConfig:
    """The generator the chapter's parameters describe: ``n_trajectories`` and every knob of
    :class:`~rcakit.trajectories.synthetic.GeneratorConfig` the parameters name."""
    knobs = {f.name: params[f.name] for f in dataclasses.fields(GeneratorConfig) if f.name in params}
    return GeneratorConfig(**{**knobs, "n": params["n_trajectories"]})


@dataclass(frozen=True)
class PublishedStrata:
    """LongRCA Tables 7-8 as Wilson-interval rows (``length``, ``distance``), each method's bins
    summed back to a full-benchmark exact accuracy beside Table 4 (``totals``), and the numbers
    recorded."""

    length: pd.DataFrame
    distance: pd.DataFrame
    totals: pd.DataFrame
    numbers: dict


def published_figure6(table4: Mapping, table7: Mapping, table8: Mapping) -> PublishedStrata:
    """Tables 7 and 8 (percent per bin, bin counts) turned back into whole numbers of trajectories
    with their 95% Wilson intervals, and checked against Table 4 (LongRCA §6.3, Appendix C)."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    distance = published_strata(table8["accuracy"], table8["counts"], STRATA["distance"][2])
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
    return PublishedStrata(length, distance, totals, numbers)


def separated_strata(published: PublishedStrata) -> pd.DataFrame:
    """:func:`~rcakit.trajectories.strata.separated_pairs` of the published length and distance
    bins, one table with a ``stratum`` column (LongRCA §6.3)."""
    from rcakit.trajectories.strata import separated_pairs

    return pd.concat(
        [
            separated_pairs(published.length).assign(stratum="length"),
            separated_pairs(published.distance).assign(stratum="distance"),
        ],
        ignore_index=True,
    )


def rcta_length_facts(length: pd.DataFrame) -> dict:
    """RCTA across the published length bins (percent), and its ``>400`` bin: hits, size, interval
    width in points, and whether that interval holds every other bin's estimate."""
    rcta = length.query("method == 'RCTA'").set_index("bin")
    last, acc = rcta.loc[">400"].to_dict(), rcta["acc"].to_dict()
    return {
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


# -- the Who&When section's records and prose numbers


def who_and_when_denominators(subsets: Mapping[str, Sequence[Trajectory]], path: Path | None) -> dict[str, int]:
    """:func:`official_denominators`, complete when ``path`` is the registry's fetched copy of the
    logs (``rcakit data fetch who-and-when``, every file checked against its pinned sha256)."""
    from rcakit import data

    return official_denominators(subsets, complete=path == data.locate("who-and-when", "who_and_when_path"))


def who_and_when_numbers(scored: Mapping[str, ScoredSet], rejected: int) -> dict:
    """What the Who&When section records: every subset's numbers, the rejected logs and the
    Hand-Crafted strata (:func:`strata_numbers`)."""
    details: dict = {"rejected": rejected}
    if "Hand-Crafted" in scored:
        details["hand_crafted_strata"] = strata_numbers(scored["Hand-Crafted"].cases)
    return {"who_and_when": {s: sc.numbers for s, sc in scored.items()}, "who_and_when_details": details}


def printed_facts(printed: Mapping[str, Mapping[str, float]]) -> dict:
    """The published Who&When step accuracies the prose quotes: the printed random rows and GPT-4o's
    step-by-step on Algorithm-Generated (percent)."""
    return {
        "random_printed_hand": printed["Hand-Crafted"]["Random (printed)"],
        "random_printed_algo": printed["Algorithm-Generated"]["Random (printed)"],
        "gpt4o_sbs_algo": printed["Algorithm-Generated"]["Step-by-step (GPT-4o)"],
    }


def synthetic_facts(syn: ScoredSet) -> dict:
    """The tracing locator's lead and role gap on the synthetic benchmark (points)."""
    return {
        "syn_gain": 100 * syn.numbers["handoff_trace_gain"],
        "syn_role_gap": 100 * syn.numbers["handoff_trace_role_gap"],
    }


# -- the public LongRCA Bench release


@dataclass(frozen=True)
class ReleaseRun:
    """LongRCA Bench records under the offline locators (§3, §6).

    ``report``: what was read (or why the section is skipped); ``checks``:
    :func:`~rcakit.trajectories.release.release_checks`; ``scored``: the
    labelled records scored like the synthetic set, strata included (``None``
    when skipped); ``numbers``: what the chapter records.
    """

    report: str
    checks: pd.DataFrame | None = None
    scored: ScoredSet | None = None
    numbers: dict = dataclasses.field(default_factory=dict)

    def compare_llm(
        self, provider: Provider, offline: Sequence[Locator], accounting: Accounting, max_cases: int, **options: Any
    ) -> LLMComparison | None:
        """:func:`compare_llm` on the scored records (set ``"LongRCA Bench"``); ``None`` without a
        provider or without records."""
        if not provider or self.scored is None:
            return None
        return compare_llm(
            provider, {"LongRCA Bench": self.scored.trajectories}, offline, accounting, max_cases, **options
        )


def longrca_release(value: str, locators: Sequence[Locator], paper: Mapping, param: str = "longrca") -> ReleaseRun:
    """Read the records ``value`` names (``none``, a data set name or a path), check them against the
    paper's description ``paper`` and score the offline locators on the labelled ones.

    Each record's source becomes the paper's name for it
    (:func:`~rcakit.trajectories.release.paper_source`), so the MAE is
    weighted by the five sources of Table 6. A rejected record is one line of
    the report; no labelled record at all is an ``RcakitError`` naming ``param``.
    """
    from rcakit import data
    from rcakit.trajectories.loaders import read_longrca
    from rcakit.trajectories.release import differences, paper_source, release_checks, release_folder, release_shape

    if value == "none":
        return ReleaseRun(
            f"LongRCA Bench: not run ({param} = none; 'rcakit data fetch longrca-bench', "
            f"then -p {param} longrca-bench, or -p {param} PATH to a record file or folder)."
        )
    path = data.locate(value, param)
    if path is None:
        return ReleaseRun(data.fetch_hint(value, param))
    loaded = read_longrca(release_folder(path))
    labelled = [dataclasses.replace(t, source=paper_source(t)) for t in loaded.trajectories if t.label]
    if not labelled:
        raise RcakitError(f"parameter {param!r}: {value} holds no labelled LongRCA record")
    checks = release_checks(release_shape(loaded.trajectories), paper)
    differ = differences(checks)
    verdict = (
        f"differs from the paper's description on {len(differ)} of {len(checks)} checks"
        if differ
        else f"matches the paper's description on all {len(checks)} checks"
    )
    unlabelled = len(loaded.trajectories) - len(labelled)
    lines = [loaded.report(path, shown_as=value), f"{value}: {verdict}"]
    lines += [f"{value}: {unlabelled} unlabelled records are checked but not scored"] if unlabelled else []
    scored = score_synthetic(locators, labelled)
    numbers = {
        **scored.numbers,
        "n": len(labelled),
        "rejected": len(loaded.errors),
        "differs": differ,
        "checks": checks.to_dict(orient="index"),
    }
    return ReleaseRun("\n".join(lines), checks, scored, numbers)
