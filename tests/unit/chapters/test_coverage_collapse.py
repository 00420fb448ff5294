"""The coverage-collapse chapter (rcakit.chapters.coverage_collapse) and what the two RAG chapters share
(rcakit.chapters._rag): its sections on hand-made cases, the protocol table, the arm's case store key."""

from types import SimpleNamespace

import pandas as pd
import pytest

from rcakit import RcakitError
from rcakit.book import registry
from rcakit.chapters import _rag
from rcakit.chapters import coverage_collapse as chapter
from rcakit.rag import embeddings as E
from rcakit.rag import metrics as M
from rcakit.rag.settings import AUTHORS
from support.rag_cases import structural_row

DENSE_INSTALLED = not E.missing_packages()


def fake_run(cases, arm="content", depths=(1, 2, 3), **extra):
    """What a section reads of an ArmRun, around hand-made cases (no lab, no model)."""
    depths = list(depths)
    fields = {"arm": arm, "cases": cases, "depths": depths, "result": M.attribution(cases, depths)}
    fields.update(params={"hops": len(depths)}, llm_cost={}, judge_summary=None, judged=None, same_cases=None)
    return SimpleNamespace(**{**fields, "replay": None, **extra})


def test_a_depth_without_a_failed_case_is_quoted_as_no_such_case():
    """coverage-collapse at spare_hops 3 and content-corruption at top_k 20 left a depth with no failed case:
    every per-depth number the prose quotes is still glued, as text a page can show."""
    from rcakit.prose import NO_CASE

    cases = pd.DataFrame([structural_row("a", 1, 1, "flip"), structural_row("b", 2, 1, "fallback")])
    run = fake_run(cases, arm="structural", depths=(1, 2, 3))  # no case at all was injected at hop 3
    accuracy = chapter.accuracy_section(run, ["propagation_aware", "coverage"])
    assert accuracy.facts["acc"]["propagation_aware"] == {"1": "1.00", "2": "0.00", "3": NO_CASE}
    branches = chapter.branches_section(run, downstream=True)
    assert branches.facts["branch_n"]["propagation_aware"]["3"] == {"flip": 0, "continue": 0, "fallback": 0, "none": 0}
    assert branches.facts["without_fallback"]["propagation_aware"]["3"] == NO_CASE
    assert branches.facts["downstream_intact"] == {"1": "0.00", "2": "0.00", "3": NO_CASE}
    assert chapter.trace_section(run).facts["fact_in_trace"]["3"] == NO_CASE


def test_structural_sections_record_and_quote_their_own_keys():

    cases = pd.DataFrame(
        [
            structural_row("a", 2, 2, "flip", fact_in_trace=True, downstream_intact=True),
            structural_row("b", 2, 3, "continue", n_hops=3),
            structural_row("c", 2, 2, "continue", "early_termination", 1),
            structural_row("d", 2, 0, "none", "empty_retrieval", 2, fact_at_hop=True),
            structural_row("e", 1, 1, "fallback"),
        ]
    )
    run = fake_run(cases, arm="structural", depths=(1, 2))
    checks = chapter.checks_section(run)  # b: a continue on a full 2-hop trace; d: an empty retrieval at the last hop
    assert checks.numbers["protocol_checks"] == {
        "continue_on_full_trace": 1,
        "empty_last_hop_cases": 1,
        "empty_last_hop_extra_retrievals": 0,
    }
    assert checks.facts["checks"]["continue_on_full_trace"] == 1
    reach = chapter.reach_section(run)
    assert reach.numbers["trace_reader_reach"]["2"] == {"failed": 4, "hop_absent": 1, "named_by_none": 4}
    kept = chapter.trace_section(run)
    assert kept.numbers == {
        "oracle_injected_fact_in_trace": {"1": 0.0, "2": 0.25},
        "oracle_injected_fact_at_hop": {"1": 0.0, "2": 0.25},
        "oracle_downstream_intact": {"1": 0.0, "2": 0.25},
    }
    assert set(kept.facts) == {"fact_in_trace", "downstream_intact"}
    branches = chapter.branches_section(run, downstream=True)
    assert branches.numbers == {"oracle_downstream_intact": {"1": 0.0, "2": 0.25}}
    assert branches.table.loc[("propagation_aware", 2), ("oracle", "downstream facts intact")] == 0.25
    assert branches.facts["branch_n"]["propagation_aware"]["2"]["continue"] == 2
    kinds = chapter.branch_kinds_section(run)
    assert kinds.facts["et_continue"] == {"1": 0, "2": 1} and kinds.facts["et_failed"]["2"] == 1
    by_kind = chapter.intervention_section(run)
    assert by_kind.numbers["per_intervention"]["stale_evidence"]["2"] == {"injected": 2, "recovery": 0.0}


