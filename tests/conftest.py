"""Shared fixtures: a scratch book built from every chapter's quick run."""

import os
import shutil
from pathlib import Path

import pytest

from rcakit.book import build as html_book
from rcakit.book import registry, runner

FIXTURE_HASH_SEED = "0"
KERNEL_FIXTURES = {"quick_book", "toy", "at_q_half"}  # fixtures that execute pages in a kernel


TESTS = Path(__file__).resolve().parent
SLOW_UNIT_SECONDS = 1.0  # a unit test slower than this is reported at the end of the run
_slow_units: list[tuple[float, str]] = []


def _folder(item: pytest.Item) -> str:
    """``unit``, ``integration`` or ``chapters``: the first folder under ``tests/``."""
    return Path(str(item.fspath)).resolve().relative_to(TESTS).parts[0]


def pytest_collection_modifyitems(items: list) -> None:
    """Markers by folder: ``integration`` tests are ``slow``, ``chapters`` tests execute pages.

    A test outside ``tests/chapters`` that still executes a page (through a
    fixture) is marked ``chapters`` too, so ``make unit`` never starts a kernel.
    """
    for item in items:
        folder = _folder(item)
        if folder == "integration":
            item.add_marker(pytest.mark.slow)
        if folder == "chapters" or KERNEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.chapters)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note each unit test whose call took longer than ``SLOW_UNIT_SECONDS``."""
    in_unit = report.nodeid.startswith("tests/unit/") or report.nodeid.startswith("unit/")
    if report.when == "call" and in_unit and report.duration > SLOW_UNIT_SECONDS:
        _slow_units.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List the slow unit tests: each belongs in ``tests/integration`` or needs a smaller case."""
    if _slow_units:
        terminalreporter.section(f"unit tests over {SLOW_UNIT_SECONDS:g} s (move them to tests/integration)")
        for seconds, nodeid in sorted(_slow_units, reverse=True):
            terminalreporter.write_line(f"{seconds:6.2f} s  {nodeid}")


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
    for cid in registry.PAGES:
        runner.run_chapter(cid, quick=True, show_progress=False)
    html_book.build()
    return book
