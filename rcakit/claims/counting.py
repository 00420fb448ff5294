"""Counting verdicts: the one place every count of claims the book prints comes from.

A chapter's verdict box, the closing page's headline and per-chapter notes and
the landing page's findings and figure all call :func:`tally` on
:func:`rcakit.claims.compare`'s table, so no two pages can count differently.

Each claim is counted where :func:`rcakit.claims.counts_as` puts it:

- a **reproduction** is a mechanism claim whose rule tests a number its paper
  printed; only these are counted as agreeing or differing with a paper, and
  an interval too wide to tell is counted as ``too few cases``;
- rcakit's **own claims** (a mechanism claim with no printed number to test, or
  any claim of a page with no paper behind it) hold or fail;
- **identities** are checks of the code, and hold or fail;
- **published** numbers recomputed from the paper's own data come out as
  printed or not;
- **calibrated** and **context** (not comparable) claims are counted only.

A claim that was not measured or ran at other parameters is counted apart,
never as disagreeing.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

TALLY = (
    "reproductions",
    "agrees",
    "differs",
    "too few cases",
    "not measured",
    "needs input",
    "not recorded",
    "other parameters",
    "own claims",
    "own claims hold",
    "own claims fail",
    "identities",
    "identities hold",
    "identities fail",
    "published",
    "published agree",
    "published differ",
    "calibrated",
    "context",
)


def counted_as(group: pd.DataFrame) -> pd.Series:
    """Each row's ``counts_as``; a table made without it (by hand) counts a mechanism claim with a paper value
    as a reproduction."""
    if "counts_as" in group.columns:
        return group["counts_as"]
    paper = group["paper"].notna() & group.get("has_paper", pd.Series(True, index=group.index)).astype(bool)
    named = group["kind"].map({"not comparable": "context"}).fillna(group["kind"])
    return named.where(group["kind"] != "mechanism", paper.map({True: "reproduction", False: "own claim"}))


def _one(group: pd.DataFrame) -> dict[str, int]:
    """The counts of one group of rows."""
    where, verdict = counted_as(group), group["verdict"]
    mine = where == "reproduction"
    unmeasured = mine & (verdict == "not measured")
    needs_input = unmeasured & group["why"].astype(str).str.startswith("needs")
    own, identity, published = where == "own claim", where == "identity", where == "published"

    def n(mask: pd.Series) -> int:
        return int(mask.sum())

    return {
        "reproductions": n(mine),
        "agrees": n(mine & (verdict == "agrees")),
        "differs": n(mine & (verdict == "differs")),
        "too few cases": n(mine & (verdict == "too few cases")),
        "not measured": n(unmeasured),
        "needs input": n(needs_input),
        "not recorded": n(unmeasured & ~needs_input),
        "other parameters": n(mine & (verdict == "other parameters")),
        "own claims": n(own),
        "own claims hold": n(own & (verdict == "holds")),
        "own claims fail": n(own & (verdict == "fails")),
        "identities": n(identity),
        "identities hold": n(identity & (verdict == "holds")),
        "identities fail": n(identity & (verdict == "fails")),
        "published": n(published),
        "published agree": n(published & (verdict == "agrees")),
        "published differ": n(published & (verdict == "differs")),
        "calibrated": n(where == "calibrated"),
        "context": n(where == "context"),
    }


def tally(table: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """The claims of a :func:`rcakit.claims.compare` (or ``compare_all``) table counted by :data:`TALLY`.

    One row per value of ``by`` (in order of first appearance), or one row,
    ``all``, without it. ``agrees``, ``differs``, ``too few cases``, ``not
    measured`` (split into ``needs input`` and ``not recorded``) and ``other
    parameters`` count reproductions only.
    """
    groups = [("all", table)] if by is None else list(table.groupby(by, sort=False))
    rows = {str(key): _one(group) for key, group in groups}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(TALLY)).astype(int)
    frame.index.name = by
    return frame


def totals(table: pd.DataFrame) -> dict[str, int]:
    """:func:`tally` of the whole table as a dict, the numbers a sentence quotes."""
    return {str(k): int(v) for k, v in tally(table).iloc[0].items()}


UNCOUNTED = (  # why a reproduction is counted neither way, as a phrase after its count
    ("too few cases", "with too few cases to tell"),
    ("needs input", "waiting for a data set or a language model the run did not have"),
    ("not recorded", "not recorded in this run"),
    ("other parameters", "away from the paper's setting"),
)


def uncounted(n: Mapping[str, int]) -> list[str]:
    """The reproductions of :func:`totals` counted neither as agreeing nor as differing, one phrase per
    reason that has any (``"2 with too few cases to tell"``); the verdict box and the landing page both
    say them so."""
    return [f"{n[key]} {why}" for key, why in UNCOUNTED if n[key]]
