"""Write the API pages, ``book/api/``: an index, and one page per part of the package.

    python scripts/api_page.py [--check]

The pages are made from the package layout and its docstrings, so they are
written by this script and checked by the tests (``--check`` exits 1 when a
page on disk is not what the script would write, or a page is left over).
The index lists every module; each part's page documents its modules, a
subpackage through its exports and then its modules. ``book/_toc.yml`` lists
the part pages under the index, in the order of ``PARTS`` (a test checks it).
"""

from __future__ import annotations

import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = [  # (page, title, [(module, section title)]): the science first, then the workbench
    (
        "models",
        "Causal models, Shapley values and statistics",
        [
            ("rcakit", "The package"),
            ("rcakit.scm", "Structural causal models"),
            ("rcakit.shapley", "Shapley values"),
            ("rcakit.fidelity", "Replay fidelity"),
            ("rcakit.stats", "Statistics"),
        ],
    ),
    ("repair", "Minimal repair families", [("rcakit.repair", "Minimal repair families")]),
    ("rag", "Agentic retrieval", [("rcakit.rag", "Agentic retrieval")]),
    ("trajectories", "Long trajectories", [("rcakit.trajectories", "Long trajectories")]),
    ("attribution", "Attribution families", [("rcakit.attribution", "Attribution families")]),
    ("llm", "Language models", [("rcakit.llm", "Language models")]),
    (
        "chapters",
        "Chapters, claims and results",
        [
            ("rcakit.claims", "Claims"),
            ("rcakit.sections", "What a chapter section returns"),
            ("rcakit.results", "Results"),
            ("rcakit.prose", "Numbers in prose"),
            ("rcakit.tables", "Tables"),
            ("rcakit.plotting", "Figures"),
            ("rcakit.params", "Typed chapter parameters"),
            ("rcakit.chapters", "One module per chapter"),
        ],
    ),
    (
        "running",
        "Running chapters and building the book",
        [
            ("rcakit.book", "The book machinery"),
            ("rcakit.book.registry", "The chapter registry"),
            ("rcakit.book.runner", "Running chapters"),
            ("rcakit.book.build", "Building the book"),
            ("rcakit.pages", "A chapter's lecture and audit pages"),
            ("rcakit.book.provenance", "What produced a page"),
            ("rcakit.book.kernel", "The kernel a chapter runs in"),
            ("rcakit.book.staging", "A run's temporary files"),
            ("rcakit.book.inputs", "Inputs checked before a kernel starts"),
            ("rcakit.deadlines", "Deadlines of every wait"),
            ("rcakit.progress", "Progress and warnings on the terminal"),
            ("rcakit.book.cli", "The command line"),
        ],
    ),
    (
        "data",
        "Data, stores and parallel runs",
        [
            ("rcakit.data", "Data sets"),
            ("rcakit.store", "Case stores"),
            ("rcakit.parallel", "Running a sweep's cases"),
            ("rcakit.io", "Atomic writes"),
            ("rcakit.paths", "Project paths"),
        ],
    ),
]
HEAD = """# The rcakit API

The chapters are thin: they hold parameters, narrative, calls, tables and
figures, and every mechanism they run lives in the `rcakit` package. These
pages are built from the package's docstrings, which name the paper section
each definition comes from and the chapters that use each module. Each page
that follows documents one part of the package. A subpackage is documented
through the names it exports (its `__all__`; import them from the subpackage,
e.g. `from rcakit.repair import gcjr`), followed by what each of its modules
holds. Every module, with its summary:

"""


def source_of(name: str) -> Path | None:
    """The package folder or module file of a dotted name, or None."""
    rel = Path(*name.split("."))
    if (ROOT / rel).is_dir():
        return ROOT / rel
    return (ROOT / rel).with_suffix(".py") if (ROOT / rel).with_suffix(".py").exists() else None


def section(name: str, title: str, level: str = "##") -> str:
    """A module's documentation under a heading of ``level``; a subpackage's modules follow, listed."""
    text = f"\n{level} {title}: `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n   :members:\n```\n"
    folder = source_of(name)
    if folder.is_dir() and name != "rcakit":
        documented = {n for _, _, modules in PARTS for n, _ in modules}  # a section of its own elsewhere
        subs = sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if not m.name.startswith("_"))
        subs = [s for s in subs if f"{name}.{s}" not in documented]
        if not subs:
            return text
        listed = "\n".join(f".. automodule:: {name}.{s}\n   :no-members:\n" for s in subs)
        text += f"\nThe modules of `{name}`:\n\n```{{eval-rst}}\n{listed}```\n"
    return text


def index() -> str:
    """The index page: what the API pages hold, and every module with its one-line summary."""
    names = "".join(f"   {n}\n" for _, _, modules in PARTS for n, _ in modules if source_of(n))
    return HEAD + f"```{{eval-rst}}\n.. autosummary::\n\n{names}```\n"


def part(title: str, modules: list[tuple[str, str]]) -> str:
    """One part's page: a section per module present (a one-module part is titled by its module)."""
    if len(modules) == 1:
        return section(*modules[0], level="#").lstrip("\n")
    return f"# {title}\n" + "".join(section(n, t) for n, t in modules if source_of(n))


def pages() -> dict[str, str]:
    """``{file name under book/api: text}`` of every API page."""
    return {"index.md": index(), **{f"{slug}.md": part(title, modules) for slug, title, modules in PARTS}}


def main() -> int:
    folder = ROOT / "book" / "api"
    wanted = pages()
    if "--check" in sys.argv:
        on_disk = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.md")}
        if on_disk != wanted:
            print(f"{folder} is out of date: run python scripts/api_page.py", file=sys.stderr)
            return 1
        return 0
    from rcakit.io import atomic_write

    folder.mkdir(exist_ok=True)
    for stale in set(p.name for p in folder.glob("*.md")) - set(wanted):
        (folder / stale).unlink()
    for name, text in wanted.items():
        atomic_write(folder / name, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
