"""Every chapter runs with its quick parameters, records its results, and the
book builds with warnings as errors. Also: the gate fails when it should."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import nbformat
import pytest
import yaml

from rcakit import RcakitError, claims, results
from rcakit.book import build as html_book
from rcakit.book import provenance, registry, runner
from rcakit.paths import project_root


@pytest.mark.parametrize("chapter_id", [c for c in registry.ORDER if c != "claims"])
def test_a_quick_run_records_every_claim_it_can_measure(quick_book, chapter_id):
    """The claims file is the one list of what a chapter records: at quick, with no data and no model,
    every claim is measured except those whose section needs the missing input, and they say so."""
    recorded = results.load(chapter_id)
    assert recorded["params"] == runner.run_parameters(chapter_id, quick=True)
    table = claims.compare(chapter_id, recorded)
    missing = table[(table["verdict"] == "not measured") & ~table["why"].str.startswith("needs")]
    assert missing.empty, missing[["claim", "why"]].to_dict("records")


def test_car_shapley_quick_values(quick_book):
    r = results.load("car-shapley")["interaction"]
    assert len(r["phi"]) == 3 and len(r["phi_ci"]) == 3
    assert abs(r["efficiency"] - 0.91) <= 0.03
    assert results.load("car-shapley")["pivotal"]["locus"] == 1


def test_book_html_has_chapters_figures_and_claims(quick_book):
    html = quick_book / "_build" / "html"
    assert (html / "index.html").exists()
    page = (html / "chapters" / "car_shapley.html").read_text()
    audit = (html / "chapters" / "car_shapley_audit.html").read_text()  # the audit page: rcakit.pages
    assert page.count("<img") >= 1 and (page + audit).count("<img") >= 2
    assert 'id="beside-the-paper"' not in page and 'id="beside-the-paper"' in audit  # the section, not its link
    assert 'href="car_shapley_audit.html"' in page and 'href="car_shapley.html"' in audit
    closing = (html / "chapters" / "claims.html").read_text()
    assert "Efficiency sum: the Wilson interval" in closing and "agrees" in closing


def test_executed_chapters_show_injected_parameters_and_no_noise(quick_book):
    for nb_path in (quick_book / "chapters").glob("*.ipynb"):
        nb = json.loads(nb_path.read_text())
        has_parameters = bool(registry.get(nb_path.stem.replace("_", "-")).parameters)  # not the closing page
        injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
        assert bool(injected) == has_parameters, nb_path
        assert all("remove-cell" in c["metadata"]["tags"] for c in injected), f"{nb_path}: two parameters cells"
        text = json.dumps([c.get("outputs", []) for c in nb["cells"]])
        assert not re.search(r"0x[0-9a-f]{6,}", text), f"{nb_path}: memory address in outputs"
        assert "Warning" not in text, f"{nb_path}: a warning leaked into the outputs"


BROKEN = textwrap.dedent(
    """\
    ---
    kernelspec: {display_name: Python 3, language: python, name: python3}
    rcakit: {title: Broken, bounds: {seed: [0, null]}}
    ---
    # Broken

    ```{code-cell} ipython3
    :tags: [parameters]

    seed = 0  # seed
    ```

    ```{code-cell} ipython3
    raise ValueError("planted failure")
    ```
    """
)


@pytest.mark.chapters
def test_a_failing_chapter_fails_the_run(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "car_shapley.md").write_text(BROKEN)
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    with pytest.raises(runner.ChapterFailed, match="planted failure"):
        runner.run_chapter("car-shapley", output_dir=tmp_path, show_progress=False)
    env = {**os.environ, "RCAKIT_ROOT": str(tmp_path), "RCAKIT_BOOK_DIR": str(tmp_path / "book")}
    proc = subprocess.run(
        [sys.executable, "-m", "rcakit", "run", "car-shapley"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1 and "planted failure" in proc.stderr


def test_a_scratch_book_gets_the_sources_and_a_warning_fails_the_build_by_name(tmp_path, monkeypatch, quick_book):
    """A book folder holding only executed chapters builds with the project's configuration, and a broken
    reference fails the strict build with an error that quotes the warning."""
    book = tmp_path / "book"
    shutil.copytree(quick_book / "chapters", book / "chapters")
    intro = book / "chapters" / "intro.ipynb"
    notebook = nbformat.read(intro, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("See {ref}`no-such-label`."))
    notebook.metadata["rcakit"]["page_digest"] = provenance.page_digest(notebook.cells)  # as if rcakit wrote it
    nbformat.write(notebook, intro)
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(book))
    with pytest.raises(runner.ChapterFailed, match="no-such-label"):
        html_book.build()
    site = book / "_build" / "site"  # the build's sources: the project's, the chapters' pages cut from their runs
    assert (site / "_config.yml").read_bytes() == (project_root() / "book" / "_config.yml").read_bytes()
    toc = yaml.safe_load((site / "_toc.yml").read_text())
    assert {"file": "chapters/car_shapley_audit"} in next(
        e for e in toc["chapters"] if e["file"].endswith("car_shapley")
    )["sections"]


def test_a_build_during_a_run_never_reads_or_publishes_the_running_notebook(tmp_path, monkeypatch, quick_book):
    """Issue 29, item 14: a run in progress (a live pid) has its hidden notebook beside the pages; the build
    neither reads it (its labels would be duplicates) nor publishes it, and an old build's copy is dropped."""
    book = tmp_path / "book"
    shutil.copytree(quick_book / "chapters", book / "chapters")
    running = book / "chapters" / f".intro.{os.getpid()}.running.ipynb"
    shutil.copy(book / "chapters" / "intro.ipynb", running)
    stale = book / "_build" / "html" / "chapters" / f".intro.{os.getpid()}.running.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("a half-executed page")
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(book))
    html_book.build()
    assert running.exists()  # the live run's file is left alone
    assert not [p for p in (book / "_build" / "html").rglob(".*") if "running" in p.name]


