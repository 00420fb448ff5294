"""rcakit.data: the registry, fetching through a local mirror, the lock file, every failure path.

Every server here is a bounded thread on 127.0.0.1 that stops by itself; no
test reaches any other host. The Who&When tests serve the shared copy
(``../shared/data/who_and_when``, byte-identical to the pinned commit) in the
repository's own layout, so they run wherever that copy sits beside the clone.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from rcakit import RcakitError, data
from rcakit.cli import main
from rcakit.paths import project_root
from rcakit.trajectories import read_who_and_when

SHARED = project_root().parent / "shared" / "data" / "who_and_when"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no Who&When copy at {SHARED}")
SERVER_LIFETIME = 120.0  # seconds; a server that outlives its test shuts itself down
BAD_FILE = "Who&When/Hand-Crafted/1.json"


# ---------------------------------------------------------------- a bounded local server


@contextmanager
def serve(content: Callable[[str], bytes | None]) -> Iterator[str]:
    """Serve ``content(path)`` (``None``: 404) on 127.0.0.1 in a thread; yield the base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
            body = content(path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    watchdog = threading.Timer(SERVER_LIFETIME, server.shutdown)
    watchdog.daemon = True
    thread.start()
    watchdog.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def who_and_when_tree(path: str) -> bytes | None:
    """The repository layout at the pinned commit, read from the shared copy (which lacks ``Who&When/``)."""
    if path == "LICENSE":
        local = SHARED / "LICENSE"
    elif path.startswith("Who&When/") and ".." not in path.split("/"):
        local = SHARED / path.removeprefix("Who&When/")
    else:
        return None
    return local.read_bytes() if local.is_file() else None


def fetch_shared_who_and_when(home: Path) -> Path:
    """Fetch ``who-and-when`` from the shared copy, served on 127.0.0.1, into data home ``home``.

    For a session that runs the chapters on the real logs: it then sets
    ``RCAKIT_DATA_DIR=home``. The environment is left as it was.
    """
    saved = {k: os.environ.get(k) for k in ("RCAKIT_DATA_DIR", "RCAKIT_DATA_URL")}
    try:
        with serve(who_and_when_tree) as url:
            os.environ.update(RCAKIT_DATA_DIR=str(home), RCAKIT_DATA_URL=url)
            return data.fetch("who-and-when")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data-home"
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(folder))
    monkeypatch.delenv("RCAKIT_DATA_URL", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())  # never the real Hub
    return folder


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# ---------------------------------------------------------------- the registry


def test_registry_names_three_data_sets_each_pinned_with_licence_and_citation():
    sets = data.registry()
    assert list(sets) == ["who-and-when", "longrca-bench", "musique"]
    for ds in sets.values():
        assert len(ds.revision) == 40 and ds.revision in ds.base_url
        assert ds.licence and ds.citation and ds.bibkey
    who = sets["who-and-when"]
    assert who.pinned and len(who.files) == 185
    assert sum(f.path.endswith(".json") for f in who.files) == 184
    assert not sets["longrca-bench"].pinned and sets["longrca-bench"].listing.count == 1140
    assert sets["longrca-bench"].licence_note == "no licence declared; its terms are yours to check"
    assert sets["musique"].licence == "CC BY 4.0" and not sets["musique"].pinned


@needs_shared
def test_registry_hashes_are_those_of_the_shared_copy_in_the_repository_layout():
    pinned = {f.path: (f.sha256, f.size) for f in data.get("who-and-when").files}
    shared = {}
    for path in SHARED.rglob("*"):
        rel = path.relative_to(SHARED).as_posix()
        if path.is_file() and rel != "README.md":  # the README is the copy's own note, not upstream's
            repo_path = rel if rel == "LICENSE" else f"Who&When/{rel}"
            blob = path.read_bytes()
            shared[repo_path] = (hashlib.sha256(blob).hexdigest(), len(blob))
    assert shared == pinned


