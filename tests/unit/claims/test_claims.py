"""rcakit.claims: kinds, sections and links, verdict accounting, the verdict box, the HTML pages; rcakit.tables."""

import re

import jupytext
import pandas as pd
import pytest
import yaml

from rcakit import RcakitError, claims, tables
from rcakit.book import registry, runner
from rcakit.chapters import claims as claims_page
from rcakit.chapters import intro

PAPER_CHAPTERS = [cid for cid in registry.ORDER if cid != "claims"]


def headings(chapter_id: str) -> list[str]:
    """The ``##`` heading texts of a chapter's markdown cells."""
    nb = jupytext.read(registry.notebook_path(chapter_id))
    return [
        line[3:].strip()
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("## ")
    ]


@pytest.mark.parametrize("chapter_id", PAPER_CHAPTERS)
def test_every_claim_has_a_valid_kind(chapter_id):
    missing = [c["claim"] for c in claims.chapter_claims(chapter_id)["claims"] if c.get("kind") not in claims.KINDS]
    assert not missing, f"{chapter_id}: claims without a valid kind: {missing}"


@pytest.mark.parametrize("chapter_id", PAPER_CHAPTERS)
def test_every_claim_names_a_section_heading_of_its_chapter(chapter_id):
    known = headings(chapter_id)
    assert len(known) == len(set(known)), f"{chapter_id}: duplicate ## headings would get numbered anchors"
    bad = [
        (c["claim"], c.get("section"))
        for c in claims.chapter_claims(chapter_id)["claims"]
        if c.get("section") not in known
    ]
    assert not bad, f"{chapter_id}: claims whose section is not a ## heading: {bad}"


@pytest.fixture
def fake_claims(tmp_path, monkeypatch):
    """A project root whose data/claims.yaml the test writes; returns the writer."""
    from rcakit.paths import project_root

    (tmp_path / "data").mkdir()
    (tmp_path / "notebooks").symlink_to(project_root() / "notebooks")  # the chapters' declared inputs
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))

    def write(entries):
        """The entries, each with a paper behind it unless it names its own (``"paper": "No paper: …"``)."""
        path = tmp_path / "data" / "claims.yaml"
        entries = {cid: {"paper": "P: a paper", **entry} for cid, entry in entries.items()}
        path.write_text(yaml.safe_dump(entries), encoding="utf-8")
        return path

    return write


def claim(**kw):
    base = {"claim": "c", "source": "§1", "paper": 1.0, "measured": "x", "kind": "mechanism", "section": "S"}
    return base | kw


def test_unknown_kind_is_one_line_naming_chapter_and_claim(fake_claims):
    fake_claims({"car-shapley": {"claims": [claim(claim="phi zero", kind="mechanistic")]}})
    with pytest.raises(RcakitError) as err:
        claims.compare("car-shapley", {"x": 1.0})
    message = str(err.value)
    assert "\n" not in message
    assert "car-shapley" in message and "'phi zero'" in message and "'mechanistic'" in message


def test_bad_expect_rule_is_one_line_naming_the_claim(fake_claims):
    fake_claims({"car-shapley": {"claims": [claim(claim="locus", expect="=> 1")]}})
    with pytest.raises(RcakitError, match="car-shapley: claim 'locus': expect '=> 1'"):
        claims.chapter_claims("car-shapley")


def test_missing_kind_is_shown_as_unclassified(fake_claims):
    fake_claims({"car-shapley": {"claims": [{k: v for k, v in claim().items() if k != "kind"}]}})
    assert claims.compare("car-shapley", {"x": 1.0})["kind"].tolist() == [claims.UNCLASSIFIED]


def test_an_edited_claims_file_is_read_again(fake_claims):
    import os

    path = fake_claims({"car-shapley": {"claims": [claim(paper=1.0)]}})
    assert claims.compare("car-shapley", {})["paper"].tolist() == [1.0]
    fake_claims({"car-shapley": {"claims": [claim(paper=2.0)]}})
    os.utime(path, ns=(path.stat().st_mtime_ns + 10**9,) * 2)  # a later modification time
    assert claims.compare("car-shapley", {})["paper"].tolist() == [2.0]


def test_compare_returns_the_kind_and_takes_numpy_values(fake_claims):
    import numpy as np

    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(claim="phi_0", measured="phi.0", ci="phi_ci.0", paper=0.44),
                    claim(claim="phi_2", measured="phi.2", ci="phi_ci.2", paper=0.0),
                    claim(claim="efficiency", kind="identity", measured="efficiency", paper=0.91, tolerance=1e-9),
                ]
            }
        }
    )
    measured = {
        "phi": np.array([0.45, 0.45, 0.0]),
        "phi_ci": np.array([[0.43, 0.47]] * 3),
        "efficiency": np.float64(0.91),
    }
    table = claims.compare("car-shapley", measured, {"q": 0.3}).set_index("claim")
    assert list(table.columns[:1]) == ["kind"]
    assert table.loc["efficiency", "kind"] == "identity" and table.loc["efficiency", "verdict"] == "holds"
    assert table.loc["phi_0", "verdict"] == "agrees" and table.loc["phi_0", "CI"] == "[0.430, 0.470]"  # numpy CI
    assert table.loc["phi_2", "verdict"] == "differs"  # 0 outside [0.43, 0.47]


