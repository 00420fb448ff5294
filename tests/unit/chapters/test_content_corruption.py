"""The content-corruption chapter (rcakit.chapters.content_corruption): the arm run end to end, its sections
on hand-made cases and on a small lab, the worked case."""

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from rcakit import RcakitError
from rcakit.book import registry
from rcakit.chapters import _rag
from rcakit.chapters import content_corruption as chapter
from rcakit.rag import metrics as M
from rcakit.rag import outcomes as O
from rcakit.rag import protocol as P
from rcakit.rag.text import classify_outcome, token_recall
from support.rag_cases import content_row


@pytest.fixture(scope="module")
def lab():
    return P.build_lab(3, n_entities=600, n_questions=30, hops=3)


def fake_run(cases, arm="content", depths=(1, 2, 3), **extra):
    """What a section reads of an ArmRun, around hand-made cases (no lab, no model)."""
    depths = list(depths)
    fields = {"arm": arm, "cases": cases, "depths": depths, "result": M.attribution(cases, depths)}
    fields.update(params={"hops": len(depths)}, llm_cost={}, judge_summary=None, judged=None, same_cases=None)
    return SimpleNamespace(**{**fields, "replay": None, **extra})


def test_run_arm_matches_the_protocol_and_keeps_its_store_under_the_results_folder(tmp_path, monkeypatch):

    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path))
    params = {
        "seed": 3,
        "n_questions": 8,
        "n_entities": 300,
        "hops": 2,
        "top_k": 3,
        "reading_noise": 0.2,
        "distractor_rate": 0.3,
        "coverage_threshold": 0.05,
        "provider": "none",
        "judge_provider": "none",
        "agent": "rule",
        "llm_max_cases": 5,
        "llm_timeout": 1.0,
        "store": "cases",
    }
    run = chapter.run(params, progress=None)
    assert run.depths == [1, 2] and run.judged is None and run.llm_numbers() == {}
    assert len(list((tmp_path / "cases").glob("content-corruption-*.jsonl"))) == 1
    lab = P.build_lab(3, n_entities=300, n_questions=8, hops=2, top_k=3)
    again = P.sweep(lab, "content", [1, 2], P.case_store("other", {}, tmp_path / "other"), progress=None)
    assert json.dumps(M.attribution(again, [1, 2]), sort_keys=True) == json.dumps(run.result, sort_keys=True)
    with pytest.raises(RcakitError, match="^arm: expected"):
        _rag.run_arm("meteor", params)
    setup = chapter.setup_section(run)
    assert set(setup.numbers) == {"protocol", "clean_accuracy", "world", "skipped"}
    assert setup.numbers["protocol"]["judge_hops"] == "any" and setup.numbers["world"]["questions"] == 8
    assert setup.facts["injected"] == len(run.cases) and setup.facts["skipped"] == int(run.cases["skipped"].sum())
    assert setup.facts["world_description"].startswith("The synthetic world") and "8 questions" in str(
        setup.facts["world_description"]
    )
    assert "structural interventions" not in setup.table.index
    assert setup.facts["quick"] == registry.get("content-corruption").quick  # the page's setting note quotes them
    accuracy = chapter.accuracy_section(run, ["coverage"])
    assert accuracy.numbers["accuracy_ci"]["coverage"]["1"] == [
        run.result["accuracy"]["coverage"]["1"]["lo"],
        run.result["accuracy"]["coverage"]["1"]["hi"],
    ]
    assert list(accuracy.facts["acc"]) == ["coverage"] and accuracy.facts["failed"] == run.result["failed_n"]


def test_content_sections_record_and_quote_their_own_keys():
    from rcakit import sections

    cases = pd.DataFrame(
        [
            content_row("a", 3, "answer_fact", "absorbed", later=False, hop=3),
            content_row("b", 1, "bridge_entity", "absorbed", contaminated=True),
            content_row("c", 1, "bridge_entity", "derailed", hop=2),
            content_row("d", 2, "bridge_entity", "derailed", hop=1),
            content_row("e", 2, "salient_entity", "resisted"),
        ]
    )
    run = fake_run(cases)
    paper = {f"hop {d}": {"absorbed": 0.1, "resisted": 0.8, "derailed": 0.1} for d in (1, 2, 3)}
    outcomes = chapter.outcomes_section(run, paper)
    assert outcomes.numbers["outcomes"]["1"] == {"absorbed": 0.5, "resisted": 0.0, "derailed": 0.5, "n": 2}
    assert outcomes.numbers["outcome_counts"]["2"] == {"absorbed": 0, "resisted": 1, "derailed": 1, "n": 2}
    assert outcomes.facts["absorbed"] == {1: 0.5, 2: 0.0, 3: 1.0}
    assert outcomes.table.loc["hop 1", ("absorbed", "paper")] == 0.1
    assert outcomes.table.loc["hop 1", ("absorbed", "here")] == 0.5
    strategies = chapter.strategy_section(run)
    assert strategies.facts["absorbed_n"] == 2 and strategies.facts["absorbed_answer_fact_n"] == 1
    assert strategies.numbers["absorbed_answer_fact_share"] == 0.5
    assert strategies.numbers["strategy_counts"]["bridge_entity"]["n"] == 3
    contamination = chapter.contamination_section(run)
    assert {k: contamination.numbers["query_contamination"][k] for k in ("k", "n", "share")} == {
        "k": 1,
        "n": 4,
        "share": 0.25,
    }
    assert contamination.facts == {"contaminated": {"k": 1, "n": 4, "share": 0.25}}
    bridge = chapter.bridge_section(
        run
    )  # failed bridge cases: b (hop 1, named 1), c (hop 1, named 2), d (hop 2, named 1)
    assert bridge.facts["bridge_n"] == 3 and bridge.facts["bridge_hop1"] == "0.67"
    assert bridge.facts["bridge_suf_regen"] == "0.33" and bridge.numbers["bridge_slice_hop1_share"] == pytest.approx(
        2 / 3
    )
    assert bridge.numbers["bridge_slice_suf_regen_gap"] == pytest.approx(1 / 3)
    assert bridge.table.loc["failed n", "hop 2"] == 1
    branches = chapter.branches_section(run, downstream=False)
    assert not branches.numbers and "without_fallback" in branches.facts
    numbers = sections.collect(outcomes, strategies, contamination, bridge)
    assert set(numbers) == {
        "outcomes",
        "outcome_counts",
        "strategy_counts",
        "absorbed_answer_fact_share",
        "salient_entity_absorbed",
        "query_contamination",
        "bridge_slice",
        "bridge_slice_ci",
        "bridge_slice_hop1_share",
        "bridge_slice_suf_regen_gap",
    }


