"""The papers' published numbers, and how the workbench's numbers compare.

``data/claims.yaml`` holds, per chapter id, the paper it reproduces and a list
of claims. Each claim names the table or section it comes from, the paper's
value, and the dotted key under which the chapter records its own number in
``results/<chapter_id>.json``. A claim's verdict follows the first rule it has:

- ``expect``: a comparison the measured value must satisfy, e.g. ``">= 0.45"``;
- ``ci``: the dotted key of a measured ``[lo, hi]``; agrees if the paper's value is inside;
- ``tolerance``: agrees if ``|measured - paper| <= tolerance``;
- otherwise the row is shown with the verdict ``reported``.

Each claim says what kind of agreement it can be (``kind``, one of
:data:`KINDS`): an ``identity`` holds by construction when the code is correct
(a correctness check, not a reproduction); a ``mechanism`` claim is the
workbench's own mechanism reproducing the paper without being built to; a
``calibrated`` one compares against a number a generator was fitted to; a
``published`` one is recomputed from the paper's own tables; ``not
comparable`` is shown for context. ``section`` is the ``##`` heading of the
chapter section that computes the claim; the closing page links to it.

A claim with ``when`` (e.g. ``{q: 0.3}``) describes the paper's setting only;
under other parameters its verdict is ``other parameters``.

Claims marked ``holds: true`` are the ones the workbench is meant to
reproduce; ``assert_holds`` fails a chapter run when one of them does not.
"""

from __future__ import annotations

import functools
import html
import math
import numbers
import operator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rcakit import RcakitError
from rcakit.paths import project_root
from rcakit.results import lookup, to_jsonable

KINDS = ("identity", "mechanism", "calibrated", "published", "not comparable")
UNCLASSIFIED = "unclassified"  # shown for a claim that has no kind yet
VERDICTS = ("agrees", "differs", "reported", "other parameters", "not measured")
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}


def claims_path() -> Path:
    return project_root() / "data" / "claims.yaml"


def _load() -> dict:
    path = claims_path()
    return _parse(path, path.stat().st_mtime)


@functools.lru_cache(maxsize=4)
def _parse(path: Path, mtime: float) -> dict:
    """The YAML file, re-read whenever its modification time changes."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def chapter_claims(chapter_id: str) -> dict:
    """The ``claims.yaml`` entry of one chapter: paper, citation, claims, published.

    Each claim's ``kind`` and ``expect`` rule are checked; a bad one is a
    one-line ``RcakitError`` naming the chapter and the claim.
    """
    entry = _load().get(chapter_id)
    if entry is None:
        raise RcakitError(f"data/claims.yaml: no section for chapter {chapter_id!r}")
    for claim in entry.get("claims", []):
        _check_claim(chapter_id, claim)
    return entry


def _check_claim(chapter_id: str, claim: Mapping) -> None:
    where = f"data/claims.yaml: {chapter_id}: claim {claim.get('claim')!r}"
    kind = claim.get("kind")
    if kind is not None and kind not in KINDS:
        raise RcakitError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        try:
            float(threshold)
        except ValueError:
            op = None
        if op not in _OPS:
            raise RcakitError(f"{where}: expect {claim['expect']!r} is not '<op> <number>' with op in {' '.join(_OPS)}")


def published(chapter_id: str, name: str) -> Any:
    """A published data block (e.g. a typed-in table) of one chapter."""
    return chapter_claims(chapter_id)["published"][name]


def paper_value(chapter_id: str, measured: str) -> Any:
    """The paper's value of the claim that the chapter records under ``measured``."""
    for claim in chapter_claims(chapter_id)["claims"]:
        if claim["measured"] == measured:
            return claim["paper"]
    raise RcakitError(f"data/claims.yaml: {chapter_id}: no claim is measured as {measured!r}")


def _get(tree: Mapping, key: str | None) -> Any:
    if key is None:
        return None
    try:
        return lookup(tree, key)
    except (KeyError, IndexError, TypeError):
        return None


def _verdict(claim: dict, value: Any, ci: Any, params: Mapping | None) -> str:
    when = claim.get("when", {})
    if params is not None and any(params.get(k) != v for k, v in when.items()):
        return "other parameters"
    if value is None:
        return "not measured"
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        return "agrees" if _OPS[op](value, float(threshold)) else "differs"
    if ci is not None and None not in ci:
        return "agrees" if ci[0] <= claim["paper"] <= ci[1] else "differs"
    if "tolerance" in claim:
        return "agrees" if abs(value - claim["paper"]) <= claim["tolerance"] else "differs"
    return "reported"


