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
``note`` (``reason`` for a not-comparable claim) says in one line why the
verdict is what it is; the chapter's verdict box shows it.

When a verdict can be given:

- A claim whose number was not recorded is ``not measured``. When the section
  that computes it needs an input the run did not have (a data set or a
  language model: a ``needs`` list of parameter names, or a ``when`` on such a
  parameter), the row says so; "not measured" is never counted as disagreeing.
- ``when`` (e.g. ``{q: 0.3}``) ties a claim to the paper's setting: under
  other parameters its verdict is ``other parameters``. An ``identity`` holds at
  every parameter value, so it is checked at any parameters: when its value
  depends on them, ``expected`` names the recorded key (or ``params.<name>``)
  of the value it must have at this run's parameters, used in place of the
  paper's value or the ``expect`` threshold, and ``when`` then only says where
  the paper's number applies. An identity whose ``expected`` value was not
  recorded is ``not measured``, never checked against the paper's number. An
  identity with a ``when`` and no ``expected`` is a scoped one (it holds for
  ``agent: rule``, say); outside its scope it reads ``other parameters``.
- A row checked against another number than the paper's (``expected``, or an
  ``expect ==`` threshold) says which in its ``note`` when the claim has none.

Claims marked ``holds: true`` are the ones the workbench is meant to reproduce.
:func:`assert_holds` raises only for those that hold for every valid parameter
value and seed (:func:`is_exact`): identities and recomputed published numbers
with an exact rule. A statistical claim (an interval, a tolerance on an
estimate, a mechanism) gets its verdict and never stops a chapter.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rcakit import RcakitError
from rcakit.paths import project_root
from rcakit.results import lookup, to_jsonable
from rcakit.tables import DASH, Table, format_table, format_value, is_missing

KINDS = ("identity", "mechanism", "calibrated", "published", "not comparable")
UNCLASSIFIED = "unclassified"  # shown for a claim that has no kind yet
VERDICTS = ("agrees", "differs", "not measured", "other parameters", "reported")
EXACT_TOLERANCE = 1e-6  # a tolerance at most this large is an equality up to rounding, not a statistical margin
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
    if "needs" in claim and not isinstance(claim["needs"], (list, str)):
        raise RcakitError(f"{where}: needs must be a parameter name or a list of them")


def published(chapter_id: str, name: str) -> Any:
    """A published data block (e.g. a typed-in table) of one chapter."""
    return chapter_claims(chapter_id)["published"][name]


def paper_value(chapter_id: str, measured: str) -> Any:
    """The paper's value of the claim that the chapter records under ``measured``."""
    for claim in chapter_claims(chapter_id)["claims"]:
        if claim["measured"] == measured:
            return claim["paper"]
    raise RcakitError(f"data/claims.yaml: {chapter_id}: no claim is measured as {measured!r}")


def paper_name(chapter_id: str) -> str | None:
    """The paper's short name (``"CAR"``, ``"GCJR"``), or None for a page that reproduces no paper."""
    title = str(chapter_claims(chapter_id).get("paper", ""))
    short, colon, _ = title.partition(":")
    return short.strip() if colon and short.strip() != "No paper" else None


def _get(tree: Mapping, key: str | None) -> Any:
    if key is None:
        return None
    try:
        value = lookup(tree, key)
    except (KeyError, IndexError, TypeError):
        return None
    return None if is_missing(value) else value


# --- verdicts ----------------------------------------------------------------


def input_parameters(chapter_id: str) -> dict[str, str]:
    """The chapter's optional inputs: parameter name -> ``"data"`` (a data set) or ``"model"`` (a provider)."""
    from rcakit import chapters

    if chapter_id not in chapters.PAGES:
        return {}
    chapter = chapters.get(chapter_id)
    found = {name: "data" for name, kind in chapter.paths.items() if kind == "data"}
    found.update({name: "model" for name in chapters.provider_parameters(chapter.parameters)})
    return found


def section_inputs(chapter_id: str) -> dict[str, list[str]]:
    """Per ``##`` heading of the chapter, the parameters its cells are tagged as needing.

    The tags are the runner's (``needs-<param>``, ``missing-<param>``): a
    section with such cells computes something only when that input is there.
    """
    from rcakit import chapters

    path = chapters.notebook_path(chapter_id)
    return _section_inputs(path, path.stat().st_mtime) if path.exists() else {}


