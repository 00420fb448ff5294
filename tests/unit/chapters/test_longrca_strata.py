"""Tests for rcakit.chapters.longrca_strata: the chapter's sections, figures and prose facts on the published
tables, the Who&When logs, the LongRCA Bench release, the synthetic benchmark and the language models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from rcakit import RcakitError
from rcakit.chapters import longrca_strata as chapter
from rcakit.trajectories import (
    GeneratorConfig,
    Label,
    Step,
    Trajectory,
    calibration_table,
    generate_benchmark,
    published_strata,
    shape_statistics,
)
from rcakit.trajectories.strata import STRATA
from support import FIXTURES, ROOT

RELEASE = FIXTURES / "longrca-bench"  # invented records in the Hugging Face layout
WHO_AND_WHEN = ROOT / ".." / "shared" / "data" / "who_and_when"
needs_who_and_when = pytest.mark.skipif(
    not WHO_AND_WHEN.is_dir(),
    reason="Who&When data not found at ../shared/data/who_and_when (not shipped with the project)",
)


def _published_bins(table7: dict, table8: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 7 and 8 as whole numbers of trajectories per bin with their Wilson intervals."""
    length = published_strata(table7["accuracy"], table7["counts"], STRATA["length"][2])
    distance = published_strata(table8["accuracy"], table8["counts"], STRATA["distance"][2])
    return length, distance


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _traj(tid: str, source: str, length: int, role: str, step: int) -> Trajectory:
    names = ["User", "Planner (-> Executor)", "Executor", "Verifier"]
    steps = tuple(Step(i, names[min(i, 3)] if i < 4 else "Executor", None, f"s{i}") for i in range(length))
    return Trajectory(tid, source, "task", steps, Label(role, step))


def _good_who_and_when_log(steps=3, step="1") -> dict:
    history = [{"role": "User" if i == 0 else "Planner", "content": f"turn {i}"} for i in range(steps)]
    return {"question": "q", "history": history, "mistake_agent": "Planner", "mistake_step": step}


def paper_description() -> dict:
    from rcakit import claims

    return claims.published("longrca-strata", "release")


def test_the_synthetic_generator_takes_the_chapter_knobs():
    params = {"n_trajectories": 12, "signal_clarity": 0.2, "seed": 3, "provider": "none"}
    assert chapter.SyntheticRun.generator(params) == GeneratorConfig(n=12, signal_clarity=0.2)


def test_the_synthetic_sections_record_the_scores_with_the_calibration_and_quote_the_lead():
    from rcakit import sections
    from rcakit.trajectories import evaluation, offline_locators

    config = GeneratorConfig(n=60, decoy_rate=0.5)
    syn = chapter.SyntheticRun.generate(offline_locators(3), 3, config)
    bench = generate_benchmark(3, config)
    assert [t.id for t in syn.bench] == [t.id for t in bench]
    recorded = syn.scores.numbers["synthetic"]
    assert recorded["calibration"] == shape_statistics(bench)
    scored = evaluation.score_synthetic(offline_locators(3), bench)
    assert {k: v for k, v in recorded.items() if k != "calibration"} == scored.numbers
    assert syn.scores.facts == {
        "syn_gain": pytest.approx(100 * scored.numbers["handoff_trace_gain"]),
        "syn_role_gap": pytest.approx(100 * scored.numbers["handoff_trace_role_gap"]),
    }
    assert syn.scores.table.equals(scored.table) and syn.calibration.table.equals(calibration_table(bench))
    shape = syn.calibration.table["synthetic"]  # rows in words, shares of root-to-end distances in percent
    assert shape["share with \\(d > 50\\) (%)"] == pytest.approx(
        100 * recorded["calibration"]["share_root_to_end_gt50"]
    )
    assert shape["length \\(T\\), median"] == recorded["calibration"]["length_median"]
    assert not any("_" in label for label in shape.index)
    strata = syn.strata.table  # both stratifications side by side, every locator, every bin labelled with its size
    assert list(strata.index) == list(scored.table.index) and set(strata.columns.get_level_values(0)) == {
        "length",
        "distance",
    }
    assert sum(int(c.split("n=")[1].rstrip(")")) for c in strata["distance"].columns) == 60
    length, distance = syn.strata_rows()
    assert length.groupby("method")["n"].sum().eq(60).all() and distance.groupby("method")["n"].sum().eq(60).all()
    assert syn.planted.table["hit"].between(0, 1).all()
    assert sections.collect(syn.calibration, syn.scores, syn.strata, syn.planted) == syn.scores.numbers


