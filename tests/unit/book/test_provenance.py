"""What produced an executed page, and when ``rcakit book`` must re-execute it (rcakit.book.provenance)."""

import json
import os

import pytest

from rcakit.book import provenance, registry, runner
from support.bad_inputs import TOY_CHAPTER


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


def _rewrite_block(out, **changes):
    nb = json.loads(out.read_text())
    nb["metadata"]["rcakit"].update(changes)
    out.write_text(json.dumps(nb))


def _toy_with(toy, code: str) -> None:
    """The toy chapter with ``code`` run after its sweep."""
    source = toy / "root" / "notebooks" / "car_shapley.md"
    source.write_text(TOY_CHAPTER.replace('print(len(cases), "cases")', f'print(len(cases), "cases")\n{code}'))


def test_an_edit_to_the_source_during_a_run_leaves_the_page_stale(toy, capsys):
    """The provenance is what papermill was handed: a source edited while the kernel runs is recorded as
    the run read it, so the page is stale (it used to read current, the edit never shown)."""
    _toy_with(toy, 'src = resolve("notebooks/car_shapley.md")\nsrc.write_text(src.read_text() + "\\nEdited later.\\n")')
    out = runner.run_chapter("car-shapley", {}, show_progress=False)
    shown = [c for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "markdown"]
    assert not [c for c in shown if "Edited later" in "".join(c["source"])]  # the page has what the run read
    chapter = registry.get("car-shapley")
    assert provenance.why_stale(chapter, out, runner.book_parameters("car-shapley")) == "source changed"
    warning = capsys.readouterr().err
    assert "car-shapley: the source changed while the chapter ran" in warning and "recorded as stale" in warning


def test_code_that_changed_during_a_run_is_seen_against_what_the_run_was_handed(toy):
    chapter = registry.get("car-shapley")
    source = chapter.notebook.read_bytes()
    before = provenance.before_run(chapter, {}, source)
    modules = ["rcakit", "rcakit.store"]
    assert provenance.changed_during_run(chapter, {}, modules, before) == []
    edited = provenance.Before(before.source, {**before.code, "rcakit.store": "0" * 16}, before.inputs)
    assert provenance.changed_during_run(chapter, {}, modules, edited) == ["rcakit's code"]
    block = provenance.record(chapter, {}, modules, edited, "page")
    assert block["code_digest"] != provenance.module_digest(modules)  # so why_stale reads "code changed"


@pytest.mark.parametrize(
    "changes",
    [
        {"parameters": [1, 2]},
        {"parameters": "seed=5"},
        {"modules": 7},
        {"modules": [1, "rcakit"]},
        {"modules": ["this.x"]},
        {"modules": ["rcakit.store", "os.path"]},
        {"inputs": {"results": 3}},
        {"code_digest": None},
    ],
    ids=str,
)
def test_provenance_of_the_wrong_shape_is_no_provenance_and_names_are_never_imported(toy, capsys, changes):
    """A block edited in or from elsewhere is data: a wrong type means "no provenance" (a rerun at the
    defaults), never a traceback; a name under ``modules`` is never imported (``this`` prints the Zen)."""
    import sys

    out = runner.run_chapter("car-shapley", {"seed": 5}, show_progress=False)
    _rewrite_block(out, **changes)
    sys.modules.pop("this", None)
    reason = provenance.why_stale(registry.get("car-shapley"), out, runner.book_parameters("car-shapley"))
    assert reason.startswith(f"no provenance ({out}: ") and "\n" not in reason
    assert runner.book_parameters("car-shapley")["seed"] == 0
    assert "this" not in sys.modules and "Beautiful is better" not in capsys.readouterr().out


def test_module_names_are_resolved_as_files_under_the_package():
    import rcakit

    package = os.path.dirname(rcakit.__file__)
    assert provenance.module_file("rcakit") == provenance.Path(package, "__init__.py")
    assert provenance.module_file("rcakit.store") == provenance.Path(package, "store.py")
    assert provenance.module_file("rcakit.book") == provenance.Path(package, "book", "__init__.py")
    for name in ("this", "this.x", "os.path", "rcakit..x", "rcakit.no_such_module", "rcakit/../x"):
        assert provenance.module_file(name) is None
    assert provenance.code_state(["rcakit.no_such_module"]) == {"rcakit.no_such_module": "<missing>"}


def test_a_notebook_nested_too_deeply_is_no_provenance_naming_the_file(toy):
    out = runner.run_chapter("car-shapley", {"seed": 5}, show_progress=False)
    out.write_text("[" * 100_000 + "]" * 100_000)
    reason = provenance.why_stale(registry.get("car-shapley"), out, runner.book_parameters("car-shapley"))
    assert reason == f"no provenance ({out}: nested too deeply)"
    assert runner.book_parameters("car-shapley")["seed"] == 0


def test_a_planted_output_makes_the_page_stale_and_the_build_refuses_it(toy, monkeypatch):
    """An output rcakit did not write (a ``<script>``) is seen by the page digest: ``rcakit book`` reruns
    the page and the build refuses it before Sphinx starts, naming it."""
    from rcakit import RcakitError
    from rcakit.book import build

    out = runner.run_chapter("car-shapley", {}, show_progress=False)
    nb = json.loads(out.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["outputs"])
    code["outputs"].append(
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<script>alert(1)</script>"}}
    )
    out.write_text(json.dumps(nb))
    chapter = registry.get("car-shapley")
    assert provenance.why_stale(chapter, out, runner.book_parameters("car-shapley")) == "outputs changed"
    monkeypatch.setattr(registry, "PAGES", ("car-shapley",))
    assert build.foreign_pages() == ["car_shapley.ipynb: its cells or outputs differ from what rcakit wrote"]
    with pytest.raises(RcakitError, match="holds pages rcakit did not write as they are: car_shapley.ipynb"):
        build.build()
    assert not (toy / "book" / "_build").exists()
    runner.run_chapter("car-shapley", {}, show_progress=False)
    assert build.foreign_pages() == []