def test_sections_without_a_model_are_skipped_with_their_reason():
    from rcakit import sections

    run = fake_run(pd.DataFrame([content_row("a", 1, "bridge_entity", "derailed")]))
    for section, reason in (
        (chapter.cost_section(run), "no model call"),
        (chapter.judge_section(run), "no LLM judge"),
        (_rag.replay_section(run), "replays exactly"),
    ):
        assert section.skipped and reason in section.skipped and not section.numbers
    assert sections.collect(chapter.cost_section(run), chapter.judge_section(run)) == {}
    replay = {"rate": 0.75, "ci": [0.4, 0.9], "n": 8, "matched": 6}
    usage = {"cases": 2, "calls": 4, "input_tokens": 100, "output_tokens": 10, "abstentions": 0}
    measured = fake_run(run.cases, replay=replay, llm_cost={"llm_reader": usage})
    shown = _rag.replay_section(measured)
    assert shown.numbers == {"replay_action_match": replay} and shown.table.loc["llm_reader", "matched"] == 6
    cost = chapter.cost_section(measured)
    assert cost.numbers == {"llm_cost": {"llm_reader": usage}} and cost.table.loc["llm_reader", "calls_per_case"] == 2


def test_the_worked_case_is_the_first_failed_bridge_corruption_and_its_facts_follow_the_rules(lab, tmp_path):

    cases = P.sweep(lab, "content", [1, 2, 3], P.case_store("t", {"w": 1}, tmp_path), progress=None)
    wrong = P.failed(cases)
    case = O.worked_case(cases)
    bridge = wrong[wrong["strategy"] == "bridge_entity"]
    assert case is not None and case["qid"] == (bridge if len(bridge) else wrong).iloc[0]["qid"]
    worked = chapter.worked_section(fake_run(cases, lab=lab)).facts["worked"]
    gold, answer = lab.clean[case["qid"]].gold, case["answer"] or ""
    assert worked["span"] == case["original"] and worked["outcome"] == case["outcome"]
    assert worked["recall_gold"] == token_recall(gold, answer) == worked["gold_shared"] / worked["gold_tokens"]
    assert worked["recall_span"] == token_recall(case["replacement"], answer)
    assert classify_outcome(answer, gold, case["replacement"]) == worked["outcome"]
    assert f"“{case['original']}”" in worked["rule"].data
    skipped = pd.DataFrame([{**content_row("a", 1, "bridge_entity", "derailed"), "skipped": True}])
    assert O.worked_case(skipped) is None and chapter.worked_section(fake_run(skipped, lab=lab)).skipped
    resisted = pd.DataFrame(
        [content_row("a", 2, "answer_fact", "resisted"), content_row("b", 1, "bridge_entity", "resisted")]
    )
    assert O.worked_case(resisted)["qid"] == "a"  # no failed case: the first injected one


def test_the_contamination_table_shows_counts_and_the_protocol_comparison_puts_the_outcomes_first(monkeypatch):
    content = fake_run(pd.DataFrame([content_row("a", 1, "bridge_entity", "derailed", contaminated=True)]))
    table = chapter.contamination_section(content).table
    assert table.iloc[0].tolist() == [1, 1, 1.0] and table["contaminated"].dtype.kind == "i"
    monkeypatch.setattr(_rag, "protocol_runs", lambda arm, params: {"authors' protocol": content})
    compared = chapter.protocol_comparison_section("content", {}, ["suf_regen"]).table
    assert "recovery" not in compared and compared.loc[(1, "authors' protocol"), "resisted"] == 0.0


def test_the_bridge_table_pools_then_splits_by_depth():
    cases = pd.DataFrame(
        [
            content_row("c", 1, "bridge_entity", "absorbed", contaminated=True),
            content_row("d", 1, "bridge_entity", "derailed", hop=2),
        ]
    )
    pooled, by_depth = O.bridge_slice(cases)
    table = chapter.bridge_table(pooled, by_depth)
    assert table.loc["suf_regen", "pooled"] == 0.5 and table.loc["failed n", "hop 1"] == 2