@functools.lru_cache(maxsize=16)
def _section_inputs(path: Path, mtime: float) -> dict[str, list[str]]:
    import jupytext

    found: dict[str, list[str]] = {}
    current = None
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    current = line[3:].strip()
                    found.setdefault(current, [])
        for tag in cell.metadata.get("tags", []):
            kind, _, name = tag.partition("-")
            if kind in ("needs", "missing") and current is not None and name not in found[current]:
                found[current].append(name)
    return found


def _needs(
    claim: Mapping, inputs: Mapping[str, str], sections: Mapping[str, list[str]], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The inputs (parameter -> the data set it names, or None) the claim's section needs.

    From the claim's ``needs`` or its ``when`` on an input; else from the tags
    of the cells of its section, the data sets first (a section on a data set
    may add a model), each named by the parameter's default.
    """
    named = claim.get("needs", [])
    needs: dict[str, Any] = {name: None for name in ([named] if isinstance(named, str) else named)}
    needs.update({k: v for k, v in claim.get("when", {}).items() if k in inputs})
    if needs:
        return needs
    tagged = [name for name in sections.get(str(claim.get("section")), []) if name in inputs]
    data = [name for name in tagged if inputs[name] == "data"]  # a section on a data set may add a model
    for name in data or tagged:
        default = defaults.get(name)
        needs[name] = default if inputs[name] == "data" and default not in (None, "", "none") else None
    return needs


def _setting(claim: Mapping, inputs: Mapping[str, str]) -> dict[str, Any]:
    """The part of ``when`` that is the paper's setting (not an input the section needs)."""
    return {k: v for k, v in claim.get("when", {}).items() if k not in inputs}


def _missing_why(needs: Mapping[str, Any], inputs: Mapping[str, str], measured: Mapping) -> str:
    """Why a number is not there, in a few words."""
    parts = []
    for name, value in needs.items():
        if inputs.get(name) == "model":
            parts.append(f"needs a language model (parameter {name})")
        else:
            what = f"the data set {value}" if isinstance(value, str) else "its data"
            parts.append(f"needs {what} (parameter {name})")
    if parts:
        return "; ".join(parts)
    return "the chapter has not run" if not measured else "not recorded by this run"


def _why(claim: Mapping, value: Any, chapter_id: str, inputs: Mapping[str, str], measured: Mapping) -> str:
    """Why a claim is not measured: its section's missing input, or its identity's missing expected value."""
    if value is not None:
        return f"its value at these parameters ({claim['expected']}) was not recorded"
    from rcakit import chapters

    defaults = chapters.get(chapter_id).defaults if chapter_id in chapters.PAGES else {}
    return _missing_why(_needs(claim, inputs, section_inputs(chapter_id), defaults), inputs, measured)


def _target(claim: Mapping, measured: Mapping, params: Mapping) -> Any:
    """The value an identity must have at these parameters (its ``expected`` key), else None."""
    key = claim.get("expected")
    if key is None:
        return None
    if key.startswith("params."):
        return params.get(key.removeprefix("params."))
    return _get(measured, key)


def _check(claim: Mapping, value: Any, ci: Any, target: Any) -> str:
    """agrees / differs / reported by the claim's rule, against ``target`` when it is given."""
    reference = claim["paper"] if target is None else target
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        bound = float(threshold) if target is None else float(target)
        return "agrees" if _OPS[op](value, bound) else "differs"
    if ci is not None and None not in ci:
        return "agrees" if ci[0] <= reference <= ci[1] else "differs"
    if "tolerance" in claim:
        return "agrees" if abs(value - reference) <= claim["tolerance"] else "differs"
    return "reported"


def _verdict(
    claim: Mapping, value: Any, ci: Any, target: Any, params: Mapping | None, inputs: Mapping[str, str]
) -> str:
    if value is None or (claim.get("kind") == "identity" and "expected" in claim and target is None):
        return "not measured"
    setting = _setting(claim, inputs)
    off_setting = params is not None and any(params.get(k) != v for k, v in setting.items())
    if off_setting and (claim.get("kind") != "identity" or "expected" not in claim):
        return "other parameters"
    return _check(claim, value, ci, target)


def is_exact(claim: Mapping) -> bool:
    """Whether the claim holds for every valid parameter value and seed when the code is correct.

    Identities whose rule is exact (an ``expect`` comparison or a tolerance of
    at most :data:`EXACT_TOLERANCE`), and published numbers recomputed from the
    paper's printed tables (no seed enters them; the tolerance is the printing's rounding).
    An interval (``ci``) or a wider tolerance is a statistical statement that a
    correct run misses at some seeds.
    """
    if claim.get("kind") not in ("identity", "published") or "ci" in claim:
        return False
    if "expect" in claim:
        return True
    if claim["kind"] == "published":  # arithmetic on the paper's printed numbers: no seed in it
        return "tolerance" in claim
    return "tolerance" in claim and float(claim["tolerance"]) <= EXACT_TOLERANCE


def _asserted(claim: Mapping, params: Mapping | None, inputs: Mapping[str, str]) -> bool:
    """``holds`` and exact, and checkable at these parameters."""
    if not (claim.get("holds") and is_exact(claim)):
        return False
    setting = _setting(claim, inputs)
    on_setting = params is None or all(params.get(k) == v for k, v in setting.items())
    return on_setting or "expected" in claim


def _rule(claim: Mapping, ci: Any) -> str:
    """The rule as the tables show it; ``expected`` is the value an identity must have at this run's parameters."""
    if "expected" in claim:
        if "expect" in claim:
            return f"{claim['expect'].split(' ')[0]} expected"
        if "ci" in claim:
            return "expected in CI"
        return f"±{claim['tolerance']:g} of expected" if "tolerance" in claim else ""
    if "expect" in claim:
        return str(claim["expect"])
    if ci is not None:
        return "paper in CI"
    if "tolerance" in claim:
        return f"±{claim['tolerance']:g}"
    return ""


def _reference_note(claim: Mapping, target: Any, verdict: str) -> str:
    """For a claim checked against another number than the paper's, which number that was.

    So a row never reads "paper 0.783, workbench 1.000, agrees" without saying
    what 1.000 was held to. A claim's own ``note`` says it better and wins.
    """
    if verdict not in ("agrees", "differs"):
        return ""
    op, _, threshold = str(claim.get("expect", "")).partition(" ")
    reference = target if target is not None else (float(threshold) if op == "==" else None)
    paper = claim["paper"]
    if reference is None or not isinstance(paper, (int, float)) or float(reference) == float(paper):
        return ""
    held = "its value at these parameters, " if target is not None else ""
    return f"checked against {held}{paper_text(reference)}, not the paper's {paper_text(paper)}"


def compare(chapter_id: str, measured: Mapping, params: Mapping | None = None) -> pd.DataFrame:
    """One row per claim: its kind, the paper's value beside the workbench's, a verdict.

    ``measured`` is the chapter's results dict (nested, as recorded, or the
    numbers about to be recorded); ``params`` defaults to ``measured["params"]``
    when that is present. Columns: ``claim, kind, source, paper, workbench, CI,
    rule, verdict, why`` (why a number is not measured), ``note`` (why the
    verdict is what it is), ``section`` (the chapter section that computes it),
    ``holds`` and ``asserted`` (what :func:`assert_holds` checks).
    """
    measured = to_jsonable(measured)  # numpy arrays and frames become lists, as in the results file
    if params is None:
        params = measured.get("params")
    entry = chapter_claims(chapter_id)
    inputs = input_parameters(chapter_id)
    rows = []
    for claim in entry["claims"]:
        value = _get(measured, claim["measured"])
        ci = _get(measured, claim.get("ci"))
        target = _target(claim, measured, params or {}) if claim.get("kind") == "identity" else None
        verdict = _verdict(claim, value, ci, target, params, inputs)
        rows.append(
            {
                "claim": claim["claim"],
                "kind": claim.get("kind", UNCLASSIFIED),
                "source": claim["source"],
                "paper": claim["paper"],
                "workbench": value,
                "CI": "" if ci is None or None in ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                "rule": _rule(claim, ci),
                "verdict": verdict,
                "why": _why(claim, value, chapter_id, inputs, measured) if verdict == "not measured" else "",
                "note": str(claim.get("note") or claim.get("reason") or _reference_note(claim, target, verdict)),
                "section": claim.get("section"),
                "holds": bool(claim.get("holds", False)),
                "asserted": _asserted(claim, params, inputs),
            }
        )
    return pd.DataFrame(rows)


def assert_holds(table: pd.DataFrame) -> None:
    """Raise ``AssertionError`` naming every asserted claim (exact, checkable here) that does not agree.

    A claim that is not measured (its section needed an input this run did not
    have) is not a failure.
    """
    asserted = table["asserted"] if "asserted" in table else table["holds"]
    bad = table[asserted.astype(bool) & table["verdict"].isin(["differs"])]
    if len(bad):
        raise AssertionError("claims not reproduced: " + "; ".join(bad["claim"]))


# --- the verdict box at the top of a chapter ------------------------------------


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>$|~#])")


def _md(text: str) -> str:
    """``text`` with every character that Markdown or MyST would read as markup escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def paper_text(value: Any) -> str:
    """The paper's value as printed (0.0416 stays 0.0416; 145.0 is 145)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return DASH if is_missing(value) else format_value(value, 3) if isinstance(value, (list, tuple)) else str(value)


def workbench_text(value: Any, ci: str = "") -> str:
    """The workbench's value with three decimals (a whole count as an integer), and its interval."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= 2:
        text = str(int(value))
    else:
        text = format_value(value, 3)
    return f"{text} {ci}" if ci else text


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a closing full stop."""
    text = text.strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")


def _line(row: Mapping) -> str:
    values = f"paper {paper_text(row['paper'])}, here {workbench_text(row['workbench'], row['CI'])}"
    note = _sentence(row["note"])
    return f"- {_md(row['claim'])} ({_md(values)}).{' ' + _md(note) if note else ''}"


def verdict_markdown(table: pd.DataFrame) -> str:
    """A short MyST admonition from a chapter's :func:`compare` table: what reproduces, what does not, why.

    Mechanism claims are the verdict: those that agree, those that differ, those
    not measured and why (the input the section needs), those tied to the
    paper's setting when the run used other parameters. Identities are counted
    apart as correctness checks, with any that fail named; the other kinds are
    counted in one line.
    """
    mechanism = table[table["kind"] == "mechanism"]
    groups = {v: mechanism[mechanism["verdict"] == v] for v in VERDICTS}
    lines = [":::{admonition} Verdict: what reproduces here", ":class: verdict tip", ""]
    if len(mechanism):
        checked = len(groups["agrees"]) + len(groups["differs"])
        lead = (
            f"**Mechanism claims checked here that agree with the paper: {len(groups['agrees'])} of {checked}**"
            if checked
            else "**No mechanism claim could be checked in this run**"
        )
        lines.append(lead + _not_counted(groups) + ".")
    else:
        lines.append("**This page reproduces no published number**: its claims are correctness checks.")
    sections = [
        ("Reproduces", "agrees"),
        ("Does not reproduce", "differs"),
        ("Not measured", "not measured"),
        ("Not at the paper's setting", "other parameters"),
        ("Reported without a rule", "reported"),
    ]
    for title, verdict in sections:
        rows = groups[verdict]
        if len(rows):
            lines += ["", f"**{title}:**", ""]
            lines += _missing_lines(rows) if verdict == "not measured" else [_line(r) for r in _records(rows)]
    for line in (_identity_line(table[table["kind"] == "identity"]), _others_line(table)):
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
        text += "; failing: " + "; ".join(_md(c) for c in failing["claim"])
    return text + "."


def _others_line(table: pd.DataFrame) -> str | None:
    counts = table["kind"].value_counts()
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
    from rcakit.chapters import ORDER

    rank = {cid: i for i, cid in enumerate(ORDER)}
    return sorted(chapter_ids, key=lambda cid: rank.get(cid, len(rank)))


def compare_all(results: Mapping[str, Mapping]) -> pd.DataFrame:
    """The closing page's table: every chapter's claims against its results file, in book order.

    Adds ``chapter``, ``paper_name`` (the paper's short name, or the chapter id
    for a page without a paper) and ``link`` (the section's address relative to
    the closing page) to :func:`compare`'s columns.
    """
    frames = []
    for chapter_id in in_book_order(_load()):
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


HEADLINE = ("agrees", "differs", "not measured", "other parameters")


def headline_counts(table: pd.DataFrame, by: str = "chapter") -> pd.DataFrame:
    """Per chapter (or per ``paper_name``), mechanism claims by verdict, and identity checks apart.

    Columns: the :data:`HEADLINE` verdicts of the mechanism claims, then
    ``identities hold`` and ``identities fail``. Other kinds are not counted.
    """
    groups = list(dict.fromkeys(table[by]))
    mech = table[table["kind"] == "mechanism"]
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
    mech = table[table["kind"] == "mechanism"]
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


SHOWN_COLUMNS = ("claim", "kind", "paper", "workbench", "rule", "verdict", "asserted")


def table(comparison: pd.DataFrame, columns: Iterable[str] = SHOWN_COLUMNS) -> Table:
    """A chapter's :func:`compare` table as its "Beside the paper" section shows it: the workbench's
    value beside its interval, fixed decimals, every claim in full (``rcakit.tables.format_table``)."""
    shown = comparison.assign(workbench=list(map(workbench_text, comparison["workbench"], comparison["CI"])))
    return format_table(shown[[c for c in columns if c in shown.columns]], index=False)