def test_explore_records_the_sweep_and_its_size():
    from rcakit.trajectories import evaluation, offline_locators

    base = GeneratorConfig(n=1140)
    section = chapter.explore_section(offline_locators(0), base, 30, 5)
    sweep = evaluation.knob_sweep(offline_locators(0), base, 30, 5)
    assert section.table.equals(sweep) and section.numbers == {
        "explore": {"exact": sweep.to_dict(orient="index"), "n": 30}
    }


def test_the_strata_figure_names_the_methods_in_words_under_both_panels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rcakit.trajectories import offline_locators

    syn = chapter.SyntheticRun.generate(offline_locators(0), 0, GeneratorConfig(n=40))
    fig = chapter.strata_figure(*syn.strata_rows())
    fig.canvas.draw()
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["random", "terminal", "first error signal", "handoff trace"]
    box = legend.get_window_extent().transformed(fig.transFigure.inverted())
    ticks = [ax.get_tightbbox().transformed(fig.transFigure.inverted()) for ax in fig.axes]
    assert all(box.y1 <= t.y0 + 1e-6 for t in ticks)  # the legend lies below every panel and its tick labels
    plt.close(fig)


def test_published_figure6_recovers_whole_cases_and_table4():
    from rcakit import claims

    table4, table7, table8 = (claims.published("longrca-strata", t) for t in ("table4", "table7", "table8"))
    figure6 = chapter.published_figure6_section(table4, table7, table8)
    totals = figure6.table
    assert (totals["length bins"] - totals["Table 4 exact"]).abs().max() < 0.0006
    assert list(figure6.numbers) == ["published"] and not figure6.facts and figure6.skipped is None
    assert figure6.numbers["published"]["bins_total"]["distance"]["RCTA"] == pytest.approx(275 / 1140)
    assert figure6.numbers["published"]["length_bins"]["RCTA"][">400"]["n"] == 42
    rcta = chapter.rcta_length_section(table7)
    facts = rcta.facts
    assert (facts["rcta_gt400_k"], facts["rcta_gt400_n"]) == (13, 42) and facts["rcta_gt400_holds_others"]
    assert facts["rcta_length_le100"] == pytest.approx(100 * 119 / 393)  # 30.3% of 393 is 119 trajectories
    lo, hi = proportion_confint(13, 42, method="wilson")
    assert facts["rcta_gt400_width"] == pytest.approx(100 * (hi - lo)) and not rcta.numbers
    assert rcta.table.loc[">400", "hits"] == 13 and rcta.table.loc[">400", "95% high"] == pytest.approx(hi)
    # the separated pairs: every row's intervals are disjoint, and RCTA's <=100 is apart from 101-200
    length, distance = _published_bins(table7, table8)
    pairs = chapter.separated_strata_section(table7, table8).table
    assert set(pairs["stratum"]) == {"length", "distance"}
    rows = {(r.method, r.bin, r["other bin"]) for _, r in pairs.iterrows()}
    assert ("RCTA", "<=100", "101-200") in rows and ("RCTA", "<=100", ">400") not in rows
    bins = length.set_index(["method", "bin"])
    for _, r in pairs[pairs["stratum"] == "length"].iterrows():
        a, b = bins.loc[(r["method"], r["bin"])], bins.loc[(r["method"], r["other bin"])]
        assert a["hi"] < b["lo"] or b["hi"] < a["lo"]
    assert not ((pairs["method"] == "RCTA") & (pairs["stratum"] == "distance")).any()  # no RCTA pair separates
    assert chapter.table4_section(table4).table.loc["RCTA", "exact"] == 24.1


def _who_and_when_folder(root: Path, subsets: dict[str, int]) -> Path:
    """A Who&When-format folder: ``subsets`` maps a subset to its number of logs (4, 5, ... steps, root at 1)."""
    for subset, count in subsets.items():
        (root / subset).mkdir(parents=True)
        for i in range(count):
            log = _good_who_and_when_log(steps=4 + i)
            log["history"][1]["content"] += " but the call failed with an error"
            write_json(root / subset / f"{i + 1}.json", log)
    return root


