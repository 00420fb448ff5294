"""The verdict rules: how a chapter's numbers compare with the paper's, claim by claim.

A claim's verdict follows the first rule it has (the claims come from
:mod:`rcakit.claims.ledger`):

- ``expect``: a comparison the measured value must satisfy, e.g. ``">= 0.45"``;
- ``ci``: the dotted key of a measured ``[lo, hi]``; agrees if the paper's value is inside;
- ``tolerance``: agrees if ``|measured - paper| <= tolerance``;
- ``trend`` (``falls`` or ``rises``): ``measured`` is a list of keys, one per
  depth, and the rule compares the deepest value with the first;
- otherwise the row is shown with the verdict ``reported``.

What a verdict word means (:data:`VERDICTS`):

- ``agrees`` / ``differs``: only for a claim whose rule tests a number the
  paper printed (:func:`tests_paper`): the paper's value inside the run's
  interval, within the tolerance of it, a bound the printed value itself meets
  (a direction: ``> 0`` for a printed gap of 0.27), or the printed numbers'
  trend;
- ``holds`` / ``fails``: every other rule, checked against the claim's own
  value (an identity's expected value, rcakit's own claim with no printed
  number, a bound the printed number does not meet, such as ``>= 1`` beside a
  printed 0.91);
- ``too few cases``: an interval wider than :data:`WIDE_INTERVAL` tells
  neither way;
- ``not measured``, ``other parameters``, ``reported``: below.

Each claim says what kind of agreement it can be (``kind``, one of
:data:`KINDS`): an ``identity`` holds by construction
when the code is correct (a correctness check, not a reproduction); a
``mechanism`` claim is the workbench's own mechanism reproducing the paper
without being built to; a ``calibrated`` one compares against a number a
generator was fitted to; a ``published`` one is recomputed from the paper's
own tables; ``not comparable`` is shown for context. ``section`` is the ``##``
heading of the chapter section that computes the claim; the closing page links
to it. ``note`` (``reason`` for a not-comparable claim) says in one line why
the verdict is what it is; the chapter's verdict box shows it.

When a verdict can be given:

- A claim whose number was not recorded is ``not measured``. When the section
  that computes it needs an input the run did not have (a data set or a
  language model: a ``needs`` list of parameter names, or a ``when`` on such a
  parameter), the row says so (:mod:`rcakit.claims.needs`); "not measured" is
  never counted as disagreeing.
- ``when`` (e.g. ``{q: 0.3}``) ties a claim to the paper's setting: under
  other parameters its verdict is ``other parameters``. A claim checked against
  a closed form is checked at any parameters: ``expected`` names the recorded
  key (or ``params.<name>``) of the value it must have at this run's
  parameters, used in place of the paper's value or the ``expect`` threshold,
  and ``when`` then only says where the paper's number applies. Such a claim is
  an ``identity`` when its rule is exact, a ``mechanism`` when it is an
  interval a correct run misses at some seeds. A claim whose ``expected`` value
  was not recorded is ``not measured``, never checked against the paper's
  number. An identity with a ``when`` and no ``expected`` is a scoped one (it
  holds for ``agent: rule``, say); outside its scope it reads ``other parameters``.
- A row checked against another number than the paper's (``expected``, or an
  ``expect ==`` threshold) says which in its ``note`` when the claim has none.

Claims marked ``holds: true`` are the ones the workbench is meant to reproduce.
:func:`assert_holds` raises only for those that hold for every valid parameter
value and seed (:func:`is_exact`): identities and recomputed published numbers
with an exact rule. A statistical claim (an interval, a tolerance on an
estimate, a mechanism) gets its verdict and never stops a chapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit.claims.ledger import OPERATORS, UNCLASSIFIED, chapter_claims, paper_name
from rcakit.claims.needs import input_parameters, why_missing
from rcakit.results import measured_value, to_jsonable
from rcakit.tables import DASH, format_value, is_missing

VERDICTS = ("agrees", "differs", "too few cases", "holds", "fails", "not measured", "other parameters", "reported")
PASSED = ("agrees", "holds")
FAILED = ("differs", "fails")
EXACT_TOLERANCE = 1e-6  # a tolerance at most this large is an equality up to rounding, not a statistical margin
# An interval wider than this (half of a rate's whole range) tells neither way: at 95% a Wilson interval is
# that wide with fewer than about 15 cases at a rate near one half. Its claim reads "too few cases".
WIDE_INTERVAL = 0.5
TRENDS = ("falls", "rises")


def paper_text(value: Any) -> str:
    """The paper's value as printed (0.0416 stays 0.0416; 145.0 is 145; 178137 is 178,137), and a computed
    expected value with at most six significant digits (0.24499999999999997 is 0.245)."""
    if is_missing(value):
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):  # a trend's values, first depth to deepest
        return " → ".join(paper_text(v) for v in value)
    return format_value(value, 3) if isinstance(value, int) else str(value)


def trend_text(values: Any) -> str:
    """A trend's values, first depth to deepest: ``0.00 → 0.00 → 0.49``."""
    return " → ".join(workbench_text(v) for v in values)


