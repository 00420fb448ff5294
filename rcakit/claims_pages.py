"""The claims as HTML for the closing page and the landing page.

:mod:`rcakit.claims` computes the verdicts; this module only lays them out:
the table of every claim grouped by chapter and kind, with each verdict in the
book's one palette (:data:`rcakit.plotting.VERDICT_COLOURS`), and the table of
the parameters each chapter ran with. Nothing is truncated; a value that does
not apply is "—".

Used in the chapters: the closing page (``claims``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit import claims
from rcakit.plotting import VERDICT_COLOURS, tint
from rcakit.tables import DASH, format_value

COLUMNS = ["kind", "claim", "verdict", "paper", "workbench", "rule", "source"]
_BADGE = "padding:0.1em 0.45em;border-radius:0.3em;white-space:nowrap"
_CELL_STYLE = {"claim": "min-width:18em", "verdict": "white-space:nowrap", "workbench": "white-space:nowrap",
               "rule": "white-space:nowrap"}


def chapter_link(chapter_id: str, title: str | None = None) -> str:
    """An HTML link to the chapter's page, labelled with its title."""
    return f'<a href="{claims.chapter_page(chapter_id)}">{html.escape(title or chapter_id)}</a>'


def verdict_badge(verdict: str) -> str:
    """The verdict as a label tinted with its palette colour (inline style, so it needs no stylesheet)."""
    base = VERDICT_COLOURS.get(verdict)
    style = f"background:{tint(base)};color:#1f2937;border-left:0.3em solid {base};" if base else ""
    return f'<span class="verdict-badge" style="{style}{_BADGE}">{html.escape(verdict)}</span>'


def _small(text: str) -> str:
    return f"<br><small>{html.escape(text)}</small>" if text else ""


def _cells(row: pd.Series) -> dict[str, str]:
    """The cells of one claim: the CI under the workbench value, the note under the claim,
    why it is not measured and "asserted" under the verdict."""
    workbench = html.escape(claims.workbench_text(row["workbench"])) + _small(row["CI"])
    verdict = verdict_badge(row["verdict"]) + _small(row.get("why", "")) + (
        "<br><small>asserted</small>" if row.get("asserted", row["holds"]) else "")
    return {
        "claim": f'<a href="{html.escape(row["link"])}">{html.escape(row["claim"])}</a>' + _small(row.get("note", "")),
        "verdict": verdict,
        "paper": html.escape(claims.paper_text(row["paper"])),
        "workbench": workbench,
        "rule": html.escape(row["rule"]) or DASH,
        "source": html.escape(str(row["source"])),
    }


def _td(content: str, style: str | None) -> str:
    return f'<td style="{style}">{content}</td>' if style else f"<td>{content}</td>"


def claims_html(table: pd.DataFrame, titles: Mapping[str, str] | None = None) -> str:
    """Every row of :func:`rcakit.claims.compare_all`'s table as one HTML table, nothing truncated.

    Rows are grouped by chapter (a heading row naming the chapter and its
    mechanism claims by verdict), then by kind (one cell spanning the kind's
    rows); each claim links to the chapter section that computes it.
    """
    titles = titles or {}
    counts = claims.headline_counts(table)
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = []
    for chapter_id, group in table.groupby("chapter", sort=False):
        body.append(
            f'<tr><th colspan="{len(COLUMNS)}" style="text-align:left;padding-top:1em">'
            f"{chapter_link(chapter_id, titles.get(chapter_id))} "
            f'<span style="font-weight:normal">({html.escape(_chapter_note(counts.loc[chapter_id]))})</span></th></tr>'
        )
        for kind in claims.kind_order(group["kind"]):
            rows = group[group["kind"] == kind]
            for i, (_, row) in enumerate(rows.iterrows()):
                cells = _cells(row)
                lead = "" if i else (f'<td rowspan="{len(rows)}" style="vertical-align:top">'
                                     f"<em>{html.escape(kind)}</em></td>")
                body.append("<tr>" + lead + "".join(_td(cells[c], _CELL_STYLE.get(c)) for c in COLUMNS[1:]) + "</tr>")
    return (f'<table class="dataframe claims-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def _chapter_note(counts: pd.Series) -> str:
    """``"mechanism: 2 agree, 1 differs, 4 not measured"``, or that there are none."""
    parts = [f"{counts['agrees']} agree", f"{counts['differs']} differ"]
    parts += [f"{counts[v]} {v}" for v in ("not measured", "other parameters") if counts[v]]
    mechanism = int(counts[list(claims.HEADLINE)].sum())
    return "mechanism claims: " + ", ".join(parts) if mechanism else "no mechanism claims"


def _text(value: Any) -> str:
    return format_value(value, 3) if not isinstance(value, str) else value


def parameter_table(recorded: Mapping[str, Mapping]) -> pd.DataFrame:
    """The parameters each chapter ran with that differ from its defaults, in book order.

    A run at the defaults has no rows; the caller says so. Columns: chapter,
    parameter, value, default.
    """
    from rcakit import chapters

    rows = []
    for chapter_id in claims.in_book_order(recorded):
        defaults = chapters.get(chapter_id).defaults if chapter_id in chapters.PAGES else {}
        for name, value in (recorded[chapter_id].get("params") or {}).items():
            if name in defaults and value == defaults[name]:
                continue
            rows.append({"chapter": chapter_id, "parameter": name, "value": _text(value),
                         "default": _text(defaults[name]) if name in defaults else DASH})
    return pd.DataFrame(rows, columns=["chapter", "parameter", "value", "default"])
