"""The claims laid out for pages: a chapter's claims table, the landing page's findings.

:mod:`~rcakit.claims.verdicts` gives the verdicts and :mod:`~rcakit.claims.summary`
counts them; this module only lays them out: the table of every claim
grouped by kind, with each verdict in the book's one palette
(``rcakit.plotting.VERDICT_COLOURS``), the table of the parameters each
chapter ran with, and the landing page's findings in a few sentences. Nothing
is truncated; a value that does not apply is "—".

Used in the chapters: every chapter's comparison section (:func:`comparison`),
the landing page (``intro``: :func:`glue_findings`) and the closing page
(:mod:`rcakit.chapters.claims` builds its whole-book table from
:func:`kind_rows` and :func:`claims_table`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import pandas as pd

from rcakit.claims.counting import UNCOUNTED, uncounted
from rcakit.claims.summary import (
    chapter_page,
    headline_counts,
    headline_numbers,
    kind_order,
    section_anchor,
)
from rcakit.claims.verdict_box import math_html
from rcakit.claims.verdicts import paper_text, workbench_text

# The kind heads its rows (a row spanning the table) and the source sits under the paper value, so five
# columns fit the text column.
COLUMNS = ["claim", "verdict", "paper", "workbench"]  # the rule sits under the workbench value
_BADGE = "padding:0.1em 0.45em;border-radius:0.3em;white-space:nowrap"
_CELL_STYLE = {"claim": "min-width:12em", "verdict": "min-width:6em"}


def chapter_link(chapter_id: str, title: str | None = None) -> str:
    """An HTML link to the chapter's page, labelled with its title."""
    return f'<a href="{chapter_page(chapter_id)}">{html.escape(title or chapter_id)}</a>'


def verdict_badge(verdict: str) -> str:
    """The verdict as a label tinted with its palette colour (inline style, so it needs no stylesheet)."""
    from rcakit.plotting import VERDICT_COLOURS, tint  # the figures' palette; matplotlib only when a page is drawn

    base = VERDICT_COLOURS.get(verdict)
    style = f"background:{tint(base)};color:#1f2937;border-left:0.3em solid {base};" if base else ""
    return f'<span class="verdict-badge" style="{style}{_BADGE}">{html.escape(verdict)}</span>'


def _small(text: str) -> str:
    return f"<br><small>{math_html(text)}</small>" if text else ""


def _cells(row: pd.Series) -> dict[str, str]:
    """The cells of one claim: the CI and the rule under the workbench value, the note under the claim,
    why it is not measured and "asserted" under the verdict."""
    rule = row["rule"] if isinstance(row["rule"], str) else ""
    workbench = html.escape(workbench_text(row["workbench"])) + _small(row["CI"]) + _small(rule and f"rule: {rule}")
    verdict = (
        verdict_badge(row["verdict"])
        + _small(row.get("why", ""))
        + ("<br><small>asserted</small>" if row.get("asserted", row["holds"]) else "")
    )
    return {
        "claim": f'<a href="{html.escape(row["link"])}">{math_html(row["claim"])}</a>' + _small(row.get("note", "")),
        "verdict": verdict,
        "paper": html.escape(paper_text(row["paper"])) + _small(str(row["source"])),
        "workbench": workbench,
    }


def _td(content: str, style: str | None) -> str:
    return f'<td style="{style}">{content}</td>' if style else f"<td>{content}</td>"


def claims_table(body: list[str]) -> str:
    """The claims table's HTML around ``body``, its rows (:func:`kind_rows`, heading rows)."""
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    classes = "dataframe claims-table mathjax_process"  # MathJax typesets the claims' \\(…\\) in these cells
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def kind_rows(group: pd.DataFrame) -> list[str]:
    """The rows of one chapter's claims, grouped by kind (a heading row each), mechanism first."""
    body = []
    for kind in kind_order(group["kind"]):
        body.append(f'<tr class="claims-kind"><td colspan="{len(COLUMNS)}"><em>{html.escape(kind)}</em></td></tr>')
        for _, row in group[group["kind"] == kind].iterrows():
            cells = _cells(row)
            body.append("<tr>" + "".join(_td(cells[c], _CELL_STYLE.get(c)) for c in COLUMNS) + "</tr>")
    return body


