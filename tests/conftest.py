"""Shared fixtures: a scratch book built from every chapter's quick run."""

import os
import shutil
from pathlib import Path

import pytest

from rcakit import chapters, runner
from rcakit.paths import project_root

FIXTURE_HASH_SEED = "0"
KERNEL_FIXTURES = {"quick_book", "toy"}  # fixtures that execute pages in a kernel


def pytest_collection_modifyitems(items: list) -> None:
    """Mark every test that executes a page (through a fixture, or marked by hand) as ``chapters``."""
    for item in items:
        if KERNEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.chapters)


BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib", "api.md", "bibliography.md")


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory) -> Path:
    """Run every page with its quick parameters into a scratch book and build it with ``-W``.

    The book is built the way a new user's first build goes: with an empty
    data home and no model, so every section that needs Who&When, LongRCA
    Bench or a provider shows its admonition instead. ``make test`` sets
    ``RCAKIT_BOOK_DIR``, ``RCAKIT_RESULTS_DIR`` and ``RCAKIT_DATA_DIR`` so
    that the nbval pass that follows re-executes exactly these notebooks
    (under another ``PYTHONHASHSEED``, comparing figures byte for byte).
    """
    os.environ["PYTHONHASHSEED"] = FIXTURE_HASH_SEED
    book = Path(os.environ.setdefault("RCAKIT_BOOK_DIR", str(tmp_path_factory.mktemp("book"))))
    book.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RCAKIT_RESULTS_DIR", str(book / "results"))
    home = Path(os.environ.setdefault("RCAKIT_DATA_DIR", str(book / "data-home")))
    assert not home.exists() or not any(home.iterdir()), f"the quick book needs an empty data home, {home} is not"
    for name in BOOK_FILES:
        shutil.copy(project_root() / "book" / name, book / name)
    if (project_root() / "book" / "_static").is_dir():
        shutil.copytree(project_root() / "book" / "_static", book / "_static", dirs_exist_ok=True)
    shutil.rmtree(book / "chapters", ignore_errors=True)
    for cid in chapters.PAGES:
        runner.run_chapter(cid, quick=True, show_progress=False)
    runner.build_book()
    return book