def test_section_anchor_is_the_id_the_markdown_parser_gives_the_heading():
    from docutils import nodes
    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    texts = [
        "Monte-Carlo Shapley splits a two-step interaction",
        "`rule_based` reads the trace (hop 1)",
        "3 hops, 0.91 at φ",
        "Beside the paper",
    ]
    source = "# Page\n\n" + "".join(f"## {t}\n\ntext\n\n" for t in texts)
    doc = publish_doctree(source, parser=Parser(), settings_overrides={"report_level": 5})
    ids = [section["ids"][0] for section in doc.findall(nodes.section) if section[0].astext() != "Page"]
    assert ids == [claims.section_anchor(t) for t in texts]
    anchor = "monte-carlo-shapley-splits-a-two-step-interaction"
    assert claims.section_link("car-shapley", texts[0]) == f"car_shapley.html#{anchor}"
    assert claims.section_link("car-shapley", None) == "car_shapley.html"


def test_a_claim_of_a_section_on_the_audit_page_links_that_page():
    """The support-agent report and its subsection are marked for car-shapley's audit page (its notebook)."""
    audit = "car_shapley_audit.html#replay-action-match-rate"
    assert claims.section_link("car-shapley", "Replay action-match rate") == audit
    assert claims.section_link("car-shapley", "The efficiency sum telescopes").startswith("car_shapley.html#")


def test_compare_all_links_car_claims_to_their_sections():
    table = claims.compare_all({})
    car = table[table["chapter"] == "car-shapley"].set_index("claim")
    assert car.loc["Contrastive locus is the pivotal middle step (index 1)", "link"] == (
        "car_shapley.html#the-contrastive-estimator-finds-the-pivotal-step"
    )
    assert list(dict.fromkeys(table["chapter"])) == [c for c in registry.ORDER if c in set(table["chapter"])]
    assert set(table["verdict"]) == {"not measured"}


def toy_table():
    rows = [
        ("a", "mechanism", "agrees", True),
        ("a", "mechanism", "differs", False),
        ("a", "identity", "holds", True),
        ("b", "published", "agrees", False),
        ("b", "not comparable", "reported", False),
        ("b", "mechanism", "other parameters", True),
        ("b", "mechanism", "not measured", False),
    ]
    return pd.DataFrame(
        [
            {
                "chapter": c,
                "paper_name": c.upper(),
                "claim": f"{c}{i} <x> & y",
                "kind": k,
                "source": "§1",
                "paper": 0.0416,
                "workbench": [0.1, 2],
                "CI": "",
                "rule": "> 0",
                "verdict": v,
                "why": "needs a language model (parameter provider)" if v == "not measured" else "",
                "section": "S",
                "note": "why it is so" if i == 1 else "",
                "holds": h,
                "asserted": h and k == "identity",
                "link": f"{c}.html#s",
            }
            for i, (c, k, v, h) in enumerate(rows)
        ]
    )


# --- verdict accounting ------------------------------------------------------


def test_not_measured_is_never_counted_as_disagreeing():
    table = toy_table()
    heads = claims.headline_counts(table)
    counted = heads.loc["b", ["reproductions", "agrees", "differs", "not measured", "other parameters"]]
    assert counted.to_dict() == {
        "reproductions": 2,
        "agrees": 0,
        "differs": 0,
        "not measured": 1,
        "other parameters": 1,
    }
    assert heads.loc["b", ["identities hold", "identities fail"]].tolist() == [0, 0]
    summary = claims.mechanism_summary(table)
    assert summary.loc["b", "reproductions that agree"] == "—"  # neither unmeasured nor off-setting is counted
    assert summary.loc["a", "reproductions that agree"] == "1 of 2"
    assert summary.loc["a", "identity checks that hold"] == "1 of 1"
    assert summary.loc["b", "by kind"] == "2 mechanism, 1 published, 1 not comparable"


def test_verdict_counts_list_each_kinds_verdicts_in_words_one_column_per_kind():
    counts = claims.verdict_counts(toy_table())
    assert list(counts.columns) == ["mechanism", "published", "identity", "not comparable"]  # mechanism first
    assert counts.loc["a", "mechanism"] == "1 agrees, 1 differs"
    assert counts.loc["b", "mechanism"] == "1 not measured, 1 other parameters"  # in the verdicts' order
    assert counts.loc["a", "published"] == "—" and counts.loc["b", "identity"] == "—"


