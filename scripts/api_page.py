"""Write ``book/api.md``: one section per public module, a subpackage's modules listed.

    python scripts/api_page.py [--check]

The page is made from the package layout and its docstrings, so it is written
by this script and checked by the tests (``--check`` exits 1 when the page on
disk is not what the script would write).
"""

from __future__ import annotations

import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = [
    ("rcakit", "The package"),
    ("rcakit.scm", "Structural causal models"),
    ("rcakit.shapley", "Shapley values"),
    ("rcakit.fidelity", "Replay fidelity"),
    ("rcakit.repair", "Minimal repair families"),
    ("rcakit.rag", "Agentic retrieval"),
    ("rcakit.trajectories", "Long trajectories"),
    ("rcakit.attribution", "Attribution families"),
    ("rcakit.llm", "Language models"),
    ("rcakit.stats", "Statistics"),
    ("rcakit.claims", "Claims"),
    ("rcakit.sections", "What a chapter section returns"),
    ("rcakit.results", "Results"),
    ("rcakit.prose", "Numbers in prose"),
    ("rcakit.data", "Data sets"),
    ("rcakit.parallel", "Running a sweep's cases"),
    ("rcakit.chapters", "The chapter registry"),
    ("rcakit.runner", "Running chapters"),
    ("rcakit.book", "Building the book"),
    ("rcakit.provenance", "What produced a page"),
    ("rcakit.kernel", "The kernel a chapter runs in"),
    ("rcakit.staging", "A run's temporary files"),
    ("rcakit.inputs", "Inputs checked before a kernel starts"),
    ("rcakit.tables", "Tables"),
    ("rcakit.progress", "Progress and warnings on the terminal"),
    ("rcakit.store", "Case stores"),
    ("rcakit.io", "Atomic writes"),
    ("rcakit.plotting", "Figures"),
    ("rcakit.primer", "The primer's examples"),
    ("rcakit.primer_plots", "The primer's figures"),
    ("rcakit.paths", "Project paths"),
    ("rcakit.cli", "The command line"),
]
HEAD = """# The rcakit API

The chapters are thin: they hold parameters, narrative, calls, tables and
figures, and every mechanism they run lives in the `rcakit` package. This page
is built from the package's docstrings, which name the paper section each
definition comes from and the chapters that use each module. A subpackage is
documented through the names it exports (its `__all__`; import them from the
subpackage, e.g. `from rcakit.repair import gcjr`), followed by what each of
its modules holds.

"""


def source_of(name: str) -> Path | None:
    """The package folder or module file of a dotted name, or None."""
    rel = Path(*name.split("."))
    if (ROOT / rel).is_dir():
        return ROOT / rel
    return (ROOT / rel).with_suffix(".py") if (ROOT / rel).with_suffix(".py").exists() else None


def section(name: str, title: str) -> str:
    text = f"\n## {title}: `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n   :members:\n```\n"
    folder = source_of(name)
    if folder.is_dir() and name != "rcakit":
        subs = sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if not m.name.startswith("_"))
        listed = "\n".join(f".. automodule:: {name}.{s}\n   :no-members:\n" for s in subs)
        text += f"\nThe modules of `{name}`:\n\n```{{eval-rst}}\n{listed}```\n"
    return text


def page() -> str:
    present = [(n, t) for n, t in SECTIONS if source_of(n)]
    table = "".join(f"   {n}\n" for n, _ in present)
    return HEAD + f"```{{eval-rst}}\n.. autosummary::\n\n{table}```\n" + "".join(section(n, t) for n, t in present)


def main() -> int:
    target = ROOT / "book" / "api.md"
    if "--check" in sys.argv:
        if target.read_text(encoding="utf-8") != page():
            print(f"{target} is out of date: run python scripts/api_page.py", file=sys.stderr)
            return 1
        return 0
    from rcakit.io import atomic_write

    atomic_write(target, page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
