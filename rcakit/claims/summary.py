"""The book-wide summary: every chapter's claims in book order, linked to their sections, and the headline counts.

Only reproductions (mechanism claims whose rule tests a number their paper
printed) are counted in a headline as agreeing or differing; rcakit's own
claims, identity checks and the other kinds are counted apart, all by
:func:`rcakit.claims.tally`. Claims that were not measured or ran away
from the paper's setting are named and never counted as disagreeing. The closing page (``claims``) and the landing
page (``intro``) read these tables; :mod:`rcakit.claims.pages` lays them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

import pandas as pd

from rcakit import RcakitError
from rcakit.claims.counting import tally, totals
from rcakit.claims.ledger import UNCLASSIFIED, chapters_with_claims, paper_name
from rcakit.claims.verdicts import VERDICTS, compare
from rcakit.tables import DASH

HEADLINE = ("agrees", "differs", "too few cases", "not measured", "other parameters")  # a reproduction's verdicts

# --- links to the chapter sections -------------------------------------------


def section_anchor(heading: str) -> str:
    """The HTML id Sphinx gives a section with this heading text (docutils ``make_id``)."""
    try:
        from docutils import nodes
    except ImportError:  # docutils comes with the book extra
        raise RcakitError("section links need docutils: pip install 'rcakit[book]'") from None
    return nodes.make_id(heading)


def chapter_page(chapter_id: str) -> str:
    """The chapter's HTML file name, as the book builds it beside the closing page."""
    return chapter_id.replace("-", "_") + ".html"


def section_link(chapter_id: str, section: str | None) -> str:
    """``<chapter>.html#<anchor>`` of a claim's section, ``<chapter>_audit.html#<anchor>`` when the section is
    on the chapter's audit page (:func:`rcakit.pages.audit_sections`); the chapter page if it has none."""
    from rcakit.pages import AUDIT_SUFFIX, audit_sections

    page = chapter_page(chapter_id)
    if not section:
        return page
    if section in audit_sections(page.removesuffix(".html")):
        page = page.replace(".html", f"{AUDIT_SUFFIX}.html")
    return f"{page}#{section_anchor(section)}"


def in_book_order(chapter_ids: Iterable[str]) -> list[str]:
    """``chapter_ids`` sorted as the book orders them (``chapters.ORDER``); unknown ids last, as given."""
    from rcakit.book.registry import ORDER

    rank = {cid: i for i, cid in enumerate(ORDER)}
    return sorted(chapter_ids, key=lambda cid: rank.get(cid, len(rank)))


def compare_all(results: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The closing page's table: every chapter's claims against its results file, in book order.

    Adds ``chapter``, ``paper_name`` (the paper's short name, or the chapter id
    for a page without a paper) and ``link`` (the section's address relative to
    the closing page) to :func:`compare`'s columns.
    """
    frames = []
    for chapter_id in in_book_order(chapters_with_claims()):
        table = compare(chapter_id, results.get(chapter_id, {}))
        table.insert(0, "chapter", chapter_id)
        table.insert(1, "paper_name", paper_name(chapter_id) or chapter_id)
        table["link"] = [section_link(chapter_id, s) for s in table["section"]]
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


# --- the summaries: reproductions only in a headline --------------------------


def kind_order(kinds: Iterable[str]) -> list[str]:
    """The kinds present, mechanism first (the agreements a reader cares about)."""
    kinds = set(kinds)
    order = ["mechanism", "published", "calibrated", "identity", "not comparable", UNCLASSIFIED]
    return [k for k in order if k in kinds] + sorted(kinds - set(order))


def headline_counts(table: pd.DataFrame, by: str = "chapter") -> pd.DataFrame:
    """Per chapter (or per ``paper_name``), the claims counted by :func:`rcakit.claims.tally`:
    reproductions by verdict, rcakit's own claims, identities and the other kinds apart."""
    return tally(table, by)


def headline_numbers(table: pd.DataFrame) -> dict[str, int]:
    """The numbers a page's headline quotes (:func:`rcakit.claims.totals`), keyed in snake case for
    glue names: ``reproductions``, ``agrees``, ``differs``, ``too_few_cases``, ``not_measured`` (split into
    ``needs_input`` and ``not_recorded``), ``other_parameters``, ``own_claims_hold``, ``identities_hold``…"""
    return {key.replace(" ", "_"): value for key, value in totals(table).items()}


def mechanism_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per chapter: reproductions that agree, differ, have too few cases or are not measured; rcakit's own
    claims and the identity checks that hold; the claims by kind. Every count is :func:`tally`'s."""
    chapters = list(dict.fromkeys(table["chapter"]))
    heads = tally(table, "chapter").reindex(chapters)
    counts = pd.crosstab(table["chapter"], table["kind"]).reindex(index=chapters, fill_value=0)
    counts = counts[kind_order(counts.columns)]

    def of(held: str, failed: str) -> list[str]:  # of those checked: unmeasured claims count neither way
        return [f"{a} of {a + f}" if a + f else DASH for a, f in zip(heads[held], heads[failed], strict=True)]

    checked = heads["agrees"] + heads["differs"]
    return pd.DataFrame(
        {
            "reproductions that agree": [
                f"{a} of {n}" if n else DASH for a, n in zip(heads["agrees"], checked, strict=True)
            ],
            "differ": heads["differs"].to_numpy(),
            "too few cases": heads["too few cases"].to_numpy(),
            "not measured": heads["not measured"].to_numpy(),
            "own claims that hold": of("own claims hold", "own claims fail"),
            "identity checks that hold": of("identities hold", "identities fail"),
            "by kind": [", ".join(f"{n} {k}" for k, n in row.items() if n) for _, row in counts.iterrows()],
        },
        index=pd.Index(chapters, name="chapter"),
    )


def verdict_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims counted by chapter (rows) and kind (columns); each cell lists the verdicts with their counts,
    ``"5 agrees, 1 differs"``, in :data:`VERDICTS` order. A kind a chapter has no claim of is a dash.

    One column per kind, not per verdict: the verdict words fit the text column however many are in use."""
    chapters = list(dict.fromkeys(table["chapter"]))
    kinds = kind_order(table["kind"])
    counted: dict[tuple[str, str], dict[str, int]] = {}
    for key, n in table.groupby(["chapter", "kind", "verdict"]).size().items():
        chapter, kind, verdict = cast(tuple[str, str, str], key)
        counted.setdefault((chapter, kind), {})[verdict] = int(n)

    def cell(chapter: str, kind: str) -> str:
        here = counted.get((chapter, kind))
        return ", ".join(f"{here[v]} {v}" for v in VERDICTS if v in here) if here else DASH

    return pd.DataFrame(
        {kind: [cell(c, kind) for c in chapters] for kind in kinds}, index=pd.Index(chapters, name="chapter")
    )
