"""The primer: its closed forms hold at the exercise's parameters, a broken computation fails the run, and its
drawings show what their captions say."""

import json
import re
import shutil
from pathlib import Path

import jupytext
import networkx as nx
import numpy as np
import pytest
from matplotlib.patches import FancyBboxPatch

from rcakit import claims, plotting, repair, results
from rcakit.book import registry, runner
from rcakit.chapters import primer as chapter
from rcakit.paths import project_root


@pytest.fixture(scope="module")
def at_q_half(tmp_path_factory, monkeypatch_module):
    """The primer run as its first exercise asks: quick, with ``-p q 0.5``."""
    folder = tmp_path_factory.mktemp("primer")
    monkeypatch_module.setenv("RCAKIT_RESULTS_DIR", str(folder / "results"))
    notebook = runner.run_chapter("primer", {"q": 0.5}, quick=True, output_dir=folder / "book", show_progress=False)
    return results.load("primer"), notebook


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_primer_records_its_closed_forms_at_the_exercise_parameters(at_q_half):
    recorded, _ = at_q_half
    q, r, p = recorded["params"]["q"], recorded["params"]["r"], recorded["params"]["p_bad"]
    assert q == 0.5
    shapley = recorded["shapley"]
    assert shapley["and_game"] == pytest.approx(0.5) and shapley["or_game"] == pytest.approx(0.5)
    assert shapley["and_run"] == pytest.approx(0.375) and shapley["and_run_closed"] == pytest.approx(0.375)
    assert shapley["or_run"] == pytest.approx(0.125) and shapley["or_run_closed"] == pytest.approx(0.125)
    assert shapley["and_run_efficiency"] == pytest.approx(1 - q**2) == shapley["and_run_total"]
    assert recorded["do"]["force_no_refund"] == 0.0 and recorded["do"]["force_refund"] == 1.0
    assert recorded["contrastive"]["locus"] == 1 and recorded["contrastive"]["effects"][2] == 0.0
    assert recorded["contrastive"]["closed_effect_1"] == pytest.approx(p - 1)
    assert recorded["repair"] == {
        "and_exact": 1,
        "or_exact": 1,
        "and_replays": r * 5,
        "or_replays": r * 4,
        "and_replays_closed": r * 5,
        "or_replays_closed": r * 4,
    }
    assert recorded["rag"]["coverage_hop"] == recorded["rag"]["earliest_below"] == 1
    assert recorded["rag"]["fault_hop"] == 3 and recorded["rag"]["bound_slack"] <= 0


def test_no_identity_row_differs_or_is_off_setting_at_the_exercise_parameters(at_q_half):
    """At q = 0.5 every claim is checked against its closed form at q = 0.5, none against 0.455."""
    recorded, _ = at_q_half
    table = claims.compare("primer", recorded)
    assert set(table["kind"]) == {"identity", "mechanism"}  # mechanism: the Monte-Carlo checks, statistical
    # no paper is behind the page, so nothing "agrees": every claim is held to its closed form and holds
    assert (table["verdict"] == "holds").all(), table.loc[table["verdict"] != "holds", ["claim", "verdict"]]
    assert not any("when" in claim for claim in claims.chapter_claims("primer")["claims"])


def test_the_page_opens_with_the_verdict_and_glues_every_number(at_q_half):
    _, notebook = at_q_half
    glued = {
        out["metadata"]["scrapbook"]["name"]: out["data"]
        for cell in json.loads(notebook.read_text())["cells"]
        for out in cell.get("outputs", [])
        if "scrapbook" in out.get("metadata", {})
    }
    verdict = glued["verdict"]["application/papermill.record/text/markdown"]
    assert "Verdict: what holds here" in verdict and "no paper is behind this page" in verdict  # nothing reproduced
    assert "**The workbench's own claims that hold: 3 of 3**" in verdict
    assert "**Correctness checks** (identities, not reproductions): 14 of 14 hold." in verdict
    assert {"effect_0", "effect_1", "locus_text", "named_text", "and_run"} <= set(glued)
    source = (project_root() / "notebooks" / "primer.md").read_text()
    assert source.index(":::{glue:md} verdict") < source.index(":tags: [parameters]")
    assert "rcakit run primer" in source.split(":tags: [parameters]")[0]
    prose = " ".join(source.split())  # the seed-dependent sentence is gone: the two effects are tied in closed form
    assert "which of them is the larger changes with the seed" in prose and "largest effect would name" not in prose