class ClaimsTable:
    """A chapter's claims as a notebook shows them: an HTML table in the book, claims and verdicts as text.

    (Not to be confused with :class:`rcakit.attribution.MethodComparison`, which compares
    attribution methods.)
    """

    def __init__(self, table: pd.DataFrame) -> None:
        linked = table.copy()
        linked["link"] = ["#" + section_anchor(s) if s else "" for s in linked["section"]]
        self.table = linked

    def _repr_html_(self) -> str:
        return claims_table(kind_rows(self.table))

    def __repr__(self) -> str:
        return "\n".join(f"{r.verdict}: {r.claim}" for r in self.table.itertuples())


def comparison(table: pd.DataFrame) -> ClaimsTable:
    """A chapter's :func:`rcakit.claims.compare` table for its comparison section.

    The same layout as the closing page: grouped by kind, mechanism first; the
    verdict in the book's palette with why a claim is not measured under it; the
    note under the claim; the interval under the workbench's value; each claim
    linked to its section on the page; "—" for a value that does not apply.
    """
    return ClaimsTable(table)


# --- the landing page's findings ---------------------------------------------------


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def findings_markdown(table: pd.DataFrame) -> str:
    """The book's findings in a few sentences, as a MyST admonition, from :func:`rcakit.claims.compare_all`.

    Reproductions only (claims that test a number a paper printed) in the
    agreement counts; unmeasured, too-wide and off-setting claims are named
    apart and never counted as disagreeing; rcakit's own claims and the
    identity checks come last. Every number is :func:`rcakit.claims.tally`'s.
    """
    n = headline_numbers(table)
    by_paper = headline_counts(table, by="paper_name")
    checked = by_paper["agrees"] + by_paper["differs"]
    sentences = [
        f"This book checks {_count(n['reproductions'], 'reproduction')}, the claims that test a number a paper "
        f"printed and could have come out the other way: in this build, {n['agrees']} of the "
        f"{n['agrees'] + n['differs']} that were checked agree with the paper and {n['differs']} "
        f"{'does' if n['differs'] == 1 else 'do'} not."
    ]
    per_paper = [f"{p} {by_paper.loc[p, 'agrees']} of {checked[p]}" for p in by_paper.index if checked[p]]
    if per_paper:
        sentences.append(f"Agreeing, by source: {_join(per_paper)}.")
    if n["differs"]:
        differs = by_paper["differs"].to_dict()
        where = [f"{p} ({d})" for p, d in differs.items() if d]
        sentences.append(
            f"The claims that do not reproduce are in {_join(where)}; the verdict box at the top "
            "of each chapter says why."
        )
    sentences += [s for s in [_unchecked_sentence(n)] if s]
    own, own_hold = n["own_claims_hold"] + n["own_claims_fail"], n["own_claims_hold"]
    if own:
        sentences.append(
            f"rcakit's own claims, with no printed number to test: {own_hold} of {own} "
            f"{'holds' if own == 1 else 'hold'}."
        )
    hold, total = n["identities_hold"], n["identities_hold"] + n["identities_fail"]
    sentences.append(
        f"Apart from these, {hold} of {_count(total, 'identity check')} "
        f"{'holds' if total == 1 else 'hold'}: they test that the code computes what it "
        "claims, not that a paper reproduces."
    )
    return "\n".join([":::{admonition} What this book finds", ":class: verdict tip", "", " ".join(sentences), ":::"])


def _unchecked_sentence(n: Mapping[str, int]) -> str | None:
    """The reproductions not checked in this build, and why, in one sentence (None if there are none)."""
    parts = uncounted({key: n[key.replace(" ", "_")] for key, _ in UNCOUNTED})
    return f"Not checked here, and counted neither way: {_join(parts)}." if parts else None


def glue_findings(table: pd.DataFrame, name: str = "findings") -> None:
    """Glue :func:`findings_markdown` as Markdown for the landing page's first screen, displaying nothing."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(findings_markdown(table)), display=False)