def test_a_book_folder_missing_pages_is_one_line_naming_them_and_rcakit_book(tmp_path, monkeypatch):
    """One chapter run into an empty book folder: ``rcakit build`` names the missing pages before Sphinx starts
    (it used to end in jupyter-book's "Look above for the cause")."""
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "chapters" / "content_corruption.ipynb").write_text("{}")
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(book))
    assert "content-corruption" not in html_book.missing_pages() and "intro" in html_book.missing_pages()
    with pytest.raises(RcakitError, match=r"no page yet for primer, .*intro: 'rcakit book' runs the missing"):
        html_book.build()
    assert not (book / "_build").exists()


def test_a_failed_build_is_summarised_by_its_warnings_or_its_last_message(tmp_path):
    many = "\n".join(f"/x/p.md:{i}: WARNING: w{i}" for i in range(15))
    summary = html_book.failure_summary("Running\n" + many + "\nTraceback\n  File x\n", tmp_path)
    assert summary.splitlines()[0].endswith("WARNING: w0") and summary.splitlines()[-1] == "... and 5 more"
    rule = "\x1b[91m=====\x1b[0m"
    boxed = f"Traceback\n  File 'x'\nRuntimeError:\n{rule}\n\nCouldn't find a Table of Contents\n{rule}\n"
    assert html_book.failure_summary(boxed, tmp_path) == "Couldn't find a Table of Contents"
    assert "no space left" in html_book.failure_summary("OSError: No space left on device", tmp_path)


def test_a_page_without_its_data_shows_one_admonition_and_no_missing_numbers(quick_book):
    """The quick book is built with an empty data home: longrca-strata's data sections are admonitions."""
    html = quick_book / "_build" / "html" / "chapters"
    page = "".join((html / name).read_text() for name in ("longrca_strata.html", "longrca_strata_audit.html"))
    words = " ".join(re.sub(r"<[^>]+>", " ", page).split())  # a command in code is a span per word
    assert "This section needs the Who&amp;When logs" in page and "rcakit data fetch who-and-when" in words
    assert "This section needs LongRCA Bench records" in page
    prose = re.sub(r"<(script|style|pre)\b.*?</\1>", "", page, flags=re.S)  # code may say None; prose may not
    text = re.sub(r"<[^>]+>", " ", prose)
    assert not re.search(r"\b(None|nan|NaN)\b", text), re.search(r".{60}\b(None|nan|NaN)\b.{60}", text)
    assert "Hand-Crafted log 24" not in text  # the section's prose is not shown without its numbers