def _rule(claim: Mapping, ci: Any) -> str:
    if "expect" in claim:
        return str(claim["expect"])
    if ci is not None:
        return "paper in CI"
    if "tolerance" in claim:
        return f"±{claim['tolerance']}"
    return ""


def compare(chapter_id: str, measured: Mapping, params: Mapping | None = None) -> pd.DataFrame:
    """One row per claim: its kind, the paper's value beside the workbench's, a verdict.

    ``measured`` is the chapter's results dict (nested, as recorded, or the
    numbers about to be recorded);
    ``params`` defaults to ``measured["params"]`` when that is present.
    """
    measured = to_jsonable(measured)  # numpy arrays and frames become lists, as in the results file
    if params is None:
        params = measured.get("params")
    rows = []
    for claim in chapter_claims(chapter_id)["claims"]:
        value = _get(measured, claim["measured"])
        ci = _get(measured, claim.get("ci"))
        rows.append(
            {
                "claim": claim["claim"],
                "kind": claim.get("kind", UNCLASSIFIED),
                "source": claim["source"],
                "paper": claim["paper"],
                "workbench": value,
                "CI": "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                "rule": _rule(claim, ci),
                "verdict": _verdict(claim, value, ci, params),
                "holds": bool(claim.get("holds", False)),
            }
        )
    return pd.DataFrame(rows)


def assert_holds(table: pd.DataFrame) -> None:
    """Raise ``AssertionError`` naming every ``holds`` claim that did not agree."""
    bad = table[table["holds"] & ~table["verdict"].isin(["agrees", "other parameters"])]
    if len(bad):
        raise AssertionError("claims not reproduced: " + "; ".join(bad["claim"]))


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


def in_book_order(chapter_ids) -> list[str]:
    """``chapter_ids`` sorted as the book orders them (``chapters.ORDER``); unknown ids last, as given."""
    from rcakit.chapters import ORDER

    rank = {cid: i for i, cid in enumerate(ORDER)}
    return sorted(chapter_ids, key=lambda cid: rank.get(cid, len(rank)))


def compare_all(results: Mapping[str, Mapping]) -> pd.DataFrame:
    """The closing page's table: every chapter's claims against its results file, in book order.

    Adds ``chapter``, ``section`` and ``link`` (the section's address relative
    to the closing page) to :func:`compare`'s columns.
    """
    frames = []
    for chapter_id in in_book_order(_load()):
        table = compare(chapter_id, results.get(chapter_id, {}))
        sections = [c.get("section") for c in chapter_claims(chapter_id)["claims"]]
        table.insert(0, "chapter", chapter_id)
        table["section"] = sections
        table["link"] = [section_link(chapter_id, s) for s in sections]
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


# --- the closing page's summaries --------------------------------------------


def kind_order(kinds) -> list[str]:
    """The kinds present, mechanism first (the agreements a reader cares about)."""
    order = ["mechanism", "published", "calibrated", "identity", "not comparable", UNCLASSIFIED]
    return [k for k in order if k in set(kinds)] + sorted(set(kinds) - set(order))