def test_headline_counts_only_mechanism_claims_and_identities_apart():
    table = toy_table()
    by_paper = claims.headline_counts(table, by="paper_name")
    assert list(by_paper.index) == ["A", "B"]
    assert int(by_paper[list(claims.HEADLINE)].to_numpy().sum()) == 4  # the four mechanism rows, nothing else
    assert by_paper.loc["A", "identities hold"] == 1


def test_an_identity_is_checked_at_any_parameters_against_its_expected_value(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(
                        claim="closed form",
                        kind="identity",
                        paper=0.455,
                        tolerance=1e-12,
                        when={"q": 0.3},
                        expected="closed",
                        holds=True,
                    ),
                    claim(claim="tied", kind="mechanism", paper=0.455, tolerance=0.01, when={"q": 0.3}),
                ]
            }
        }
    )
    at_paper = claims.compare("car-shapley", {"x": 0.455, "closed": 0.455}, {"q": 0.3}).set_index("claim")
    elsewhere = claims.compare("car-shapley", {"x": 0.375, "closed": 0.375}, {"q": 0.5}).set_index("claim")
    wrong = claims.compare("car-shapley", {"x": 0.455, "closed": 0.375}, {"q": 0.5}).set_index("claim")
    assert at_paper["verdict"].tolist() == ["holds", "agrees"]  # an identity holds; the tolerance tests the paper
    assert elsewhere.loc["closed form", "verdict"] == "holds"  # never "other parameters"
    assert elsewhere.loc["tied", "verdict"] == "other parameters"  # tied to the paper's setting
    assert wrong.loc["closed form", "verdict"] == "fails"
    assert elsewhere.loc["closed form", "asserted"] and elsewhere.loc["closed form", "rule"] == (
        "within ±1e-12 of 0.375 (its expected value at these parameters)"
    )


def test_expected_can_name_a_parameter_and_replaces_an_expect_threshold(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(
                        claim="rate", kind="identity", paper=0.3, expect="== 0.3", when={"q": 0.3}, expected="params.q"
                    )
                ]
            }
        }
    )
    assert claims.compare("car-shapley", {"x": 0.5}, {"q": 0.5})["verdict"].tolist() == ["holds"]
    assert claims.compare("car-shapley", {"x": 0.3}, {"q": 0.5})["verdict"].tolist() == ["fails"]
    assert claims.compare("car-shapley", {"x": 0.3}, {"q": 0.5})["rule"].tolist() == [
        "= 0.5 (its expected value at these parameters)"
    ]


def test_an_interval_identity_holds_its_expected_value(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(claim="rate", kind="identity", paper=0.3, ci="x_ci", expected="params.p_bad", holds=True)
                ]
            }
        }
    )
    table = claims.compare("car-shapley", {"x": 0.49, "x_ci": [0.45, 0.55]}, {"p_bad": 0.5})
    assert table[["verdict", "rule", "asserted"]].values.tolist() == [
        ["holds", "0.5 (its expected value at these parameters) inside the 95% interval", False]
    ]
    assert claims.compare("car-shapley", {"x": 0.3, "x_ci": [0.25, 0.35]}, {"p_bad": 0.5})["verdict"][0] == "fails"


def test_an_identity_whose_expected_value_was_not_recorded_is_not_measured(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(
                        claim="share", kind="identity", paper=1.0, tolerance=1e-9, expected="share_of_hop1", holds=True
                    )
                ]
            }
        }
    )
    table = claims.compare("car-shapley", {"x": 0.53})
    assert table["verdict"].tolist() == ["not measured"]  # never checked against the paper's 1.0 instead
    assert table["why"].tolist() == ["its value at these parameters (share_of_hop1) was not recorded"]
    claims.assert_holds(table)


def test_a_section_that_needs_data_or_a_model_is_not_measured_and_says_why(fake_claims):
    fake_claims(
        {
            "longrca-strata": {
                "claims": [
                    claim(claim="loaded", kind="identity", expect="== 58", when={"who_and_when_path": "who-and-when"}),
                    claim(claim="llm", kind="mechanism", needs="provider"),
                    claim(claim="plain", kind="mechanism", measured="y"),
                ]
            }
        }
    )
    params = {"who_and_when_path": "elsewhere", "provider": "none"}
    table = claims.compare("longrca-strata", {"z": 1}, params).set_index("claim")
    assert table["verdict"].tolist() == ["not measured"] * 3
    assert table.loc["loaded", "why"] == "needs the data set who-and-when (parameter who_and_when_path)"
    assert table.loc["llm", "why"] == "needs a language model (parameter provider)"
    assert table.loc["plain", "why"] == "not recorded by this run"
    assert claims.compare("longrca-strata", {}, params).loc[2, "why"] == "the chapter has not run"
    # an input named in `when` is not the paper's setting: a run on another path is still checked
    measured = claims.compare("longrca-strata", {"x": 58}, params).set_index("claim")
    assert measured.loc["loaded", "verdict"] == "holds"


