"""The chapter sources are text notebooks: each reads with jupytext, holds no outputs, and its code parses and fits.

    python scripts/check_notebooks.py [notebooks/NAME.md ...]

With no argument it checks every ``notebooks/*.md``. It is the pre-commit
hook that keeps the MyST sources and the notebooks jupytext makes of them in
step: a source that jupytext cannot read, a cell with outputs (an executed
notebook pasted back), a code cell that is not Python, or a line a reader
sees that is wider than the book's code box fails it, one line per problem
naming the file and the cell. Exit status 1 on any problem.

A reader sees every code cell but those tagged ``remove-cell`` or
``remove-input`` (a ``hide-input`` cell is one click away). The book's code
box at 1280 px holds :data:`CODE_WIDTH` characters; a longer line scrolls
sideways, so the chapters break calls over lines and keep comments short.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_WIDTH = 77  # characters of code a code box of the book shows at 1280 px (the primer's widest line)
UNSEEN = frozenset({"remove-cell", "remove-input"})  # tags that keep a cell's code off the page
# Chapters whose shown lines are not yet reflowed: breaking them would take their code past CONTRIBUTING's
# 120-line budget, so they wait for cells to be shortened. Empty this set then.
WIDTH_PENDING = frozenset({"longrca_strata"})


def problems(path: Path) -> list[str]:
    """What is wrong with one chapter source, one line each."""
    import jupytext

    try:
        nb = jupytext.read(path)
    except Exception as err:  # jupytext raises many kinds; any of them means "not a readable notebook"
        return [f"{path}: jupytext cannot read it: {err}"]
    out = []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.get("outputs"):
            out.append(f"{path}: cell {number} holds outputs; sources are text without outputs")
        if cell.cell_type == "code":
            try:
                ast.parse(cell.source)
            except SyntaxError as err:
                out.append(f"{path}: cell {number} is not Python: {err.msg} (line {err.lineno})")
            out += too_wide(path, number, cell)
    return out


def too_wide(path: Path, number: int, cell: dict) -> list[str]:
    """The lines of a shown code cell longer than :data:`CODE_WIDTH` characters."""
    if path.stem in WIDTH_PENDING or UNSEEN & set(cell.get("metadata", {}).get("tags", [])):
        return []
    return [
        f"{path}: cell {number} line {i} is {len(line)} characters, wider than the code box ({CODE_WIDTH})"
        for i, line in enumerate(cell["source"].splitlines(), start=1)
        if len(line) > CODE_WIDTH
    ]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or sorted((ROOT / "notebooks").glob("*.md"))
    found = [line for path in paths for line in problems(path)]
    print(
        "\n".join(found)
        if found
        else f"notebooks: {len(paths)} sources read as notebooks, no outputs, code within {CODE_WIDTH} characters"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
