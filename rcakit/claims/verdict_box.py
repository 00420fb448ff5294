"""What a chapter shows of its comparison: the verdict box at its top, the claims table beside the paper.

The verdict box is a MyST admonition made from :func:`rcakit.claims.compare`'s
table and glued (myst-nb) for the chapter's first screen: mechanism claims are
the verdict, identities are counted apart as correctness checks, and every
other kind is counted in one line. Every character Markdown or MyST would read
as markup is escaped, so a claim's text is shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rcakit.claims.ledger import UNCLASSIFIED
from rcakit.claims.verdicts import VERDICTS, paper_text, workbench_text
from rcakit.tables import Table, format_table

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>$|~#])")
SHOWN_COLUMNS = ("claim", "kind", "paper", "workbench", "rule", "verdict", "asserted")


def _md(text: str) -> str:
    """``text`` with every character that Markdown or MyST would read as markup escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


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

    Mechanism claims are the verdict: those that agree, those that differ, those
    not measured and why (the input the section needs), those tied to the
    paper's setting when the run used other parameters; each with the rule its
    verdict follows (a tolerance, a one-sided bound, an interval). Identities are
    counted apart as correctness checks, with any that fail named; the other
    kinds are counted in one line. A claim with no paper value on a page with a
    paper (a comparison of rcakit's own) is counted apart, never as agreeing
    with the paper. On a page with no paper behind it the
    mechanism claims are the workbench's own findings: the box says which hold,
    never that they agree with a paper.
    """
    paper = _has_paper(table)
    mechanism = table[table["kind"] == "mechanism"]
    groups = {v: mechanism[mechanism["verdict"] == v] for v in VERDICTS}
    title = "what reproduces here" if paper else "what holds here"
    lines = [f":::{{admonition}} Verdict: {title}", ":class: verdict tip", ""]
    if len(mechanism):
        own = mechanism["paper"].isna() if paper else pd.Series(False, index=mechanism.index)
        agrees, differs = (mechanism["verdict"] == "agrees"), (mechanism["verdict"] == "differs")
        checked, own_checked = int(((agrees | differs) & ~own).sum()), int(((agrees | differs) & own).sum())
        what = "agree with the paper" if paper else "hold (no paper is behind this page: none is a reproduction)"
        lead = (
            f"**Mechanism claims checked here that {what}: {int((agrees & ~own).sum())} of {checked}**"
            if checked
            else "**No mechanism claim of the paper's could be checked in this run**"
            if own_checked
            else "**No mechanism claim could be checked in this run**"
        )
        if own_checked:  # rcakit's own comparisons on a page with a paper: no paper value to agree with
            lead += f"; rcakit's own claims (no paper value) that hold: {int((agrees & own).sum())} of {own_checked}"
        lines.append(lead + _not_counted(groups) + ".")
    else:
        lines.append("**This page reproduces no published number**: its claims are correctness checks.")
    sections = [
        ("Reproduces" if paper else "Holds", "agrees"),
        ("Does not reproduce" if paper else "Does not hold", "differs"),
        ("Not measured", "not measured"),
        ("Not at the paper's setting", "other parameters"),
        ("Reported without a rule", "reported"),
    ]
    for heading, verdict in sections:
        rows = groups[verdict]
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


def _not_counted(groups: Mapping[str, pd.DataFrame]) -> str:
    unmeasured, elsewhere = len(groups["not measured"]), len(groups["other parameters"])
    parts = [f"{unmeasured} not measured"] * bool(unmeasured) + [f"{elsewhere} not at the paper's setting"] * bool(
        elsewhere
    )
    return f" ({' and '.join(parts)}, not counted as disagreeing)" if parts else ""


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
    checked = identities[identities["verdict"].isin(["agrees", "differs"])]
    failing = checked[checked["verdict"] == "differs"]
    held = len(checked) - len(failing)
    others = identities["verdict"].value_counts().drop(["agrees", "differs"], errors="ignore")
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


def glue_verdict(table: pd.DataFrame, name: str = "verdict") -> None:
    """Glue the verdict box (:func:`verdict_markdown`) for the chapter's first screen, displaying nothing.

    The chapter shows it near its top with a ``glue:md`` directive on
    ``verdict`` in the ``myst`` format.
    """
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(verdict_markdown(table)), display=False)


def table(comparison: pd.DataFrame, columns: Iterable[str] = SHOWN_COLUMNS) -> Table:
    """A chapter's :func:`compare` table as its "Beside the paper" section shows it: the workbench's
    value beside its interval, fixed decimals, every claim in full (``rcakit.tables.format_table``)."""
    shown = comparison.assign(workbench=list(map(workbench_text, comparison["workbench"], comparison["CI"])))
    return format_table(shown[[c for c in columns if c in shown.columns]], index=False)