def test_assert_holds_asserts_only_exact_claims_that_hold_for_every_seed(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(claim="exact", kind="identity", expect="== 1", holds=True),
                    claim(claim="interval", kind="identity", measured="y", ci="y_ci", holds=True),
                    claim(claim="estimate", kind="identity", measured="z", tolerance=0.03, holds=True),
                    claim(claim="mechanism", kind="mechanism", measured="w", expect=">= 0.5", holds=True),
                    claim(claim="bins", kind="published", measured="v", paper=0.241, tolerance=0.0005, holds=True),
                ]
            }
        }
    )
    wrong = {"x": 0, "y": 5, "y_ci": [4, 6], "z": 2, "w": 0.1, "v": 0.241}
    table = claims.compare("car-shapley", wrong).set_index("claim")
    assert table.loc[["exact", "interval", "estimate"], "verdict"].eq("fails").all()
    assert table.loc["mechanism", "verdict"] == "differs"  # a bound the paper's 1.0 meets: it tests the paper
    assert table["asserted"].to_dict() == {
        "exact": True,
        "interval": False,
        "estimate": False,
        "mechanism": False,
        "bins": True,
    }
    with pytest.raises(AssertionError, match="^claims not reproduced: exact$"):
        claims.assert_holds(table.reset_index())
    claims.assert_holds(claims.compare("car-shapley", wrong | {"x": 1}))  # statistical misses never raise
    claims.assert_holds(claims.compare("car-shapley", {}))  # nothing measured is no failure


def test_an_off_setting_identity_without_expected_is_not_asserted(fake_claims):
    fake_claims({"car-shapley": {"claims": [claim(kind="identity", expect="== 15", when={"r": 3}, holds=True)]}})
    table = claims.compare("car-shapley", {"x": 25}, {"r": 5})
    assert not table["asserted"].any()
    claims.assert_holds(table)
    with pytest.raises(AssertionError):
        claims.assert_holds(claims.compare("car-shapley", {"x": 25}, {"r": 3}))


def test_a_note_and_a_reason_both_reach_the_table(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(
                        claim="MV on OR cases",
                        kind="identity",
                        paper=0.783,
                        expect="== 1.0",
                        note="the paper's 0.783 is over all cases; on OR cases every run returns the pair",
                    ),
                    claim(claim="calls", kind="not comparable", reason="counting conventions differ"),
                ]
            }
        }
    )
    table = claims.compare("car-shapley", {"x": 1.0})
    assert table["note"].tolist() == [
        "the paper's 0.783 is over all cases; on OR cases every run returns the pair",
        "counting conventions differ",
    ]
    page = claims_page.every_claim_table(
        claims.compare_all({"car-shapley": {"x": 1.0}}).query("chapter == 'car-shapley'")
    )
    assert "<small>the paper&#x27;s 0.783 is over all cases" in page


# --- the verdict box ---------------------------------------------------------


def parse_myst(text: str):
    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    return publish_doctree(
        text,
        parser=Parser(),
        settings_overrides={"report_level": 5, "myst_enable_extensions": ["colon_fence", "dollarmath"]},
    )


def test_the_verdict_box_says_what_reproduces_what_does_not_and_why():
    text = claims.verdict_markdown(toy_table())
    assert text.startswith(":::{admonition}") and text.endswith(":::")
    assert "**Reproductions that agree with the paper: 1 of 2**" in text
    waiting = "1 waiting for a data set or a language model the run did not have"
    assert f"{waiting} and 1 away from the paper's setting, not counted either way" in text
    reproduces, differs = text.index("**Reproduces:**"), text.index("**Does not reproduce:**")
    assert reproduces < text.index("a0 ") < differs < text.index("a1 ")
    # the rule beside the values, then the note that says why
    assert "a1 \\<x\\> & y (paper 0.0416, here \\[0.100, 2\\]; rule: \\> 0). Why it is so." in text
    assert "- Needs a language model (parameter provider): b6 \\<x\\> & y." in text  # grouped by reason
    assert "**Correctness checks** (identities, not reproductions): 1 of 1 hold." in text
    assert "b4" not in text  # not comparable is only counted
    assert "**Recomputed from the paper's own data** (published numbers, not reproductions): 1 of 1 come out" in text
    assert "Also compared, not counted as reproductions: 1 not comparable" in text  # the published one counted once
    table = toy_table()
    table.loc[table["kind"] == "published", "verdict"] = "differs"
    assert "1 come out as printed; not as printed: b3 \\<x\\> & y (paper 0.0416" in claims.verdict_markdown(table)


