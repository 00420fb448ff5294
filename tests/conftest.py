"""Shared fixtures: a scratch book built from every chapter's quick run."""

import os
import shutil
from pathlib import Path

import pytest

from rcakit import chapters, runner
from rcakit.paths import project_root


FIXTURE_HASH_SEED = "0"


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory) -> Path:
    """Run every chapter with its quick parameters into a scratch book and build it.

    ``make test`` sets ``RCAKIT_BOOK_DIR`` and ``RCAKIT_RESULTS_DIR`` so that the
    nbval pass that follows re-executes exactly these notebooks. The kernels run
    with ``PYTHONHASHSEED=0``; ``test_figures_do_not_depend_on_the_hash_seed``
    reruns each chapter with another hash seed and compares the figures.
    """
    os.environ["PYTHONHASHSEED"] = FIXTURE_HASH_SEED
    book = Path(os.environ.setdefault("RCAKIT_BOOK_DIR", str(tmp_path_factory.mktemp("book"))))
    book.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RCAKIT_RESULTS_DIR", str(book / "results"))
    for name in ("_config.yml", "_toc.yml", "intro.md"):
        shutil.copy(project_root() / "book" / name, book / name)
    shutil.rmtree(book / "chapters", ignore_errors=True)
    for cid in chapters.ORDER:
        runner.run_chapter(cid, quick=True, progress=False)
    runner.build_book()
    return book
