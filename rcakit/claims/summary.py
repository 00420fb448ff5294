"""The book-wide summary: every chapter's claims in book order, linked to their sections, and the headline counts.

Only ``mechanism`` claims of a page with a paper behind it test a paper, so
only they are counted in a headline (a page with no paper, ``has_paper``
False, has findings of its own, never reproductions); identity checks are counted apart, as checks of the code. Claims
that were not measured or ran away from the paper's setting are named and
never counted as disagreeing. The closing page (``claims``) and the landing
page (``intro``) read these tables; :mod:`rcakit.claims.pages` lays them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rcakit import RcakitError
from rcakit.claims.ledger import UNCLASSIFIED, chapters_with_claims, paper_name
from rcakit.claims.verdicts import VERDICTS, compare

HEADLINE = ("agrees", "differs", "not measured", "other parameters")

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
    """``<chapter>.html#<anchor>`` of a claim's section; the chapter page if it has none."""
    page = chapter_page(chapter_id)
    return f"{page}#{section_anchor(section)}" if section else page


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


# --- the summaries: mechanism claims only in a headline --------------------------


def kind_order(kinds: Iterable[str]) -> list[str]:
    """The kinds present, mechanism first (the agreements a reader cares about)."""
    kinds = set(kinds)
    order = ["mechanism", "published", "calibrated", "identity", "not comparable", UNCLASSIFIED]
    return [k for k in order if k in kinds] + sorted(kinds - set(order))


def _mechanism(table: pd.DataFrame) -> pd.DataFrame:
    """The mechanism claims that test a paper (a page with no paper behind it tests none)."""
    tests_paper = table["has_paper"].astype(bool) if "has_paper" in table.columns else True
    return table[(table["kind"] == "mechanism") & tests_paper]


def headline_counts(table: pd.DataFrame, by: str = "chapter") -> pd.DataFrame:
    """Per chapter (or per ``paper_name``), mechanism claims by verdict, and identity checks apart.

    Columns: the :data:`HEADLINE` verdicts of the mechanism claims, then
    ``identities hold`` and ``identities fail``. Other kinds are not counted.
    """
    groups = list(dict.fromkeys(table[by]))
    mech = _mechanism(table)
    counts = pd.crosstab(mech[by], mech["verdict"]).reindex(index=groups, columns=list(HEADLINE), fill_value=0)
    identity = table[table["kind"] == "identity"]
    counts["identities hold"] = (
        identity[identity["verdict"] == "agrees"].groupby(by).size().reindex(groups, fill_value=0)
    )
    counts["identities fail"] = (
        identity[identity["verdict"] == "differs"].groupby(by).size().reindex(groups, fill_value=0)
    )
    counts.index.name = by
    counts.columns.name = None
    return counts.astype(int)


def headline_numbers(table: pd.DataFrame) -> dict[str, int]:
    """The numbers a page's headline quotes, mechanism claims only, identities apart.

    ``mechanism``; ``agrees``, ``differs``, ``other_parameters``; ``not_measured``,
    split into ``needs_input`` (its section needs a data set or a model the run
    did not have) and ``not_recorded`` (the chapter has not run, or did not
    record it); ``identities_hold``, ``identities_fail``.
    """
    mech = _mechanism(table)
    unmeasured = mech[mech["verdict"] == "not measured"]
    needs_input = int(unmeasured["why"].str.startswith("needs").sum())
    identity = table[table["kind"] == "identity"]
    return {
        "mechanism": len(mech),
        "agrees": int((mech["verdict"] == "agrees").sum()),
        "differs": int((mech["verdict"] == "differs").sum()),
        "other_parameters": int((mech["verdict"] == "other parameters").sum()),
        "not_measured": len(unmeasured),
        "needs_input": needs_input,
        "not_recorded": len(unmeasured) - needs_input,
        "identities_hold": int((identity["verdict"] == "agrees").sum()),
        "identities_fail": int((identity["verdict"] == "differs").sum()),
    }


def mechanism_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per chapter: mechanism claims that agree, differ, are not measured, and the claims by kind."""
    chapters = list(dict.fromkeys(table["chapter"]))
    heads = headline_counts(table)
    counts = pd.crosstab(table["chapter"], table["kind"]).reindex(index=chapters, fill_value=0)
    counts = counts[kind_order(counts.columns)]
    checked = heads["agrees"] + heads["differs"]
    return pd.DataFrame(
        {
            "mechanism claims that agree": [f"{a} of {n}" for a, n in zip(heads["agrees"], checked, strict=True)],
            "differ": heads["differs"].to_numpy(),
            "not measured": heads["not measured"].to_numpy(),
            "other parameters": heads["other parameters"].to_numpy(),
            "identity checks that hold": [
                f"{h} of {h + f}" for h, f in zip(heads["identities hold"], heads["identities fail"], strict=True)
            ],
            "by kind": [", ".join(f"{n} {k}" for k, n in row.items() if n) for _, row in counts.iterrows()],
        },
        index=pd.Index(chapters, name="chapter"),
    )


def verdict_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims counted by chapter and kind (rows) and verdict (columns)."""
    chapters = list(dict.fromkeys(table["chapter"]))
    counts = pd.crosstab([table["chapter"], table["kind"]], table["verdict"])
    index = [(c, k) for c in chapters for k in kind_order(table["kind"]) if (c, k) in counts.index]
    columns = [v for v in VERDICTS if v in counts.columns]
    return counts.reindex(index=pd.MultiIndex.from_tuples(index, names=["chapter", "kind"]), columns=columns)