def test_the_verdict_box_is_one_admonition_with_its_markup_escaped():
    from docutils import nodes

    table = toy_table()
    table.loc[0, "claim"] = "phi_0 * {glue:text}`x` $a_1$ [link](y)"
    doc = parse_myst(claims.verdict_markdown(table))
    (box,) = [n for n in doc.findall(nodes.Element) if "verdict" in n.get("classes", [])]
    assert "Verdict" in box.astext()
    assert "phi_0 * {glue:text}`x` a_1 [link](y)" in box.astext()  # shown as written, but the math
    assert [m.astext() for m in box.findall(nodes.math)] == ["a_1"]  # typeset
    assert not list(box.findall(nodes.reference))


def test_published_numbers_that_need_the_papers_data_say_so_in_the_box():
    table = toy_table()
    published = table["kind"] == "published"
    table.loc[published, ["verdict", "why"]] = ["not measured", "needs the data set x (parameter x_path)"]
    text = claims.verdict_markdown(table)
    assert (
        "**Recomputed from the paper's own data**: not in this run (needs the data set x (parameter x\\_path))." in text
    )
    assert "Also compared, not counted as reproductions: 1 not comparable (" in text  # not counted twice


def test_a_page_with_no_paper_says_what_holds_and_is_never_counted_as_a_reproduction():
    table = toy_table().assign(has_paper=False)
    text = claims.verdict_markdown(table)
    assert "Verdict: what holds here" in text and "agree with the paper" not in text
    table.loc[table["kind"] == "mechanism", "verdict"] = ["holds", "fails", "other parameters", "not measured"]
    text = claims.verdict_markdown(table)
    assert "**Holds:**" in text and "**Does not hold:**" in text and "Reproduces:" not in text
    assert "(here \\[0.100, 2\\]; rule: \\> 0)" in text  # no paper value where there is no paper
    with_paper = toy_table().assign(has_paper=True)
    both = pd.concat([with_paper, table.assign(chapter="c")], ignore_index=True)
    assert claims.headline_numbers(both)["reproductions"] == claims.headline_numbers(with_paper)["reproductions"] == 4


def test_each_rule_is_stated_in_words_with_its_kind_of_bound(fake_claims):
    fake_claims(
        {
            "car-shapley": {
                "claims": [
                    claim(claim="lower", kind="mechanism", paper=0.5, expect=">= 0.45"),
                    claim(claim="exact", kind="identity", paper=1, expect="== 1"),
                    claim(claim="near", kind="mechanism", paper=0.5, tolerance=0.05),
                    claim(claim="inside", kind="mechanism", paper=0.5, ci="x_ci"),
                ]
            }
        }
    )
    table = claims.compare("car-shapley", {"x": 0.5, "x_ci": [0.4, 0.6]}, {}).set_index("claim")
    assert table["rule"].to_dict() == {
        "lower": "≥ 0.45 (one-sided bound)",
        "exact": "exactly 1",
        "near": "within ±0.05 of the paper's value",
        "inside": "paper's value inside the 95% interval",
    }


def test_a_page_without_mechanism_claims_says_so():
    table = toy_table()
    table = table[table["kind"] != "mechanism"]
    text = claims.verdict_markdown(table)
    assert "reproduces no published number" in text and "Reproduces:" not in text


def test_glue_verdict_glues_markdown_and_displays_nothing(monkeypatch):
    import myst_nb
    from IPython.display import Markdown

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.update({name: (value, display)}))
    claims.glue_verdict(toy_table())
    value, display = glued["verdict"]
    assert glued["verdict_short"][0].data == claims.short_verdict_markdown(toy_table())
    claims.glue_verdict(toy_table(), "car-shapley")  # a chapter's: its why and the link to its audit
    assert glued["verdict_short"][0].data == claims.lecture_verdict_markdown(toy_table(), "car-shapley")
    assert isinstance(value, Markdown) and value.data == claims.verdict_markdown(toy_table()) and display is False


def test_the_first_screen_verdict_adds_the_chapters_why_and_links_its_audit(fake_claims):
    fake_claims({"car-shapley": {"why": "Because *the* SCMs are exact.", "protocol": True, "claims": [claim()]}})
    box = claims.lecture_verdict_markdown(toy_table(), "car-shapley")
    lines = box.splitlines()
    assert lines[:2] == [":::{admonition} Verdict", ":class: verdict tip"] and lines[-1] == ":::"
    body = [line for line in lines if line.startswith("- ")]
    assert body[:-1] == claims.short_verdict_markdown(toy_table()).splitlines()
    assert body[-1] == r"- **Why:** Because \*the\* SCMs are exact."  # the why is text, never markup
    assert "{ref}`the protocol <car-shapley-protocol>`, {ref}`every claim" in box and "<car-shapley-audit>`" in box
    fake_claims({"car-shapley": {"claims": [claim()]}})
    box = claims.lecture_verdict_markdown(toy_table(), "car-shapley")
    assert "Why" not in box and "protocol" not in box and "<car-shapley-audit>" in box


