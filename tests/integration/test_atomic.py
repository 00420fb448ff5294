"""Atomic writes: a full disk, a failing chapter or a kill leaves the last good file, byte for byte."""

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from rcakit import io as rio
from rcakit import results
from rcakit.book import runner
from support.bad_inputs import TOY_CHAPTER


def _enospc_after(limit, real=os.write):
    """An ``os.write`` that writes ``limit`` bytes for real, then fails as a full disk does."""
    written = [0]

    def write(fd, data):
        if written[0] >= limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real(fd, bytes(data[: limit - written[0]]))
        written[0] += n
        return n

    return write


def test_atomic_write_replaces_keeps_mode_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a.txt"
    rio.atomic_write(target, "old\n")
    target.chmod(0o640)
    rio.atomic_write(target, b"new\n")
    assert target.read_bytes() == b"new\n" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_enospc_during_record_keeps_the_previous_results_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path))
    results.record("coverage-collapse", {"acc": list(range(2000))}, {"seed": 0})
    good = results.result_path("coverage-collapse").read_bytes()
    monkeypatch.setattr(rio.os, "write", _enospc_after(4096))
    with pytest.raises(OSError) as err:
        results.record("coverage-collapse", {"acc": list(range(3000))}, {"seed": 1})
    assert err.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert (tmp_path / "coverage-collapse.json").read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["coverage-collapse.json"]  # the torn temp is gone


# The toy records its results, then fails at seed 13: after the results cell, as a real chapter can.
RECORD_THEN_FAIL = (
    "from rcakit import results\n"
    "results.record('car-shapley', {'square_sum': 5 + seed}, {'seed': seed})\n"
    "assert seed != 13, 'planted failure'\n"
    "print(seed)"
)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """A project whose car-shapley chapter is a three-case toy, and a scratch book."""
    (tmp_path / "root" / "notebooks").mkdir(parents=True)
    (tmp_path / "root" / "notebooks" / "car_shapley.md").write_text(
        TOY_CHAPTER.replace('print(len(cases), "cases")', RECORD_THEN_FAIL)
    )
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


def _chapters(toy):
    return sorted(p.name for p in (toy / "book" / "chapters").iterdir())


def test_enospc_during_the_notebook_write_keeps_the_good_notebook(toy, monkeypatch):
    import papermill.iorw

    good = runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False).read_bytes()
    real, calls = papermill.iorw.LocalHandler.write, []

    def full_disk(self, buf, path):
        calls.append(path)
        if len(calls) > 2:  # the disk fills while the chapter runs
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(self, buf, path)

    monkeypatch.setattr(papermill.iorw.LocalHandler, "write", full_disk)
    with pytest.raises(runner.ChapterFailed, match="No space left on device.*last good car_shapley.ipynb is kept"):
        runner.run_chapter("car-shapley", {"seed": 2}, show_progress=False)
    assert (toy / "book" / "chapters" / "car_shapley.ipynb").read_bytes() == good
    assert _chapters(toy) == ["car_shapley.ipynb"]


def test_enospc_when_publishing_the_notebook_keeps_the_good_one(toy, monkeypatch):
    good = runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False).read_bytes()

    def no_room(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(runner, "publish", no_room)
    with pytest.raises(runner.ChapterFailed, match="No space left"):
        runner.run_chapter("car-shapley", {"seed": 2}, show_progress=False)
    assert (toy / "book" / "chapters" / "car_shapley.ipynb").read_bytes() == good
    assert _chapters(toy) == ["car_shapley.ipynb"]


def test_a_failed_run_keeps_the_last_good_notebook_and_results_byte_for_byte(toy):
    good = runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False).read_bytes()
    good_results = (toy / "results" / "car-shapley.json").read_bytes()
    with pytest.raises(runner.ChapterFailed, match=r"planted failure \(see .*failed/car_shapley.ipynb"):
        runner.run_chapter("car-shapley", {"seed": 13}, show_progress=False)
    assert _chapters(toy) == ["car_shapley.ipynb"]  # the failed run is not beside the pages
    assert (toy / "book" / "chapters" / "car_shapley.ipynb").read_bytes() == good
    assert (toy / "results" / "car-shapley.json").read_bytes() == good_results  # its staged results were dropped
    assert sorted(p.name for p in (toy / "results").iterdir()) == ["car-shapley.json"]
    assert b"planted failure" in (toy / "book" / "failed" / "car_shapley.ipynb").read_bytes()
    assert runner.failed_notebooks() == [toy / "book" / "failed" / "car_shapley.ipynb"]
    runner.run_chapter("car-shapley", {"seed": 2}, show_progress=False)  # a good rerun clears the failure
    assert runner.failed_notebooks() == [] and b'"square_sum": 7' in (toy / "results" / "car-shapley.json").read_bytes()


def _default_signal(signum):
    """For a child process: ``signum`` back to its default action (an ignored SIGHUP is inherited)."""
    return lambda: signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_mid_run_leaves_no_temporary_file_and_the_last_good_pair(toy, signum):
    """Issue 29, item 20: SIGHUP mid-run printed nothing and left ``.running`` and staging files."""
    good = runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False).read_bytes()
    marker = toy / "running"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcakit", "run", "car-shapley", "-p", "nap", "0.05", "-p", "marker", str(marker)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signal(signum),  # under nohup SIGHUP is ignored, and rcakit rightly leaves it so
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and err.decode().count("\n") == 1, err
    assert err.decode().startswith(f"rcakit: terminated ({signum.name}); finished cases are kept"), err
    assert _chapters(toy) == ["car_shapley.ipynb"]  # no .running notebook
    assert (toy / "book" / "chapters" / "car_shapley.ipynb").read_bytes() == good
    assert not [p for p in (toy / "results").iterdir() if p.name.startswith(".")]


