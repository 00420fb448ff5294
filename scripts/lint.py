"""The lint gate: ruff over the package, the tests, the benchmarks, the scripts and the chapters' code.

    python scripts/lint.py [PATH ...]

With no PATH it is the whole gate that ``make lint`` (the first step of ``make
test``) runs: ``ruff check`` of ``rcakit tests benchmarks scripts notebooks``,
``ruff format --check`` of the code, the chapter sources read as notebooks
without outputs (``scripts/check_notebooks.py``) and pyright over the package
(its ``[tool.pyright]`` table). With PATHs it runs ``ruff check`` on them (the
pre-commit hook). The rules are the project's ``[tool.ruff]`` table in
``pyproject.toml``, for every file.

A chapter (a jupytext MyST ``.md`` file, given by name or found at the top of a
folder such as ``notebooks/``) is converted by jupytext to ``.ipynb`` in a
temporary folder and ruff checks that notebook. Ruff reads notebooks cell by
cell, which is what makes the chapters' code checkable with the same rules
and no ignores: an import at the top of a cell is not E402 (the parameters
cell must come first), a cell's last expression is its displayed output, not
B018, and IPython's ``display`` is a known name, not F821. Markdown cells are
not code and are not checked. Findings name the ``.md`` source and the cell (``cell N`` counts
every cell of the chapter from 1, markdown cells included).

Exit status: 0 when everything is clean, 1 when ruff reports a finding, 2
when ruff cannot run.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = ("rcakit", "tests", "benchmarks", "scripts", "notebooks")


def is_chapter(path: Path) -> bool:
    """A jupytext MyST notebook: a ``.md`` file whose front matter names jupytext."""
    if path.suffix != ".md" or not path.is_file():
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    return text.startswith("---\n") and "jupytext:" in text.split("\n---\n", 1)[0]


def split_paths(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """``(paths for ruff as they are, chapter sources to convert first)``."""
    code, chapters = [], []
    for path in paths:
        if path.is_dir():
            if any(path.rglob("*.py")):
                code.append(path)
            chapters.extend(p for p in sorted(path.glob("*.md")) if is_chapter(p))
        elif is_chapter(path):
            chapters.append(path)
        elif path.exists():
            code.append(path)
        else:
            raise SystemExit(f"lint: {path} does not exist")
    return code, chapters


def ruff(paths: list[Path], *extra: str) -> subprocess.CompletedProcess:
    """``ruff check`` of ``paths`` with the project's configuration (and ``extra`` options)."""
    cmd = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--no-fix",
        "--output-format",
        "concise",
        "--config",
        str(ROOT / "pyproject.toml"),
        *extra,
        *map(str, paths),
    ]
    try:
        return subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise SystemExit(f"lint: cannot run ruff: {err}") from None


def check_code(paths: list[Path]) -> int:
    if not paths:
        return 0
    proc = ruff(paths)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def check_chapters(chapters: list[Path]) -> int:
    """Each chapter's code cells, through jupytext's ``.ipynb``; findings name the ``.md`` source."""
    if not chapters:
        return 0
    import jupytext

    with tempfile.TemporaryDirectory(prefix="rcakit-lint-") as tmp:
        sources = {}
        for i, chapter in enumerate(chapters):
            target = Path(tmp) / f"{i}-{chapter.stem}.ipynb"
            jupytext.write(jupytext.read(chapter), target)
            sources[str(target)] = str(chapter)
        proc = ruff(list(map(Path, sources)), "--extend-ignore", "ANN")  # a chapter's cells need no annotations
    out = proc.stdout
    for target, chapter in sources.items():
        out = out.replace(target, chapter)
    sys.stdout.write(out)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or [ROOT / p for p in DEFAULT_PATHS]
    if subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode != 0:
        print("lint: ruff is not installed in this Python; pip install -e '.[dev]'", file=sys.stderr)
        return 2
    code, chapters = split_paths(paths)
    status = max(check_code(code), check_chapters(chapters))
    if not args:  # the whole gate
        status = max(status, *(_tool(cmd) for cmd in GATE))
    if status == 0:
        print(f"lint: clean ({len(code)} code paths, {len(chapters)} chapters)")
    return status


GATE = (  # beyond ruff check, when the gate runs on the whole tree
    ["-m", "ruff", "format", "--check", "--quiet", *DEFAULT_PATHS[:-1]],
    [str(ROOT / "scripts" / "check_notebooks.py")],
    ["-m", "pyright", "--project", str(ROOT / "pyproject.toml")],
)


def _tool(args: list[str]) -> int:
    """One tool of the gate, from the project root; its findings on stdout, its status back."""
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