def workbench_text(value: Any, ci: str = "") -> str:
    """The workbench's value with three decimals (a whole count as an integer), and its interval."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= 2:
        text = str(int(value))
    else:
        text = format_value(value, 3)
    return f"{text} {ci}" if ci else text


def _get(tree: Mapping[str, Any], key: str | list[str] | None) -> Any:
    """The value under a dotted key; for a list of keys (a ``trend`` claim's depths), the list of their
    values, None if any is missing."""
    if key is None:
        return None
    if isinstance(key, list):
        values = [_get(tree, k) for k in key]
        return None if any(v is None for v in values) else values
    try:
        value = measured_value(tree, key)  # a value of the wrong type is an error, not a verdict
    except (KeyError, IndexError, TypeError):
        return None
    return None if is_missing(value) else value


def _setting(claim: Mapping[str, Any], inputs: Mapping[str, str]) -> dict[str, Any]:
    """The part of ``when`` that is the paper's setting (not an input the section needs)."""
    return {k: v for k, v in claim.get("when", {}).items() if k not in inputs}


def _target(claim: Mapping[str, Any], measured: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """The value an identity must have at these parameters (its ``expected`` key), else None."""
    key = claim.get("expected")
    if key is None:
        return None
    if key.startswith("params."):
        return params.get(key.removeprefix("params."))
    return _get(measured, key)


def _follows(trend: str, values: Any) -> bool:
    """Whether ``values`` (first depth to deepest) fall or rise from the first to the last."""
    first, last = float(values[0]), float(values[-1])
    return last < first if trend == "falls" else last > first


def tests_paper(claim: Mapping[str, Any]) -> bool:
    """Whether the claim's rule tests a number the paper printed, so that its verdict may read "agrees".

    The paper's value must be printed (``paper`` not null) and the rule held
    against it: an interval or a tolerance around it, an ``expect`` bound that
    the printed number itself meets (the paper's direction), or a ``trend``
    that the printed numbers follow. An identity, a claim checked against its
    own ``expected`` value, or a bound the printed number does not meet tests
    the code or rcakit's own claim, never the paper.
    """
    paper = claim.get("paper")
    if paper is None or claim.get("kind") in ("identity", "not comparable") or "expected" in claim:
        return False
    if "trend" in claim:
        return isinstance(paper, list) and len(paper) > 1 and _follows(claim["trend"], paper)
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        return isinstance(paper, (int, float)) and bool(OPERATORS[op](paper, float(threshold)))
    return isinstance(paper, (int, float)) and ("ci" in claim or "tolerance" in claim)


def _passes(claim: Mapping[str, Any], value: Any, ci: Any, target: Any) -> bool | None:
    """Whether the value meets the claim's rule (against ``target`` when it is given); None without a rule."""
    reference = claim["paper"] if target is None else target
    if "trend" in claim:
        return _follows(claim["trend"], value)
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        bound = float(threshold) if target is None else float(target)
        return bool(OPERATORS[op](value, bound))
    if ci is not None and None not in ci:
        return bool(ci[0] <= reference <= ci[1])
    if "tolerance" in claim:
        return bool(abs(value - reference) <= claim["tolerance"])
    return None


def _check(claim: Mapping[str, Any], value: Any, ci: Any, target: Any, has_paper: bool = True) -> str:
    """The verdict by the claim's rule: agrees / differs when it tests the paper's printed number, holds /
    fails otherwise, too few cases when its interval is wider than :data:`WIDE_INTERVAL`, reported
    without a rule."""
    passed = _passes(claim, value, ci, target)
    if passed is None:
        return "reported"
    paper = has_paper and tests_paper(claim) and target is None
    if paper and "ci" in claim and ci is not None and None not in ci and ci[1] - ci[0] > WIDE_INTERVAL:
        return "too few cases"
    return ("agrees" if passed else "differs") if paper else ("holds" if passed else "fails")


def _verdict(
    claim: Mapping[str, Any],
    value: Any,
    *,
    ci: Any,
    target: Any,
    params: Mapping[str, Any] | None,
    inputs: Mapping[str, str],
    has_paper: bool = True,
) -> str:
    if value is None or ("expected" in claim and target is None):
        return "not measured"
    setting = _setting(claim, inputs)
    off_setting = params is not None and any(params.get(k) != v for k, v in setting.items())
    if off_setting and "expected" not in claim:
        return "other parameters"
    return _check(claim, value, ci, target, has_paper)


def is_exact(claim: Mapping[str, Any]) -> bool:
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


def _asserted(claim: Mapping[str, Any], params: Mapping[str, Any] | None, inputs: Mapping[str, str]) -> bool:
    """``holds`` and exact, and checkable at these parameters."""
    if not (claim.get("holds") and is_exact(claim)):
        return False
    setting = _setting(claim, inputs)
    on_setting = params is None or all(params.get(k) == v for k, v in setting.items())
    return on_setting or "expected" in claim


_OPERATOR_TEXT = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "=", "!=": "≠"}


def _number(value: Any) -> str:
    return paper_text(value) if not isinstance(value, float) else format_value(value, 3).rstrip("0").rstrip(".")


def _rule(claim: Mapping[str, Any], ci: Any, target: Any = None) -> str:
    """The rule in words, as the verdict box and the tables show it beside the verdict.

    ``target`` is the value an identity must have at this run's parameters (its
    ``expected`` key), shown with the rule; a one-sided comparison says it is a
    bound; an interval or a tolerance says what it is held against.
    """
    held = "its expected value at these parameters"
    held = f"{_number(target)} ({held})" if target is not None else held
    if "trend" in claim:
        return f"{claim['trend']} from the first depth to the deepest"
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        sign = _OPERATOR_TEXT.get(op, op)
        if "expected" in claim:
            return f"{sign} {held}"
        if op == "==":
            return f"exactly {threshold}"
        return f"{sign} {threshold} (one-sided bound)"
    if ci is not None and None not in ci:
        return f"{held} inside the 95% interval" if "expected" in claim else "paper's value inside the 95% interval"
    if "tolerance" in claim:
        return f"within ±{claim['tolerance']:g} of " + (held if "expected" in claim else "the paper's value")
    return ""


def _reference_note(claim: Mapping[str, Any], target: Any, verdict: str) -> str:
    """For a claim checked against another number than the paper's, which number that was.

    So a row never reads "paper 0.783, workbench 1.000, agrees" without saying
    what 1.000 was held to. A claim's own ``note`` says it better and wins.
    """
    if verdict == "too few cases":
        return f"the interval is wider than {WIDE_INTERVAL:g}: it tells neither way"
    if verdict not in ("agrees", "differs", "holds", "fails"):
        return ""
    op, _, threshold = str(claim.get("expect", "")).partition(" ")
    reference = target if target is not None else (float(threshold) if op == "==" else None)
    paper = claim["paper"]
    if reference is None or not isinstance(paper, (int, float)) or float(reference) == float(paper):
        return ""
    held = "its value at these parameters, " if target is not None else ""
    return f"checked against {held}{paper_text(reference)}, not the paper's {paper_text(paper)}"


def _note(claim: Mapping[str, Any], target: Any, verdict: str) -> str:
    """The claim's own note (or reason), else which number the rule held it to; an interval too wide to tell
    says so first."""
    own = str(claim.get("note") or claim.get("reason") or "")
    if verdict == "too few cases":
        return _reference_note(claim, target, verdict) + (f". {own}" if own else "")
    return own or _reference_note(claim, target, verdict)


COUNTS_AS = ("reproduction", "own claim", "identity", "published", "calibrated", "context")


def counts_as(claim: Mapping[str, Any], has_paper: bool = True) -> str:
    """Where a claim is counted (:data:`COUNTS_AS`): a mechanism claim that tests a number its paper printed
    is a ``reproduction``; any other mechanism claim is rcakit's ``own claim``; a not-comparable claim is
    ``context``; the other kinds are counted under their own name."""
    kind = str(claim.get("kind", UNCLASSIFIED))
    if kind == "mechanism":
        return "reproduction" if has_paper and tests_paper(claim) else "own claim"
    return {"not comparable": "context"}.get(kind, kind)


def _why(
    claim: Mapping[str, Any], value: Any, *, chapter_id: str, inputs: Mapping[str, str], measured: Mapping[str, Any]
) -> str:
    """Why a claim is not measured: its section's missing input, or its identity's missing expected value."""
    if value is not None:
        return f"its value at these parameters ({claim['expected']}) was not recorded"
    return why_missing(chapter_id, claim, inputs, measured)


def compare(chapter_id: str, measured: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per claim: its kind, the paper's value beside the workbench's, a verdict.

    ``measured`` is the chapter's results dict (nested, as recorded, or the
    numbers about to be recorded); ``params`` defaults to ``measured["params"]``
    when that is present. Columns: ``claim, kind, source, paper, workbench, CI,
    rule, verdict, why`` (why a number is not measured), ``note`` (why the
    verdict is what it is), ``section`` (the chapter section that computes it),
    ``holds`` and ``asserted`` (what :func:`assert_holds` checks), ``has_paper`` (False on a page that
    reproduces no paper: its claims are never counted as agreeing with one).
    """
    measured = to_jsonable(measured)  # numpy arrays and frames become lists, as in the results file
    if params is None:
        params = measured.get("params")
    entry = chapter_claims(chapter_id)
    inputs = input_parameters(chapter_id)
    has_paper = paper_name(chapter_id) is not None
    rows = []
    for claim in entry["claims"]:
        value = _get(measured, claim["measured"])
        ci = _get(measured, claim.get("ci"))
        target = _target(claim, measured, params or {})
        verdict = _verdict(claim, value, ci=ci, target=target, params=params, inputs=inputs, has_paper=has_paper)
        rows.append(
            {
                "claim": claim["claim"],
                "kind": claim.get("kind", UNCLASSIFIED),
                "source": claim["source"],
                "paper": claim["paper"],
                "workbench": trend_text(value) if "trend" in claim and value is not None else value,
                "CI": "" if ci is None or None in ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                "rule": _rule(claim, ci, target),
                "verdict": verdict,
                "why": (
                    _why(claim, value, chapter_id=chapter_id, inputs=inputs, measured=measured)
                    if verdict == "not measured"
                    else ""
                ),
                "note": _note(claim, target, verdict),
                "section": claim.get("section"),
                "holds": bool(claim.get("holds", False)),
                "asserted": _asserted(claim, params, inputs),
                "has_paper": has_paper,
                "tests_paper": has_paper and tests_paper(claim),
                "counts_as": counts_as(claim, has_paper),
            }
        )
    return pd.DataFrame(rows)


def assert_holds(table: pd.DataFrame) -> None:
    """Raise ``AssertionError`` naming every asserted claim (exact, checkable here) that does not agree.

    A claim that is not measured (its section needed an input this run did not
    have) is not a failure.
    """
    asserted = table["asserted"] if "asserted" in table else table["holds"]
    bad = table[asserted.astype(bool) & table["verdict"].isin(FAILED)]
    if len(bad):
        raise AssertionError("claims not reproduced: " + "; ".join(bad["claim"]))