def test_primer_is_first_and_validates_its_parameters():
    assert registry.ORDER[0] == "primer"
    primer = registry.get("primer")
    assert list(primer.parameters)[0] == "seed"
    registry.validate("primer", primer.quick)
    with pytest.raises(registry.RcakitError, match="outside"):
        registry.validate("primer", {"q": 1.5})


def test_each_concept_is_computed_by_hand_and_the_book_plumbing_is_out_of_sight():
    """A from-scratch cell per concept (the run, do, the contrasts, Shapley, the repair family, coverage), each
    asserting against the library call that computes the same thing; glue, collect and record sit in a removed cell."""
    cells = [c for c in jupytext.read(registry.get("primer").notebook).cells if c.cell_type == "code"]
    scratch = [c.source for c in cells if "from-scratch" in c.metadata.get("tags", [])]
    library = ["run.facts", "interventions.table", "commitment.numbers", "shapley_exact", "repair.exhaustive"]
    for call in [*library, "rag.diagnosers.coverage"]:
        assert any(call in source and "assert " in source for source in scratch), call
    for cell in cells:
        if any(name in cell.source for name in (".glue()", "sections.collect", "results.record")):
            assert "remove-cell" in cell.metadata.get("tags", []), cell.source[:60]


@pytest.mark.chapters
def test_a_broken_do_operation_fails_the_primer_run(tmp_path, monkeypatch):
    """Forcing the action is replaced by resampling it in the package the kernel imports: the hand-written do
    stops the run; without the from-scratch cells, the asserted identity claim does. No results are written."""
    source = (project_root() / "rcakit" / "chapters" / "primer.py").read_text()
    forced = 'scm.do_force_action(1, "no_refund")'
    assert source.count(forced) == 1
    shutil.copytree(project_root() / "rcakit", tmp_path / "rcakit", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "rcakit" / "chapters" / "primer.py").write_text(source.replace(forced, "scm.do_resample(1)"))
    shutil.copytree(project_root() / "notebooks", tmp_path / "notebooks")
    (tmp_path / "data").mkdir()
    shutil.copy(project_root() / "data" / "claims.yaml", tmp_path / "data" / "claims.yaml")
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the kernel imports the broken copy
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(runner.ChapterFailed, match=r"failed in cell \d+: AssertionError") as by_hand:
        runner.run_chapter("primer", quick=True, output_dir=tmp_path / "book", show_progress=False)
    failed = json.loads(Path(re.search(r"see (\S+\.ipynb);", str(by_hand.value)).group(1)).read_text())
    erring = [c for c in failed["cells"] if any(o["output_type"] == "error" for o in c.get("outputs", []))]
    assert 'replay("no_refund")' in "".join(erring[0]["source"])  # the by-hand do(force) disagrees
    notebook = tmp_path / "notebooks" / "primer.md"
    scratch = re.compile(r"^```\{code-cell\} ipython3\n---\ntags: \[from-scratch\]\n---\n.*?^```\n", re.M | re.S)
    text, removed = scratch.subn("", notebook.read_text())
    assert removed == 6
    notebook.write_text(text)
    with pytest.raises(
        runner.ChapterFailed,
        match=re.escape(r"claims not reproduced: $P(Y=1 \mid \mathrm{do}(A_1 = \text{no refund})) = 0$"),
    ):
        runner.run_chapter("primer", quick=True, output_dir=tmp_path / "book", show_progress=False)
    assert not (tmp_path / "results" / "primer.json").exists()


# --- the sections (rcakit.chapters.primer) -------------------------------------------------


