"""The attribution-families chapter (``rcakit.chapters.attribution_families``): its sections, what they record,
its tables and its figures."""

import pytest

from rcakit import sections
from rcakit.attribution import BUILT_IN, NotApplicable, adapters, compare_methods, scoring
from rcakit.attribution import testbeds as tb
from rcakit.chapters import attribution_families as chapter


@pytest.fixture(scope="module")
def beds():
    return {
        "rag_hops": tb.rag_testbed(0, 3),
        "controlled_dag": tb.dag_testbed(0, 2),
        "support_agent": tb.support_testbed(0, 2),
    }


def test_the_frontier_shows_each_family_in_one_book_colour_each_method_in_its_own_marker_with_a_short_legend():
    import pandas as pd
    from matplotlib.colors import to_hex

    from rcakit import plotting

    names = [
        "coverage",
        "rule_based",
        "centrality",
        "propagation_aware",
        "suf_regen",
        "singleton_replay",
        "shapley_exact",
        "shapley_mc",
        "shapley_top2",
        "gcjr",
        "exhaustive",
        "contrastive",
    ]
    points = pd.DataFrame(
        {
            "accuracy": [0.12, 0.04, 0.04, 0.25, 0.17, 0.67, 1, 1, 0.33, 0.67, 1, 0],
            "cost": [0, 0, 0, 3, 1, 4, 8, 32, 8, 4, 7, 300],
        },
        index=names,
    )
    ax = chapter.frontier_figure(points.join(chapter.families_table(names)["family"])).axes[0]
    markers = [c for c in ax.collections if len(c.get_offsets()) == 1]
    assert len(markers) == len(names)
    colours = [to_hex(c.get_facecolor()[0]).upper() for c in markers]
    assert set(colours) <= set(plotting.COLOUR_NAMES) and len(set(colours)) == 5  # Okabe-Ito, one per family
    shapes = {
        (colour, tuple(map(tuple, c.get_paths()[0].vertices))) for colour, c in zip(colours, markers, strict=True)
    }
    assert len(shapes) == len(names)  # no two methods share a colour and a marker
    xs = sorted(float(c.get_offsets()[0][0]) for c in markers if float(c.get_offsets()[0][1]) == 0.67)
    assert len(xs) == 2 and xs[0] < xs[1]  # gcjr and singleton_replay drawn side by side, neither hidden
    assert len(ax.get_legend().get_texts()) < 11
    labels = [t.get_text() for t in ax.texts]
    assert {"gcjr", "singleton_replay"} in [set(t.split(", ")) for t in labels]  # one label for the shared point
    assert sorted(n for t in labels for n in t.split(", ")) == sorted(names)  # every method named once


# --- the chapter's sections and figures ------------------------------------------------------


@pytest.fixture(scope="module")
def compared(beds):
    """Four built-in methods on the small testbeds, one memo shared."""
    return compare_methods(beds, {name: BUILT_IN[name] for name in ("coverage", "singleton_replay", "gcjr")})


@pytest.fixture(scope="module")
def only_coverage(beds):
    """A method that applies to the RAG hops alone."""
    return compare_methods(beds, {"coverage": BUILT_IN["coverage"]})


def test_the_sections_record_every_key_once(compared, beds):
    cases = chapter.cases_section(compared)
    per_bed = [chapter.testbed_section(compared, bed) for bed in tb.TESTBEDS]
    found = chapter.findings_section(compared)
    numbers = sections.collect(cases, *per_bed, found)
    assert set(numbers) == {"cases", *tb.TESTBEDS, "findings", "memo"}
    assert {bed: sum(n.values()) for bed, n in numbers["cases"].items()} == {b: len(c) for b, c in beds.items()}
    assert int(cases.table["cases"].sum()) == sum(len(c) for c in beds.values())
    gcjr = numbers["rag_hops"]["single"]["gcjr"]
    assert gcjr["n"] == sum(c.fault_type == "single" for c in beds["rag_hops"])
    assert gcjr["ci"][0] <= gcjr["accuracy"] <= gcjr["ci"][1]
    assert list(per_bed[1].table.columns) == [
        "single",
        "Joint-AND",
        "Alternative-OR",
        "Sequential-Joint",
        "mean replays",
    ]
    assert per_bed[1].table.index.tolist() == ["singleton replay", "GCJR"]  # coverage reads no DAG case
    assert cases.table.index.get_level_values(0).unique().tolist() == ["RAG hops", "Controlled-DAG", "support agent"]
    assert found.facts["memo"] == found.numbers["memo"] and numbers["findings"]["gcjr_equals_singleton_rag"] == 1.0
    assert numbers["memo"]["charged"] == compared.scores["replays"].sum()
    assert numbers["memo"]["computed"] == compared.memo.computed
    with pytest.raises(ValueError, match="two sections"):
        sections.collect(found, found)


