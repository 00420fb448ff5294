"""What a run refuses and what a page never shows: a second run of a chapter while one runs, an output too
large to publish, and the kernel's stderr (a HOME that cannot be written) (rcakit.book.runner)."""

import fcntl
import json
import os

import pytest

from rcakit import RcakitError
from rcakit.book import provenance, runner, staging
from support.bad_inputs import TOY_CHAPTER


def _toy_with(toy, code: str) -> None:
    source = toy / "root" / "notebooks" / "car_shapley.md"
    source.write_text(TOY_CHAPTER.replace('print(len(cases), "cases")', f'print(len(cases), "cases")\n{code}'))


def _outputs(notebook) -> list[dict]:
    return [o for c in json.loads(notebook.read_text())["cells"] for o in c.get("outputs", [])]


def test_a_second_run_of_a_chapter_while_one_runs_is_refused_and_changes_nothing(toy):
    out = runner.run_chapter("car-shapley", {"seed": 5}, show_progress=False)
    before = out.read_bytes()
    lock = toy / "results" / ".car-shapley.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # as the first run holds it
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(RcakitError, match=r"^car-shapley: another rcakit run of this chapter is running"):
            runner.run_chapter("car-shapley", {"seed": 7}, show_progress=False)
        assert out.read_bytes() == before
        assert not list((toy / "book" / "chapters").glob(".*"))  # no second notebook started
    finally:
        os.close(fd)  # the first run ends (or dies: the lock goes with its process)
    runner.run_chapter("car-shapley", {"seed": 7}, show_progress=False)
    assert provenance.read(out)["parameters"]["seed"] == 7
    assert not lock.exists()


def test_a_held_lock_refuses_a_second_holder_and_is_removed_when_released(tmp_path):
    with staging.chapter_lock(tmp_path, "x") as path:
        assert path.exists()
        with pytest.raises(RcakitError, match="another rcakit run"):
            with staging.chapter_lock(tmp_path, "x"):
                pass
        assert path.exists()  # the refused run removed nothing
    assert not path.exists()
    with staging.chapter_lock(tmp_path, "x"), staging.chapter_lock(tmp_path, "y"):  # chapters do not block each other
        pass


def test_an_output_too_large_to_publish_is_replaced_by_a_note(toy, monkeypatch):
    monkeypatch.setattr(runner, "MAX_OUTPUT_BYTES", 20_000)
    _toy_with(toy, 'from IPython.display import display\ndisplay({"text/plain": "x" * 50_000}, raw=True)')
    out = runner.run_chapter("car-shapley", {}, show_progress=False)
    outputs = _outputs(out)
    assert all(len(json.dumps(o)) <= 20_000 for o in outputs)
    notes = [o for o in outputs if "was left off this page" in str(o.get("data", {}).get("text/markdown", ""))]
    assert len(notes) == 1
    assert "".join(notes[0]["data"]["text/markdown"]).startswith(
        "*An output of 50.1 kB was left off this page: it is larger than the 20.0 kB"
    )
    assert any("3 cases" in str(o.get("text", "")) for o in outputs)  # the small outputs stay
    assert provenance.foreign_output(out) is None  # the note is rcakit's own output


def test_a_home_that_cannot_be_written_never_reaches_the_page(toy, monkeypatch, capsys):
    """matplotlib's warning about a temporary cache folder (a ``/tmp`` path) and anything else a kernel
    writes on stderr stay off the page."""
    (toy / "home").write_text("a file, so nothing can be made under it\n")
    monkeypatch.setenv("HOME", str(toy / "home"))
    for name in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(toy / "runtime"))  # the kernel's connection file
    _toy_with(toy, 'import sys\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nprint("to stderr", file=sys.stderr)')
    out = runner.run_chapter("car-shapley", {}, show_progress=False)
    shown = json.dumps(_outputs(out))  # what a reader sees besides the chapter's code
    assert "/tmp" not in shown and "Matplotlib" not in shown and "to stderr" not in shown
    assert not [o for o in _outputs(out) if o.get("name") == "stderr"]
    assert (toy / "results" / ".matplotlib").is_dir()  # matplotlib's cache, in a folder rcakit made
    assert "car-shapley: the kernel wrote on stderr (kept off the page): to stderr" in capsys.readouterr().err
    assert "MPLCONFIGDIR" not in os.environ  # the run's setting ends with it
