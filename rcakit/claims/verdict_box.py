"""What a chapter shows of its comparison: the verdict box at its top, the claims table beside the paper.

The verdict box is a MyST admonition made from :func:`rcakit.claims.compare`'s
table and glued (myst-nb) for the chapter's first screen: mechanism claims are
the verdict, identities are counted apart as correctness checks, and every
other kind is counted in one line. Every character Markdown or MyST would read
as markup is escaped, so a claim's text is shown as written.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rcakit.claims.counting import counted_as, totals, uncounted
from rcakit.claims.ledger import UNCLASSIFIED, first_screen
from rcakit.claims.verdicts import paper_text, workbench_text
from rcakit.tables import Table, format_table

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>$|~#])")
INLINE_MATH = re.compile(r"(\$[^$]+\$)")  # MyST's dollar math in a claim's text: typeset, never escaped
SHOWN_COLUMNS = ("claim", "kind", "paper", "workbench", "rule", "verdict")  # an asserted verdict says so


def _md(text: str) -> str:
    """``text`` with every character that Markdown or MyST would read as markup escaped, but its ``$…$`` math,
    which the page typesets."""
    parts = INLINE_MATH.split(str(text))
    return "".join(part if i % 2 else _MARKDOWN_SPECIAL.sub(r"\\\1", part) for i, part in enumerate(parts))


def math_html(text: str) -> str:
    """``text`` escaped for HTML, its ``$…$`` math as MathJax's ``\\(…\\)`` (a table cell is HTML, which
    MyST's dollar math does not reach)."""
    parts = INLINE_MATH.split(str(text))
    return "".join(
        "\\(" + html.escape(part[1:-1]) + "\\)" if i % 2 else html.escape(part) for i, part in enumerate(parts)
    )


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a closing full stop."""
    text = text.strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")


def _line(row: Mapping[str, Any], paper: bool = True) -> str:
    """One claim as a list item: the paper's value (on a page with a paper), the workbench's, the rule
    the verdict follows, and the note."""
    values = f"paper {paper_text(row['paper'])}, " * paper + f"here {workbench_text(row['workbench'], row['CI'])}"
    rule = str(row.get("rule") or "")
    values += f"; rule: {rule}" if rule else ""
    note = _sentence(row["note"])
    return f"- {_md(row['claim'])} ({_md(values)}).{' ' + _md(note) if note else ''}"


def _has_paper(table: pd.DataFrame) -> bool:
    """False for a page that reproduces no paper (every row's ``has_paper`` is False)."""
    return not ("has_paper" in table.columns and len(table) and not table["has_paper"].any())


def verdict_markdown(table: pd.DataFrame) -> str:
    """A short MyST admonition from a chapter's :func:`compare` table: what reproduces, what does not, why.

    The reproductions (mechanism claims whose rule tests a number the paper
    printed) are the verdict: those that agree, those that differ, those whose
    interval is too wide to tell, those not measured and why (the input the
    section needs), those tied to the paper's setting when the run used other
    parameters; each with the rule its verdict follows. rcakit's own claims (no
    printed number to test) hold or fail, counted apart; identities are counted
    apart as correctness checks, with any that fail named; the other kinds are
    counted in one line. Every count is :func:`rcakit.claims.totals`'.
    On a page with no paper behind it every mechanism claim is the workbench's
    own finding: the box says which hold, never that they agree with a paper.
    """
    paper = _has_paper(table)
    n = totals(table)
    title = "what reproduces here" if paper else "what holds here"
    lines = [f":::{{admonition}} Verdict: {title}", ":class: verdict tip", ""]
    lines.append(_lead(n, paper) + ".")
    where = counted_as(table)
    mine, own = table[where == "reproduction"], table[where == "own claim"]
    sections = [
        ("Reproduces", mine, "agrees"),
        ("Does not reproduce", mine, "differs"),
        ("Too few cases to tell", mine, "too few cases"),
        ("Not measured", pd.concat([mine, own]), "not measured"),
        ("Not at the paper's setting", pd.concat([mine, own]), "other parameters"),
        ("rcakit's own claims that hold" if paper else "Holds", own, "holds"),
        ("rcakit's own claims that fail" if paper else "Does not hold", own, "fails"),
        ("Reported without a rule", pd.concat([mine, own]), "reported"),
    ]
    for heading, rows, verdict in sections:
        rows = rows[rows["verdict"] == verdict]
        if len(rows):
            lines += ["", f"**{heading}:**", ""]
            lines += _missing_lines(rows) if verdict == "not measured" else [_line(r, paper) for r in _records(rows)]
    lines_after = (
        _published_line(table[table["kind"] == "published"]),
        _identity_line(table[table["kind"] == "identity"]),
        _others_line(table),
    )
    for line in lines_after:
        lines += ["", line] if line else []
    return "\n".join([*lines, ":::"])


def _lead(n: Mapping[str, int], paper: bool) -> str:
    """The box's first line: reproductions that agree of those checked (on a page with a paper), rcakit's
    own claims that hold, and what was not counted."""
    own_checked = n["own claims hold"] + n["own claims fail"]
    own = f"{n['own claims hold']} of {own_checked}"
    if not paper:
        if not own_checked:
            return "**No claim of the workbench's own could be checked in this run**" + _not_counted(n)
        return f"**The workbench's own claims that hold: {own}** (no paper is behind this page)" + _not_counted(n)
    checked = n["agrees"] + n["differs"]
    if checked:
        lead = f"**Reproductions that agree with the paper: {n['agrees']} of {checked}**"
    elif n["reproductions"]:
        lead = "**No claim that tests a number the paper printed could be checked in this run**"
    else:
        lead = "**This page reproduces no published number**: no claim here tests a number the paper printed"
    lead += _not_counted(n)
    if own_checked:
        lead += f"; rcakit's own claims (no printed number to test) that hold: {own}"
    return lead


def _not_counted(n: Mapping[str, int]) -> str:
    shown = uncounted(n)
    return f" ({' and '.join(shown)}, not counted either way)" if shown else ""


def _records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in rows.to_dict("records")]


