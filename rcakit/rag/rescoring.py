"""The AgenticRAG-FP authors' released runs rescored: Tables 3 and 4 and the §7.3 counts, recomputed.

Everything here reads :class:`~rcakit.rag.authors_runs.AuthorsRun` records
(the authors' per-case files) and recomputes what the paper prints from them:

- Table 3 (§7.2): exact-hop accuracy of each diagnoser per injected depth,
  pooled over the runs, with the authors' bootstrap
  (:func:`rcakit.stats.bootstrap_accuracy_ci`: B = 1000, ``random.Random(42)``
  resampling the pooled hit/miss list). The point estimates do not depend on
  the order in which the runs are pooled; the interval ends do, and the paper
  does not record its order, so :func:`pool` offers the order of its caption
  ({GPT-4o-mini, Claude Haiku 4.5} × {HotpotQA, MuSiQue}) and the files' order,
  and :func:`order_scan` tries all of them;
- Table 4 (§7.3): rcakit's own outcome rule
  (``rcakit.rag.text.classify_outcome``) applied to each injected case's
  final answer, gold answer and replacement span, the shares per depth with
  Wilson intervals (the shares themselves through :mod:`rcakit.rag.outcomes`,
  as for the simulated arm), and the cases where it differs from the label the
  authors stored;
- the §7.3 counts: the strategies of the absorbed cases, and query
  contamination under every reading the stored flags allow.

Used in the chapters: `content-corruption` (through ``rcakit.chapters.content_corruption.RescoredRun``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from rcakit.rag.authors_runs import AuthorsRun
from rcakit.rag.text import OUTCOMES, classify_outcome
from rcakit.stats import bootstrap_accuracy_ci, wilson_ci

CAPTION_ORDER = (  # the order of Table 3's caption: {GPT-4o-mini, Claude Haiku 4.5} x {HotpotQA, MuSiQue}
    ("gpt-4o-mini", "hotpotqa"),
    ("gpt-4o-mini", "musique"),
    ("claude-haiku-4-5", "hotpotqa"),
    ("claude-haiku-4-5", "musique"),
)
POOL_ORDERS = ("caption", "files")
MAX_SCAN_RUNS = 5  # runs whose every pooling order is tried (5! = 120 orders, a few seconds)
Cell = dict[str, float]  # {"point", "lo", "hi"} of one diagnoser at one depth


def pool(runs: Sequence[AuthorsRun], order: str = "caption") -> tuple[AuthorsRun, ...]:
    """The runs in pooling order: ``caption`` (Table 3's caption; runs it does not name follow, in file
    order) or ``files`` (file-name order, as :func:`~rcakit.rag.authors_runs.read_runs` reads them)."""
    if order not in POOL_ORDERS:
        raise ValueError(f"order: expected one of {', '.join(POOL_ORDERS)}, got {order!r}")
    if order == "files":
        return tuple(runs)

    def rank(run: AuthorsRun) -> int:
        key = (run.agent, run.dataset)
        return CAPTION_ORDER.index(key) if key in CAPTION_ORDER else len(CAPTION_ORDER)

    return tuple(sorted(runs, key=rank))


def depths(runs: Iterable[AuthorsRun]) -> list[int]:
    """Every injection depth the runs hold, ascending."""
    return sorted({c.depth for run in runs for c in run.cases})


def diagnosers(runs: Sequence[AuthorsRun]) -> list[str]:
    """The diagnosers every run scored, in the first run's order."""
    shared = set.intersection(*(set(r.diagnosers) for r in runs)) if runs else set()
    return [d for d in runs[0].diagnosers if d in shared] if runs else []


def hits(runs: Sequence[AuthorsRun], diagnoser: str, depth: int) -> list[bool]:
    """The pooled hit/miss list of ``diagnoser`` over the failed cases at ``depth``, run after run."""
    return [c.hit(diagnoser, run.criterion) for run in runs for c in run.failed(depth)]


def accuracy(
    runs: Sequence[AuthorsRun], depth_list: Iterable[int], names: Iterable[str] | None = None
) -> dict[str, dict[str, Cell]]:
    """``{diagnoser: {depth: {point, lo, hi}}}``: pooled exact-hop accuracy with the authors' bootstrap, for
    every diagnoser the runs share (or ``names``); a depth with no failed case is left out."""
    out: dict[str, dict[str, Cell]] = {}
    depth_list = list(depth_list)
    for name in diagnosers(runs) if names is None else names:
        for d in depth_list:
            sample = hits(runs, name, d)
            if sample:
                point, lo, hi = bootstrap_accuracy_ci(sample, n_boot=1000, seed=42)
                out.setdefault(name, {})[str(d)] = {"point": point, "lo": lo, "hi": hi}
    return out


def counts(runs: Sequence[AuthorsRun], depth_list: Iterable[int], *, failed_only: bool) -> dict[str, int]:
    """Cases per depth, pooled: the failed ones (Table 3's n) or every injected one (Table 4's n)."""
    return {
        str(d): sum(c.depth == d and (c.failed or not failed_only) for r in runs for c in r.cases) for d in depth_list
    }