def test_a_why_of_several_lines_or_a_protocol_flag_not_a_boolean_is_one_line_naming_the_chapter(fake_claims):
    for bad in ({"why": "one\ntwo"}, {"why": ["a"]}, {"protocol": "yes"}):
        fake_claims({"car-shapley": {**bad, "claims": [claim()]}})
        with pytest.raises(RcakitError, match=r"^data/claims.yaml: car-shapley: why is one line"):
            claims.first_screen("car-shapley")


# --- the pages ---------------------------------------------------------------


def test_every_claim_table_shows_every_row_grouped_linked_and_coloured():
    from rcakit import plotting

    table = toy_table()
    page = claims_page.every_claim_table(table, {"a": "Chapter A"})
    assert page.count('<a href="a.html#s">') == 3 and page.count('<a href="b.html#s">') == 4
    assert page.count("<small>asserted</small>") == 1  # the asserted column, not holds
    assert "a0 &lt;x&gt; &amp; y" in page and "<x>" not in page  # claim text is escaped
    assert "Chapter A" in page and "(reproductions: 1 agree, 1 differ)" in page
    assert "(reproductions: 0 agree, 0 differ, 1 not measured, 1 other parameters)" in page
    kinds = re.findall(r'<tr class="claims-kind"><td colspan="4"><em>(\w[\w ]*)</em>', page)
    assert kinds == ["mechanism", "identity", "mechanism", "published", "not comparable"]  # a heading row per kind
    assert page.index("a0 ") < page.index("a2 ") < page.index("b5 ") < page.index("b3 ") < page.index("b4 ")
    assert plotting.VERDICT_COLOURS["agrees"] in page and plotting.VERDICT_COLOURS["differs"] in page
    assert "<small>needs a language model (parameter provider)</small>" in page
    assert "0.0416" in page and "[0.100, 2]" in page and "…" not in page and "..." not in page


def test_every_claim_table_of_the_real_claims_has_one_link_per_claim():
    table = claims.compare_all({})
    page = claims_page.every_claim_table(table)
    assert len(re.findall(r'<td[^>]*><a href="[a-z_]+\.html[^"]*">', page)) == len(table)
    assert "nan" not in page.lower().replace("nanc", "")


def test_changed_parameters_table_lists_only_values_that_differ_from_the_defaults():
    recorded = {
        "longrca-strata": {"params": {"seed": 0}},
        "car-shapley": {"params": {"q": 0.3, "n_permutations": 20, "seed": 0}},
    }
    table = claims_page.changed_parameters_table(recorded)
    assert table.to_dict("records") == [
        {"chapter": "car-shapley", "parameter": "n_permutations", "value": "20", "default": "80"}
    ]
    assert claims_page.changed_parameters_table({"car-shapley": {"params": {"q": 0.3}}}).empty


def test_missing_workbench_values_show_as_a_dash():
    table = toy_table()
    table["workbench"] = [float("nan"), None, 0.5, 1, 2, 3, None]
    page = claims_page.every_claim_table(table)
    assert "nan" not in page and "None" not in page and page.count("<td>—<br><small>rule: &gt; 0</small></td>") == 3


def test_the_palette_names_its_colours_for_captions():
    from rcakit import plotting

    assert plotting.colour("agrees") == plotting.colour("resisted") == plotting.GREEN
    assert plotting.colour_name("fault") == plotting.colour_name("differs") == "vermilion"
    assert plotting.tint("#000000", 0.5) == "#808080"
    with pytest.raises(KeyError, match="no colour for 'teal'"):
        plotting.colour("teal")
    from matplotlib.colors import to_hex

    plotting.set_theme()  # the figure cycle is the same palette: C3 is the vermilion of "differs"
    assert [to_hex(f"C{i}").upper() for i in (0, 2, 3, 7)] == [
        plotting.BLUE,
        plotting.GREEN,
        plotting.VERMILION,
        plotting.GREY,
    ]


# --- the table helper ----------------------------------------------------------


def test_format_table_fixed_decimals_dash_for_missing_nothing_truncated():
    import numpy as np

    frame = pd.DataFrame(
        {
            "share": [0.008772, 0.58, np.nan],
            "length": [145.0, 3.0, np.nan],
            "claim": ["x" * 300, None, "y"],
            "ci": [[0.1, 2], None, (1,)],
        }
    )
    table = tables.format_table(frame)
    html = table._repr_html_()
    assert "<td>0.009</td>" in html and "<td>0.580</td>" in html and "<td>145</td>" in html
    assert "x" * 300 in html and "…" not in html and "..." not in html
    assert "nan" not in html.lower() and "None" not in html and html.count("<td>—</td>") == 4
    assert "<th></th>" not in html  # a plain range index is not shown
    assert "x" * 300 in repr(table) and "NaN" not in repr(table)
    assert tables.format_table(frame, decimals={"share": 1})._repr_html_().count("<td>0.6</td>") == 1


