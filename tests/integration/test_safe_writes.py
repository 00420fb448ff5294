"""rcakit never writes, appends or removes through a link, never blocks on a FIFO, and resolves its folders once.

Each test plants the hostile entry of one case of the third hostile-input
campaign (issue 29, items 1-5 and 9) and keeps a sentinel outside rcakit's
folders, which must stay byte-identical.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from rcakit import RcakitError
from rcakit.book import staging
from rcakit.data import catalog
from rcakit.io import atomic_write, check_entry, create_exclusive, fresh_folder, open_append, read_regular, real_folder
from rcakit.llm.cache import ResponseCache
from rcakit.paths import absolute_folder_envs
from rcakit.store import CaseStore

SENTINEL = b"line one\nline two\n"


@pytest.fixture
def sentinel(tmp_path):
    """A file outside rcakit's folders and a check that its bytes never change."""
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(SENTINEL)
    before = hashlib.sha256(victim.read_bytes()).hexdigest()
    yield victim
    assert victim.exists() and hashlib.sha256(victim.read_bytes()).hexdigest() == before


def within(seconds: float, work):
    """``work()`` run in a thread; its result, or a failure when it blocks longer than ``seconds``."""
    out: dict = {}

    def run():
        try:
            out["value"] = work()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            out["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for more than {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_case_store_linked_to_a_file_elsewhere_is_refused_and_the_file_is_untouched(tmp_path, sentinel):
    store = tmp_path / "results" / "cases" / "chapter-abc.jsonl"
    store.parent.mkdir(parents=True)
    store.symlink_to(sentinel)
    with pytest.raises(RcakitError, match="is a symbolic link; rcakit never writes through one"):
        CaseStore(store).put("k", {"v": 1})


def test_appending_never_follows_a_link_and_a_real_store_still_appends(tmp_path, sentinel):
    link = tmp_path / "store.jsonl"
    link.symlink_to(sentinel)
    with pytest.raises(RcakitError, match="symbolic link"):
        open_append(link)
    real = CaseStore(tmp_path / "real.jsonl")
    real.put("a", {"v": 1})
    real.put("b", {"v": 2})
    assert len(CaseStore(tmp_path / "real.jsonl")) == 2


def test_a_link_planted_at_a_runs_own_temporary_name_is_removed_not_written_through(tmp_path, sentinel):
    tmp = tmp_path / f".primer.{os.getpid()}{staging.RUNNING_SUFFIX}"
    tmp.symlink_to(sentinel)
    create_exclusive(tmp)
    assert not tmp.is_symlink() and tmp.is_file() and tmp.stat().st_size == 0
    tmp.write_text("the executed notebook")  # what papermill then does: into rcakit's own file
    stage = tmp_path / f".primer.{os.getpid()}{staging.STAGE_SUFFIX}"
    stage.symlink_to(sentinel.parent)
    fresh_folder(stage)
    assert stage.is_dir() and not stage.is_symlink() and list(sentinel.parent.iterdir()) == [sentinel]


def test_stale_cleanup_removes_a_planted_link_even_with_this_processes_pid(tmp_path, sentinel):
    own = tmp_path / f".primer.{os.getpid()}{staging.RUNNING_SUFFIX}"
    own.symlink_to(sentinel)
    mine = tmp_path / f".coverage_collapse.{os.getpid()}{staging.RUNNING_SUFFIX}"
    mine.write_text("a run in progress")
    assert staging.remove_stale([tmp_path]) == [own]
    assert not os.path.lexists(own) and mine.is_file()  # a live run's regular file is left alone


def test_a_failed_runs_folder_that_is_a_link_is_refused_before_anything_is_deleted(tmp_path, sentinel):
    elsewhere = sentinel.parent
    (elsewhere / "primer.ipynb").write_text("someone else's notebook")
    failed = tmp_path / "book" / "failed"
    failed.parent.mkdir()
    failed.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(RcakitError, match="the failed-runs folder: .* is a symbolic link"):
        real_folder(failed, "the failed-runs folder", create=False)
    assert (elsewhere / "primer.ipynb").read_text() == "someone else's notebook"
    assert real_folder(tmp_path / "book" / "new", create=True).is_dir()


def test_the_run_refuses_a_linked_failed_runs_folder_before_a_kernel_starts(tmp_path, sentinel, monkeypatch):
    from rcakit.book import runner

    book = tmp_path / "book" / "chapters"
    book.mkdir(parents=True)
    (book.parent / "failed").symlink_to(sentinel.parent, target_is_directory=True)
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(RcakitError, match="failed-runs folder"):
        runner.preflight("primer", runner.run_parameters("primer", quick=True), book)


def test_an_llm_cache_linked_elsewhere_is_refused(tmp_path, sentinel):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "responses.sqlite").symlink_to(sentinel)
    with pytest.raises(RcakitError, match="responses.sqlite: is a symbolic link"):
        ResponseCache(folder)
    (folder / "responses.sqlite").unlink()
    (folder / "responses.sqlite-wal").symlink_to(sentinel)
    with pytest.raises(RcakitError, match="responses.sqlite-wal: is a symbolic link"):
        ResponseCache(folder)


