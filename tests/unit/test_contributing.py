"""CONTRIBUTING.md's rules for a chapter and the package, checked on every chapter and subpackage."""

import ast
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from rcakit.book import registry
from rcakit.paths import project_root

PAPER_PAGES = [c for c in registry.ORDER if registry.get(c).parameters]
MAX_CODE_LINES = 120  # CONTRIBUTING: "Code cells total at most 120 lines per chapter"


def _cells(chapter_id: str) -> list:
    return jupytext.read(registry.get(chapter_id).notebook).cells


def _code_lines(cell: object) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def _in_solution(cells: list) -> set[int]:
    """Indices of the cells inside an exercise's solution (between solution-start and solution-end)."""
    inside, out = False, set()
    for i, cell in enumerate(cells):
        # jupytext can merge one solution's end and the next one's start into one markdown cell: read the
        # marks in their order
        marks = re.findall(r"solution-(start|end)", cell.source) if cell.cell_type == "markdown" else []
        if inside or marks:
            out.add(i)
        for mark in marks:
            inside = mark == "start"
    return out


def test_a_solution_that_starts_in_the_cell_where_the_last_one_ends_is_still_a_solution():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md("solution-start"), code("a"), md("solution-end\n\nexercise 2\n\nsolution-start"), code("b")]
    cells += [md("solution-end"), code("c")]
    assert _in_solution(cells) == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("chapter_id", PAPER_PAGES)
def test_a_chapter_keeps_its_code_short_outside_the_exercises(chapter_id):
    cells = _cells(chapter_id)
    solutions = _in_solution(cells)
    code = [c for i, c in enumerate(cells) if c.cell_type == "code" and i not in solutions]
    lines = sum(_code_lines(c) for c in code if not _from_scratch(c))
    assert lines <= MAX_CODE_LINES, f"{chapter_id}: {lines} code lines outside the exercises (at most {MAX_CODE_LINES})"


def _from_scratch(cell: object) -> bool:
    return "from-scratch" in cell.metadata.get("tags", [])


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_a_from_scratch_cell_is_short_and_checks_itself_against_the_library(chapter_id):
    for cell in (c for c in _cells(chapter_id) if c.cell_type == "code" and _from_scratch(c)):
        assert _code_lines(cell) <= 25, f"{chapter_id}: a from-scratch cell of {_code_lines(cell)} lines"
        assert "assert " in cell.source, f"{chapter_id}: a from-scratch cell that checks nothing"


@pytest.mark.parametrize("chapter_id", PAPER_PAGES)
def test_a_chapter_has_its_sections_and_two_to_four_exercises(chapter_id):
    text = registry.get(chapter_id).notebook.read_text(encoding="utf-8")
    assert re.search(r"^## Explore", text, re.M), f"{chapter_id}: no Explore section"
    exercises = re.findall(r"^```\{exercise\}", text, re.M)
    solutions = re.findall(r"^````\{solution-start\}", text, re.M)
    assert 2 <= len(exercises) <= 4 and len(solutions) == len(exercises), (chapter_id, len(exercises), len(solutions))
    assert "{cite:" in text.split("\n## ")[0], f"{chapter_id}: the opening does not cite its paper"


@pytest.mark.parametrize("chapter_id", PAPER_PAGES)
def test_the_parameters_cell_starts_with_the_seed(chapter_id):
    assert next(iter(registry.get(chapter_id).parameters)) == "seed"


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_every_figure_is_hidden_captioned_and_named(chapter_id):
    for cell in _cells(chapter_id):
        if cell.cell_type == "code" and "plt.show()" in cell.source:
            figure = cell.metadata.get("mystnb", {}).get("figure", {})
            assert figure.get("caption") and figure.get("name"), f"{chapter_id}: a figure without caption or name"
            tags = cell.metadata.get("tags", [])
            hidden = "hide-input" in tags or "remove-input" in tags
            assert hidden, f"{chapter_id}: figure {figure['name']} shows its code"


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_section_tags_name_a_parameter_of_the_chapter(chapter_id):
    """A ``needs-``/``missing-`` tag naming no parameter would silently keep or drop its cell."""
    chapter = registry.get(chapter_id)
    for cell in _cells(chapter_id):
        for tag in cell.metadata.get("tags", []):
            kind, _, name = tag.partition("-")
            if kind in ("needs", "missing"):
                assert name in chapter.parameters, f"{chapter_id}: tag {tag!r} names no parameter"


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_an_optional_section_cell_holds_no_heading(chapter_id):
    """A ``needs-``/``missing-`` markdown cell is dropped with its input: a heading inside it (a cell that ran on
    past its section, for want of a ``+++``) would drop the next section's title and prose with it."""
    for cell in _cells(chapter_id):
        optional = any(tag.startswith(("needs-", "missing-")) for tag in cell.metadata.get("tags", []))
        if optional and cell.cell_type == "markdown":
            assert not re.search(r"^#{1,3} ", cell.source, re.M), f"{chapter_id}: a heading in {cell.source[:60]!r}"