def test_stale_running_files_of_dead_processes_are_removed_and_live_ones_kept(toy):
    runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False)
    folder = toy / "book" / "chapters"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [folder / f".car_shapley.{dead.pid}.running.ipynb", folder / ".car_shapley.ab12cd.running.ipynb"]
    live = folder / f".car_shapley.{os.getppid()}.running.ipynb"
    for path in [*stale, live]:
        path.write_text("{}")
    (toy / "results" / f".car-shapley.{dead.pid}.staged").mkdir()
    removed = runner.remove_stale()
    assert sorted(removed) == sorted([*stale, toy / "results" / f".car-shapley.{dead.pid}.staged"])
    assert live.exists()


def test_a_stale_file_whose_pid_a_later_process_reused_is_removed(toy):
    """Issue 29, item 14: cleanup went by pid alone, so a dead run's file whose pid was reused stayed forever."""
    folder = toy / "book" / "chapters"
    folder.mkdir(parents=True, exist_ok=True)
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        reused = folder / f".car_shapley.{later.pid}.running.ipynb"
        reused.write_text("{}")
        os.utime(reused, (time.time() - 3600,) * 2)  # written an hour before its pid's process started
        current = folder / f".primer.{later.pid}.running.ipynb"
        current.write_text("{}")  # written after the process started: its run is in progress
        assert runner.remove_stale() == [reused]
        assert current.exists()
    finally:
        later.kill()
        later.wait()


def test_a_killed_run_leaves_the_last_good_notebook_and_results(toy):
    good = runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False).read_bytes()
    marker = toy / "running"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcakit", "run", "car-shapley", "-p", "nap", "0.05", "-p", "marker", str(marker)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert (toy / "book" / "chapters" / "car_shapley.ipynb").read_bytes() == good
    published = [n for n in _chapters(toy) if not n.startswith(".")]
    assert published == ["car_shapley.ipynb"]  # only a hidden temporary notebook may be left


def test_a_page_with_a_future_time_does_not_hide_that_the_latest_run_failed(toy):
    """Issue 29, item 21: the note compared modification times, so a good page dated in the future hid it."""
    runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False)
    with pytest.raises(runner.ChapterFailed):
        runner.run_chapter("car-shapley", {"seed": 13}, show_progress=False)
    page = toy / "book" / "chapters" / "car_shapley.ipynb"
    os.utime(page, ns=(4 * 10**18, 4 * 10**18))  # the year 2096
    assert runner.failed_notebooks() == [toy / "book" / "failed" / "car_shapley.ipynb"]


def test_the_kernel_temporaries_of_gone_runs_are_removed_and_nothing_else(tmp_path, monkeypatch):
    """A SIGKILLed run leaves its kernel socket folder and warnings log in the temporary folder; the next run
    removes them, and only them: not a live run's, not a link, not a name rcakit did not make."""
    from rcakit.book.kernel import remove_stale_temporaries

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    temp = tmp_path / "tmp"
    temp.mkdir()
    (temp / f"rcakit-kernel-{dead.pid}-k1_x").mkdir()
    (temp / f"rcakit-kernel-{dead.pid}-k1_x" / "kernel-1").write_text("")
    (temp / f"rcakit-warnings-{dead.pid}-w2.log").write_text("")
    (temp / f"rcakit-kernel-{os.getppid()}-live").mkdir()  # a run in progress
    (temp / f"rcakit-kernel-{dead.pid}-link").symlink_to(victim)
    (temp / "rcakit-kernel-nopid").mkdir()
    (temp / f"rcakit-warnings-{dead.pid}-w3.txt").write_text("")  # not rcakit's pattern
    removed = remove_stale_temporaries(str(temp))
    assert sorted(removed) == [f"rcakit-kernel-{dead.pid}-k1_x", f"rcakit-warnings-{dead.pid}-w2.log"]
    assert sorted(p.name for p in temp.iterdir()) == sorted(
        [
            f"rcakit-kernel-{os.getppid()}-live",
            f"rcakit-kernel-{dead.pid}-link",
            "rcakit-kernel-nopid",
            f"rcakit-warnings-{dead.pid}-w3.txt",
        ]
    )
    assert (victim / "keep").exists()


def test_a_run_leaves_nothing_in_the_temporary_folder(toy, tmp_path, monkeypatch):
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    runner.run_chapter("car-shapley", {"seed": 1}, show_progress=False)
    assert [p.name for p in temp.iterdir() if p.name.startswith("rcakit-")] == []


def test_a_termination_while_a_kernel_runs_stops_the_kernel_and_unwinds_when_the_run_returns():
    """An exception raised inside papermill's event loop could be lost in a background task: while a kernel
    runs, the signal stops the kernel and is raised after."""
    from rcakit.book import staging

    before = {signum: signal.signal(signum, staging._on_terminate) for signum in staging.TERMINATING}
    try:
        _deferred_then_at_once(staging)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _deferred_then_at_once(staging):
    stopped = []
    with pytest.raises(staging.Terminated) as info:
        with staging.deferred_termination(lambda: stopped.append(1) or True):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            reached = True  # the handler did not raise here: the block ran on
    assert reached and stopped == [1] and info.value.signum == signal.SIGHUP
    with pytest.raises(staging.Terminated):  # no kernel to stop: raised at once, as outside the block
        with staging.deferred_termination(lambda: False):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
            pytest.fail("the signal should have been raised at once")
