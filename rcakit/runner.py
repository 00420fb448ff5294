"""Execute chapters with papermill and build the book.

A chapter's MyST source is read with jupytext and handed to papermill as a
notebook; the executed copy lands in ``book/chapters/<id with _>.ipynb`` with
the injected parameters visible. Parameters are validated against the
notebook's ``parameters`` cell before any kernel starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from rcakit import RcakitError, chapters
from rcakit.paths import book_dir, project_root


def chapters_dir() -> Path:
    """Where executed chapters land: ``<book>/chapters``."""
    return book_dir() / "chapters"


def run_parameters(chapter_id: str, overrides: Mapping[str, Any] | None = None, quick: bool = False) -> dict:
    """The checked parameters of a run: defaults, then ``quick`` values, then overrides."""
    chapter = chapters.get(chapter_id)
    merged = {**(chapter.quick if quick else {}), **(overrides or {})}
    return chapters.validate(chapter_id, merged)


def run_chapter(
    chapter_id: str,
    overrides: Mapping[str, Any] | None = None,
    quick: bool = False,
    output_dir: Path | None = None,
    progress: bool = True,
) -> Path:
    """Execute one chapter; return the path of the executed notebook.

    A failing cell raises ``ChapterFailed`` naming the cell and the error; the
    partly executed notebook is still written for inspection.
    """
    import jupytext
    import papermill

    params = run_parameters(chapter_id, overrides, quick)
    chapter = chapters.get(chapter_id)
    out = (output_dir or chapters_dir()) / (chapter.notebook.stem + ".ipynb")
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(chapter.notebook)
    try:
        papermill.execute_notebook(
            nb,
            str(out),
            parameters=params,
            cwd=str(project_root()),
            kernel_name="python3",
            progress_bar=progress,
            log_output=False,
        )
    except papermill.PapermillExecutionError as err:
        raise ChapterFailed(
            f"chapter {chapter_id!r} failed in cell {err.exec_count}: {err.ename}: {err.evalue} (see {out})"
        ) from None
    return out


class ChapterFailed(RuntimeError):
    """A chapter's code raised while executing (not a user input error)."""


def build_book(strict: bool = True) -> Path:
    """Build the HTML with Jupyter Book 1 from the executed chapters.

    ``strict`` passes ``-W -n --all``: a clean build in which any warning
    (a missing chapter, a broken reference) fails the build.
    """
    book = book_dir()
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe), "build", str(book), "--builder", "html"]
    if strict:
        cmd += ["--all", "-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise ChapterFailed(f"jupyter-book build failed:\n{tail}")
    return book / "_build" / "html" / "index.html"
