"""The rcakit command: every user error is one line on stderr and exit status 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from rcakit import RcakitError
from rcakit.book import cli, registry, runner
from support import FIXTURES

FIXTURE = FIXTURES / "longrca_sample.jsonl"


def rcakit(*args):
    return subprocess.run([sys.executable, "-m", "rcakit", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no-such-chapter"], "unknown chapter 'no-such-chapter'"),
        (["run", "car-shapley", "-p", "qq", "1"], "unknown parameter 'qq'"),
        (["run", "car-shapley", "-p", "q", "abc"], "parameter 'q' expects float"),
        (["run", "car-shapley", "-p", "seed", "1.5"], "parameter 'seed' expects int"),
        (["run", "car-shapley", "-p", "q", "2.0"], "outside"),
        (["run", "car-shapley", "-p", "q"], "expected 2 arguments"),
        (["run"], "required: chapter"),
        (["frobnicate"], "invalid choice"),
    ],
)
@pytest.mark.slow
def test_user_errors_are_one_line_and_status_2(args, message):
    proc = rcakit(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert proc.stdout == ""


def test_list_shows_parameters_and_defaults():
    proc = rcakit("list")
    assert proc.returncode == 0
    assert "car-shapley" in proc.stdout and "q = 0.3" in proc.stdout and "[quick: 20]" in proc.stdout
    # each parameter's valid values, from the chapter's front matter
    assert "q = 0.3  in [0.01, 0.99]" in proc.stdout and "seed = 0  in [0, ∞]" in proc.stdout
    assert "phi_interval = 'normal'  one of normal, student" in proc.stdout


def test_bad_parameter_is_rejected_before_a_kernel_starts(monkeypatch):
    import papermill

    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    with pytest.raises(RcakitError, match="expects float"):
        runner.run_chapter("car-shapley", {"q": "high"})
    assert cli.main(["run", "car-shapley", "-p", "k_samples", "2"]) == 2


def test_a_parameter_byte_that_is_not_utf8_is_one_line_before_a_kernel_starts(monkeypatch, capsys):
    """The shell hands a non-UTF-8 byte over as a lone surrogate, which no notebook can hold (issue 29, item 12)."""
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("a kernel was started"))
    bad = b"st\xff".decode("utf-8", "surrogateescape")
    assert cli.main(["run", "coverage-collapse", "--quick", "-p", "store", bad]) == 2
    assert (
        capsys.readouterr().err == "rcakit: error: coverage-collapse: parameter 'store': 'st\\xff' is not UTF-8 text\n"
    )


def test_book_checks_every_chapter_before_running_any(monkeypatch):
    import papermill

    started = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: started.append(a))
    monkeypatch.setattr(runner.registry, "PAGES", ["car-shapley", "no-such-chapter"])
    assert cli.main(["book", "--no-build"]) == 2
    assert started == []


def test_book_preflights_only_the_pages_it_will_run(monkeypatch, capsys):
    """Issue 29, item 15: a page that is up to date is not preflighted, so its recorded model server being down
    does not stop the book; a stale page still is, before anything runs."""
    from rcakit.book import provenance

    def server_down(cid, params, output_dir=None):
        raise RcakitError(f"{cid}: provider: ollama at 127.0.0.1:1: cannot connect")

    monkeypatch.setattr(runner, "preflight", server_down)
    monkeypatch.setattr(runner, "run_chapter", lambda *a, **k: pytest.fail("a page ran"))
    monkeypatch.setattr(provenance, "why_stale", lambda chapter, notebook, params: None)
    assert cli.main(["book", "--no-build"]) == 0
    assert capsys.readouterr().err.count("up to date") == len(registry.PAGES)
    monkeypatch.setattr(provenance, "why_stale", lambda c, n, p: "source changed" if c.id == "primer" else None)
    assert cli.main(["book", "--no-build"]) == 2
    assert "primer: provider: ollama at 127.0.0.1:1: cannot connect" in capsys.readouterr().err


def test_validate_prints_every_bad_record_on_its_own_line_then_the_counts(tmp_path):
    good = rcakit("validate", "tests/fixtures/longrca_sample.jsonl")
    assert good.returncode == 0 and good.stderr == ""
    assert good.stdout.strip() == "tests/fixtures/longrca_sample.jsonl: 3 good records, 0 bad"
    sample = Path("tests/fixtures/longrca_sample.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join([sample[0], '{"question_ID": "x", "history": []}', "not json", sample[1], '{"history": [1]}']) + "\n"
    )
    proc = rcakit("validate", str(bad))
    assert proc.returncode == 2
    assert proc.stdout.strip() == f"{bad}: 2 good records, 3 bad"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 3, proc.stderr
    prefix = f"rcakit: error: {bad}:"
    assert all(line.startswith(prefix) for line in lines)
    assert [line[len(prefix) :].split(":")[0] for line in lines] == ["2", "3", "5"]  # every bad line, in order
    assert "history: empty history" in lines[0]
    missing = rcakit("validate", str(tmp_path / "nope"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "no such file" in missing.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "coverage-collapse", "-p", "store", str(FIXTURE.resolve())], "is a file, not a folder"),
        (["run", "longrca-strata", "-p", "who_and_when_path", "no/such/logs"], "does not exist"),
        (["run", "coverage-collapse", "-p", "provider", "ollama:m"], "ollama at http://127.0.0.1:9"),
        (["run", "car-shapley", "-p", "q", "-1e-3"], "outside [0.01, 0.99]"),
    ],
)
def test_paths_and_servers_are_checked_before_a_kernel_starts(monkeypatch, capsys, args, message):
    import papermill

    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # the discard port: nothing listens
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_split_params_takes_values_that_start_with_a_dash():
    rest, params = cli.split_params(["run", "x", "-p", "q", "-1e-3", "--quick", "--param", "s", "--x"])
    assert rest == ["run", "x", "--quick"] and params == [("q", "-1e-3"), ("s", "--x")]
    with pytest.raises(RcakitError, match="expected 2 arguments"):
        cli.split_params(["run", "x", "-p", "q"])


@pytest.mark.parametrize("value", ["a`b", "``x``", "`<img src=x onerror=alert(1)>`", "<b>bold</b>", "plain"])
def test_a_parameter_value_in_the_rerun_note_stays_one_code_span(value):
    """Issue 29, item 17: a backtick in a value cannot end the code span and let raw HTML reach the page."""
    from markdown_it import MarkdownIt

    chapter = registry.get("coverage-collapse")
    note = runner.rerun_note(chapter, {**chapter.defaults, "store": value})
    tokens = MarkdownIt("commonmark").parseInline(note.splitlines()[2])[0].children
    assert not [t for t in tokens if t.type == "html_inline"]
    codes = [t.content for t in tokens if t.type == "code_inline"]
    assert f"store = {value!r}" in codes


def test_validate_refuses_sparse_and_oversized_record_files_before_reading_them(tmp_path):
    """Issue 29, item 16: four sparse 1 GiB files (nothing on disk) took 8.5 GB of memory to validate."""
    folder = tmp_path / "who"
    folder.mkdir()
    for i in range(4):
        with open(folder / f"{i}.json", "wb") as fh:
            fh.truncate(1 << 30)  # 1 GiB, sparse
    proc = rcakit("validate", str(folder))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "more than 2147483648; nothing was read" in proc.stderr
    (folder / "1.json").unlink()
    (folder / "2.json").unlink()
    (folder / "3.json").unlink()
    proc = rcakit("validate", str(folder))
    assert proc.returncode == 2 and "a sparse file (1073741824 bytes" in proc.stderr


def test_a_recorded_store_outside_the_results_folder_is_not_trusted_by_the_book(tmp_path, monkeypatch, capsys):
    """Issue 29, item 18: parameters read back from an executed notebook's metadata are checked like any
    parameter, and a case-store folder there that leads out of the results folder falls back to the default."""
    from rcakit.book import provenance

    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    chapter = registry.get("content-corruption")
    for outside in (str(tmp_path / "elsewhere"), "../../elsewhere"):
        block = {"parameters": {"seed": 3, "store": outside}}
        monkeypatch.setattr(provenance, "read", lambda notebook, block=block: block)
        params = runner.book_parameters("content-corruption")
        assert params["seed"] == 3 and params["store"] == chapter.parameters["store"].default
        assert "leads out of" in capsys.readouterr().err
    block = {"parameters": {"seed": 3, "store": "mine"}}  # inside the results folder: kept
    monkeypatch.setattr(provenance, "read", lambda notebook: block)
    assert runner.book_parameters("content-corruption")["store"] == "mine"