def test_a_malformed_registry_entry_is_one_line_naming_it(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "registry.yaml").write_text("broken:\n  title: x\n  files: {a: {sha256: null}}\n")
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    with pytest.raises(RcakitError, match=r"registry.yaml: broken: missing field 'description'"):
        data.registry()


# ---------------------------------------------------------------- Who&When through a local mirror


@needs_shared
def test_fetch_who_and_when_from_a_local_mirror_checks_hashes_and_loads_all_184_logs(home, monkeypatch, capsys):
    with serve(who_and_when_tree) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 0, err
    root = Path(out.strip())
    assert root == home / "who-and-when" / "Who&When"
    assert "MIT" in err
    assert files_under(home) == {f"who-and-when/{f.path}" for f in data.get("who-and-when").files}
    for entry in data.get("who-and-when").files:
        assert hashlib.sha256((home / "who-and-when" / entry.path).read_bytes()).hexdigest() == entry.sha256
    loaded = read_who_and_when(root)
    assert not loaded.errors
    assert len(loaded.trajectories) == 184
    assert {s: sum(t.source == s for t in loaded.trajectories) for s in ("Hand-Crafted", "Algorithm-Generated")} \
        == {"Hand-Crafted": 58, "Algorithm-Generated": 126}
    assert run_cli(capsys, "data", "path", "who-and-when")[1].strip() == str(root)
    assert data.locate("who-and-when", "who_and_when_path") == root
    assert "fetched: " + str(root) in run_cli(capsys, "data", "list")[1]

    # A second fetch verifies the local copy and needs no server; a damaged file is fetched anew.
    monkeypatch.setenv("RCAKIT_DATA_URL", closed_port_url())
    assert run_cli(capsys, "data", "fetch", "who-and-when")[0] == 0
    damaged = home / "who-and-when" / BAD_FILE
    damaged.write_bytes(b"{}")
    status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2 and BAD_FILE in err and "connection refused" in err
    assert not damaged.exists()
    assert not data.is_fetched("who-and-when")


@needs_shared
def test_wrong_bytes_for_one_file_fail_in_one_line_naming_it_and_leave_no_copy(home, monkeypatch, capsys):
    def tampered(path):
        return b'{"history": []}\n' if path == BAD_FILE else who_and_when_tree(path)

    with serve(tampered) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("rcakit: error: who-and-when: Who&When/Hand-Crafted/1.json: the bytes from ")
    assert "do not match the registry's sha256" in last
    assert len([line for line in err.splitlines() if line.startswith("rcakit: error")]) == 1
    stored = files_under(home)
    assert f"who-and-when/{BAD_FILE}" not in stored
    assert all(any(s == f"who-and-when/{f.path}" for f in data.get("who-and-when").files) for s in stored)
    assert not data.is_fetched("who-and-when")
    assert data.locate("who-and-when", "who_and_when_path") is None


@needs_shared
def test_a_404_is_one_line_with_the_status_and_the_file(home, monkeypatch, capsys):
    missing = "Who&When/Algorithm-Generated/2.json"
    with serve(lambda p: None if p == missing else who_and_when_tree(p)) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2
    assert err.strip() .endswith(f"who-and-when: {missing}: {url}Who%26When/Algorithm-Generated/2.json "
                                 "answered HTTP 404 Not Found")
    assert f"who-and-when/{missing}" not in files_under(home)


def test_an_unreachable_host_is_one_line_and_leaves_nothing(home, monkeypatch, capsys):
    url = closed_port_url()
    monkeypatch.setenv("RCAKIT_DATA_URL", url)
    status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    netloc = urllib.parse.urlsplit(url).netloc
    assert status == 2
    assert err.strip().endswith(f"who-and-when: LICENSE: cannot download from {netloc}: connection refused")
    assert files_under(home) == set()


def test_a_full_disk_mid_download_is_one_line_and_leaves_no_temporary_file(home, monkeypatch, capsys):
    def no_space(fh, chunk):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(data, "_write", no_space)
    with serve(lambda p: b"x" * 1000 if p == "LICENSE" else None) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2
    assert err.strip().endswith(f"who-and-when: LICENSE: cannot write into {home / 'who-and-when'}: "
                                "the file system is full; nothing was kept")
    assert files_under(home) == set()


