"""Shared fixtures: a scratch book built from every chapter's quick run."""

import os
import shutil
from pathlib import Path

import pytest

from rcakit import book as html_book
from rcakit import chapters, runner

FIXTURE_HASH_SEED = "0"
KERNEL_FIXTURES = {"quick_book", "toy", "at_q_half"}  # fixtures that execute pages in a kernel


def pytest_collection_modifyitems(items: list) -> None:
    """Mark every test that executes a page (through a fixture, or marked by hand) as ``chapters``."""
    for item in items:
        if KERNEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.chapters)


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
    shutil.rmtree(book / "chapters", ignore_errors=True)
    for cid in chapters.PAGES:
        runner.run_chapter(cid, quick=True, show_progress=False)
    html_book.build()
    return book