def _page_glue_names(tag: str) -> set[str]:
    """The glue names the chapter's prose reads in the cells tagged ``tag``."""
    import re

    import jupytext

    notebook = jupytext.read(ROOT / "notebooks" / "longrca_strata.md")
    cells = [c for c in notebook.cells if c.cell_type == "markdown" and tag in c.metadata.get("tags", [])]
    return {m.group(1).split(":")[0] for c in cells for m in re.finditer(r"\{glue:\w+\}`([^`]+)`", c.source)}


@pytest.mark.parametrize(
    "subsets", [{"Hand-Crafted": 3}, {"Algorithm-Generated": 2}, {"Hand-Crafted": 2, "Algorithm-Generated": 3}]
)
def test_a_folder_with_one_subset_glues_every_name_the_page_reads(tmp_path, subsets):
    """A folder holding one subset gives that subset's numbers, and for the other a sentence saying it is
    absent: every glue name the Who&When prose reads is glued, no number is NaN, none is made up."""
    from IPython.display import Markdown

    from rcakit.trajectories import offline_locators

    folder = _who_and_when_folder(tmp_path / "who", subsets)
    who = chapter.WhoAndWhenRun.read(str(folder), offline_locators(0), claims_block())
    assert set(who.sets) == set(subsets) and f"{folder}: {sum(subsets.values())} good records, 0 bad" in who.report
    facts = who.scores.facts
    assert _page_glue_names("needs-who_and_when_path") <= set(facts)
    assert not any(isinstance(v, float) and np.isnan(v) for v in facts.values())
    assert set(who.scores.numbers["who_and_when"]) == set(subsets)
    assert who.scores.numbers["who_and_when_details"]["rejected"] == 0
    hand = "Hand-Crafted" in subsets
    assert ("hand_crafted_strata" in who.scores.numbers["who_and_when_details"]) == hand
    assert (who.error_words.skipped is None) == hand and (who.strata.skipped is None) == hand
    assert list(who.beside.table.columns) == list(subsets)
    for subset, key in (("Hand-Crafted", "hand"), ("Algorithm-Generated", "algo")):
        if subset in subsets:
            assert facts[f"who_n_{key}"] == subsets[subset] == facts[f"who_official_{key}"]
            assert f"{subset} is scored on {subsets[subset]} logs" in facts["who_sizes_md"].data
        else:
            assert f"who_n_{key}" not in facts and f"gain_{key}" not in facts
            assert f"his folder holds no {subset} logs" in facts["who_sizes_md"].data
            assert f"not measured on {subset}" in facts["gain_md"].data
    assert all(isinstance(facts[name], Markdown) for name in facts if name.endswith("_md"))
    if hand:  # roots at step 1 of logs of 4, 5, ... steps: the longest has 3 + n steps
        assert facts["hand_max_length"] == 3 + subsets["Hand-Crafted"]
        assert facts["hand_longest_md"].data.startswith(
            f"The longest Hand-Crafted log has {3 + subsets['Hand-Crafted']}"
        )
        assert who.error_words.table["logs"].sum() == subsets["Hand-Crafted"]
    else:
        assert facts["hand_terminal_md"].data == "This folder holds no Hand-Crafted logs."
        assert "did not run: this folder holds no Hand-Crafted logs" in who.strata.show().data


def test_without_the_logs_every_who_and_when_part_is_skipped_with_the_fetch_hint(tmp_path, monkeypatch):
    from rcakit import data, sections
    from rcakit.trajectories import offline_locators

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "empty-home"))
    who = chapter.WhoAndWhenRun.read("who-and-when", offline_locators(0), claims_block())
    hint = data.fetch_hint("who-and-when", "who_and_when_path")
    assert who.report == hint and who.sets == {}
    assert all(part.skipped == hint for part in (who.scores, who.beside, who.error_words, who.strata))
    assert sections.collect(who.scores) == {}
    with pytest.raises(RcakitError, match="nowhere"):
        chapter.WhoAndWhenRun.read(str(tmp_path / "nowhere"), offline_locators(0), claims_block())


def test_the_random_sentence_reports_the_gap_to_the_printed_baseline():
    from rcakit.trajectories import evaluation, offline_locators

    logs = [_traj(f"h{i}", "Hand-Crafted", 4 + i, "Executor", 2) for i in range(2)]  # mean 1/T = (1/4 + 1/5)/2
    scored = evaluation.score_subsets(offline_locators(0), {"Hand-Crafted": logs}, {"Hand-Crafted": 2})
    section = chapter._scores_section(scored, claims_block(), rejected=1)
    text = section.facts["random_md"].data
    assert "For Hand-Crafted the mean of 1/T over its 2 logs is 22.50%, +18.34 points from the printed 4.16%" in text
    assert text.endswith("this folder holds no Algorithm-Generated logs.")
    assert section.numbers["who_and_when_details"]["rejected"] == 1
    terminal = section.facts["hand_terminal_md"].data  # terminal blames step 3 or 4, never the root at 2
    assert "(`terminal`, 0.0% strict" in terminal and "beats no published GPT-4o method" in terminal