def test_too_little_free_space_is_refused_before_any_download(home, monkeypatch, capsys):
    monkeypatch.setattr(data, "_free_bytes", lambda path: 3 * 10**6)
    monkeypatch.setenv("RCAKIT_DATA_URL", closed_port_url())  # never contacted
    status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2
    assert "who-and-when: needs 6.8 MB in" in err and "has 3.0 MB free" in err


# ---------------------------------------------------------------- unpinned data sets: the lock file


def test_the_first_fetch_records_hashes_in_the_lock_file_and_later_fetches_verify(home, monkeypatch, capsys):
    name = "musique_ans_v1.0_dev.jsonl"
    served = {name: b'{"id": "2hop__1_2", "question": "Who?", "answerable": true}\n'}
    with serve(served.get) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "musique")
        assert status == 0, err
        assert "CC BY 4.0" in err and "recorded in" in err
        assert Path(out.strip()) == home / "musique" / name
        lock = json.loads(data.lock_path(data.get("musique")).read_text())
        assert lock["files"][name] == {"sha256": hashlib.sha256(served[name]).hexdigest(), "size": len(served[name])}
        assert data.locate("musique", "world") == home / "musique" / name

        served[name] = b'{"id": "changed upstream"}\n'  # the mirror now serves other bytes
        assert run_cli(capsys, "data", "fetch", "musique")[0] == 0  # the local copy matches: nothing fetched
        (home / "musique" / name).unlink()
        status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2
    assert f"musique: {name}: the bytes from {url}{name} do not match the sha256 recorded at the first fetch" in err
    assert not (home / "musique" / name).exists()
    assert json.loads(data.lock_path(data.get("musique")).read_text()) == lock


def test_a_lock_file_of_another_revision_is_refused(home, capsys):
    home.mkdir(parents=True)
    data.lock_path(data.get("musique")).write_text(json.dumps({"revision": "0" * 40, "listing": [], "files": {}}))
    status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2 and f"records revision {'0' * 40} but the registry pins" in err


def _hub_project(tmp_path: Path, count: int) -> Path:
    """A project whose registry holds one small Hub-listed data set."""
    entry = {"title": "Tiny", "description": "d", "source": "s", "revision": "a" * 40,
             "base_url": "https://example.invalid/resolve/" + "a" * 40 + "/", "root": "data/full",
             "reader": "r", "licence": "none declared", "licence_note": "no licence declared; its terms are yours "
             "to check", "bibkey": "k", "citation": "c",
             "listing": {"repo": "someone/tiny", "prefix": "data/full/", "suffix": ".json", "count": count,
                         "extra": ["README.md"]}}
    (tmp_path / "project" / "data").mkdir(parents=True)
    (tmp_path / "project" / "data" / "registry.yaml").write_text(yaml.safe_dump({"tiny": entry}))
    return tmp_path / "project"


def test_a_hub_listing_is_filtered_counted_and_kept_in_the_lock_file(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_hub_project(tmp_path, count=2)))
    files = {"README.md": b"card", "data/full/10.json": b"[]", "data/full/2.json": b"[]", "data/mini/1.json": b"x"}
    listing = json.dumps({"siblings": [{"rfilename": n} for n in [*files, ".gitattributes"]]}).encode()
    api = "api/datasets/someone/tiny/revision/" + "a" * 40
    with serve(lambda p: listing if p == api else files.get(p)) as url:
        monkeypatch.setenv("HF_ENDPOINT", url.rstrip("/"))
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 0, err
    assert "no licence declared; its terms are yours to check" in err
    assert Path(out.strip()) == home / "tiny" / "data" / "full"
    assert json.loads((home / "tiny.lock.json").read_text())["listing"] == [
        "README.md", "data/full/2.json", "data/full/10.json"]
    assert files_under(home / "tiny") == {"README.md", "data/full/2.json", "data/full/10.json"}
    # Later fetches take the file list from the lock file: no Hub, no mirror needed.
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    monkeypatch.setenv("RCAKIT_DATA_URL", closed_port_url())
    assert run_cli(capsys, "data", "fetch", "tiny")[0] == 0