def _missing_lines(rows: pd.DataFrame) -> list[str]:
    """One line per reason: what is missing, then the claims that wait for it."""
    return [
        f"- {_md(_sentence(str(why))[:-1])}: {'; '.join(_md(c) for c in group['claim'])}."
        for why, group in rows.groupby("why", sort=False)
    ]


_IDENTITY_WORDS = {"other parameters": "not checkable at these parameters"}


def _identity_line(identities: pd.DataFrame) -> str | None:
    if not len(identities):
        return None
    checked = identities[identities["verdict"].isin(["holds", "fails"])]
    failing = checked[checked["verdict"] == "fails"]
    held = len(checked) - len(failing)
    others = identities["verdict"].value_counts().drop(["holds", "fails"], errors="ignore")
    parts = [f"{held} of {len(checked)} hold"] if len(checked) else []
    parts += [f"{n} {_IDENTITY_WORDS.get(str(v), v)}" for v, n in others.items()]
    text = "**Correctness checks** (identities, not reproductions): " + "; ".join(parts)
    if len(failing):
        text += "; failing: " + "; ".join(_line(r)[2:].rstrip(".") for r in _records(failing))
    return text + "."


def _published_line(published: pd.DataFrame) -> str | None:
    """Published numbers recomputed from the paper's own data: how many come out as printed, which do not."""
    checked = published[published["verdict"].isin(["agrees", "differs"])]
    if not len(checked):
        whys = [str(w) for w in dict.fromkeys(published.loc[published["verdict"] == "not measured", "why"]) if w]
        if not whys:
            return None
        return f"**Recomputed from the paper's own data**: not in this run ({_md('; '.join(whys))})."
    differing = checked[checked["verdict"] == "differs"]
    text = (
        "**Recomputed from the paper's own data** (published numbers, not reproductions): "
        f"{len(checked) - len(differing)} of {len(checked)} come out as printed"
    )
    if len(differing):
        text += "; not as printed: " + "; ".join(_line(r)[2:].rstrip(".") for r in _records(differing))
    return text + "."