@needs_who_and_when
def test_who_and_when_facts_name_the_same_numbers_as_without_the_logs():
    from rcakit.trajectories import offline_locators

    who = chapter.WhoAndWhenRun.read(str(WHO_AND_WHEN), offline_locators(0), claims_block())
    assert [len(ts) for ts in who.sets.values()] == [58, 126]
    facts = who.scores.facts
    assert {"who_n_hand", "gain_algo", "hand_bin_min", "hand_min_width", "algo_root1"} <= set(facts)
    assert (facts["who_n_hand"], facts["who_official_algo"]) == (58, 126)
    assert _page_glue_names("needs-who_and_when_path") <= set(facts)
    beside = who.beside.table
    assert beside.loc["n (strict)"].tolist() == [58, 126] and "terminal (official)" in beside.index
    shown = who.beside.show().frame  # counts as integers beside percentages with two decimals
    assert (
        shown.loc["n (official)"].tolist() == ["58", "126"] and shown.loc["terminal (strict)"].str.contains(r"\.").all()
    )
    assert "Hand-Crafted" in facts["who_sizes_md"].data and "no " not in facts["who_sizes_md"].data


def claims_block() -> dict:
    from rcakit import claims

    return claims.published("longrca-strata", "who_and_when_step_accuracy")


def test_the_release_section_is_skipped_with_one_line_and_scores_the_records_it_is_given(tmp_path, monkeypatch):
    from rcakit import data
    from rcakit.trajectories import offline_locators

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "empty-home"))
    locators = offline_locators(0)
    skipped = chapter.ReleaseRun.read("none", locators, paper_description())
    assert skipped.scored is None and "\n" not in skipped.report and "longrca = none" in skipped.report
    assert skipped.checks.skipped == skipped.scores.skipped == skipped.report and skipped.sets == {}
    unfetched = chapter.ReleaseRun.read("longrca-bench", locators, paper_description())
    assert unfetched.scored is None and unfetched.report == data.fetch_hint("longrca-bench", "longrca")
    with pytest.raises(RcakitError, match="no records were scored"):
        unfetched.strata()
    with pytest.raises(RcakitError, match="^parameter 'longrca': 'nowhere' is neither a data set"):
        chapter.ReleaseRun.read("nowhere", locators, paper_description())
    run = chapter.ReleaseRun.read(str(RELEASE), locators, paper_description())
    assert run.report.splitlines() == [
        f"{RELEASE}: 7 good records, 0 bad",
        f"{RELEASE}: differs from the paper's description on 21 of 21 checks",
    ]
    numbers = run.checks.numbers["longrca"]
    assert list(run.checks.numbers) == ["longrca"] and numbers["n"] == 7 and numbers["rejected"] == 0
    assert numbers["checks"]["trajectories"]["release"] == 7 and len(numbers["differs"]) == 21
    assert run.checks.table.loc["total steps", "release"] == 1092 and not run.checks.table["matches"].any()
    assert run.scores.table.loc["handoff_trace", "n"] == 7 and not run.scores.numbers
    assert [len(ts) for ts in run.sets.values()] == [7] and list(run.sets) == ["LongRCA Bench"]
    length, distance = run.strata()
    assert length.groupby("method", observed=True)["n"].sum().eq(7).all() and set(distance["bin"]) <= {
        "<=10",
        "11-50",
        "51-100",
        ">100",
    }
    # the MAE is weighted by the paper's source names, not the id prefixes
    assert set(run.scored.cases["terminal"]["source"]) == {
        "SWE-bench Pro",
        "Terminal Bench 2",
        "TravelPlanner",
        "VitaBench",
        "WebArena Verified",
    }
    assert sum(b["n"] for b in numbers["terminal"]["length_bins"].values()) == 7