def who_and_when_folder(root, subsets, error_words=False):
    """A Who&When-format folder of short logs, one subset folder per entry of ``subsets`` (name -> count)."""
    for subset, count in subsets.items():
        folder = root / subset
        folder.mkdir(parents=True)
        key = "role" if subset == "Hand-Crafted" else "name"
        for i in range(count):
            history = [
                {
                    "content": f"step {s}: reads the page and reports the listed price"
                    + (" but the call failed with an error" if error_words and s == 1 else ""),
                    key: ["Planner", "WebSurfer", "Assistant"][s % 3],
                    **({"role": "assistant"} if key == "name" else {}),
                }
                for s in range(4 + i)
            ]
            log = {
                "history": history,
                "question": "What is the price?",
                "ground_truth": "12",
                "is_corrected": False,
                "question_ID": f"{subset[0]}{i}",
                "mistake_agent": "WebSurfer",
                "mistake_step": "1",
                "mistake_reason": "read the wrong page",
            }
            (folder / f"{i + 1}.json").write_text(json.dumps(log))
    return root


@pytest.mark.chapters
@pytest.mark.parametrize(
    "subsets", [{"Hand-Crafted": 1}, {"Hand-Crafted": 3, "Algorithm-Generated": 3}], ids=["one-log", "no-error-words"]
)
def test_longrca_strata_runs_on_small_who_and_when_folders(tmp_path, monkeypatch, subsets):
    """A folder with one log, and logs in which no locator finds an error word, run to the end."""
    folder = who_and_when_folder(tmp_path / "who", subsets)
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    out = runner.run_chapter(
        "longrca-strata",
        {"who_and_when_path": str(folder)},
        quick=True,
        output_dir=tmp_path / "book",
        show_progress=False,
    )
    recorded = json.loads((tmp_path / "results" / "longrca-strata.json").read_text())
    assert set(recorded["who_and_when"]) == set(subsets)
    assert recorded["who_and_when"]["Hand-Crafted"]["terminal"]["n"] == subsets["Hand-Crafted"]
    assert "This section needs the Who&When logs" not in out.read_text()


def test_rcakit_build_reruns_the_summary_pages_that_a_rerun_made_stale(tmp_path, monkeypatch, quick_book):
    """After ``rcakit run car-shapley -p q 0.5 -p seed 3``, ``rcakit build`` re-executes the intro and the
    claims page, so their counts are the rerun's (they used to keep the counts of the book's first run), before
    it builds the HTML (the Sphinx build itself is the quick book's, strict, so it is not repeated here)."""
    from rcakit.book import build, cli
    from rcakit.claims.pages import findings_markdown
    from support.page_glue import glued

    book, store = tmp_path / "book", tmp_path / "results"
    shutil.copytree(quick_book / "chapters", book / "chapters")
    shutil.copytree(results.results_dir(), store)
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(book))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(store))

    def page(stem: str) -> dict:
        return glued(json.loads((book / "chapters" / f"{stem}.ipynb").read_text(encoding="utf-8")))

    before = page("claims")
    runner.run_chapter("car-shapley", {"q": 0.5, "seed": 3}, quick=True, show_progress=False)
    built = []  # the HTML build is asked for once the summary pages are fresh
    monkeypatch.setattr(build, "build", lambda: built.append(page("claims")) or str(book / "_build" / "html"))
    assert cli.main(["build"]) == 0
    assert len(built) == 1 and built[0] == page("claims")
    table = claims.compare_all(results.load_all())
    after, intro = page("claims"), page("intro")
    numbers = claims.headline_numbers(table)
    assert {k: int(after[f"mech_{k}"]["text/plain"]) for k in numbers} == numbers
    assert int(after["mech_other_parameters"]["text/plain"]) > int(before["mech_other_parameters"]["text/plain"])
    assert "every chapter ran at its defaults" not in after["parameters_note"]["text/plain"]
    assert intro["findings"]["text/markdown"] == findings_markdown(table)
