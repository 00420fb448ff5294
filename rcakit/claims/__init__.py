"""The papers' published numbers, and how the workbench's numbers compare.

``data/claims.yaml`` holds, per chapter id, the paper it reproduces and a list
of claims; each claim names its source in the paper, the paper's value, the
key under which the chapter records its own number, a rule and a kind. A
chapter compares its numbers with ``comparison = claims.compare(...)``, shows
the verdict box with ``claims.glue_verdict(comparison)`` and asserts the exact
claims with ``claims.assert_holds(comparison)``; the closing page and the
landing page read every chapter at once through :func:`compare_all`.

Modules, each one concept:

- :mod:`~rcakit.claims.ledger`: the claims file, read and checked;
  :func:`published` blocks and the paper's names and values;
- :mod:`~rcakit.claims.needs`: the optional inputs (data sets, a model) a
  claim's chapter section needs, and why a claim is not measured;
- :mod:`~rcakit.claims.verdicts`: the verdict rules, :func:`compare` and
  :func:`assert_holds`;
- :mod:`~rcakit.claims.counting`: every count of claims the book prints, in one
  function (:func:`tally`);
- :mod:`~rcakit.claims.verdict_box`: what a chapter shows, the verdict box and
  the claims table beside the paper;
- :mod:`~rcakit.claims.summary`: the book-wide table in book order, links to
  the chapter sections, and the headline counts (mechanism claims only);
- :mod:`~rcakit.claims.pages`: the HTML tables and the findings of the
  closing page and the landing page.

Every name below is imported from ``rcakit.claims``.
"""

from __future__ import annotations

from rcakit.claims.counting import TALLY, tally, totals
from rcakit.claims.ledger import (
    KINDS,
    UNCLASSIFIED,
    chapter_claims,
    chapters_with_claims,
    claims_path,
    first_screen,
    paper_name,
    paper_value,
    published,
)
from rcakit.claims.needs import input_parameters, section_inputs
from rcakit.claims.pages import (
    ClaimsTable,
    chapter_link,
    comparison,
    findings_markdown,
    glue_findings,
    verdict_badge,
)
from rcakit.claims.summary import (
    HEADLINE,
    chapter_page,
    compare_all,
    headline_counts,
    headline_numbers,
    in_book_order,
    kind_order,
    mechanism_summary,
    section_anchor,
    section_link,
    verdict_counts,
)
from rcakit.claims.verdict_box import (
    SHOWN_COLUMNS,
    glue_verdict,
    lecture_verdict_markdown,
    math_html,
    short_verdict_markdown,
    table,
    verdict_markdown,
)
from rcakit.claims.verdicts import (
    COUNTS_AS,
    EXACT_TOLERANCE,
    FAILED,
    PASSED,
    VERDICTS,
    WIDE_INTERVAL,
    assert_holds,
    compare,
    counts_as,
    is_exact,
    paper_text,
    tests_paper,
    workbench_text,
)

__all__ = [
    "COUNTS_AS",
    "EXACT_TOLERANCE",
    "FAILED",
    "PASSED",
    "TALLY",
    "WIDE_INTERVAL",
    "counts_as",
    "tests_paper",
    "tally",
    "totals",
    "math_html",
    "lecture_verdict_markdown",
    "short_verdict_markdown",
    "HEADLINE",
    "KINDS",
    "SHOWN_COLUMNS",
    "UNCLASSIFIED",
    "VERDICTS",
    "claims_path",
    "chapter_claims",
    "chapters_with_claims",
    "first_screen",
    "published",
    "paper_value",
    "paper_name",
    "input_parameters",
    "section_inputs",
    "compare",
    "assert_holds",
    "is_exact",
    "paper_text",
    "workbench_text",
    "verdict_markdown",
    "glue_verdict",
    "table",
    "compare_all",
    "section_anchor",
    "chapter_page",
    "section_link",
    "in_book_order",
    "kind_order",
    "headline_counts",
    "headline_numbers",
    "mechanism_summary",
    "verdict_counts",
    "ClaimsTable",
    "comparison",
    "chapter_link",
    "verdict_badge",
    "findings_markdown",
    "glue_findings",
]
