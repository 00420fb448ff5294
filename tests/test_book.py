"""Every chapter runs with its quick parameters, records its results, and the
book builds with warnings as errors. Also: the gate fails when it should."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from rcakit import chapters, results, runner
from rcakit.results import lookup

REQUIRED_KEYS = {
    "car-shapley": [
        "interaction.phi", "interaction.phi_ci", "interaction.efficiency",
        "interaction.analytic_efficiency", "interaction.rollouts",
        "interaction.contrastive_abs_sum", "pivotal.locus", "pivotal.effects", "support_agent.locus",
        "support_agent.effects", "support_agent.action_match_rate", "params",
    ],
    "gcjr-ablations": [
        "n_cases", "n_in_scope", "gcjr.fem", "gcjr.macro_fem", "gcjr.aj", "gcjr.rs1", "gcjr.sc", "gcjr.mv",
        "gcjr.mean_replays", "exhaustive.fem", "exhaustive.mean_replays", "replay_reduction",
        "ablation.singleton_only.fem_joint_and", "ablation.no_minimality.fem_alt_or", "ablation.no_minimality.mv",
        "ablation.hidden_edges_10.fem", "baselines.shapley_top2.rs1", "baselines.shapley_top2.macro_fem",
        "baselines.shapley_top2.mv", "baselines.shapley_top2.fem", "cost.gcjr_formula_match", "sc_under_noise.gcjr",
        "pilot.n_cases", "pilot.gcjr.fem", "pilot.gcjr.mean_calls", "pilot.exhaustive.mean_calls", "pilot.saving",
        "pilot.gcjr.rs1", "pilot.gcjr.mv", "params",
    ],
    "coverage-collapse": [
        "accuracy.coverage.1.point", "accuracy.coverage.3.hi", "accuracy.propagation_aware.2.lo",
        "failed_n.1", "eligible_n.2", "recovery.3", "probe_branch.propagation_aware.1", "params",
    ],
    "content-corruption": [
        "outcomes.1.absorbed", "outcomes.3.n", "strategy_counts", "accuracy.suf_regen.1.point",
        "failed_n.2", "query_contamination.k", "query_contamination.n", "params",
    ],
    "longrca-strata": [
        "published.length_bins", "published.distance_bins",
        "who_and_when.Hand-Crafted.terminal.exact_official", "who_and_when.Algorithm-Generated.random.role_acc",
        "synthetic.handoff_trace.overall.mae", "synthetic.terminal.length_bins",
        "synthetic.terminal.distance_bins", "params",
    ],
}


@pytest.mark.parametrize("chapter_id", [c for c in chapters.ORDER if c != "claims"])
def test_chapter_records_required_keys(quick_book, chapter_id):
    recorded = results.load(chapter_id)
    for key in REQUIRED_KEYS.get(chapter_id, ["params"]):
        lookup(recorded, key)  # KeyError names the missing key
    assert recorded["params"] == runner.run_parameters(chapter_id, quick=True)


def test_car_shapley_quick_values(quick_book):
    r = results.load("car-shapley")["interaction"]
    assert len(r["phi"]) == 3 and len(r["phi_ci"]) == 3
    assert abs(r["efficiency"] - 0.91) <= 0.03
    assert results.load("car-shapley")["pivotal"]["locus"] == 1


def test_book_html_has_chapters_figures_and_claims(quick_book):
    html = quick_book / "_build" / "html"
    assert (html / "index.html").exists()
    page = (html / "chapters" / "car_shapley.html").read_text()
    assert page.count("<img") >= 2 and "Beside the paper" in page
    closing = (html / "chapters" / "claims.html").read_text()
    assert "Efficiency sum vs analytic" in closing and "agrees" in closing


def test_executed_chapters_show_injected_parameters_and_no_noise(quick_book):
    for nb_path in (quick_book / "chapters").glob("*.ipynb"):
        nb = json.loads(nb_path.read_text())
        has_parameters = bool(chapters.get(nb_path.stem.replace("_", "-")).parameters)  # not the closing page
        injected = any("injected-parameters" in c["metadata"].get("tags", []) for c in nb["cells"])
        assert injected == has_parameters, nb_path
        text = json.dumps([c.get("outputs", []) for c in nb["cells"]])
        assert not re.search(r"0x[0-9a-f]{6,}", text), f"{nb_path}: memory address in outputs"
        assert "Warning" not in text, f"{nb_path}: a warning leaked into the outputs"


def test_same_parameters_give_byte_identical_results(tmp_path, monkeypatch):
    texts = []
    for run in ("a", "b"):
        monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / run))
        runner.run_chapter("car-shapley", {"q": 0.5, "seed": 3}, quick=True, output_dir=tmp_path / run,
                           show_progress=False)
        texts.append((tmp_path / run / "car-shapley.json").read_bytes())
    assert texts[0] == texts[1]
    assert abs(json.loads(texts[0])["interaction"]["efficiency"] - 0.75) <= 0.03


BROKEN = textwrap.dedent(
    """\
    ---
    kernelspec: {display_name: Python 3, language: python, name: python3}
    rcakit: {title: Broken, bounds: {seed: [0, null]}}
    ---
    # Broken

    ```{code-cell} ipython3
    :tags: [parameters]

    seed = 0  # seed
    ```

    ```{code-cell} ipython3
    raise ValueError("planted failure")
    ```
    """
)


def test_a_failing_chapter_fails_the_run(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "car_shapley.md").write_text(BROKEN)
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    with pytest.raises(runner.ChapterFailed, match="planted failure"):
        runner.run_chapter("car-shapley", output_dir=tmp_path, show_progress=False)
    env = {**os.environ, "RCAKIT_ROOT": str(tmp_path), "RCAKIT_BOOK_DIR": str(tmp_path / "book")}
    proc = subprocess.run([sys.executable, "-m", "rcakit.cli", "run", "car-shapley"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "planted failure" in proc.stderr


def test_a_warning_fails_the_book_build(tmp_path, monkeypatch, quick_book):
    book = tmp_path / "book"
    book.mkdir()
    for name in ("_config.yml", "intro.md"):
        (book / name).write_text((quick_book / name).read_text())
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: chapters/missing\n")
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(book))
    with pytest.raises(runner.ChapterFailed, match="jupyter-book build failed"):
        runner.build_book()


def png_outputs(nb_path) -> list[bytes]:
    """Every image/png output of an executed notebook, in cell order, decoded."""
    import base64

    nb = json.loads(nb_path.read_text())
    return [base64.b64decode(out["data"]["image/png"]) for cell in nb["cells"] for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})]


def rerun_with_hash_seed(chapter_id, folder, hash_seed="123"):
    """Run ``chapter_id`` at quick in a subprocess with its own hash seed, book, results and stores."""
    chapter = chapters.get(chapter_id)
    args = [sys.executable, "-m", "rcakit.cli", "run", chapter_id, "--quick"]
    if "store" in chapter.parameters:
        args += ["-p", "store", str(folder / "cases")]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "RCAKIT_BOOK_DIR": str(folder / "book"),
           "RCAKIT_RESULTS_DIR": str(folder / "results"), "RCAKIT_PROGRESS": "0"}
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return folder / "book" / "chapters" / (chapter.notebook.stem + ".ipynb")


@pytest.mark.parametrize("chapter_id", [c for c in chapters.ORDER if c != "claims"])
def test_figures_do_not_depend_on_the_hash_seed(quick_book, chapter_id, tmp_path):
    from conftest import FIXTURE_HASH_SEED

    assert FIXTURE_HASH_SEED != "123"
    first = png_outputs(quick_book / "chapters" / (chapters.get(chapter_id).notebook.stem + ".ipynb"))
    again = png_outputs(rerun_with_hash_seed(chapter_id, tmp_path))
    assert len(again) == len(first) and first, chapter_id
    changed = [i for i, (a, b) in enumerate(zip(first, again, strict=True)) if a != b]
    assert changed == [], f"{chapter_id}: figures {changed} differ with another PYTHONHASHSEED"
