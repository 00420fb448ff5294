"""The longrca-strata chapter's experiments: its setup, the published Figure 6, the Who&When
numbers and facts its prose quotes, and the public LongRCA Bench release run.

Built on :mod:`rcakit.trajectories.evaluation` (scoring) and
:mod:`rcakit.trajectories.release` (the release's checks against the paper).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Accounting, Provider
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import (
    STRATA,
    nested_bins,
    published_strata,
    published_total,
)
from rcakit.trajectories.synthetic import GeneratorConfig

if TYPE_CHECKING:
    pass


from rcakit.trajectories.evaluation import ScoredSet, bin_spread, official_denominators, score_synthetic, strata_numbers
from rcakit.trajectories.llm_evaluation import LLMComparison, compare_llm

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