def test_format_table_of_a_series_has_no_dtype_footer_and_keeps_its_labels():
    series = pd.Series([3, 5], index=pd.Index(["hop 1", "hop 2"], name="hop"), name="cases")
    html = tables.format_table(series)._repr_html_()
    assert "dtype" not in html and "Name:" not in html and "cases" in html and "hop 2" in html
    assert "dtype" not in repr(tables.format_table(series))


def test_format_table_shows_every_row_past_pandas_display_limit():
    frame = pd.DataFrame({"i": range(500)}, index=pd.RangeIndex(500))
    html = tables.format_table(frame)._repr_html_()
    assert html.count("<tr>") == 500 and "<td>499</td>" in html


def test_format_table_reads_as_prose_counts_separators_yes_no_and_words():
    import numpy as np

    frame = pd.DataFrame(
        {
            "failed_n": [10792.0, 84.0],
            "replays": [1234567, 3],
            "holds": [np.bool_(True), False],
            "setting": ["k", 12.0],
            "share": [0.245, 0.5],
        }
    )
    text = repr(tables.format_table(frame))
    header = text.splitlines()[0]
    assert "failed n" in header and "failed_n" not in header
    assert "10,792" in text and "1,234,567" in text and "10792" not in text
    assert "yes" in text and "no" in text and "True" not in text and "False" not in text
    assert "12.000" not in text and " 12" in text  # a whole float in a mixed column is a count
    assert "0.245" in text and "0.500" in text  # a float column keeps its decimals


def test_claims_page_fails_when_the_results_folder_is_a_file(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "results"
    not_a_folder.write_text("oops")
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(not_a_folder))
    with pytest.raises(RcakitError, match="is a file"):
        runner.run_chapter("claims", output_dir=tmp_path / "out", show_progress=False)


def test_in_book_order_follows_the_chapter_order_and_puts_unknown_ids_last():
    ids = ["zz-unknown", registry.ORDER[-1], registry.ORDER[0], "aa-unknown"]
    assert claims.in_book_order(ids) == [registry.ORDER[0], registry.ORDER[-1], "zz-unknown", "aa-unknown"]


def test_a_chapter_comparison_links_each_claim_to_its_section_on_the_page():
    table = claims.compare("car-shapley", {}, {"q": 0.3})
    shown = claims.comparison(table)
    page = shown._repr_html_()
    sections = [claims.section_anchor(s) for s in table["section"]]
    assert page.count('<a href="#') == len(table) and all(f'href="#{a}"' in page for a in sections)
    assert page.index("<em>mechanism</em>") < page.index("<em>identity</em>")
    assert "nan" not in page.lower().replace("nanc", "") and "…" not in page
    assert repr(shown).splitlines()[0].startswith("not measured: ")


def test_headline_numbers_split_what_was_not_measured_by_why():
    table = toy_table()
    table.loc[len(table)] = table.iloc[6].to_dict() | {"claim": "b7", "why": "the chapter has not run"}
    numbers = claims.headline_numbers(table)
    assert {k: numbers[k] for k in ("reproductions", "agrees", "differs", "other_parameters")} == {
        "reproductions": 5,
        "agrees": 1,
        "differs": 1,
        "other_parameters": 1,
    }
    assert (numbers["not_measured"], numbers["needs_input"], numbers["not_recorded"]) == (2, 1, 1)
    assert (numbers["identities_hold"], numbers["identities_fail"]) == (1, 0)
    text = claims.findings_markdown(table)
    assert "1 waiting for a data set or a language model" in text and "1 not recorded in this run" in text
    assert text.count("\n") == 4 and "class: verdict" in text
    assert "5 reproductions" in text and "1 of the 2 that were checked agree" in text


def test_headline_figure_shows_mechanism_verdicts_and_identities_apart():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    from rcakit import plotting

    counts = claims.headline_counts(toy_table(), by="paper_name")
    fig = intro.headline_figure(counts)
    left, right = fig.axes
    assert [t.get_text() for t in left.get_yticklabels()] == ["B", "A"]  # first source on top
    widths = {(to_hex(p.get_facecolor()).upper(), p.get_width()) for p in left.patches if p.get_width()}
    assert widths == {(plotting.GREEN, 1), (plotting.VERMILION, 1), (plotting.GREY, 1), (plotting.ORANGE, 1)}
    assert sum(p.get_width() for p in right.patches) == 1  # one identity, apart from the reproductions
    assert "checks" in right.get_title() and "reproductions" in left.get_title()
    matplotlib.pyplot.close(fig)


