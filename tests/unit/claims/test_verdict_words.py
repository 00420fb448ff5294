"""What a verdict word may say: "agrees" only where the rule tests a number the paper printed, and one count.

Each test holds the real ledger (``data/claims.yaml``) or a planted claim to the rule, so that a claim
that reads "agrees" beside a number its rule never tested is found.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rcakit import claims
from rcakit.claims import verdicts
from rcakit.claims.ledger import OPERATORS


def passing_value(claim):
    """A measured value (and interval) that meets the claim's rule, checked against the paper's number."""
    paper = claim.get("paper")
    if "trend" in claim:
        return ([0.5, 0.1] if claim["trend"] == "falls" else [0.1, 0.5]), None
    if "expect" in claim:
        op, _, threshold = claim["expect"].partition(" ")
        bound = float(threshold)
        return {"==": bound, ">=": bound, "<=": bound, ">": bound + 1, "<": bound - 1}[op], None
    if "ci" in claim:
        centre = paper if isinstance(paper, (int, float)) else 0.5
        return centre, [centre - 0.01, centre + 0.01]
    if "tolerance" in claim:
        return paper if isinstance(paper, (int, float)) else 0.0, None
    return 0.0, None


def verdict_of(claim, has_paper=True):
    value, ci = passing_value(claim)
    target = None
    if "expected" in claim:  # a claim held to its own value at these parameters: its bound, or the value
        target = float(claim["expect"].partition(" ")[2]) if "expect" in claim else value
    return verdicts._check(claim, value, ci, target, has_paper)


def every_claim():
    for cid in claims.chapters_with_claims():
        has_paper = claims.paper_name(cid) is not None
        for claim in claims.chapter_claims(cid)["claims"]:
            yield cid, has_paper, claim


def printed_number_meets_rule(claim) -> bool:
    """The rule tests the paper's printed number: its interval or tolerance is around it, or the printed
    number (or trend) itself meets the bound."""
    paper = claim.get("paper")
    if paper is None or "expected" in claim:
        return False
    if "trend" in claim:
        first, last = paper[0], paper[-1]
        return last < first if claim["trend"] == "falls" else last > first
    if "expect" in claim:
        op, _, threshold = claim["expect"].partition(" ")
        return bool(OPERATORS[op](paper, float(threshold)))
    return "ci" in claim or "tolerance" in claim


@pytest.mark.parametrize("cid,has_paper,claim", list(every_claim()), ids=lambda x: str(x)[:40])
def test_agrees_only_where_the_rule_tests_the_printed_number(cid, has_paper, claim):
    if "trend" not in claim and "expect" not in claim and "ci" not in claim and "tolerance" not in claim:
        return  # reported, no rule
    word = verdict_of(claim, has_paper)
    if word == "agrees":
        assert printed_number_meets_rule(claim), f"{cid}: {claim['claim']!r} agrees with a number it never tests"
        assert has_paper and claim["kind"] in ("mechanism", "published", "calibrated"), claim["claim"]
    else:
        assert word == "holds", (cid, claim["claim"], word)
        assert claim["kind"] in ("identity", "not comparable") or not has_paper or not printed_number_meets_rule(claim)


@pytest.mark.parametrize(
    "planted",
    [
        {"kind": "identity", "paper": 0.783, "expect": "== 1"},  # GCJR's MV beside a rule of its own
        {"kind": "mechanism", "paper": 0.91, "expect": ">= 1"},  # a bound the printed 0.91 does not meet
        {"kind": "mechanism", "paper": None, "expect": "> 0"},  # rcakit's own claim: nothing printed
        {"kind": "mechanism", "paper": 0.5, "tolerance": 0.1, "expected": "closed"},  # its own expected value
        {"kind": "mechanism", "paper": [0.1, 0.2], "trend": "falls"},  # a trend the printed numbers do not show
    ],
)
def test_a_planted_claim_that_tests_no_printed_number_never_reads_agrees(planted):
    claim = {"claim": "planted", "measured": "x", **planted}
    assert not verdicts.tests_paper(claim)
    assert verdict_of(claim) == "holds"
    assert claims.counts_as(claim) in ("identity", "own claim")


def test_the_check_would_catch_a_verdict_function_that_says_agrees_for_any_passing_rule(monkeypatch):
    monkeypatch.setattr(verdicts, "tests_paper", lambda claim: True)  # the bug: every passing rule "agrees"
    claim = {"claim": "MV", "kind": "identity", "paper": 0.783, "expect": "== 1", "measured": "x"}
    assert verdict_of(claim) == "agrees"
    with pytest.raises(AssertionError, match="agrees with a number it never tests"):
        test_agrees_only_where_the_rule_tests_the_printed_number("gcjr-ablations", True, claim)


def test_a_trend_compares_the_deepest_value_with_the_first():
    claim = {"claim": "absorbed falls", "kind": "mechanism", "paper": [0.15, 0.09, 0.0], "trend": "falls"}
    assert verdicts.tests_paper(claim)
    assert verdicts._check(claim, [0.3, 0.4, 0.1], None, None) == "agrees"
    assert verdicts._check(claim, [0.0, 0.0, 0.49], None, None) == "differs"  # the simulator's inversion
    assert verdicts._check(claim, [0.2, 0.1, 0.2], None, None) == "differs"  # flat is no fall


def test_the_real_trend_claims_read_the_outcomes_by_depth():
    table = claims.compare(
        "content-corruption",
        {"outcomes": {str(d): {"absorbed": a} for d, a in zip((1, 2, 3), (0.0, 0.0, 0.49), strict=True)}},
        {"hops": 3},
    ).set_index("claim")
    row = table.loc[table.index.str.startswith("The absorbed share falls")].iloc[0]
    assert row["verdict"] == "differs" and row["workbench"] == "0.000 → 0.000 → 0.490"
    assert row["paper"] == [0.15, 0.09, 0.0] and claims.paper_text(row["paper"]) == "0.15 → 0.09 → 0"
    assert row["rule"] == "falls from the first depth to the deepest"


def test_an_interval_too_wide_to_tell_reads_too_few_cases_and_is_counted_apart():
    claim = {"claim": "PA hop 1", "kind": "mechanism", "paper": 0.89, "ci": "x_ci", "measured": "x"}
    assert verdicts._check(claim, 0.5, [0.0, 1.0], None) == "too few cases"
    assert verdicts._check(claim, 0.5, [0.3, 0.7], None) == "differs"
    assert verdicts._check(claim, 0.9, [0.85, 0.95], None) == "agrees"
    assert not math.isclose(verdicts.WIDE_INTERVAL, 1.0)
    row = {"claim": "c", "kind": "mechanism", "paper": 0.89, "verdict": "too few cases", "why": ""}
    table = pd.DataFrame([row | {"counts_as": "reproduction", "chapter": "x"}])
    counts = claims.tally(table, "chapter").loc["x"]
    assert (counts["too few cases"], counts["agrees"], counts["differs"]) == (1, 0, 0)


def test_every_page_counts_with_one_function():
    """The verdict box, the closing page's headline and summary, and the landing page all read tally."""
    table = claims.compare_all({})
    table.loc[table["counts_as"] == "reproduction", "verdict"] = "agrees"
    table.loc[table["counts_as"] == "own claim", "verdict"] = "holds"
    totals = claims.totals(table)
    assert claims.headline_numbers(table)["agrees"] == totals["agrees"] == (table["counts_as"] == "reproduction").sum()
    by_chapter = claims.tally(table, "chapter")
    for cid, group in table.groupby("chapter"):
        box = claims.verdict_markdown(group)
        agrees = by_chapter.loc[cid, "agrees"]
        if agrees:
            assert f"agree with the paper: {agrees} of {agrees}**" in box, cid
        own = by_chapter.loc[cid, "own claims"]
        if own and group["has_paper"].any():
            assert f"that hold: {own} of {own}" in box, cid
    summary = claims.mechanism_summary(table)
    for cid in summary.index:
        n = by_chapter.loc[cid, "agrees"]
        assert summary.loc[cid, "reproductions that agree"] == (f"{n} of {n}" if n else "—")
    assert f"in this build, {totals['agrees']} of the {totals['agrees']}" in claims.findings_markdown(table)


def test_the_short_verdict_is_at_most_two_lines_and_counts_as_the_box_does():
    table = claims.compare_all({})
    for cid, group in table.groupby("chapter"):
        group = group.copy()
        group.loc[group["counts_as"] == "reproduction", "verdict"] = ["agrees", "differs"] * (
            int((group["counts_as"] == "reproduction").sum()) // 2
        ) + ["agrees"] * (int((group["counts_as"] == "reproduction").sum()) % 2)
        short = claims.short_verdict_markdown(group)
        assert 1 <= len(short.splitlines()) <= 2, cid  # the page adds the third, why
        first_line = claims.verdict_markdown(group).splitlines()[3]
        assert short.splitlines()[0] == f"- {first_line}", cid