@pytest.mark.chapters
def test_run_with_the_release_fixture_draws_the_workbench_strata_figure(tmp_path):
    import os
    import subprocess
    import sys

    from rcakit.book import registry
    from rcakit.paths import project_root

    env = {
        **os.environ,
        "RCAKIT_BOOK_DIR": str(tmp_path / "book"),
        "RCAKIT_RESULTS_DIR": str(tmp_path / "results"),
        "RCAKIT_DATA_DIR": str(tmp_path / "empty-home"),
        "RCAKIT_PROGRESS": "0",
    }
    fixture = RELEASE.relative_to(project_root()).as_posix()  # a project-relative path, as a user types it
    (tmp_path / "cwd").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "rcakit", "run", "longrca-strata", "--quick", "-p", "longrca", fixture],
        cwd=tmp_path / "cwd",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    notebook = tmp_path / "book" / "chapters" / (registry.get("longrca-strata").notebook.stem + ".ipynb")
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    named = [
        c
        for c in cells
        if c["metadata"].get("mystnb", {}).get("figure", {}).get("name") == "fig-longrca-strata-release"
    ]
    assert len(named) == 1
    assert any("image/png" in out.get("data", {}) for out in named[0]["outputs"])
    report = "".join(t for c in cells for out in c.get("outputs", []) for t in out.get("text", []))
    assert f"{fixture}: 7 good records, 0 bad" in report
    shown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "This section needs the Who&When logs" in shown and "needs LongRCA Bench records" not in shown
    recorded = json.loads((tmp_path / "results" / "longrca-strata.json").read_text(encoding="utf-8"))
    assert recorded["params"]["longrca"] == fixture and recorded["longrca"]["n"] == 7
    assert recorded["longrca"]["checks"]["total steps"]["release"] == 1092


def test_the_llm_locators_run_on_a_seeded_sample_of_the_release_records(tmp_path, monkeypatch):
    import re

    from rcakit.llm import Accounting
    from rcakit.trajectories import llm_evaluation, offline_locators
    from rcakit.trajectories.llm_locators import LLM_LOCATORS
    from support.llm_servers import ScriptedProvider

    def first_option(messages) -> str:  # every question answered with its first option
        text = messages[-1]["content"]
        if '"half"' in text:
            return '{"half": "first"}'
        if '"error"' in text:
            return '{"error": "yes"}'
        segment = re.search(r"Segment \(steps (\d+)-", text)
        if segment:
            return json.dumps({"purpose": "executing", "candidate": int(segment.group(1))})
        allowed = re.search(r"Steps you may choose: (\d+)", text)
        return json.dumps({"role": "Planner", "step": int(allowed.group(1)) if allowed else 0})

    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "cache"))
    locators = offline_locators(0)
    run = chapter.ReleaseRun.read(str(RELEASE), locators, paper_description())
    usage = Accounting()
    options = {"seed": 0, "prompt_tokens": 512, "max_questions": 4}
    lm = chapter.LLMRun.compare(ScriptedProvider(first_option), run.sets, locators, usage, max_cases=2, **options)
    assert list(lm.costs.numbers) == ["llm"] and list(lm.costs.numbers["llm"]) == ["LongRCA Bench"]
    assert list(lm.costs.table.loc["LongRCA Bench"].index) == [loc.name for loc in locators] + list(LLM_LOCATORS)
    assert sorted(usage) == sorted(f"LongRCA Bench.{name}" for name in LLM_LOCATORS)
    assert all(usage[key].cases == 2 and usage[key].calls >= 1 for key in usage)
    assert lm.costs.table.loc[("LongRCA Bench", "rcta"), "n"] == 2
    spread = lm.spread.table.loc["LongRCA Bench"]
    assert list(spread.index) == list(LLM_LOCATORS) and (spread["modal_share"] <= 1).all()
    for method, row in lm.costs.numbers["llm"]["LongRCA Bench"].items():
        assert row["predicted_steps"] == spread.loc[method].to_dict()
    # the same cases and their cost straight from compare_llm, on the same seeded sample
    direct = llm_evaluation.compare_llm(
        ScriptedProvider(first_option), run.sets, locators, Accounting(), max_cases=2, **options
    )
    assert direct.numbers == lm.costs.numbers["llm"]
    picked = llm_evaluation.llm_subset(run.scored.trajectories, 2, 0)
    assert list(direct.cases["LongRCA Bench"]["rcta"]["id"]) == [t.id for t in picked]
    none = chapter.LLMRun.compare(None, run.sets, locators, usage, max_cases=2)
    assert none.costs.skipped == none.spread.skipped and "provider = none" in none.costs.skipped