def test_a_row_checked_against_another_number_than_the_papers_says_which(fake_claims):
    fake_claims(
        {
            "gcjr-ablations": {
                "claims": [
                    claim(claim="MV on OR cases", kind="identity", paper=0.783, expect="== 1.0"),
                    claim(claim="closed form", kind="identity", paper=15, expect="== 15", expected="formula"),
                    claim(claim="same", kind="identity", paper=1.0, expect="== 1.0", measured="y"),
                    claim(claim="own note", kind="identity", paper=0.783, expect="== 1.0", note="over OR cases only"),
                ]
            }
        }
    )
    table = claims.compare("gcjr-ablations", {"x": 1.0, "formula": 25, "y": 1.0}).set_index("claim")
    assert table.loc["MV on OR cases", "note"] == "checked against 1, not the paper's 0.783"
    assert table.loc["closed form", "note"] == "checked against its value at these parameters, 25, not the paper's 15"
    assert table.loc["same", "note"] == "" and table.loc["own note", "note"] == "over OR cases only"


def test_a_claim_in_a_section_that_needs_data_says_so_without_a_needs_field(fake_claims):
    section = "Real failures: Who&When"
    assert "who_and_when_path" in claims.section_inputs("longrca-strata")[section]  # the runner's cell tags
    fake_claims(
        {
            "longrca-strata": {
                "claims": [
                    claim(claim="tracing beats", section=section),
                    claim(claim="synthetic", section="no such section"),
                ]
            }
        }
    )
    table = claims.compare("longrca-strata", {"z": 1}, {"who_and_when_path": "who-and-when"}).set_index("claim")
    assert table.loc["tracing beats", "why"] == "needs the data set who-and-when (parameter who_and_when_path)"
    assert table.loc["synthetic", "why"] == "not recorded by this run"


def test_the_verdict_box_groups_unmeasured_claims_by_what_they_wait_for():
    table = toy_table()
    extra = [table.iloc[6].to_dict() | {"claim": f"judge hop {h}"} for h in (1, 2)]
    extra.append(table.iloc[6].to_dict() | {"claim": "who", "why": "needs the data set who-and-when (parameter w)"})
    text = claims.verdict_markdown(pd.concat([table, pd.DataFrame(extra)], ignore_index=True))
    assert "- Needs a language model (parameter provider): b6 \\<x\\> & y; judge hop 1; judge hop 2." in text
    assert "- Needs the data set who-and-when (parameter w): who." in text


def test_the_verdict_box_never_counts_a_claim_with_no_paper_value_as_agreeing_with_the_paper():
    table = toy_table()
    own = table.iloc[[0]].assign(claim="own", paper=None, verdict="holds")  # rcakit's own comparison that holds
    text = claims.verdict_markdown(pd.concat([table, own], ignore_index=True))
    assert "**Reproductions that agree with the paper: 1 of 2**" in text
    assert "rcakit's own claims (no printed number to test) that hold: 1 of 1" in text
    alone = claims.verdict_markdown(pd.concat([table[table["kind"] != "mechanism"], own], ignore_index=True))
    assert "This page reproduces no published number" in alone and "that hold: 1 of 1" in alone


def test_paper_values_print_as_a_reader_reads_them():
    from rcakit.claims.verdicts import paper_text

    assert paper_text(0.24499999999999997) == "0.245"  # a computed expected value, not float noise
    assert paper_text(178137.0) == "178,137" and paper_text(178137) == "178,137"
    assert paper_text(0.0416) == "0.0416" and paper_text(None) == "—"


def test_format_table_puts_row_labels_and_every_header_level_in_words_but_keeps_math():
    columns = pd.MultiIndex.from_tuples([("suf_regen", r"\(J(a, D_h)\)"), ("suf_regen", "failed_n")])
    rows = pd.MultiIndex.from_tuples(
        [("propagation_aware", 1), ("oracle_gold_hop (oracle)", 2)], names=["probe_kind", "depth"]
    )
    text = repr(tables.format_table(pd.DataFrame([[0.5, 3], [0.25, 4]], index=rows, columns=columns)))
    assert "suf regen" in text and "failed n" in text and "probe kind" in text
    assert "propagation aware" in text and "oracle gold hop (oracle)" in text
    assert "_" not in text.replace(r"\(J(a, D_h)\)", "")  # math keeps its subscript, nothing else does


def test_a_rate_column_keeps_its_decimals_when_every_value_is_whole_and_a_count_column_does_not():
    frame = pd.DataFrame({"accuracy": [1.0, 0.0], ("branch accuracy", "flip"): [1.0, 1.0], "failed n": [3.0, 4.0]})
    text = tables.format_table(frame, decimals=2).frame
    assert text.iloc[:, 0].tolist() == ["1.00", "0.00"] and text.iloc[:, 1].tolist() == ["1.00", "1.00"]
    assert text.iloc[:, 2].tolist() == ["3", "4"]
