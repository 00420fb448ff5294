"""The primer: its closed forms hold at the exercise's parameters, a broken computation fails the run, and its
drawings show what their captions say."""

import json
import re
import shutil

import networkx as nx
import pytest
from matplotlib.patches import FancyBboxPatch

from rcakit import chapters, claims, plotting, primer_plots, repair, results, runner
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
    assert set(table["kind"]) == {"identity"}
    assert (table["verdict"] == "agrees").all(), table.loc[table["verdict"] != "agrees", ["claim", "verdict"]]
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
    assert "correctness checks" in verdict and "17 of 17 hold" in verdict
    assert {"effect_0", "effect_1", "locus_text", "named_text", "and_run"} <= set(glued)
    source = (project_root() / "notebooks" / "primer.md").read_text()
    assert source.index(":::{glue:md} verdict") < source.index(":tags: [parameters]")
    assert "rcakit run primer" in source.split(":tags: [parameters]")[0]
    prose = " ".join(source.split())  # the seed-dependent sentence is gone: the two effects are tied in closed form
    assert "which of them is the larger changes with the seed" in prose and "largest effect would name" not in prose


def test_primer_is_first_and_validates_its_parameters():
    assert chapters.ORDER[0] == "primer"
    primer = chapters.get("primer")
    assert list(primer.parameters)[0] == "seed"
    chapters.validate("primer", primer.quick)
    with pytest.raises(chapters.RcakitError, match="outside"):
        chapters.validate("primer", {"q": 1.5})


def test_a_broken_do_operation_fails_the_primer_run(tmp_path, monkeypatch):
    """Forcing the action is replaced by resampling it: the asserted identity claim stops the run."""
    source = (project_root() / "notebooks" / "primer.md").read_text()
    forced = 'scm.do_force_action(1, "no_refund")'
    assert source.count(forced) == 1
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "primer.md").write_text(source.replace(forced, "scm.do_resample(1)"))
    (tmp_path / "data").mkdir()
    shutil.copy(project_root() / "data" / "claims.yaml", tmp_path / "data" / "claims.yaml")
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(runner.ChapterFailed, match=r"claims not reproduced: P\(bad \| do\(A1 = no_refund\)\) = 0"):
        runner.run_chapter("primer", quick=True, output_dir=tmp_path / "book", show_progress=False)
    assert not (tmp_path / "results" / "primer.json").exists()


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
    figure = primer_plots.repair_family_figure(
        cases, {k: c.family for k, c in cases.items()}, POS, {k: k for k in cases}
    )
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
        primer_plots.repair_family_figure(cases, {k: c.family for k, c in cases.items()}, POS, {k: k for k in cases}),
        primer_plots.run_graph_figure(
            [("a", "b"), ("b", "Y")], {"a": (0, 0), "b": (1, 0.5), "Y": (2, 1)}, faulty=["b"]
        ),
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
    for drawn in (primer_plots.FAULT, primer_plots.SOUND, primer_plots.OUTCOME, primer_plots.REPAIR):
        assert plotting.COLOUR_NAMES[drawn] in caption
    assert plotting.COLOUR_NAMES[primer_plots.FAULT] == "vermilion" and primer_plots.REFERENCE == "black"
    assert not re.search(r"\bred\b", source) and "orange crosses" not in source
