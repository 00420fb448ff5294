"""No valid seed fails a chapter: twenty seeds of every chapter at its quick values (``make seeds``).

A chapter asserts only identities, which hold for every seed; a statistical
claim gets a verdict with its interval instead. Each run's page is also
checked as a strict build would check it (``page_glue``): every number the
prose quotes is glued and formats. This sweep is
slow (each chapter executes twenty times), so ``make test`` leaves it out and
``make seeds`` runs it, one chapter per test, the runs of a chapter spread
over ``RCAKIT_SEED_WORKERS`` processes (default 2).
"""

import pytest

from rcakit.book import registry
from support.page_glue import problems
from support.quick_runs import sweep

SEEDS = range(1, 21)  # seed 0 is the quick book's; these are twenty others


# Settings each seed also runs under: the structural chapter with the authors' four interventions (its
# default) and with all six, since a claim that holds on one set can break on the other.
ALSO = {"coverage-collapse": [{"intervention_set": "all"}]}
RUNS = [(c, extra) for c in registry.ORDER if registry.get(c).parameters for extra in [{}, *ALSO.get(c, [])]]


@pytest.mark.seeds
@pytest.mark.parametrize(
    ("chapter_id", "extra"), RUNS, ids=[f"{c}{''.join(f'-{v}' for v in e.values())}" for c, e in RUNS]
)
def test_twenty_seeds_of_each_chapter_at_quick_all_pass(chapter_id, extra, tmp_path):
    failed = sweep(chapter_id, {f"seed {s}": {"seed": s, **extra} for s in SEEDS}, tmp_path)
    assert failed == {}, f"{chapter_id} {extra}: seeds that fail: {failed}"


def test_the_page_check_finds_a_missing_and_an_unformattable_glue(tmp_path):
    """``page_glue.problems`` names what ``jupyter-book build -W`` would warn about, and nothing on a good page."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    glue = nbformat.v4.new_output(
        "display_data",
        data={"application/papermill.record/text/plain": "None"},
        metadata={"scrapbook": {"name": "empty", "mime_prefix": "application/papermill.record/"}},
    )
    notebook.cells = [
        nbformat.v4.new_code_cell("glue('empty', None)", outputs=[glue]),
        nbformat.v4.new_markdown_cell("A {glue:text}`empty:.2f` and {glue:text}`absent` and {glue:text}`empty`."),
    ]
    page = tmp_path / "page.ipynb"
    nbformat.write(notebook, page)
    found = problems(page)
    assert len(found) == 2 and "empty:.2f" in found[0] and "nothing glued under 'absent'" in found[1]