def test_the_interventions_section_forces_exactly_and_records_the_resampled_interval():
    section = chapter.interventions_section(0.3, 400, 0)
    do = section.numbers["do"]
    assert do["force_no_refund"] == 0.0 and do["force_refund"] == 1.0
    lo, hi = do["resample_ci"]
    assert lo < do["resample"] < hi and 0 < lo and hi < 1
    assert list(section.table.columns) == ["replayed", "closed form"]
    assert section.table["closed form"].tolist() == [0.3, 0.0, 1.0]
    assert section.facts == section.numbers  # the prose quotes what is recorded, glued as do_resample, ...
    assert chapter.interventions_section(0.3, 400, 0).numbers == section.numbers  # same seed, same numbers
    assert chapter.interventions_section(0.3, 400, 1).numbers["do"]["resample"] != do["resample"]


def test_the_commitment_section_names_the_refund_decision_and_its_closed_forms():
    section = chapter.commitment_section(0.3, 600, 0)
    numbers = section.numbers["contrastive"]
    assert numbers["locus"] == 1 and numbers["closed_effect_1"] == pytest.approx(-0.7)
    assert list(numbers["effects"])[2] == 0.0
    assert section.table["closed_form"].tolist() == pytest.approx([-0.7, -0.7, 0.0])
    assert list(section.table.index) == ["lookup", "issue_refund", "final"]
    assert section.facts["locus_text"].data == "step 1, `issue_refund`"
    assert set(section.facts["effect"]) == {0, 1, 2}


def test_each_section_draws_from_its_own_stream_of_the_seed():
    streams = chapter.seed_streams(0)
    assert len(set(streams)) == 4 and chapter.seed_streams(0) == streams
    assert streams.run == int(np.random.default_rng(0).integers(0, 2**31, size=4)[0])
    run = chapter.refund_run_section(0.3, 400, 0)
    assert run.table["observed action"].tolist()[1] == "refund"  # the observed run is the failing one
    assert 0 < run.facts["fresh_p"] < 1 and run.facts["p_bad"] == 0.3 and not run.numbers


@pytest.mark.parametrize("q", [0.3, 0.5])
def test_the_shapley_section_is_exact_against_the_closed_forms(q):
    section = chapter.shapley_section(q, 0)
    numbers = section.numbers["shapley"]
    assert numbers["and_game"] == pytest.approx(0.5) and numbers["or_game"] == pytest.approx(0.5)
    assert numbers["and_run"] == pytest.approx((1 - q**2) / 2) == numbers["and_run_closed"]
    assert numbers["or_run"] == pytest.approx((1 - q) ** 2 / 2) == numbers["or_run_closed"]
    assert numbers["and_run_efficiency"] == pytest.approx(1 - q**2)
    assert section.table.loc["AND run", "φ2"] == pytest.approx(0.0) and section.facts["q"] == q
    assert section.decimals == 4


@pytest.mark.parametrize("r", [1, 3])
def test_the_repair_section_counts_gcjrs_replays_as_r_times_one_plus_m_plus_pairs(r):
    repairs = chapter.four_event_run(r, 0)
    section = chapter.repair_section(repairs, r)
    assert section.numbers["repair"] == {
        "and_exact": 1,
        "and_replays": 5 * r,
        "and_replays_closed": 5 * r,
        "or_exact": 1,
        "or_replays": 4 * r,
        "or_replays_closed": 4 * r,
    }
    assert section.table["GCJR family"].tolist() == ["{check, lookup}", "{check} | {lookup}"]
    assert section.facts["r_value"] == r
    figure = chapter.four_event_figure(repairs)
    assert [len([p for p in ax.patches if isinstance(p, FancyBboxPatch)]) for ax in figure.axes] == [1, 2]


def test_the_coverage_section_names_hop_1_below_the_bound():
    example = chapter.false_premise_run(20, 0)
    section = chapter.coverage_section(example, 0.05)
    numbers = section.numbers["rag"]
    assert numbers["coverage_hop"] == numbers["earliest_below"] == 1 and numbers["fault_hop"] == 3
    assert numbers["bound_slack"] <= 0  # J never exceeds |a| / |D_h|
    assert section.table.index.name == "hop" and list(section.table.index) == [1, 2, 3]
    assert section.facts["named_text"].data == "hop 1" and section.facts["gamma"] == 0.05
    assert not example.faulty.correct and example.faulty.answer != example.clean.gold  # the example fails
    assert section.facts["outcome_text"].data in (
        "the agent gives no answer",
        f"the agent answers {example.faulty.answer} instead",
    )
    nothing = chapter.coverage_section(example, 0.0)  # no J lies below 0: the rule names no hop
    assert nothing.numbers["rag"]["earliest_below"] == 0 and nothing.facts["named_text"].data == "no hop"