def test_a_testbed_no_method_applies_to_is_skipped_and_drawn_as_a_note(only_coverage):
    skipped = chapter.testbed_section(only_coverage, "controlled_dag")
    assert skipped.skipped and "the Controlled-DAG testbed" in skipped.skipped and not sections.collect(skipped)
    assert "did not run" in skipped.show().data
    assert chapter.testbed_section(only_coverage, "rag_hops").skipped is None
    note = chapter.testbed_figure(only_coverage, "controlled_dag").axes[0]
    assert note.texts[0].get_text() == "no chosen method applies to Controlled-DAG" and not note.collections


def test_the_testbed_figure_draws_one_marker_per_method_that_applies(compared):
    ax = chapter.testbed_figure(compared, "controlled_dag").axes[0]
    assert len([c for c in ax.collections if len(c.get_offsets()) == 1]) == 2  # singleton replay and gcjr
    named = {n for t in ax.texts for n in t.get_text().split(", ")}
    assert named == {"singleton replay", "GCJR"}  # methods by a reader's name, not their ids


def test_main_and_families_sections_show_every_method(compared):
    main = chapter.main_section(compared)
    assert main.table.index.tolist() == ["coverage", "singleton replay", "GCJR"] and not main.numbers
    assert main.table.loc["coverage", ("accuracy", "RAG hops")] == pytest.approx(
        compared.summary.query("method == 'coverage'")["accuracy"].mean()
    )
    families = chapter.families_section(["gcjr", "mine"]).table
    assert families.loc["GCJR", "expresses"] == "family" and families.loc["mine", "family"] == "user method"


def test_every_built_in_method_and_fault_type_has_a_reader_name_and_no_two_share_one():
    import pandas as pd

    names = adapters.METHOD_NAMES
    assert set(names) == set(BUILT_IN) and len(set(names.values())) == len(names)
    kinds = {t for types in tb.FAULT_TYPES.values() for t in types}
    assert set(tb.FAULT_TYPE_NAMES) == kinds and set(tb.TESTBED_NAMES) == set(tb.TESTBEDS)
    assert all("_" not in name for name in chapter.READER_NAMES.values())
    frame = pd.DataFrame({"alt_or": [1.0]}, index=pd.Index(["shapley_mc"], name="method"))
    assert chapter.named_table(frame).loc["Shapley (MC)", "Alternative-OR"] == 1.0  # labels only, never a value


def test_a_run_no_method_applies_to_still_has_every_section(beds):
    def never(case, oracle, budget=None):
        raise NotApplicable("applies nowhere")

    nothing = compare_methods(beds, {"never": never})
    assert list(nothing.scores.columns) == list(scoring.SCORE_COLUMNS) and nothing.scores.empty
    assert all(chapter.testbed_section(nothing, bed).skipped for bed in tb.TESTBEDS)
    found = chapter.findings_section(nothing)
    assert found.facts["findings"]["gcjr_joint_rag"].data == "—" and found.facts["findings"]["note"].data
    assert sections.collect(chapter.cases_section(nothing), found)["cases"] == {}


def test_the_findings_are_quoted_with_two_decimals_and_a_note_only_when_one_is_missing(compared, monkeypatch):
    facts = chapter.findings_section(compared).facts["findings"]
    assert facts["gcjr_equals_singleton_rag"].data == "1.00"
    assert facts["exhaustive_joint_rag"].data == "—" and "could not measure" in facts["note"].data  # not chosen
    monkeypatch.setattr(chapter, "_findings", lambda scores: {"a": 0.25, "locus_share": {"double": {"x": 1.0}}})
    facts = chapter.findings_section(compared).facts["findings"]
    assert facts["a"].data == "0.25" and facts["note"].data == "" and facts["locus_share"] == {"double": {"x": 1.0}}
