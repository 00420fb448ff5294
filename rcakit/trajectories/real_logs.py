"""The Who&When failure logs under the offline locators: the longrca-strata chapter's real-log sections.

The logs of both subsets (Hand-Crafted, Algorithm-Generated) are read with
:func:`~rcakit.trajectories.read_who_and_when`, scored
under the strict and the official scorer (Zhang et al. 2025 §4), set beside
the published GPT-4o step accuracies, and the Hand-Crafted logs stratified as
in LongRCA §6.3. Every part comes back as a :class:`~rcakit.sections.Section`;
a folder without one subset gives that subset's sentences as Markdown that
says so, and the Hand-Crafted parts as skipped sections, so the page never
quotes a number that was not computed.

Used in the chapters: `longrca-strata` (through :mod:`rcakit.trajectories.experiments`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import Markdown

from rcakit.sections import Section
from rcakit.trajectories.evaluation import (
    ScoredSet,
    beside_published,
    bin_spread,
    first_error_words,
    official_denominators,
    score_subsets,
    strata_numbers,
    strata_table,
)
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA
from rcakit.trajectories.who_and_when_format import WHO_AND_WHEN_SUBSETS, read_who_and_when

SHORT = {"Hand-Crafted": "hand", "Algorithm-Generated": "algo"}  # the subsets' names in the glued facts
HAND, ALGO = WHO_AND_WHEN_SUBSETS


@dataclass(frozen=True)
class WhoAndWhen:
    """The Who&When section: what was read (``report``), the subsets (``sets``), and its parts.

    ``scores``: per subset the offline locators' table, the recorded numbers
    (``who_and_when``, ``who_and_when_details``) and the facts the prose
    quotes; ``beside``: the published step accuracies beside ours;
    ``error_words`` and ``strata``: the Hand-Crafted first error words and
    strata. Without the logs every part is skipped with the same reason.
    """

    report: str
    sets: Mapping[str, list[Trajectory]]
    scores: Section
    beside: Section
    error_words: Section
    strata: Section


def who_and_when(
    value: str,
    locators: Sequence[Locator],
    printed: Mapping[str, Mapping[str, float]],
    param: str = "who_and_when_path",
) -> WhoAndWhen:
    """Read the logs ``value`` names (a data set name or a path), score ``locators`` on each subset and
    build the section's parts; ``printed`` is the published step-accuracy table (percent).

    A data set that is not fetched gives a :class:`WhoAndWhen` whose parts are
    skipped with the fetch hint; a path that does not exist is an
    ``RcakitError`` naming ``param`` (:func:`rcakit.data.locate`).
    """
    from rcakit import data

    path = data.locate(value, param)
    if path is None:
        hint = data.fetch_hint(value, param)
        return WhoAndWhen(hint, {}, *(Section.skip(hint) for _ in range(4)))
    loaded = read_who_and_when(path)
    sets = {s: ts for s, ts in loaded.by_source(WHO_AND_WHEN_SUBSETS).items() if ts}
    scored = score_subsets(locators, sets, official_denominators(sets, complete=_complete_copy(path)))
    sizes = ", ".join(f"{s}: {len(ts)}" for s, ts in sets.items()) or "no logs"
    report = f"{loaded.report(path, shown_as=value)}\nscored: {sizes}"
    hand = scored.get(HAND)
    no_hand = Section.skip(f"this folder holds no {HAND} logs")
    return WhoAndWhen(
        report,
        sets,
        scores_section(scored, printed, rejected=len(loaded.errors)),
        Section(table=beside_published(printed, scored), decimals=2),
        Section(table=first_error_words(hand.trajectories, hand.cases["first_error_signal"]).to_frame("logs"))
        if hand
        else no_hand,
        Section(table=pd.concat({by: strata_table(hand.cases, by) for by in STRATA}, axis=1)) if hand else no_hand,
    )


def scores_section(
    scored: Mapping[str, ScoredSet], printed: Mapping[str, Mapping[str, float]], rejected: int
) -> Section:
    """The offline locators on every subset read: the table, what the chapter records (every subset's
    numbers, the rejected logs, the Hand-Crafted strata) and the facts and sentences the prose quotes."""
    details: dict[str, Any] = {"rejected": rejected}
    if HAND in scored:
        details["hand_crafted_strata"] = strata_numbers(scored[HAND].cases)
    numbers = {"who_and_when": {s: sc.numbers for s, sc in scored.items()}, "who_and_when_details": details}
    facts = who_and_when_facts(scored)
    empty = pd.DataFrame(index=pd.Index([], name="locator"))  # no log passed validation: the report says why
    table = pd.concat({s: sc.table for s, sc in scored.items()}) if scored else empty
    return Section(table=table, numbers=numbers, facts=facts | sentences(scored, facts, printed))


def who_and_when_facts(scored: Mapping[str, ScoredSet]) -> dict[str, Any]:
    """The numbers the chapter's prose quotes about the Who&When logs, for the subsets that were read:
    set sizes and official denominators, the analytic random baseline and the tracing lead (percent),
    how many Hand-Crafted roots lie within 10 steps of the end (percent) and the longest log, how
    many first error words sit at step 2 or earlier, the Hand-Crafted bins' fewest and most logs and
    narrowest interval (:func:`~rcakit.trajectories.evaluation.bin_spread`), how many
    Algorithm-Generated roots are at 0 and 1."""
    facts: dict[str, Any] = {}
    for subset, key in SHORT.items():
        if subset not in scored:
            continue
        numbers = scored[subset].numbers
        facts[f"who_n_{key}"] = len(scored[subset].trajectories)
        facts[f"who_official_{key}"] = numbers["random"]["n_official"]
        facts[f"random_analytic_{key}"] = 100 * numbers["random"]["expected_exact"]
        facts[f"gain_{key}"] = 100 * numbers["handoff_trace_gain"]
    if ALGO in scored:
        algo_roots = pd.Series([t.label.step for t in scored[ALGO].trajectories])
        facts |= {"algo_root0": int((algo_roots == 0).sum()), "algo_root1": int((algo_roots == 1).sum())}
    if HAND not in scored:
        return facts
    spread = bin_spread(strata_numbers(scored[HAND].cases))
    hand = scored[HAND].cases["terminal"]
    return facts | {
        "hand_bin_min": spread["bin_min"],
        "hand_bin_max": spread["bin_max"],
        "hand_min_width": 100 * spread["min_width"],
        "hand_near_end": 100 * float((hand["root_to_end"] <= 10).mean()),
        "hand_max_length": int(hand["length"].max()),
        "hand_early_error": int((scored[HAND].cases["first_error_signal"]["step"] <= 2).sum()),
    }


def sentences(
    scored: Mapping[str, ScoredSet], facts: Mapping[str, Any], printed: Mapping[str, Mapping[str, float]]
) -> dict[str, Markdown]:
    """The prose's sentences that quote a subset, as Markdown: for a subset the folder lacks, a
    sentence saying so instead of a number that was not computed."""

    def absent(subset: str) -> str:
        return f"this folder holds no {subset} logs"

    def per_subset(write: Callable[[str, str], str], sep: str = "; ", missing: Callable[[str], str] = absent) -> str:
        return sep.join(write(s, SHORT[s]) if s in scored else missing(s) for s in WHO_AND_WHEN_SUBSETS)

    def one(subset: str, write: Callable[[], str]) -> str:
        return write() if subset in scored else _sentence(absent(subset))

    def random_baseline(s: str, k: str) -> str:
        analytic, shown = facts[f"random_analytic_{k}"], printed[s]["Random (printed)"]
        n = facts[f"who_n_{k}"]
        gap = f"{round(analytic - shown, 2) + 0.0:+.2f} points from the printed {shown:.2f}%"  # never -0.00
        return f"for {s} the mean of 1/T over its {n} logs is {analytic:.2f}%, {gap}"

    text = {
        "who_sizes_md": _sentence(
            per_subset(
                lambda s, k: (
                    f"{s} is scored on {facts[f'who_n_{k}']} logs and its official columns divide by "
                    f"{facts[f'who_official_{k}']}"
                )
            )
        ),
        "random_md": _sentence(per_subset(random_baseline)),
        "gain_md": per_subset(
            lambda s, k: f"{facts[f'gain_{k}']:.1f} points on {s}", sep=", ", missing=lambda s: f"not measured on {s}"
        ),
        "hand_terminal_md": one(HAND, lambda: _terminal_sentence(scored[HAND], facts, printed[HAND])),
        "algo_best_md": one(
            ALGO,
            lambda: (
                f"On the short {ALGO} logs the best offline locator scores "
                f"{100 * scored[ALGO].table['exact'].max():.1f}% strict, against GPT-4o's step-by-step "
                f"{printed[ALGO]['Step-by-step (GPT-4o)']:.1f}%."
            ),
        ),
        "hand_early_md": one(
            HAND,
            lambda: (
                f"In {facts['hand_early_error']} of the {facts['who_n_hand']} {HAND} logs the first error word "
                "sits at step 2 or earlier, and there `first_error_signal` and `handoff_trace` look first."
            ),
        ),
        "hand_longest_md": one(
            HAND,
            lambda: (
                f"The longest {HAND} log has {facts['hand_max_length']} steps, so every length bin above that is empty."
            ),
        ),
        "hand_bins_md": one(
            HAND,
            lambda: (
                f"With {facts['hand_bin_min']} to {facts['hand_bin_max']} logs per non-empty bin, every "
                f"Wilson interval spans {facts['hand_min_width']:.0f} points or more (the intervals are in the "
                "results file)."
            ),
        ),
        "algo_roots_md": one(
            ALGO,
            lambda: (
                f"On the short {ALGO} logs a fixed early answer scores by position alone: "
                f"{facts['algo_root0']} of the {facts['who_n_algo']} roots are at step 0 and "
                f"{facts['algo_root1']} at step 1."
            ),
        ),
    }
    return {name: Markdown(value) for name, value in text.items()}


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop."""
    return text[:1].upper() + text[1:] + "."


def _terminal_sentence(hand: ScoredSet, facts: Mapping[str, Any], printed: Mapping[str, float]) -> str:
    """How blaming the last step fares on Hand-Crafted against the best published GPT-4o method."""
    best = max(v for k, v in printed.items() if "GPT-4o" in k)
    strict, official = (100 * hand.numbers["terminal"][k] for k in ("exact", "exact_official"))
    if min(strict, official) > best:
        verdict = "beats every published GPT-4o method under either scorer"
    elif max(strict, official) <= best:
        verdict = "beats no published GPT-4o method under either scorer"
    else:
        verdict = "beats the best published GPT-4o method under one scorer only"
    return (
        f"On {HAND}, blaming the last step (`terminal`, {strict:.1f}% strict, {official:.1f}% official) {verdict} "
        f"(best {best:.2f}%), and {facts['hand_near_end']:.0f}% of the roots lie within 10 steps of the end."
    )


def _complete_copy(path: Path) -> bool:
    """Whether ``path`` is the registry's fetched copy of the logs (``rcakit data fetch who-and-when``,
    every file checked against its pinned sha256): then the official denominators are the published sizes."""
    from rcakit import data

    return path == data.locate("who-and-when", "who_and_when_path")