def _others_line(table: pd.DataFrame) -> str | None:
    stated = table["kind"].eq("published") & (
        table["verdict"].isin(["agrees", "differs"]) | table["why"].astype(bool)
    )  # in the line of their own
    counts = table[~stated]["kind"].value_counts()
    others = [f"{counts[k]} {k}" for k in ("published", "calibrated", "not comparable", UNCLASSIFIED) if k in counts]
    if not others:
        return None
    return f"Also compared, not counted as reproductions: {', '.join(others)} (the table below says why)."


def _names(rows: pd.DataFrame, most: int = 3) -> str:
    names = [_md(c) for c in rows["claim"]]
    return "; ".join(names[:most]) + (f"; and {len(names) - most} more" if len(names) > most else "")


def short_verdict_markdown(table: pd.DataFrame) -> str:
    """The verdict in at most two lines, for a lecture's first screen: how many reproductions agree and what
    was not counted (every count :func:`rcakit.claims.totals`'), then the first two that differ or fail.
    The page adds its third line, why; the full box (:func:`verdict_markdown`) gives each claim's rule and
    note."""
    paper, n = _has_paper(table), totals(table)
    where = counted_as(table)
    differing = table[(where == "reproduction") & (table["verdict"] == "differs")]
    failing = table[table["verdict"] == "fails"]
    problems = [f"Does not reproduce: {_names(differing, most=2)}." if len(differing) else ""]
    problems += [f"Fails: {_names(failing, most=2)}." if len(failing) else ""]
    lines = [_lead(n, paper) + ".", " ".join(p for p in problems if p)]
    return "\n".join(f"- {line}" for line in lines if line)


def lecture_verdict_markdown(table: pd.DataFrame, chapter_id: str) -> str:
    """The first screen's verdict box: :func:`short_verdict_markdown`, the chapter's why (``claims.yaml``)
    and a link to the audit, the section labelled ``(<chapter_id>-audit)=`` that holds the full box and
    the claims table (and to ``(<chapter_id>-protocol)=`` where the chapter has one)."""
    why, protocol = first_screen(chapter_id)
    lines = short_verdict_markdown(table) + (f"\n- **Why:** {_md(why)}" if why else "")
    links = f"{{ref}}`every claim with its rule and interval <{chapter_id}-audit>`"
    if protocol:
        links = f"{{ref}}`the protocol <{chapter_id}-protocol>`, " + links
    return f":::{{admonition}} Verdict\n:class: verdict tip\n\n{lines}\n\nThe audit, one click away: {links}.\n:::"


def glue_verdict(table: pd.DataFrame, chapter_id: str | None = None, name: str = "verdict") -> None:
    """Glue the verdict box (:func:`verdict_markdown`) as ``name`` and its first-screen form as
    ``name_short`` (:func:`lecture_verdict_markdown` for a chapter, else :func:`short_verdict_markdown`),
    displaying nothing.

    The chapter shows them with a ``glue:md`` directive in the ``myst`` format.
    """
    from IPython.display import Markdown
    from myst_nb import glue

    short = lecture_verdict_markdown(table, chapter_id) if chapter_id else short_verdict_markdown(table)
    glue(name, Markdown(verdict_markdown(table)), display=False)
    glue(f"{name}_short", Markdown(short), display=False)


def table(comparison: pd.DataFrame, columns: Iterable[str] = SHOWN_COLUMNS) -> Table:
    """A chapter's :func:`compare` table as its "Beside the paper" section shows it: the workbench's
    value beside its interval, fixed decimals, every claim in full, its math typeset
    (``rcakit.tables.format_table``)."""
    shown = comparison.assign(
        workbench=list(map(workbench_text, comparison["workbench"], comparison["CI"])),
        verdict=[f"{v} (asserted)" if a else str(v) for v, a in comparison[["verdict", "asserted"]].to_numpy()],
        claim=[INLINE_MATH.sub(_html_math, str(c)) for c in comparison["claim"]],
        note=[INLINE_MATH.sub(_html_math, str(c)) for c in comparison["note"]],
    )
    return format_table(shown[[c for c in columns if c in shown.columns]], index=False)


def _html_math(match: re.Match[str]) -> str:
    """A claim's or a note's ``$…$`` as MathJax's ``\\(…\\)``: an HTML table cell (escaped as text) is outside the reach
    of MyST's dollar math, and the table's class asks MathJax to typeset it."""
    return "\\(" + match.group(1)[1:-1] + "\\)"
