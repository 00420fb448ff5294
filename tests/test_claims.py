"""rcakit.claims: kinds, sections and their links, and the closing page's tables."""

import re

import jupytext
import pandas as pd
import pytest
import yaml

from rcakit import RcakitError, chapters, claims, runner

PAPER_CHAPTERS = [cid for cid in chapters.ORDER if cid != "claims"]


def headings(chapter_id: str) -> list[str]:
    """The ``##`` heading texts of a chapter's markdown cells."""
    nb = jupytext.read(chapters.notebook_path(chapter_id))
    return [line[3:].strip() for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("chapter_id", PAPER_CHAPTERS)
def test_every_claim_has_a_valid_kind(chapter_id):
    missing = [c["claim"] for c in claims.chapter_claims(chapter_id)["claims"] if c.get("kind") not in claims.KINDS]
    assert not missing, f"{chapter_id}: claims without a valid kind: {missing}"


@pytest.mark.parametrize("chapter_id", PAPER_CHAPTERS)
def test_every_claim_names_a_section_heading_of_its_chapter(chapter_id):
    known = headings(chapter_id)
    assert len(known) == len(set(known)), f"{chapter_id}: duplicate ## headings would get numbered anchors"
    bad = [(c["claim"], c.get("section")) for c in claims.chapter_claims(chapter_id)["claims"]
           if c.get("section") not in known]
    assert not bad, f"{chapter_id}: claims whose section is not a ## heading: {bad}"


@pytest.fixture
def fake_claims(tmp_path, monkeypatch):
    """A project root whose data/claims.yaml the test writes; returns the writer."""
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))

    def write(entries):
        path = tmp_path / "data" / "claims.yaml"
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


def test_compare_returns_the_kind_and_takes_numpy_values():
    import numpy as np

    measured = {"interaction": {"phi": np.array([0.45, 0.45, 0.0]), "phi_ci": np.array([[0.43, 0.47]] * 3),
                                "efficiency": np.float64(0.91)}}
    table = claims.compare("car-shapley", measured, {"q": 0.3}).set_index("claim")
    assert list(table.columns[:1]) == ["kind"]
    assert table.loc["Efficiency sum vs analytic 1 - q^2 = 0.91", "kind"] == "identity"
    assert table.loc["Shapley phi_0, two-step interaction SCM", "verdict"] == "agrees"  # numpy CI is read
    assert table.loc["Shapley phi_2 (irrelevant step) ~ 0", "verdict"] == "differs"  # 0 outside [0.43, 0.47]


def test_section_anchor_is_the_id_the_markdown_parser_gives_the_heading():
    from docutils import nodes
    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    texts = ["Monte-Carlo Shapley splits a two-step interaction", "`rule_based` reads the trace (hop 1)",
             "3 hops, 0.91 at φ", "Beside the paper"]
    source = "# Page\n\n" + "".join(f"## {t}\n\ntext\n\n" for t in texts)
    doc = publish_doctree(source, parser=Parser(), settings_overrides={"report_level": 5})
    ids = [section["ids"][0] for section in doc.findall(nodes.section) if section[0].astext() != "Page"]
    assert ids == [claims.section_anchor(t) for t in texts]
    anchor = "monte-carlo-shapley-splits-a-two-step-interaction"
    assert claims.section_link("car-shapley", texts[0]) == f"car_shapley.html#{anchor}"
    assert claims.section_link("car-shapley", None) == "car_shapley.html"


def test_compare_all_links_car_claims_to_their_sections():
    table = claims.compare_all({})
    car = table[table["chapter"] == "car-shapley"].set_index("claim")
    assert car.loc["Contrastive locus = the pivotal middle step (index 1)", "link"] == (
        "car_shapley.html#the-contrastive-estimator-finds-the-pivotal-step")
    assert list(dict.fromkeys(table["chapter"])) == [c for c in chapters.ORDER if c in set(table["chapter"])]
    assert set(table["verdict"]) == {"not measured"}


