"""The closing page (``notebooks/claims.md``): every claim of the book, and the parameters each chapter ran with.

The verdicts come from :func:`rcakit.claims.compare_all`; this module lays out
the two tables only this page shows: every claim grouped by chapter and kind
(:func:`every_claim_table`, the same rows a chapter's comparison shows, under a
heading row per chapter), and the parameters that differ from each chapter's
defaults (:func:`changed_parameters_table`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit.book import registry
from rcakit.claims.counting import tally
from rcakit.claims.pages import COLUMNS, chapter_link, claims_table, kind_rows
from rcakit.claims.summary import in_book_order
from rcakit.tables import DASH, format_value


def every_claim_table(table: pd.DataFrame, titles: Mapping[str, str] | None = None) -> str:
    """Every row of :func:`rcakit.claims.compare_all`'s table as one HTML table, nothing truncated.

    Rows are grouped by chapter (a heading row naming the chapter and its
    mechanism claims by verdict), then by kind (one cell spanning the kind's
    rows); each claim links to the chapter section that computes it.
    """
    titles = titles or {}
    counts = tally(table, "chapter")
    body = []
    for key, group in table.groupby("chapter", sort=False):
        chapter_id = str(key)
        note = (
            _chapter_note({str(k): int(v) for k, v in counts.loc[chapter_id].to_dict().items()})
            if "has_paper" not in group.columns or group["has_paper"].any()
            else "no paper behind it: its findings are the workbench's own, not reproductions"
        )
        body.append(
            f'<tr><th colspan="{len(COLUMNS)}" style="text-align:left;padding-top:1em">'
            f"{chapter_link(chapter_id, titles.get(chapter_id))} "
            f'<span style="font-weight:normal">({html.escape(note)})</span></th></tr>'
        )
        body += kind_rows(group)
    return claims_table(body)


def changed_parameters_table(recorded: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The parameters each chapter ran with that differ from its defaults, in book order.

    A run at the defaults has no rows; the caller says so. Columns: chapter,
    parameter, value, default.
    """
    rows = []
    for chapter_id in in_book_order(recorded):
        defaults = registry.get(chapter_id).defaults if chapter_id in registry.PAGES else {}
        for name, value in (recorded[chapter_id].get("params") or {}).items():
            if name in defaults and value == defaults[name]:
                continue
            rows.append(
                {
                    "chapter": chapter_id,
                    "parameter": name,
                    "value": _text(value),
                    "default": _text(defaults[name]) if name in defaults else DASH,
                }
            )
    return pd.DataFrame(rows, columns=["chapter", "parameter", "value", "default"])


def _chapter_note(counts: Mapping[str, int]) -> str:
    """``"reproductions: 2 agree, 1 differ, 4 not measured; own claims: 2 of 2 hold"``, from :func:`tally`."""
    parts = [f"{counts['agrees']} agree", f"{counts['differs']} differ"]
    parts += [f"{counts[v]} {v}" for v in ("too few cases", "not measured", "other parameters") if counts[v]]
    text = "reproductions: " + ", ".join(parts) if counts["reproductions"] else "no reproductions"
    own = counts["own claims hold"] + counts["own claims fail"]
    if own:
        text += f"; own claims: {counts['own claims hold']} of {own} hold"
    return text


def _text(value: Any) -> str:
    return format_value(value, 3) if not isinstance(value, str) else value
