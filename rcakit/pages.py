r"""The pages a reader sees, made from a chapter's one executed notebook: its lecture and its audit.

A chapter is one notebook and one papermill run. Its sections a referee needs and a student does
not (protocol tables, ablations, side-by-side variants, model and cluster settings, the claims
table) carry ``"audit": true`` in the metadata of their heading's markdown cell (jupytext MyST:
``+++ {"audit": true}`` above the heading). :func:`split` cuts the executed notebook at build
time into two pages:

- the **lecture**, ``<stem>.ipynb``: every other section in its order, a note where the first
  audit section stood naming what moved, and the parameters cell without the model's, the cluster's
  and the store's settings (:data:`INFRASTRUCTURE`, and every ``llm_`` name), which ran as written;
- the **audit**, ``<stem>_audit.ipynb``: a title, the whole parameters cell, and the audit
  sections in their order.

Every glued value is moved into one hidden cell that both pages end with, so a ``{glue}`` in
either page finds its value. The executed notebook itself is never changed: nbval, provenance and
the page digest read it as papermill wrote it; the split copies live only in the build's source
folder (:func:`rcakit.book.build.build`). A rerun makes one notebook, and the next build makes
both pages from it, so they cannot disagree.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache

import nbformat
from nbformat import NotebookNode

AUDIT_KEY = "audit"  # the markdown cell metadata that puts a section in the audit
AUDIT_SUFFIX = "_audit"  # <stem>_audit.ipynb: the audit page's file
# Parameters a student need not read: the model (which server, its limits, how many cases it reads), the
# cluster, the store. They stay in the one parameters cell papermill fills (rcakit run -p) and are shown
# on the audit page, as are the sections that use them.
INFRASTRUCTURE = frozenset({"provider", "judge_provider", "workers", "scheduler", "store", "method_timeout"})
INFRASTRUCTURE_PREFIX = "llm_"  # llm_timeout, llm_base_url, llm_max_cases, ...: every model setting
# The lecture folds a longer code cell (its source a click away, "Show code cell source"; its output
# shown): the prose, math, tables and figures carry a first reading. The audit shows code as written.
FOLD_LINES = 8
_HEADING = re.compile(r"^(#{1,2}) +(\S.*)$")  # a page title or a section: '# …' or '## …'
_LABEL = re.compile(r"^\([^)\s]+\)=$")  # a MyST target line, '(car-shapley-audit)='
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=")
_ANY_HEADING = re.compile(r"^#{1,6} +(\S.*)$", re.M)


@dataclass(frozen=True)
class Pages:
    """A chapter's two pages: the lecture, and the audit (None when no section is marked)."""

    lecture: NotebookNode
    audit: NotebookNode | None


def heading(cell: NotebookNode) -> tuple[int, str] | None:
    """The level and text of the heading a markdown cell opens with (after target and comment lines)."""
    if cell.cell_type != "markdown":
        return None
    for line in cell.source.splitlines():
        text = line.strip()
        if not text or _LABEL.match(text) or text.startswith("%"):
            continue
        match = _HEADING.match(text)
        return (len(match.group(1)), match.group(2).strip()) if match else None
    return None


def _at_headings(cell: NotebookNode) -> list[NotebookNode]:
    """A markdown cell cut before each ``#``/``##`` heading that does not open it (with the target line
    above the heading), so that every section starts a cell; the first part keeps the cell's metadata."""
    if cell.cell_type != "markdown":
        return [cell]
    lines = cell.source.splitlines()
    starts = [0]
    for i, line in enumerate(lines):
        if i and _HEADING.match(line):
            start = i - 1 if _LABEL.match(lines[i - 1].strip()) else i
            if start > starts[-1] and any(text.strip() for text in lines[starts[-1] : start]):
                starts.append(start)
    if len(starts) == 1:
        return [cell]
    parts = []
    for k, (a, b) in enumerate(zip(starts, [*starts[1:], len(lines)], strict=True)):
        part = copy.deepcopy(cell) if k == 0 else nbformat.v4.new_markdown_cell()
        if k and "id" in cell:
            part.id = f"{cell.id}-{k}"[-64:]  # a stable id: the same run gives the same pages
        part.source = "\n".join(lines[a:b]).strip("\n")
        parts.append(part)
    return parts


def _marked(notebook: NotebookNode) -> list[tuple[NotebookNode, bool]]:
    """Each cell of ``notebook`` cut at its headings (:func:`_at_headings`), with whether it belongs to a
    section marked for the audit."""
    marked, in_audit = [], False
    for cell in (part for whole in notebook.cells for part in _at_headings(whole)):
        if (opened := heading(cell)) is not None:
            in_audit = opened[0] == 2 and bool(cell.metadata.get(AUDIT_KEY))
        marked.append((cell, in_audit))
    return marked


@cache
def audit_sections(stem: str) -> frozenset[str]:
    """The headings (any level) of the sections on a chapter's audit page, read from its MyST source, so a
    claim's link (:func:`rcakit.claims.section_link`) names the page its section is on."""
    import jupytext

    from rcakit.paths import project_root

    source = project_root() / "notebooks" / f"{stem}.md"
    if not source.is_file():
        return frozenset()
    cells = [c for c, audit in _marked(jupytext.read(source)) if audit and c.cell_type == "markdown"]
    return frozenset(match.strip() for cell in cells for match in _ANY_HEADING.findall(cell.source))


