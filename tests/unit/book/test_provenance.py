"""What produced an executed page, and when ``rcakit book`` must re-execute it (rcakit.book.provenance)."""

import json
import os

import pytest

from rcakit.book import provenance, registry, runner
from support.bad_inputs import TOY_CHAPTER


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """A project whose car-shapley chapter is the three-case toy, with a scratch book and results."""
    (tmp_path / "root" / "notebooks").mkdir(parents=True)
    (tmp_path / "root" / "notebooks" / "car_shapley.md").write_text(TOY_CHAPTER)
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


def test_a_rerun_records_its_parameters_and_the_book_keeps_them(toy):
    out = runner.run_chapter("car-shapley", {"seed": 5}, show_progress=False)
    block = provenance.read(out)
    assert block["parameters"]["seed"] == 5 and "rcakit.store" in block["modules"]
    assert runner.book_parameters("car-shapley")["seed"] == 5  # rcakit book reruns with the user's values
    assert runner.book_parameters("car-shapley", defaults=True)["seed"] == 0
    chapter = registry.get("car-shapley")
    assert provenance.why_stale(chapter, out, runner.book_parameters("car-shapley")) is None
    assert (
        provenance.why_stale(chapter, out, runner.book_parameters("car-shapley", defaults=True)) == "other parameters"
    )


def test_the_page_says_it_is_a_rerun_only_away_from_the_defaults(toy):
    out = runner.run_chapter("car-shapley", {"seed": 5}, show_progress=False)
    cells = json.loads(out.read_text())["cells"]
    note = [c for c in cells if "rcakit-rerun" in c["metadata"].get("tags", [])]
    assert len(note) == 1 and "`seed = 5` (default `0`)" in "".join(note[0]["source"])
    assert cells.index(note[0]) == 1  # right under the title
    assert not any(provenance.MODULES_TAG in c["metadata"].get("tags", []) for c in cells)  # the probe is gone
    cells = json.loads(runner.run_chapter("car-shapley", {}, show_progress=False).read_text())["cells"]
    assert not any("rcakit-rerun" in c["metadata"].get("tags", []) for c in cells)


def test_a_changed_source_or_module_makes_the_page_stale(toy, monkeypatch):
    out = runner.run_chapter("car-shapley", {}, show_progress=False)
    chapter = registry.get("car-shapley")
    params = runner.book_parameters("car-shapley")
    block = provenance.read(out)
    assert provenance.why_stale(chapter, out, params) is None
    block["code_digest"] = "0" * 16  # as if rcakit.store had changed since the run
    nb = json.loads(out.read_text())
    nb["metadata"]["rcakit"] = block
    out.write_text(json.dumps(nb))
    assert provenance.why_stale(chapter, out, params) == "code changed"
    source = chapter.notebook
    source.write_text(source.read_text() + "\nOne more sentence.\n")
    os.utime(source, ns=(1, 2))  # a new mtime, so the registry re-reads it
    assert provenance.why_stale(registry.get("car-shapley"), out, params) == "source changed"
    out.unlink()
    assert provenance.why_stale(chapter, out, params) == "no executed notebook"


def test_cells_are_selected_by_what_is_present(toy):
    import nbformat

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("always"),
            nbformat.v4.new_markdown_cell("needs", metadata={"tags": ["needs-provider"]}),
            nbformat.v4.new_markdown_cell("missing", metadata={"tags": ["missing-provider"]}),
        ]
    )
    chapter = registry.Chapter("x", toy / "x.md", "X", {"provider": registry.Parameter("provider", "none")})
    kept = runner.select_cells(nbformat.from_dict(nb), chapter, {"provider": "none"})
    assert [c.source for c in kept.cells] == ["always", "missing"]
    kept = runner.select_cells(nbformat.from_dict(nb), chapter, {"provider": "ollama:m"})
    assert [c.source for c in kept.cells] == ["always", "needs"]
