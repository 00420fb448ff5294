"""The chapter layer mirrors ``notebooks/``: one module per page, named by the page, public names by kind."""

import importlib
import inspect
import re
import types

from support import ROOT

PUBLIC = re.compile(
    r"^(run|[a-z0-9_]+_(section|figure|table|run|streams)|[A-Z][A-Za-z0-9]*(Run|Params|Streams)|[A-Z][A-Z0-9_]*)$"
)


def chapter_modules() -> set[str]:
    """The stems of ``rcakit/chapters/*.py``, leaving out ``__init__`` and the private shared modules."""
    return {p.stem for p in (ROOT / "rcakit" / "chapters").glob("*.py") if not p.stem.startswith("_")}


def misnamed(module: types.ModuleType) -> list[str]:
    """The public names defined in ``module`` that are none of: ``run``, a ``*_section``, ``*_figure``,
    ``*_table``, ``*_run`` or ``*_streams`` function, a ``*Run``, ``*Params`` or ``*Streams`` class, an
    UPPER_CASE constant."""
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    own = [
        n
        for n in names
        if not inspect.ismodule(getattr(module, n))
        and getattr(getattr(module, n), "__module__", module.__name__) == module.__name__
        and n != "annotations"
    ]
    return sorted(n for n in own if not PUBLIC.match(n))


def test_every_notebook_has_its_chapter_module_and_no_module_lacks_a_notebook():
    assert chapter_modules() == {p.stem for p in (ROOT / "notebooks").glob("*.md")}


def test_each_chapter_module_names_its_notebook_on_its_first_line():
    for stem in sorted(chapter_modules()):
        module = importlib.import_module(f"rcakit.chapters.{stem}")
        first = (module.__doc__ or "").strip().splitlines()[0]
        assert f"``notebooks/{stem}.md``" in first, (stem, first)


def test_each_chapter_module_exports_only_sections_figures_tables_runs_and_constants():
    assert {stem: misnamed(importlib.import_module(f"rcakit.chapters.{stem}")) for stem in chapter_modules()} == {
        stem: [] for stem in chapter_modules()
    }


def test_a_misnamed_public_function_is_found():
    planted = types.ModuleType("planted")
    exec(
        "def locus_section(): pass\ndef contrastive_locus(): pass\nclass SweepRun: pass\nPAPER = 1\n"
        "def run(): pass\ndef _helper(): pass\n",
        planted.__dict__,
    )
    assert misnamed(planted) == ["contrastive_locus"]


PRIVATE_CALL = re.compile(r"\bchapter\._[a-z]")


def test_no_notebook_reaches_into_its_chapter_module_through_a_private_name():
    reached = {p.stem: PRIVATE_CALL.findall(p.read_text(encoding="utf-8")) for p in (ROOT / "notebooks").glob("*.md")}
    assert {stem: found for stem, found in reached.items() if found} == {}
    assert PRIVATE_CALL.search("trace = chapter._false_premise_trace(20, seed)")  # the pattern finds a planted one
