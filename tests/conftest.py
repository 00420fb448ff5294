"""Shared fixtures: a scratch book built from every chapter's quick run."""

import os
import shutil
from pathlib import Path

import pytest

from rcakit import chapters, runner
from rcakit.paths import project_root

FIXTURE_HASH_SEED = "0"
BOOK_FILES = ("_config.yml", "_toc.yml", "intro.md", "references.bib", "api.md", "bibliography.md")


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory) -> Path:
    """Run every chapter with its quick parameters into a scratch book and build it.

    ``make test`` sets ``RCAKIT_BOOK_DIR`` and ``RCAKIT_RESULTS_DIR`` so that the
    nbval pass that follows re-executes exactly these notebooks. The kernels run
    with ``PYTHONHASHSEED=0``; ``test_figures_do_not_depend_on_the_hash_seed``
    reruns each chapter with another hash seed and compares the figures. The
    chapters read their data sets from ``<book>/data-home`` (see :func:`use_test_data_home`).
    """
    os.environ["PYTHONHASHSEED"] = FIXTURE_HASH_SEED
    book = Path(os.environ.setdefault("RCAKIT_BOOK_DIR", str(tmp_path_factory.mktemp("book"))))
    book.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RCAKIT_RESULTS_DIR", str(book / "results"))
    use_test_data_home(book / "data-home")
    for name in BOOK_FILES:
        shutil.copy(project_root() / "book" / name, book / name)
    if (project_root() / "book" / "_static").is_dir():
        shutil.copytree(project_root() / "book" / "_static", book / "_static", dirs_exist_ok=True)
    shutil.rmtree(book / "chapters", ignore_errors=True)
    for cid in chapters.ORDER:
        runner.run_chapter(cid, quick=True, show_progress=False)
    runner.build_book()
    return book


def use_test_data_home(home: Path) -> None:
    """Make ``home`` the data home of the session (``RCAKIT_DATA_DIR``).

    When the shared Who&When copy sits beside the clone, ``who-and-when`` is
    first fetched into it from that copy, served on 127.0.0.1 with every
    sha256 checked, so the chapters run on the fetched logs; on a clone without
    it the chapters say how to fetch the logs. The nbval pass that re-executes
    the notebooks needs the same ``RCAKIT_DATA_DIR``.
    """
    from test_data import SHARED, fetch_shared_who_and_when

    if SHARED.is_dir():
        fetch_shared_who_and_when(home)
    os.environ["RCAKIT_DATA_DIR"] = str(home)