def split(notebook: NotebookNode, stem: str) -> Pages:
    """Cut an executed chapter notebook into its lecture and audit pages (module docstring)."""
    whole, notebook = notebook, copy.deepcopy(notebook)  # the caller's notebook stays as papermill wrote it
    lecture: list[NotebookNode | None] = []
    audit: list[NotebookNode] = []
    moved: list[str] = []
    for cell, in_audit in _marked(notebook):
        if in_audit and (opened := heading(cell)) is not None:
            if not moved:
                lecture.append(None)  # where the note naming the audit goes
            moved.append(opened[1])
        if in_audit:
            audit.append(cell)
        else:
            lecture.append(cell)
    if not moved:
        return Pages(copy.deepcopy(whole), None)
    glue = _take_glue([*lecture, *audit])
    params = next((c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])), None)
    lecture_cells = [_moved_note(stem, moved) if c is None else _lecture_cell(c) for c in _folded(lecture)]
    head = [_audit_title(notebook, stem)] + (_params_section(params) if params is not None else [])
    return Pages(_page(notebook, lecture_cells + [glue]), _page(notebook, head + audit + [copy.deepcopy(glue)]))


def _take_glue(cells: list[NotebookNode | None]) -> NotebookNode:
    """Move every glued output (myst-nb's ``scrapbook`` metadata) into one hidden code cell."""
    glued = []
    for cell in cells:
        if cell is None or cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            (glued if "scrapbook" in output.get("metadata", {}) else kept).append(output)
        cell.outputs = kept
    hidden = nbformat.v4.new_code_cell("", metadata={"tags": ["remove-cell"]}, id="rcakit-glue")
    hidden.outputs = glued
    return hidden


def _folded(cells: list[NotebookNode | None]) -> list[NotebookNode | None]:
    """The cells with each code cell longer than :data:`FOLD_LINES` lines folded (``hide-input``), except
    the parameters cell and an exercise's solution (already behind its toggle)."""
    out, in_solution = [], False
    for cell in cells:
        if cell is not None and cell.cell_type == "markdown":
            if "{solution-start}" in cell.source:
                in_solution = True
            if "{solution-end}" in cell.source:
                in_solution = False
        tags = [] if cell is None else cell.metadata.get("tags", [])
        shown = not {"parameters", "remove-cell", "remove-input", "hide-input", "hide-cell"} & set(tags)
        if cell is not None and cell.cell_type == "code" and shown and not in_solution:
            if len(cell.source.splitlines()) > FOLD_LINES:
                cell = copy.deepcopy(cell)
                cell.metadata["tags"] = [*tags, "hide-input"]
        out.append(cell)
    return out


def _lecture_cell(cell: NotebookNode) -> NotebookNode:
    """The cell as the lecture shows it: the parameters cell without :data:`INFRASTRUCTURE`."""
    if "parameters" not in cell.metadata.get("tags", []):
        return cell
    kept, hidden = [], []
    for line in cell.source.splitlines():
        name = _ASSIGNMENT.match(line)
        infrastructure = name and (name.group(1) in INFRASTRUCTURE or name.group(1).startswith(INFRASTRUCTURE_PREFIX))
        (hidden if infrastructure else kept).append(line)
    if not hidden:
        return cell
    shown = copy.deepcopy(cell)
    shown.source = "\n".join(kept + ["# the model's, the cluster's and the store's settings: on the audit page"])
    return shown


def _moved_note(stem: str, titles: list[str]) -> NotebookNode:
    listed = "\n".join(f"- {{doc}}`{title} <{stem}{AUDIT_SUFFIX}>`" for title in titles)
    return nbformat.v4.new_markdown_cell(
        id="rcakit-audit-note",
        source=":::{admonition} On the audit page\n:class: seealso\n"
        f"What a referee checks and a first reading can skip is on {{doc}}`the audit page <{stem}{AUDIT_SUFFIX}>`, "
        f"made by the same run:\n\n{listed}\n:::",
    )


def _audit_title(notebook: NotebookNode, stem: str) -> NotebookNode:
    title = next((h[1] for c in notebook.cells if (h := heading(c)) is not None and h[0] == 1), stem)
    return nbformat.v4.new_markdown_cell(
        id="rcakit-audit-title",
        source=f"# The audit: {title}\n\n"
        f"The protocol, the settings and the checks behind {{doc}}`the lecture <{stem}>`, from the same run "
        "of its notebook: rerun the chapter and both pages change together. The notation is the primer's "
        "({ref}`primer-notation`): the outcome $Y$ of a run, the action $A_k$ of step $k$, the {term}`Shapley value` "
        "$\\phi_i$ of player $i$.",
    )


def _params_section(params: NotebookNode) -> list[NotebookNode]:
    shown = copy.deepcopy(params)
    shown.outputs = []
    shown.metadata = {"tags": ["parameters"]}
    text = (
        "## The parameters of this run\n\nAll of them, as this run used them; the lecture's copy leaves out "
        "the model server's, the cluster's and the store's."
    )
    return [nbformat.v4.new_markdown_cell(text, id="rcakit-audit-parameters"), shown]


def _page(notebook: NotebookNode, cells: list[NotebookNode]) -> NotebookNode:
    page = nbformat.v4.new_notebook(metadata=copy.deepcopy(notebook.metadata))
    page.cells = cells
    return page