def test_the_section_figures_draw_the_sections_bars_and_crosses():
    shapley = chapter.shapley_figure(chapter.shapley_section(0.3, 0)).axes[0]
    assert len(shapley.patches) == 8  # four games, φ0 and φ1
    crosses = [c for c in shapley.collections if len(c.get_offsets()) == 4]
    assert len(crosses) == 1 and crosses[0].get_offsets()[:, 1].tolist() == pytest.approx([0.5, 0.5, 0.455, 0.245])
    do = chapter.interventions_figure(chapter.interventions_section(0.3, 400, 0)).axes[0]
    assert len(do.patches) == 3 and len(do.containers) == 2  # the bars and the resampled one's error bar
    coverage = chapter.coverage_section(chapter.false_premise_run(20, 0), 0.05)
    line = chapter.coverage_rule_figure(coverage).axes[0].lines[0]
    assert line.get_ydata()[0] == 0.05


# --- the drawings ---------------------------------------------------------------

POS = {"plan": (0, 0), "lookup": (1, 0.6), "check": (1, -0.6), "answer": (2, 0)}


def _cases() -> dict:
    dag = nx.DiGraph([("plan", "lookup"), ("plan", "check"), ("lookup", "answer"), ("check", "answer")])
    build = dict(faults=["lookup", "check"], sink="answer", schedules=list(nx.all_topological_sorts(dag)), seed=0)
    return {
        "AND join": repair.hand_built_case(dag.edges, case_id="AND", **build),
        "OR join": repair.hand_built_case(dag.edges, redundant=["answer"], case_id="OR", **build),
    }


def test_the_and_and_or_panels_draw_different_families():
    cases = _cases()
    figure = chapter.repair_family_figure(cases, {k: c.family for k, c in cases.items()}, POS, {k: k for k in cases})
    outlines = [[p for p in ax.patches if isinstance(p, FancyBboxPatch)] for ax in figure.axes]
    assert [len(o) for o in outlines] == [1, 2]  # one pair; two singletons
    pair, singles = outlines[0][0], outlines[1]
    assert pair.get_height() > 2 * max(s.get_height() for s in singles)  # the pair's outline spans both events
    assert [ax.get_title().splitlines()[0] for ax in figure.axes] == [
        "AND join: F = {check, lookup}",
        "OR join: F = {check} | {lookup}",
    ]


def test_no_node_is_clipped_by_its_axes():
    cases = _cases()
    for figure in (
        chapter.repair_family_figure(cases, {k: c.family for k, c in cases.items()}, POS, {k: k for k in cases}),
        chapter.run_graph_figure([("a", "b"), ("b", "Y")], {"a": (0, 0), "b": (1, 0.5), "Y": (2, 1)}, faulty=["b"]),
    ):
        renderer = figure.canvas.get_renderer()
        figure.canvas.draw()
        for ax in figure.axes:
            frame = ax.get_window_extent(renderer)
            boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in ax.texts if t.get_bbox_patch()]
            assert boxes and all(
                frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes
            )


def test_the_colours_named_in_the_captions_are_the_ones_drawn():
    """Every colour the repair figure draws is named in its caption by the book's palette names, and no caption
    says red (the fault colour is vermilion, which readers took for orange when captions said red)."""
    source = (project_root() / "notebooks" / "primer.md").read_text()
    caption = source.split("name: fig-primer-repair")[0].rsplit("caption: |", 1)[1]
    for drawn in (chapter.FAULT, chapter.SOUND, chapter.OUTCOME, chapter.REPAIR):
        assert plotting.COLOUR_NAMES[drawn] in caption
    assert plotting.COLOUR_NAMES[chapter.FAULT] == "vermilion" and chapter.REFERENCE == "black"
    assert not re.search(r"\bred\b", source) and "orange crosses" not in source