def test_protocol_table_names_each_departure_and_the_content_arm_leaves_out_the_warnings():

    authors = _rag.protocol_table({})
    assert authors.loc["corpus", "why"].startswith("the authors' setting")
    assert "reader's reaction to a warning" in authors.index
    other = _rag.protocol_table({"corpus": "global", "reformulate": True}, arm="content")
    assert other.loc["corpus", "why"].startswith("departs from the authors' (question)")
    assert other.loc["retrievals per hop", "this chapter"] == "reformulate = yes"
    assert "structural interventions" not in other.index and "reader's reaction to a warning" not in other.index


def test_the_protocol_list_has_a_line_per_choice_marks_departures_and_says_each_effect_once():
    choices = _rag.protocol_choices({"corpus": "global"})
    listing = _rag.protocol_list(choices)
    lines = [line for line in listing.splitlines() if line.startswith("- ")]
    assert len(lines) == len(choices) + len({c.effect for c in choices})
    corpus = next(line for line in lines if line.startswith("- **corpus**"))
    assert "`corpus = global`, **a departure** (the authors': `question`)" in corpus
    top_k = next(line for line in lines if line.startswith("- **top_k**"))
    assert "the authors' setting" in top_k and "departure" not in top_k
    shared = "the Explore table's 'targeted variant' column, with the variant's other choices"
    assert listing.count(shared + ".") == 1  # said once, with every choice it covers
    assert sum(line.count("**a departure**") for line in lines) == 1


def test_the_branch_tables_split_counts_from_accuracies_and_the_small_tables_show_counts_as_counts():

    cases = pd.DataFrame([structural_row("a", 2, 2, "flip"), structural_row("b", 2, 1, "fallback")])
    run = fake_run(cases, arm="structural", depths=(1, 2))
    counts, accuracies = chapter.branches_section(run).table, chapter.branch_accuracy_section(run).table
    assert counts.columns.get_level_values(0).unique().tolist() == ["failed cases by branch"]
    assert accuracies.columns.get_level_values(0).unique().tolist() == ["branch accuracy", "probe accuracy"]
    assert counts.loc[("propagation_aware", 2)].tolist() == [1, 0, 1, 0]
    assert accuracies.loc[("propagation_aware", 2), ("probe accuracy", "without fallback")] == 0.5
    by_kind = chapter.intervention_section(run, ["coverage", "oracle_gold_hop"]).table
    assert by_kind.columns.tolist() == ["injected", "recovery", "coverage", "oracle_gold_hop (oracle)"]
    assert by_kind.index.names == ["intervention", "injected hop"] and by_kind["oracle_gold_hop (oracle)"].isna().all()


def test_the_branch_table_counts_each_branch_and_the_accuracy_without_the_fallback():
    cases = pd.DataFrame(
        [
            structural_row("a", 2, 2, "flip", fact_in_trace=True),
            structural_row("b", 2, 3, "flip"),
            structural_row("c", 2, 2, "continue", "early_termination", 1),
            structural_row("d", 2, 2, "fallback"),
            structural_row("e", 2, 0, "none"),
        ]
    )
    row = _rag.branch_table(M.attribution(cases, [2]), [2]).loc[("propagation_aware", 2)]
    assert row[("failed cases by branch", "flip")] == 2
    assert row[("probe accuracy", "without fallback")] == pytest.approx(0.4)


def test_the_chapters_default_to_the_authors_retriever_of_their_table():
    assert (AUTHORS.retriever_for("structural"), AUTHORS.retriever_for("content")) == ("dense", "bm25")
    for arm, chapter_id in _rag.CHAPTERS.items():
        chapter = registry.get(chapter_id)
        assert chapter.defaults["retriever"] == AUTHORS.retriever_for(arm)
        assert chapter.choices["retriever"] == ["bm25", "dense"]
        with pytest.raises(RcakitError, match="retriever"):
            registry.validate(chapter_id, {"retriever": "splade"})


def test_the_protocol_table_names_the_authors_retriever_of_each_arm():
    table = _rag.protocol_table({"retriever": "dense"})
    assert "Table 2" in table.loc["retriever", "authors' protocol"]
    assert table.loc["retriever", "why"].startswith("the authors' setting")
    bm25 = _rag.protocol_table({"retriever": "bm25"})
    assert bm25.loc["retriever", "why"].startswith("departs from the authors' (dense)")
    content = _rag.protocol_table({}, arm="content")
    assert "Tables 3 and 4" in content.loc["retriever", "authors' protocol"]
    assert content.loc["retriever", "this chapter"] == "retriever = bm25"
    assert _rag.protocol_table({"retriever": "dense"}, arm="content").loc["retriever", "why"].startswith("departs")


def test_the_dense_case_store_is_keyed_by_the_embedding_packages():
    assert "embedding_stack" not in _rag._stored({"retriever": "bm25", "workers": 4})
    if DENSE_INSTALLED:
        stack = _rag._stored({"retriever": "dense", "workers": 4})["embedding_stack"]
        assert set(stack) == set(E.PACKAGES.values()) and "workers" not in _rag._stored({"workers": 4})
