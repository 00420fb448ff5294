"""rcakit.book.pages: one executed notebook cut into a lecture page and an audit page."""

import copy

import nbformat
import yaml

from rcakit import pages
from rcakit.book import build


def _glued(name: str) -> dict:
    return nbformat.v4.new_output(
        "display_data", data={"text/plain": repr(name)}, metadata={"scrapbook": {"name": name, "mime_prefix": ""}}
    )


def _chapter() -> nbformat.NotebookNode:
    """Title, parameters, a lecture section, two audit sections, then the summary (a lecture section)."""
    cells = [
        nbformat.v4.new_markdown_cell("# A toy chapter"),
        nbformat.v4.new_code_cell(
            "seed = 0  # the seed\nworkers = 1  # threads\nq = 0.3", metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_markdown_cell("## The estimator\n\nIt gives {glue:text}`early`."),
        nbformat.v4.new_code_cell("glue('early', 1)"),
        nbformat.v4.new_markdown_cell("(toy-protocol)=\n## The protocol", metadata={"audit": True}),
        nbformat.v4.new_code_cell("glue('late', 2)"),
        nbformat.v4.new_markdown_cell("### A detail of the protocol\n\nIt used {glue:text}`early`."),
        nbformat.v4.new_markdown_cell("## Beside the paper", metadata={"audit": True}),
        nbformat.v4.new_markdown_cell("The audit's last words.\n\n## Summary\n\nThe protocol gave {glue:text}`late`."),
    ]
    cells[3].outputs = [_glued("early")]
    cells[5].outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n"), _glued("late")]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = cells
    return notebook


def _texts(page: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in page.cells]


def _glue_names(cell: nbformat.NotebookNode) -> list[str]:
    return [output.metadata["scrapbook"]["name"] for output in cell.outputs]


def test_the_marked_sections_and_their_subsections_go_to_the_audit_in_order_and_the_rest_stays():
    split = pages.split(_chapter(), "toy")
    assert split.audit is not None
    lecture, audit = _texts(split.lecture), _texts(split.audit)
    assert not any(text.startswith(("(toy-protocol)", "### A detail", "## Beside")) for text in lecture)
    assert audit.index("(toy-protocol)=\n## The protocol") < audit.index("## Beside the paper")
    assert any(text.startswith("### A detail of the protocol") for text in audit)  # a subsection goes with it
    assert lecture[-2].startswith("## Summary")  # the section after the audit sections is the lecture's again
    assert audit[-2] == "The audit's last words."  # a cell is cut where a section opens inside it
    note = next(text for text in lecture if "On the audit page" in text)
    assert lecture.index(note) == 4  # where the first audit section stood
    assert "- {doc}`The protocol <toy_audit>`" in note and "- {doc}`Beside the paper <toy_audit>`" in note
    assert audit[0].startswith("# The audit: A toy chapter")


def test_every_glued_value_is_found_on_both_pages_and_other_outputs_stay_in_their_cells():
    split = pages.split(_chapter(), "toy")
    assert split.audit is not None
    for page in (split.lecture, split.audit):
        hidden = page.cells[-1]
        assert hidden.metadata["tags"] == ["remove-cell"] and sorted(_glue_names(hidden)) == ["early", "late"]
        assert sum("scrapbook" in o.get("metadata", {}) for c in page.cells[:-1] for o in c.get("outputs", [])) == 0
    late = next(cell for cell in split.audit.cells if cell.source == "glue('late', 2)")
    assert [output.output_type for output in late.outputs] == ["stream"]


def test_the_lecture_shows_the_experiments_parameters_and_the_audit_all_of_them():
    split = pages.split(_chapter(), "toy")
    assert split.audit is not None
    shown = next(c for c in split.lecture.cells if "parameters" in c.metadata.get("tags", []))
    assert "seed = 0" in shown.source and "q = 0.3" in shown.source and "workers" not in shown.source.split("#")[0]
    assert not any(line.startswith("workers") for line in shown.source.splitlines())
    full = next(c for c in split.audit.cells if "parameters" in c.metadata.get("tags", []))
    assert full.source == _chapter().cells[1].source


def test_the_same_notebook_gives_the_same_pages():
    notebook = _chapter()
    first, second = pages.split(notebook, "toy"), pages.split(notebook, "toy")
    assert first.lecture == second.lecture and first.audit == second.audit


def test_the_executed_notebook_is_left_as_papermill_wrote_it():
    notebook = _chapter()
    before = copy.deepcopy(notebook)
    pages.split(notebook, "toy")
    assert notebook == before


def test_a_notebook_without_marked_sections_is_one_page_as_it_ran():
    notebook = _chapter()
    for cell in notebook.cells:
        cell.metadata.pop("audit", None)
    split = pages.split(notebook, "toy")
    assert split.audit is None and split.lecture == notebook


def test_a_mark_on_a_subsection_or_a_paragraph_moves_nothing():
    notebook = _chapter()
    for cell in notebook.cells:
        cell.metadata.pop("audit", None)
    notebook.cells[6].metadata["audit"] = True  # a ### heading
    notebook.cells.insert(3, nbformat.v4.new_markdown_cell("A paragraph.", metadata={"audit": True}))
    assert pages.split(notebook, "toy").audit is None


def test_the_site_lists_each_audit_under_its_chapter_and_keeps_the_executed_notebook(toy, monkeypatch):
    book = toy / "book"
    (book / "chapters").mkdir(parents=True)
    (toy / "root" / "book").mkdir()
    toc = {"format": "jb-book", "root": "chapters/intro", "chapters": [{"file": "chapters/car_shapley"}]}
    (toy / "root" / "book" / "_toc.yml").write_text(yaml.safe_dump(toc))
    nbformat.write(_chapter(), book / "chapters" / "car_shapley.ipynb")
    executed = (book / "chapters" / "car_shapley.ipynb").read_bytes()
    monkeypatch.setattr(build.registry, "PAGES", ["car-shapley"])
    site = build.write_site(book)
    toc = yaml.safe_load((site / "_toc.yml").read_text())
    entry = next(e for e in toc["chapters"] if e["file"] == "chapters/car_shapley")
    assert entry["sections"] == [{"file": "chapters/car_shapley_audit"}]
    assert (site / "chapters" / "car_shapley_audit.ipynb").exists()
    assert (book / "chapters" / "car_shapley.ipynb").read_bytes() == executed
    lecture = nbformat.read(site / "chapters" / "car_shapley.ipynb", as_version=4)
    assert not any(cell.metadata.get("audit") for cell in lecture.cells)


def test_the_lecture_folds_a_long_code_cell_but_not_the_parameters_or_a_solution_and_the_audit_shows_it():
    notebook = _chapter()
    long = "\n".join(f"x{i} = {i}" for i in range(pages.FOLD_LINES + 1))
    notebook.cells.insert(3, nbformat.v4.new_code_cell(long))
    notebook.cells.insert(4, nbformat.v4.new_code_cell("\n".join(long.splitlines()[: pages.FOLD_LINES])))
    solution = [nbformat.v4.new_markdown_cell("````{solution-start} ex-1\n````"), nbformat.v4.new_code_cell(long)]
    notebook.cells += [*solution, nbformat.v4.new_markdown_cell("````{solution-end}\n````")]  # in the Summary
    notebook.cells[1].source += "\n" * pages.FOLD_LINES + "r = 1"
    split = pages.split(notebook, "toy")
    assert split.audit is not None
    code = [(c.source, c.metadata.get("tags", [])) for c in split.lecture.cells if c.cell_type == "code"]
    assert [source for source, _ in code].count(long) == 2  # the lecture's and the solution's
    folded = [source for source, tags in code if "hide-input" in tags]
    assert folded == [long]  # once: the copy in the solution stays as it is (its toggle hides it)
    assert not any("hide-input" in c.metadata.get("tags", []) for c in split.audit.cells)
