"""Difficulty strata of LongRCA §6.3 with Wilson 95% intervals.

Length bins: <=100, 101-200, 201-400, >400 steps. Root-to-end bins (distance
``(T - 1) - r``): <=10, 11-50, 51-100, >100. Bins are right-closed, so 100
falls in ``<=100`` and 101 in ``101-200``. Intervals come from
:func:`rcakit.stats.wilson_ci`.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.stats import wilson_ci

STRATA = {
    "length": ("length", [-np.inf, 100, 200, 400, np.inf], ["<=100", "101-200", "201-400", ">400"]),
    "distance": ("root_to_end", [-np.inf, 10, 50, 100, np.inf], ["<=10", "11-50", "51-100", ">100"]),
}


def _stratum(by: str) -> tuple[Any, ...]:
    if by not in STRATA:
        raise RcakitError(f"by: {by!r} is not one of {', '.join(STRATA)}")
    return STRATA[by]


def bin_of(values: Sequence[int] | np.ndarray | pd.Series, by: str) -> pd.Categorical:
    """The bin label of each length (``by="length"``) or root-to-end distance (``by="distance"``)."""
    _, edges, labels = _stratum(by)
    return pd.cut(np.asarray(values), bins=edges, labels=labels, right=True)


def stratify(cases: pd.DataFrame, by: str, hit: str = "exact") -> pd.DataFrame:
    """Per bin: ``acc, n, lo, hi`` of the boolean column ``hit`` (every bin listed, empty ones NaN)."""
    column, _, labels = _stratum(by)
    bins = bin_of(cases[column], by)
    rows = {}
    for label in labels:
        hits = cases.loc[np.asarray(bins == label), hit]
        lo, hi = wilson_ci(int(hits.sum()), len(hits))
        rows[label] = {"acc": float(hits.mean()) if len(hits) else float("nan"), "n": len(hits), "lo": lo, "hi": hi}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("bin")


def successes_from_percent(acc_percent: float, n: int) -> int:
    """The hit count behind a published one-decimal percentage of ``n`` cases.

    ``round(acc * n / 100)``; raises ``RcakitError`` when that count does not
    print back as the same one-decimal percentage (a typo in the typed-in table).
    """
    k = int(round(acc_percent * n / 100))
    if round(100 * k / n, 1) != round(acc_percent, 1):
        raise RcakitError(f"published table: {acc_percent}% of {n} is not a whole number of cases")
    return k


def published_strata(
    table: Mapping[str, Sequence[float]], counts: Sequence[int], labels: Sequence[str]
) -> pd.DataFrame:
    """A typed-in per-bin accuracy table (percent) as rows ``method, bin, acc, n, k, lo, hi``."""
    rows = []
    for method, accs in table.items():
        if len(accs) != len(counts):
            raise RcakitError(f"published table: {method} has {len(accs)} bins, expected {len(counts)}")
        for label, acc, n in zip(labels, accs, counts, strict=True):
            k = successes_from_percent(acc, n)
            lo, hi = wilson_ci(k, n)
            rows.append({"method": method, "bin": label, "acc": k / n, "n": n, "k": k, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def published_total(long: pd.DataFrame) -> pd.Series:
    """Per method, the bins' recovered hit counts over all their trajectories (Tables 7-8 back to Table 4).

    ``sum_b k_b / sum_b n_b`` from rows of :func:`published_strata`; for a
    consistent table this is the method's full-benchmark exact accuracy.
    """
    grouped = long.groupby("method", sort=False)
    return grouped["k"].sum() / grouped["n"].sum()


def bins_dict(frame: pd.DataFrame) -> dict[str, Any]:
    """``{bin: {acc, n, lo, hi}}`` for a results file."""
    return {str(b): {k: frame.loc[b, k] for k in ("acc", "n", "lo", "hi")} for b in frame.index}


def nested_bins(long: pd.DataFrame) -> dict[str, Any]:
    """``{method: {bin: {acc, n, lo, hi}}}`` from rows ``method, bin, acc, n, lo, hi``."""
    return {str(m): bins_dict(g.set_index("bin")) for m, g in long.groupby("method", sort=False)}


def separated_pairs(long: pd.DataFrame) -> pd.DataFrame:
    """Per method, every pair of bins whose 95% Wilson intervals do not overlap.

    Disjoint intervals are evidence of a difference between the bins;
    overlapping ones are not evidence of equality (two 95% intervals can
    overlap while the difference is still significant at 5%).
    """
    rows = []
    for method, g in long.groupby("method", sort=False):
        g = g.reset_index(drop=True)
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                a, b = g.loc[i].to_dict(), g.loc[j].to_dict()
                if a["hi"] < b["lo"] or b["hi"] < a["lo"]:
                    rows.append(
                        {
                            "method": method,
                            "bin": a["bin"],
                            "other bin": b["bin"],
                            "acc": a["acc"],
                            "other acc": b["acc"],
                        }
                    )
    return pd.DataFrame(rows, columns=["method", "bin", "other bin", "acc", "other acc"])