def cases_frame(runs: Sequence[AuthorsRun]) -> pd.DataFrame:
    """One row per injected case: run, depth, whether it failed, strategy, the authors' stored label and
    contamination flag, and ``outcome``, rcakit's own classification of the final answer; the frame
    :mod:`rcakit.rag.outcomes` reads (``outcome_shares``, ``absorption``)."""
    rows = [
        {
            "run": run.label,
            "agent": run.agent,
            "dataset": run.dataset,
            "depth": c.depth,
            "failed": c.failed,
            "strategy": c.strategy,
            "label": c.label,
            "outcome": classify_outcome(c.final_answer, c.gold, c.corrupted_span),
            "contaminated": c.contaminated,
            "later_query": c.iterations > c.depth,
            "skipped": False,  # every released case ran (rcakit.rag.outcomes reads the live cases)
        }
        for run in runs
        for c in run.cases
    ]
    return pd.DataFrame(rows)


def outcome_intervals(frame: pd.DataFrame) -> dict[str, dict[str, list[float]]]:
    """``{depth: {outcome: [lo, hi]}}``: the Wilson interval of each rescored share."""
    out = {}
    for depth, grp in frame.groupby("depth"):
        out[str(depth)] = {o: list(wilson_ci(int((grp["outcome"] == o).sum()), len(grp))) for o in OUTCOMES}
    return out


def label_differences(frame: pd.DataFrame) -> int:
    """Cases whose rcakit outcome differs from the outcome label the authors stored."""
    return int((frame["outcome"] != frame["label"]).sum())


def contamination_readings(frame: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """The stored query-contamination flags under every denominator the files allow: ``(flagged, cases)``
    per reading (all injected cases, per agent, the resisted ones, those with a later query, the failed
    ones)."""
    subsets = {
        "every injected case": frame,
        **{f"the {agent} runs": grp for agent, grp in frame.groupby("agent", sort=False)},
        "the resisted cases": frame[frame["outcome"] == "resisted"],
        "the cases with a later query": frame[frame["later_query"]],
        "the failed cases": frame[frame["failed"]],
    }
    return {name: (int(s["contaminated"].sum()), len(s)) for name, s in subsets.items()}


def printed_cells(table3: Mapping[str, Mapping[str, str]]) -> dict[tuple[str, str], tuple[str, str, str]]:
    """The printed Table 3 cells with an interval, ``{(diagnoser, depth): (point, lo, hi)}`` as printed
    (two-decimal strings), from ``data/claims.yaml``'s typed-in table (``"0.59 [0.43, 0.73]"``)."""
    out = {}
    for name, by_hop in table3.items():
        for hop, text in by_hop.items():
            point, _, rest = str(text).partition(" [")
            if rest:
                lo, _, hi = rest.rstrip("]").partition(", ")
                out[(name, hop.removeprefix("hop "))] = (point, lo, hi)
    return out


def ends_matched(cells: Mapping[str, Mapping[str, Cell]], printed: Mapping[tuple[str, str], tuple[Any, ...]]) -> int:
    """How many printed interval ends (``lo`` and ``hi`` of every printed cell) the recomputed ``cells``
    give to two decimals."""
    matched = 0
    for (name, depth), (_, lo, hi) in printed.items():
        cell = cells.get(name, {}).get(depth)
        if cell is not None:
            matched += (f"{cell['lo']:.2f}" == lo) + (f"{cell['hi']:.2f}" == hi)
    return matched


def order_scan(runs: Sequence[AuthorsRun], printed: Mapping[tuple[str, str], tuple[Any, ...]]) -> pd.DataFrame:
    """For every order of pooling the runs: how many printed interval ends it reproduces; one row per order
    (the runs' labels joined by ' → '), most reproduced first, ties in permutation order. Beyond
    :data:`MAX_SCAN_RUNS` runs only the caption's and the given order are tried (the orders grow as n!)."""
    wanted = sorted({int(d) for _, d in printed})
    names = sorted({name for name, _ in printed})
    orders = itertools.permutations(runs) if len(runs) <= MAX_SCAN_RUNS else (pool(runs), tuple(runs))
    rows = []
    for perm in orders:
        cells = accuracy(perm, wanted, names)
        rows.append({"order": " → ".join(r.label for r in perm), "ends reproduced": ends_matched(cells, printed)})
    frame = pd.DataFrame(rows)
    return frame.sort_values("ends reproduced", ascending=False, kind="stable").reset_index(drop=True)


__all__ = [
    "CAPTION_ORDER",
    "MAX_SCAN_RUNS",
    "POOL_ORDERS",
    "accuracy",
    "cases_frame",
    "contamination_readings",
    "counts",
    "depths",
    "diagnosers",
    "ends_matched",
    "hits",
    "label_differences",
    "order_scan",
    "outcome_intervals",
    "pool",
    "printed_cells",
]
