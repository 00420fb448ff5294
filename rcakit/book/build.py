"""The HTML book: its sources in the book folder, and one strict Jupyter Book 1 build.

The book folder is ``book/`` or ``$RCAKIT_BOOK_DIR``; its ``chapters/`` holds the
executed notebooks. Each build writes its Sphinx sources afresh into
``<book>/_build/site`` (:func:`write_site`): the project's book sources
(configuration, table of contents, references, API pages, static files), so a
scratch book never builds with stale or missing configuration, and each
chapter's pages, its lecture and its audit, cut from its one executed notebook
(:func:`rcakit.pages.split`). The HTML lands in ``<book>/_build/html``. The build is strict
(``-W -n --all``): any warning, a broken reference or a glued value that
cannot be formatted, fails it with one message that names the warnings.

``rcakit build`` first re-executes the summary pages whose results changed
(:func:`refresh_summaries`). Used by ``rcakit book`` and ``rcakit build``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from rcakit import RcakitError
from rcakit.book import registry
from rcakit.book.runner import ChapterFailed, chapters_dir, executed_notebook, remove_stale
from rcakit.io import remove_entry
from rcakit.paths import book_dir, project_root

SOURCES = ("_config.yml", "_toc.yml", "references.bib", "api", "bibliography.md", "glossary.md", "course.md", "_static")
SHOWN_WARNINGS = 10  # warnings quoted in the error of a failed build
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def write_site(book: Path) -> Path:
    """Write the build's Sphinx sources into ``<book>/_build/site`` (emptied first) and return it: the
    project's book sources, then every page's lecture and audit (:func:`rcakit.pages.split`),
    with each audit listed under its chapter in the table of contents."""
    import nbformat
    import yaml

    from rcakit import pages

    site = book / "_build" / "site"
    if site.exists() or site.is_symlink():
        remove_entry(site)
    site.mkdir(parents=True)
    source = project_root() / "book"
    for name in SOURCES:
        if (source / name).is_dir():
            shutil.copytree(source / name, site / name)
        elif (source / name).exists():
            shutil.copy(source / name, site / name)
    (site / "chapters").mkdir()
    audits = []
    for cid in registry.PAGES:
        notebook = executed_notebook(registry.get(cid))
        split = pages.split(nbformat.read(notebook, as_version=4), notebook.stem)
        nbformat.write(split.lecture, site / "chapters" / notebook.name)
        if split.audit is not None:
            nbformat.write(split.audit, site / "chapters" / f"{notebook.stem}{pages.AUDIT_SUFFIX}.ipynb")
            audits.append(notebook.stem)
    toc = yaml.safe_load((source / "_toc.yml").read_text(encoding="utf-8"))
    for entry in toc["chapters"]:
        stem = entry["file"].removeprefix("chapters/")
        if stem in audits:
            entry["sections"] = [{"file": f"chapters/{stem}{pages.AUDIT_SUFFIX}"}]
    (site / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    return site


def missing_pages() -> list[str]:
    """The ids of the pages (chapters and the landing page) with no executed notebook in the book folder."""
    return [cid for cid in registry.PAGES if not executed_notebook(registry.get(cid)).exists()]


def foreign_pages() -> list[str]:
    """Each executed page whose cells or outputs are not the ones rcakit wrote (their digest in the page's
    provenance differs, or the provenance is unusable), with why: such a page is never published. A digest
    rather than sanitising HTML at build: it catches any change (an edited table, a planted ``<script>`` or
    ``<img onerror>``, an added cell) and leaves rcakit's own HTML outputs (styled tables, MathJax) as written."""
    from rcakit.book import provenance

    foreign = []
    for cid in registry.PAGES:
        notebook = executed_notebook(registry.get(cid))
        if (why := provenance.foreign_output(notebook)) is not None:
            foreign.append(f"{notebook.name}: {why}")
    return foreign


def refresh_summaries(say: Callable[[str], None] = print) -> list[str]:
    """Re-execute each summary page (the intro and the claims page: ``reads_results``) whose results,
    source or code changed since it ran, so that a build never shows counts a rerun has made stale.
    Summary pages are cheap (they read results files and run no experiment). Returns their ids; a page
    not executed yet is left to :func:`build`'s one-line error."""
    from rcakit.book import provenance, runner

    refreshed = []
    for cid in registry.PAGES:
        chapter = registry.get(cid)
        notebook = executed_notebook(chapter)
        if not chapter.reads_results or not notebook.exists():
            continue
        params = runner.book_parameters(cid)
        reason = provenance.why_stale(chapter, notebook, params)
        if reason is not None:
            say(f"{cid}: running ({reason})")
            runner.run_chapter(cid, params, show_progress=False)
            refreshed.append(cid)
    return refreshed


def build(strict: bool = True) -> Path:
    """Build the HTML from the executed chapters present; the path of its ``index.html``.

    A failed run's notebook sits in ``<book>/failed`` and is never published
    (``rcakit.book.runner.failed_notebooks`` names them). ``strict`` passes ``-W -n
    --all --keep-going``: a clean build in which any warning fails. A failed
    build is one :class:`~rcakit.book.runner.ChapterFailed` naming its warnings (or
    its last message, or a full disk). A book folder that lacks a page (one
    chapter run into an empty ``$RCAKIT_BOOK_DIR``) is a one-line
    :class:`~rcakit.RcakitError` naming them and ``rcakit book``, which runs
    the missing pages and keeps the reruns present; so is a page holding cells
    or outputs rcakit did not write (:func:`foreign_pages`).
    """
    book = book_dir()
    if missing := missing_pages():
        raise RcakitError(
            f"the book in {book} has no page yet for {', '.join(missing)}: "
            "'rcakit book' runs the missing pages (keeping the reruns present) and builds"
        )
    if foreign := foreign_pages():
        raise RcakitError(
            f"the book in {book} holds pages rcakit did not write as they are: {'; '.join(foreign)}; "
            "nothing was built ('rcakit book' runs them again)"
        )
    remove_stale(chapters_dir())
    _drop_hidden_pages(book / "_build")
    site = write_site(book)
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(site), "--path-output", str(book)]
    cmd += ["--builder", "html"]
    if strict:
        cmd += ["--all", "-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ChapterFailed(f"jupyter-book build failed:\n{failure_summary(proc.stdout + proc.stderr, book)}")
    return book / "_build" / "html" / "index.html"


def _drop_hidden_pages(built: Path) -> None:
    """Remove what an earlier build made of a hidden file (a run's ``.<stem>.<pid>.running`` notebook, before
    the configuration excluded them), so a half-executed page never stays published."""
    if built.is_dir():
        for page in sorted(built.glob("**/.*running*")):
            remove_entry(page)


def failure_summary(output: str, book: Path) -> str:
    """What a reader needs from a failed build's output: its warnings, else its last message."""
    if "No space left on device" in output:
        return f"no space left on the device holding {book / '_build'}"
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
    warnings = [line for line in lines if "WARNING" in line or "ERROR" in line]
    if warnings:
        more = len(warnings) - SHOWN_WARNINGS
        return "\n".join(warnings[:SHOWN_WARNINGS] + ([f"... and {more} more"] if more > 0 else []))
    message = [line for line in lines if line and not set(line) <= set("=") and not line.startswith(("File ", "^"))]
    return message[-1] if message else "no output"