def mechanism_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per chapter: how many ``mechanism`` claims agree, how many claims are asserted, and
    how many claims there are of each kind (``"5 mechanism, 1 identity"``)."""
    chapters = list(dict.fromkeys(table["chapter"]))
    mech = table[table["kind"] == "mechanism"]
    agree = mech[mech["verdict"] == "agrees"].groupby("chapter").size()
    total = mech.groupby("chapter").size()
    counts = pd.crosstab(table["chapter"], table["kind"]).reindex(index=chapters, fill_value=0)
    counts = counts[kind_order(counts.columns)]
    return pd.DataFrame(
        {
            "mechanism claims that agree": [f"{agree.get(c, 0)} of {total.get(c, 0)}" for c in chapters],
            "asserted": table.groupby("chapter")["holds"].sum().reindex(chapters).astype(int).to_numpy(),
            "claims": counts.sum(axis=1).to_numpy(),
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


def parameter_table(recorded: Mapping[str, Mapping]) -> pd.DataFrame:
    """Every parameter each chapter ran with, in book order, one row each.

    ``default`` is filled only where the run's value differs from the chapter's
    default (the ``quick`` values of a test run, or a ``-p`` override).
    """
    from rcakit import chapters

    rows = []
    for chapter_id in in_book_order(recorded):
        defaults = chapters.get(chapter_id).defaults if chapter_id in chapters.ORDER else {}
        for name, value in (recorded[chapter_id].get("params") or {}).items():
            default = defaults.get(name)
            rows.append({"chapter": chapter_id, "parameter": name, "value": _text(value),
                         "default (if changed)": "" if value == default else _text(default)})
    return pd.DataFrame(rows, columns=["chapter", "parameter", "value", "default (if changed)"])


# --- the closing page's table, as HTML ---------------------------------------

_VERDICT_STYLE = {
    "agrees": "background:#dcfce7;color:#14532d",
    "differs": "background:#fee2e2;color:#7f1d1d",
    "reported": "background:#e0e7ff;color:#1e3a8a",
    "other parameters": "background:#fef3c7;color:#78350f",
    "not measured": "background:#e5e7eb;color:#374151",
}
_COLUMNS = ["kind", "claim", "verdict", "paper", "workbench", "rule", "source"]


def _text(value: Any) -> str:
    """A short, readable form of a number, a list of numbers or any value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def chapter_link(chapter_id: str, title: str | None = None) -> str:
    """An HTML link to the chapter's page, labelled with its title."""
    return f'<a href="{chapter_page(chapter_id)}">{html.escape(title or chapter_id)}</a>'


_BADGE = "padding:0.1em 0.45em;border-radius:0.3em;white-space:nowrap"


def verdict_badge(verdict: str) -> str:
    """The verdict as a coloured label (inline style, so it needs no stylesheet)."""
    style = _VERDICT_STYLE.get(verdict, "")
    return f'<span style="{style};{_BADGE}">{html.escape(verdict)}</span>'


def _cells(row: pd.Series) -> dict[str, str]:
    """The cells of one claim; the CI goes under the workbench value, "asserted" under the verdict."""
    workbench = html.escape(_text(row["workbench"]))
    if row["CI"]:
        workbench += f'<br><small>{html.escape(row["CI"])}</small>'
    verdict = verdict_badge(row["verdict"]) + ("<br><small>asserted</small>" if row["holds"] else "")
    return {
        "claim": f'<a href="{html.escape(row["link"])}">{html.escape(row["claim"])}</a>',
        "verdict": verdict,
        "paper": _text(row["paper"]),
        "workbench": workbench,
        "rule": html.escape(row["rule"]),
        "source": html.escape(str(row["source"])),
    }


_CELL_STYLE = {"claim": "min-width:18em", "verdict": "white-space:nowrap", "workbench": "white-space:nowrap",
               "rule": "white-space:nowrap"}


def claims_html(table: pd.DataFrame, titles: Mapping[str, str] | None = None) -> str:
    """Every row of :func:`compare_all`'s table as one HTML table, nothing truncated.

    Rows are grouped by chapter (a heading row naming the chapter and how many
    of its ``mechanism`` claims agree), then by kind (one cell spanning the
    kind's rows); each claim links to the chapter section that computes it.
    """
    titles = titles or {}
    summary = mechanism_summary(table)
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    body = []
    for chapter_id, group in table.groupby("chapter", sort=False):
        agree = summary.loc[chapter_id, "mechanism claims that agree"]
        note = f"({html.escape(chapter_id)}: {agree} mechanism claims agree)"
        body.append(
            f'<tr><th colspan="{len(_COLUMNS)}" style="text-align:left;padding-top:1em">'
            f"{chapter_link(chapter_id, titles.get(chapter_id))} "
            f'<span style="font-weight:normal">{note}</span></th></tr>'
        )
        for kind in kind_order(group["kind"]):
            rows = group[group["kind"] == kind]
            for i, (_, row) in enumerate(rows.iterrows()):
                cells = _cells(row)
                lead = "" if i else (f'<td rowspan="{len(rows)}" style="vertical-align:top">'
                                     f"<em>{html.escape(kind)}</em></td>")
                body.append("<tr>" + lead + "".join(_td(cells[c], _CELL_STYLE.get(c)) for c in _COLUMNS[1:]) + "</tr>")
    return (f'<table class="dataframe claims-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def _td(content: str, style: str | None) -> str:
    return f'<td style="{style}">{content}</td>' if style else f"<td>{content}</td>"