def toy_table():
    rows = [("a", "mechanism", "agrees", True), ("a", "mechanism", "differs", False), ("a", "identity", "agrees", True),
            ("b", "published", "agrees", False), ("b", "not comparable", "reported", False),
            ("b", "mechanism", "other parameters", True)]
    return pd.DataFrame(
        [{"chapter": c, "claim": f"{c}{i} <x> & y", "kind": k, "source": "§1", "paper": 0.0416, "workbench": [0.1, 2],
          "CI": "", "rule": "> 0", "verdict": v, "holds": h, "section": "S", "link": f"{c}.html#s"}
         for i, (c, k, v, h) in enumerate(rows)]
    )


def test_mechanism_summary_counts_agreeing_mechanism_claims_per_chapter():
    summary = claims.mechanism_summary(toy_table())
    assert summary.loc["a", "mechanism claims that agree"] == "1 of 2"
    assert summary.loc["b", "mechanism claims that agree"] == "0 of 1"
    assert summary.loc["a", "asserted"] == 2 and summary.loc["b", "claims"] == 3
    assert summary.loc["a", "by kind"] == "2 mechanism, 1 identity"
    assert summary.loc["b", "by kind"] == "1 mechanism, 1 published, 1 not comparable"


def test_verdict_counts_group_chapter_then_kind():
    counts = claims.verdict_counts(toy_table())
    assert list(counts.index) == [("a", "mechanism"), ("a", "identity"), ("b", "mechanism"),
                                  ("b", "published"), ("b", "not comparable")]
    assert counts.loc[("a", "mechanism"), "agrees"] == 1 and counts.loc[("a", "mechanism"), "differs"] == 1
    assert list(counts.columns) == ["agrees", "differs", "reported", "other parameters"]


def test_claims_html_shows_every_row_grouped_linked_and_coloured():
    table = toy_table()
    page = claims.claims_html(table, {"a": "Chapter A"})
    assert page.count('<a href="a.html#s">') == 3 and page.count('<a href="b.html#s">') == 3
    assert page.count("<small>asserted</small>") == 3
    assert "a0 &lt;x&gt; &amp; y" in page and "<x>" not in page  # claim text is escaped
    assert "Chapter A" in page and "(a: 1 of 2 mechanism claims agree)" in page
    assert page.count('rowspan="2"') == 1  # a's two mechanism rows share one kind cell
    assert page.index("a0 ") < page.index("a2 ") < page.index("b5 ") < page.index("b3 ") < page.index("b4 ")
    assert "background:#dcfce7" in page and "background:#fee2e2" in page
    assert "0.0416" in page and "[0.1, 2]" in page and "..." not in page


def test_claims_html_of_the_real_claims_has_one_link_per_claim():
    table = claims.compare_all({})
    page = claims.claims_html(table)
    assert len(re.findall(r'<td[^>]*><a href="[a-z_]+\.html[^"]*">', page)) == len(table)


def test_parameter_table_sets_each_changed_value_beside_its_default():
    recorded = {"longrca-strata": {"params": {"seed": 0}},
                "car-shapley": {"params": {"q": 0.3, "n_permutations": 20, "seed": 0}}}
    table = claims.parameter_table(recorded)
    assert table["chapter"].tolist()[0] == "car-shapley"  # book order, not the order given
    car = table.set_index("parameter").loc[lambda t: t["chapter"] == "car-shapley"]
    assert car.loc["n_permutations", "value"] == "20" and car.loc["n_permutations", "default (if changed)"] == "80"
    assert car.loc["q", "default (if changed)"] == ""


def test_missing_workbench_values_show_as_a_dash():
    table = toy_table()
    table["workbench"] = [float("nan"), None, 0.5, 1, 2, 3]
    page = claims.claims_html(table)
    assert "nan" not in page and page.count("—") == 2


def test_claims_page_fails_when_the_results_folder_is_a_file(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "results"
    not_a_folder.write_text("oops")
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(not_a_folder))
    with pytest.raises(RcakitError, match="is a file"):
        runner.run_chapter("claims", output_dir=tmp_path / "out", show_progress=False)


def test_in_book_order_follows_the_chapter_order_and_puts_unknown_ids_last():
    ids = ["zz-unknown", chapters.ORDER[-1], chapters.ORDER[0], "aa-unknown"]
    assert claims.in_book_order(ids) == [chapters.ORDER[0], chapters.ORDER[-1], "zz-unknown", "aa-unknown"]