def glue_directive_problems(cells: list) -> list[str]:
    """Each ``{glue:md}`` directive must be a markdown cell of its own, collapsed in JupyterLab
    (``jupyter.source_hidden``) and opened by a ``%`` comment that says what the book fills in: JupyterLab does
    not know the directive and would show it as an error box (README, the JupyterLab section)."""
    found = []
    for cell in cells:
        if cell.cell_type != "markdown" or ":::{glue:md}" not in cell.source:
            continue
        lines = cell.source.strip().splitlines()
        if not cell.metadata.get("jupyter", {}).get("source_hidden"):
            found.append(f"not collapsed in JupyterLab: {lines[0][:60]!r}")
        if not lines[0].startswith("% "):
            found.append(f"no comment first: {lines[0][:60]!r}")
        if sum(line.startswith(":::") for line in lines) != 2 or not lines[-1].startswith(":::"):
            found.append(f"not a cell of its own: {lines[0][:60]!r}")
    return found


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_a_glued_block_is_a_collapsed_cell_of_its_own_that_says_what_it_holds(chapter_id):
    assert glue_directive_problems(_cells(chapter_id)) == []


def test_the_glued_block_check_finds_an_open_uncommented_or_shared_cell():
    md = nbformat.v4.new_markdown_cell
    bare = md(":::{glue:md} verdict\n:format: myst\n:::\n\nMore prose.")
    assert len(glue_directive_problems([bare])) == 3
    good = md("% Filled in by the book.\n:::{glue:md} verdict\n:format: myst\n:::")
    good.metadata["jupyter"] = {"source_hidden": True}
    assert glue_directive_problems([good]) == []


def test_notebook_sources_hold_no_outputs():
    for path in sorted((project_root() / "notebooks").glob("*.md")):
        assert '"outputs": [' not in path.read_text(encoding="utf-8"), path


def test_every_subpackage_lists_its_exports():
    for init in sorted(Path(project_root() / "rcakit").rglob("__init__.py")):
        if init.parent.name == "rcakit":
            continue
        names = {
            t.id
            for node in ast.parse(init.read_text()).body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        }
        assert "__all__" in names, f"{init}: no __all__"


def _chapter_code(cells: list) -> list[ast.Module]:
    """The parsed code cells of a chapter outside its exercises' solutions."""
    solutions = _in_solution(cells)
    return [ast.parse(c.source) for i, c in enumerate(cells) if c.cell_type == "code" and i not in solutions]


def _called(node: ast.Call) -> str:
    """The called name as written: ``glue``, ``prose.glue_all``, ``sections.collect``."""
    return ast.unparse(node.func)


def hand_built_numbers(cells: list) -> list[str]:
    """What in a chapter's code builds results or prose numbers by hand, one line each (empty: none)."""
    found, collected = [], set()
    trees = _chapter_code(cells)
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if _called(node.value).endswith("sections.collect") or _called(node.value) == "collect":
                collected.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in (n for tree in trees for n in ast.walk(tree)):
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        if name in ("glue", "myst_nb.glue") or name.endswith("glue_all"):
            found.append(f"glues a value by hand: {ast.unparse(node)[:80]}")
        if name.endswith("results.record"):
            numbers = node.args[1] if len(node.args) > 1 else None
            is_collect = isinstance(numbers, ast.Call) and _called(numbers).endswith("collect")
            if not (is_collect or (isinstance(numbers, ast.Name) and numbers.id in collected)):
                found.append(f"records numbers not collected from its sections: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.parametrize("chapter_id", PAPER_PAGES)
def test_a_chapter_glues_and_records_only_what_its_sections_return(chapter_id):
    """Issue 23: facts come from ``Section.glue()``, results from ``sections.collect(...)``, never a hand-built dict."""
    assert hand_built_numbers(_cells(chapter_id)) == []


def test_the_hand_built_check_finds_a_hand_built_dict():
    """The check above fails on a chapter that glues and records a dict it built itself, and passes sections."""
    hand = nbformat.v4.new_code_cell('prose.glue_all({"x": 1})\nresults.record("c", {"x": 1}, params)')
    found = hand_built_numbers([hand])
    assert len(found) == 2 and "glues a value by hand" in found[0] and "not collected" in found[1]
    shaped = nbformat.v4.new_code_cell('main.glue()\nnumbers = sections.collect(main)\nresults.record("c", numbers, p)')
    assert hand_built_numbers([shaped]) == []