def test_a_data_set_folder_that_is_a_link_is_refused_before_its_files_are_checked(tmp_path, sentinel, monkeypatch):
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "data"))
    ds = catalog.get("who-and-when")
    catalog.data_home().mkdir(parents=True)
    (sentinel.parent / "LICENSE").write_bytes(b"not the data set's licence")
    catalog.folder(ds).symlink_to(sentinel.parent, target_is_directory=True)
    with pytest.raises(RcakitError, match="is a symbolic link; rcakit keeps a data set in a real folder"):
        catalog.inside(ds, "LICENSE", "who-and-when: LICENSE")
    assert (sentinel.parent / "LICENSE").read_bytes() == b"not the data set's licence"


def test_relative_folders_in_the_environment_become_absolute_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"RCAKIT_RESULTS_DIR": "results", "RCAKIT_DATA_DIR": "~/data", "RCAKIT_BOOK_DIR": "", "OTHER": "x"}
    absolute_folder_envs(env)
    assert env["RCAKIT_RESULTS_DIR"] == str(tmp_path / "results")
    assert env["RCAKIT_DATA_DIR"] == str(Path("~/data").expanduser())
    assert env["RCAKIT_BOOK_DIR"] == "" and env["OTHER"] == "x"


def test_the_cli_hands_the_kernel_absolute_folders(tmp_path, monkeypatch, capsys):
    from rcakit.book import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", "relative-results")
    monkeypatch.setenv("RCAKIT_DATA_DIR", "relative-data")
    cli.main(["data", "list"])
    assert os.environ["RCAKIT_RESULTS_DIR"] == str(tmp_path / "relative-results")
    assert os.environ["RCAKIT_DATA_DIR"] == str(tmp_path / "relative-data")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_at_a_lock_or_results_name_is_one_line_not_a_hang(tmp_path, monkeypatch):
    from rcakit import results

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    ds = catalog.get("musique")
    catalog.data_home().mkdir(parents=True)
    os.mkfifo(catalog.lock_path(ds))
    with pytest.raises(RcakitError, match="is not a regular file"):
        within(10, lambda: catalog.read_lock(ds))
    results.results_dir().mkdir(parents=True)
    os.mkfifo(results.results_dir() / "planted.json")
    with pytest.raises(RcakitError, match="planted.json: is not a regular file"):
        within(10, results.load_all)
    with pytest.raises(RcakitError, match="not a regular file"):
        within(10, lambda: read_regular(catalog.lock_path(ds)))
    with pytest.raises(RcakitError, match="not a regular file"):
        check_entry(catalog.lock_path(ds))
    atomic_write(tmp_path / "plain.json", "{}")  # a regular file still reads
    assert read_regular(tmp_path / "plain.json") == b"{}"