def test_a_hub_listing_with_another_file_count_is_refused(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_hub_project(tmp_path, count=1140)))
    listing = json.dumps({"siblings": [{"rfilename": "README.md"}, {"rfilename": "data/full/1.json"}]}).encode()
    with serve(lambda p: listing if p.startswith("api/") else None) as url:
        monkeypatch.setenv("HF_ENDPOINT", url.rstrip("/"))
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2
    assert "tiny: file list: the Hub lists 1 '.json' files under data/full/ at revision" in err
    assert "the registry expects 1140" in err


# ---------------------------------------------------------------- locate and the CLI


def test_locate_takes_a_registry_name_or_an_existing_path(home, tmp_path):
    assert data.locate("who-and-when", "who_and_when_path") is None  # not fetched
    assert data.locate(str(tmp_path), "who_and_when_path") == tmp_path
    assert data.locate("data/registry.yaml", "p") == project_root() / "data" / "registry.yaml"
    with pytest.raises(RcakitError, match=r"^parameter 'who_and_when_path': 'nowhere' is neither a data set"):
        data.locate("nowhere", "who_and_when_path")
    hint = data.fetch_hint("who-and-when", "who_and_when_path")
    assert "rcakit data fetch who-and-when" in hint and "-p who_and_when_path PATH" in hint and "\n" not in hint


@needs_shared
def test_the_session_helper_fetches_into_a_home_and_restores_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("RCAKIT_DATA_URL", raising=False)
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "other"))
    root = fetch_shared_who_and_when(tmp_path / "home")
    assert root == tmp_path / "home" / "who-and-when" / "Who&When"
    assert os.environ["RCAKIT_DATA_DIR"] == str(tmp_path / "other") and "RCAKIT_DATA_URL" not in os.environ
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "home"))
    assert data.locate("who-and-when", "who_and_when_path") == root


def test_a_corrupt_lock_file_is_one_line_naming_it(home, capsys):
    home.mkdir(parents=True)
    lock = data.lock_path(data.get("musique"))
    lock.write_text(json.dumps({"revision": data.get("musique").revision, "listing": [], "files": {"x": 1}}))
    status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2
    assert err.splitlines()[-1].startswith(f"rcakit: error: {lock}: not an rcakit lock file; remove it")


def test_data_path_of_an_unfetched_set_and_an_unknown_name_are_one_line_exit_2(home, capsys):
    status, _, err = run_cli(capsys, "data", "path", "musique")
    assert status == 2 and err == "rcakit: error: data set 'musique' is not fetched (run 'rcakit data fetch musique')\n"
    status, _, err = run_cli(capsys, "data", "fetch", "mnist")
    assert status == 2 and err.startswith("rcakit: error: unknown data set 'mnist' (known: who-and-when, ")


def test_data_list_on_a_clone_with_no_shared_folder_shows_the_three_data_sets(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(project_root() / "rcakit", clone / "rcakit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(project_root() / "data", clone / "data")
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_ROOT", "RCAKIT_DATA_URL")}
    env.update(RCAKIT_DATA_DIR=str(tmp_path / "empty-home"), PYTHONPATH=str(clone))
    done = subprocess.run([sys.executable, "-m", "rcakit.cli", "data", "list"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name, licence in (("who-and-when", "MIT"), ("longrca-bench", "none declared"), ("musique", "CC BY 4.0")):
        line = next(i for i, text in enumerate(done.stdout.splitlines()) if text.startswith(f"{name}: "))
        status = done.stdout.splitlines()[line + 1]
        assert f"licence {licence}; not fetched" in status
    assert "size 6.8 MB, 185 files" in done.stdout
    assert not (tmp_path / "empty-home").exists()
