"""rcakit.data: the registry, fetching through a local mirror, the lock file, every failure path.

Every server here is a bounded thread on 127.0.0.1 that stops by itself; no
test reaches any other host. The Who&When tests serve the shared copy
(``../shared/data/who_and_when``, byte-identical to the pinned commit) in the
repository's own layout, so they run wherever that copy sits beside the clone.
The hostile-server tests (issue 20) serve file lists that climb out of the data
home and pages that are not the data, and check byte for byte that nothing
outside the data home changed and that nothing was kept or recorded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from rcakit import RcakitError, data
from rcakit.book.cli import main
from rcakit.data import catalog, download, formats, remote
from rcakit.paths import project_root
from rcakit.trajectories import read_who_and_when
from support.shared_data import (
    SHARED,
    fetch_shared_who_and_when,
    hub_listed,
    registry_project,
    serve,
    who_and_when_tree,
)

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no Who&When copy at {SHARED}")
BAD_FILE = "Who&When/Hand-Crafted/1.json"
MUSIQUE = "musique_ans_v1.0_dev.jsonl"
HTML_PAGE = b"<!DOCTYPE html><html><body>429 Too Many Requests</body></html>\n"


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


def test_registry_names_four_data_sets_each_pinned_with_licence_and_citation():
    sets = data.registry()
    assert list(sets) == ["who-and-when", "longrca-bench", "musique", "agenticrag-fp-runs"]
    for ds in sets.values():
        assert len(ds.revision) == 40 and ds.revision in ds.base_url
        assert ds.licence and ds.citation and ds.bibkey
    who = sets["who-and-when"]
    assert who.pinned and len(who.files) == 185
    assert sum(f.path.endswith(".json") for f in who.files) == 184
    assert not sets["longrca-bench"].pinned and sets["longrca-bench"].listing.count == 1140
    assert sets["longrca-bench"].licence_note == "no licence declared; its terms are yours to check"
    assert sets["musique"].licence == "CC BY 4.0" and not sets["musique"].pinned
    runs = sets["agenticrag-fp-runs"]
    assert runs.pinned and len(runs.files) == 4 and runs.licence == "none declared" and runs.root == "results"


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
    assert {s: sum(t.source == s for t in loaded.trajectories) for s in ("Hand-Crafted", "Algorithm-Generated")} == {
        "Hand-Crafted": 58,
        "Algorithm-Generated": 126,
    }
    assert run_cli(capsys, "data", "path", "who-and-when")[1].strip() == str(root)
    assert data.locate("who-and-when", "who_and_when_path") == root
    assert "fetched: " + str(root) in run_cli(capsys, "data", "list")[1]

    # verify re-hashes every file: one line each; one flipped byte is found and named.
    status, out, err = run_cli(capsys, "data", "verify", "who-and-when")
    assert status == 0 and err == ""
    assert out.splitlines() == [f"{f.path}: ok" for f in data.get("who-and-when").files]
    flipped = home / "who-and-when" / "Who&When/Algorithm-Generated/7.json"
    original = flipped.read_bytes()
    flipped.write_bytes(original[:100] + bytes([original[100] ^ 1]) + original[101:])
    status, out, err = run_cli(capsys, "data", "verify", "who-and-when")
    assert status == 2
    bad = [line for line in out.splitlines() if not line.endswith(": ok")]
    assert len(bad) == 1 and bad[0].startswith("Who&When/Algorithm-Generated/7.json: sha256 ")
    assert "differs from the registry's" in bad[0]
    assert err == (
        "rcakit: error: who-and-when: 1 of 185 files do not match (first: "
        "Who&When/Algorithm-Generated/7.json); 'rcakit data fetch who-and-when' fetches them anew\n"
    )
    flipped.write_bytes(original)

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
    assert err.strip().endswith(  # LICENSE and 1.json came first: the line says they were kept
        f"who-and-when: {missing}: {url}Who%26When/Algorithm-Generated/2.json answered HTTP 404 Not Found; "
        "kept 2 files fetched before it (each matched the registry's sha256)"
    )
    assert f"who-and-when/{missing}" not in files_under(home)
    assert files_under(home) == {"who-and-when/LICENSE", "who-and-when/Who&When/Algorithm-Generated/1.json"}


@pytest.mark.slow
def test_an_unreachable_host_is_one_line_and_leaves_nothing(home, monkeypatch, capsys):
    url = closed_port_url()
    monkeypatch.setenv("RCAKIT_DATA_URL", url)
    status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    netloc = urllib.parse.urlsplit(url).netloc
    assert status == 2
    assert err == (
        f"rcakit: error: who-and-when: LICENSE: cannot download from {netloc}: connection refused; nothing was kept\n"
    )
    assert files_under(home) == set()  # and no licence or citation line before the error (issue 20)


def test_a_full_disk_mid_download_is_one_line_and_leaves_no_temporary_file(home, monkeypatch, capsys):
    def no_space(fh, chunk):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(remote, "_write", no_space)
    with serve(lambda p: b"x" * 1000 if p == "LICENSE" else None) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2
    assert err.strip().endswith(
        f"who-and-when: LICENSE: cannot write into {home / 'who-and-when'}: the file system is full; nothing was kept"
    )
    assert files_under(home) == set()


def test_too_little_free_space_is_refused_before_any_download(home, monkeypatch, capsys):
    monkeypatch.setattr(download, "_free_bytes", lambda path: 3 * 10**6)
    monkeypatch.setenv("RCAKIT_DATA_URL", closed_port_url())  # never contacted
    status, _, err = run_cli(capsys, "data", "fetch", "who-and-when")
    assert status == 2
    assert "who-and-when: needs 6.8 MB in" in err and "has 3.0 MB free" in err


# ---------------------------------------------------------------- unpinned data sets: the lock file


def _tofu_project(tmp_path: Path, files: tuple[str, ...] = ("q.jsonl",), high: int = 1000) -> Path:
    """One data set, ``tofu``, whose JSONL files are trusted on first use, each 10 to ``high`` bytes."""
    return registry_project(
        tmp_path,
        tofu={
            "root": files[0],
            "files": {f: {"sha256": None, "size": None} for f in files},
            "expect": {"*.jsonl": {"bytes": [10, high], "format": "jsonl"}},
        },
    )


def _hub_project(tmp_path: Path, count: int) -> Path:
    """A project whose registry holds one small Hub-listed data set, ``tiny``."""
    return registry_project(tmp_path, tiny=hub_listed(count))


def _hub(files: dict[str, bytes], names: list[str] | None = None, repo: str = "someone/tiny", revision: str = "a" * 40):
    """A server body function: the Hub's revision API listing ``names`` (default ``files``), then the files."""
    listing = json.dumps({"siblings": [{"rfilename": n} for n in (names if names is not None else files)]}).encode()
    api = f"api/datasets/{repo}/revision/{revision}"
    return lambda p: listing if p == api else files.get(p)


def test_the_first_fetch_records_hashes_in_the_lock_file_and_later_fetches_verify(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_tofu_project(tmp_path)))
    name = "q.jsonl"
    served = {name: b'{"id": "2hop__1_2", "question": "Who?", "answerable": true}\n'}
    with serve(served.get) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "tofu")
        assert status == 0, err
        assert "no licence declared" in err and "recorded in" in err
        assert Path(out.strip()) == home / "tofu" / name
        lock = json.loads(data.lock_path(data.get("tofu")).read_text())
        assert lock["files"][name] == {"sha256": hashlib.sha256(served[name]).hexdigest(), "size": len(served[name])}
        assert data.locate("tofu", "world") == home / "tofu" / name

        served[name] = b'{"id": "changed upstream"}\n'  # the mirror now serves other bytes
        assert run_cli(capsys, "data", "fetch", "tofu")[0] == 0  # the local copy matches: nothing fetched
        (home / "tofu" / name).unlink()
        status, _, err = run_cli(capsys, "data", "fetch", "tofu")
    assert status == 2
    assert f"tofu: {name}: the bytes from {url}{name} do not match the sha256 recorded at the first fetch" in err
    assert not (home / "tofu" / name).exists()
    assert json.loads(data.lock_path(data.get("tofu")).read_text()) == lock


def test_a_lock_file_of_another_revision_is_refused(home, capsys):
    home.mkdir(parents=True)
    data.lock_path(data.get("musique")).write_text(json.dumps({"revision": "0" * 40, "listing": [], "files": {}}))
    status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2 and f"records revision {'0' * 40} but the registry pins" in err


def test_a_hub_listing_is_filtered_counted_and_kept_in_the_lock_file(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_hub_project(tmp_path, count=2)))
    files = {"README.md": b"card", "data/full/10.json": b"[]", "data/full/2.json": b"[]", "data/mini/1.json": b"x"}
    with serve(_hub(files, [*files, ".gitattributes"])) as url:
        monkeypatch.setenv("HF_ENDPOINT", url.rstrip("/"))
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 0, err
    assert "no licence declared; its terms are yours to check" in err
    assert Path(out.strip()) == home / "tiny" / "data" / "full"
    assert json.loads((home / "tiny.lock.json").read_text())["listing"] == [
        "README.md",
        "data/full/2.json",
        "data/full/10.json",
    ]
    assert files_under(home / "tiny") == {"README.md", "data/full/2.json", "data/full/10.json"}
    # Later fetches take the file list from the lock file: no Hub, no mirror needed.
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    monkeypatch.setenv("RCAKIT_DATA_URL", closed_port_url())
    assert run_cli(capsys, "data", "fetch", "tiny")[0] == 0


def test_a_hub_listing_with_another_file_count_is_refused(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_hub_project(tmp_path, count=1140)))
    with serve(_hub({}, ["README.md", "data/full/1.json"])) as url:
        monkeypatch.setenv("HF_ENDPOINT", url.rstrip("/"))
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2
    assert "tiny: file list: the Hub lists 1 '.json' files under data/full/ at revision" in err
    assert "the registry expects 1140" in err


# ---------------------------------------------------------------- hostile servers and names (issue 20)


def _longrca_mirror(hostile: str, sentinel: Path) -> tuple:
    """The LongRCA Bench Hub listing at the pinned revision with 1,140 record names, one of them ``hostile``,
    and a mirror that serves a plausible record for every name (and other bytes for the sentinel's)."""
    ds = data.get("longrca-bench")
    names = ["README.md", *(f"data/full/{i}.json" for i in range(1, ds.listing.count)), hostile]
    if not hostile.startswith(ds.listing.prefix):  # an absolute name: keep the count right without it
        names.append(f"data/full/{ds.listing.count}.json")
    record = json.dumps({"question_ID": "x", "history": [{"step": 0, "name": "user", "content": "go"}]}).encode()

    def body(path: str) -> bytes | None:
        if path.startswith("api/"):
            return json.dumps({"siblings": [{"rfilename": n} for n in names]}).encode()
        if path.endswith(sentinel.name):
            return b'{"question_ID": "written by the server"}'
        return b"# LongRCA Bench\n\nA dataset card long enough to pass.\n" if path == "README.md" else record

    return ds, body


@pytest.mark.parametrize("kind", ["climbs with ..", "absolute"])
def test_a_file_list_naming_paths_outside_the_data_home_is_refused_and_changes_nothing(tmp_path, kind):
    """Issue 20, done-when 1: `rcakit data fetch` (a real process) exits 2 with one line; a sentinel
    file the hostile name points at is byte-identical afterwards, and the data home holds no file."""
    home = tmp_path / "home"
    sentinel = tmp_path / "sentinel.json"
    sentinel.write_bytes(b'{"kept": "byte for byte"}\n')
    before = sentinel.read_bytes()
    # <home>/longrca-bench/data/full/../../../../sentinel.json is <tmp>/sentinel.json once data/full exists
    # (a home where an earlier fetch began): before issue 20 the sentinel was deleted and overwritten.
    (home / "longrca-bench" / "data" / "full").mkdir(parents=True)
    hostile = "data/full/../../../../sentinel.json" if kind != "absolute" else str(sentinel)
    ds, body = _longrca_mirror(hostile, sentinel)
    with serve(body) as url:
        env = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_ROOT", "RCAKIT_TRACEBACK")}
        env.update(RCAKIT_DATA_DIR=str(home), RCAKIT_DATA_URL=url, HF_ENDPOINT=url.rstrip("/"))
        done = subprocess.run(
            [sys.executable, "-m", "rcakit", "data", "fetch", "longrca-bench"],
            cwd=project_root(),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"rcakit: error: longrca-bench: file list: {url.rstrip('/')}/api/datasets/")
    assert f"lists {catalog.shown(hostile)}, which is not a path inside the data set's folder" in done.stderr
    assert sentinel.read_bytes() == before
    assert files_under(home) == set() and not data.lock_path(ds).exists()


def test_a_lock_file_or_registry_naming_a_path_outside_is_refused(tmp_path, home, monkeypatch, capsys):
    home.mkdir(parents=True)
    ds = data.get("musique")
    lock = {"revision": ds.revision, "listing": ["../../escape.jsonl"], "files": {}}
    data.lock_path(ds).write_text(json.dumps(lock))
    status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2 and err.count("\n") == 1
    assert f"{data.lock_path(ds)}: names '../../escape.jsonl', which is not a path inside the data set's" in err
    assert "musique: Mu" in run_cli(capsys, "data", "list")[1]  # the listing shows the lock as unusable
    assert "unusable: " in run_cli(capsys, "data", "list")[1]
    monkeypatch.setenv("RCAKIT_ROOT", str(_tofu_project(tmp_path, files=("/etc/q.jsonl",))))
    with pytest.raises(RcakitError, match=r"tofu: root '/etc/q.jsonl' is not a path inside the data set's folder"):
        data.registry()


def test_a_symbolic_link_out_of_the_data_set_folder_is_refused_before_any_download(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_hub_project(tmp_path, count=1)))
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / "tiny").mkdir(parents=True)
    (home / "tiny" / "data").symlink_to(outside, target_is_directory=True)
    with serve(_hub({"README.md": b"card", "data/full/1.json": b"[]"})) as url:
        monkeypatch.setenv("HF_ENDPOINT", url.rstrip("/"))
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2 and err.count("\n") == 1
    assert f"tiny: data/full/1.json: {home / 'tiny' / 'data/full/1.json'} leads out of {home / 'tiny'}" in err
    assert list(outside.iterdir()) == [] and not (home / "tiny.lock.json").exists()


def plausible_musique(size: int = 29_500_000) -> bytes:
    """A JSONL body of MuSiQue's size: one JSON object per line."""
    line = json.dumps({"id": "2hop__0", "answerable": True, "pad": "x" * 960}).encode() + b"\n"
    return line * (size // len(line))


def test_an_html_page_served_as_musique_is_refused_at_first_fetch_and_leaves_it_not_fetched(home, monkeypatch, capsys):
    """Issue 20, done-when 2: a 63-byte HTML page served as MuSiQue (about 30.4 MB of JSONL) is refused;
    nothing is kept or locked, the file already at its place is neither trusted nor overwritten, and the
    listing says not fetched. The same mirror serving plausible bytes is then accepted."""
    assert len(HTML_PAGE) == 63
    ds = data.get("musique")
    planted = home / "musique" / MUSIQUE  # a file already present: never trusted, never overwritten unchecked
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b'{"id": "planted"}\n')
    served = {MUSIQUE: HTML_PAGE}
    with serve(served.get) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, out, err = run_cli(capsys, "data", "fetch", "musique")
        assert status == 2 and out == ""
        assert err == (
            f"rcakit: error: musique: {MUSIQUE}: refused at first fetch (an HTML page: 63 bytes, the "
            f"registry expects 28.9 MB to 31.9 MB); nothing from {url}{MUSIQUE} was kept or recorded\n"
        )
        assert not data.lock_path(ds).exists() and not data.is_fetched("musique")
        assert files_under(home) == {f"musique/{MUSIQUE}"} and planted.read_bytes() == b'{"id": "planted"}\n'
        listed = run_cli(capsys, "data", "list")[1].splitlines()
        assert "licence CC BY 4.0; not fetched" in listed[listed.index(f"musique: {ds.title}") + 1]
        assert data.locate("musique", "world") is None

        served[MUSIQUE] = plausible_musique()
        status, out, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 0, err
    assert Path(out.strip()) == planted and planted.read_bytes() == served[MUSIQUE]
    lock = json.loads(data.lock_path(ds).read_text())
    assert lock["files"][MUSIQUE]["sha256"] == hashlib.sha256(served[MUSIQUE]).hexdigest()
    assert "CC BY 4.0" in err and "recorded in" in err


def test_a_lock_that_recorded_an_html_page_before_these_checks_is_unusable(home, capsys):
    home.mkdir(parents=True)
    ds = data.get("musique")
    (home / "musique").mkdir()
    (home / "musique" / MUSIQUE).write_bytes(HTML_PAGE)
    lock = {
        "name": "musique",
        "revision": ds.revision,
        "listing": [MUSIQUE],
        "files": {MUSIQUE: {"sha256": hashlib.sha256(HTML_PAGE).hexdigest(), "size": 63}},
    }
    data.lock_path(ds).write_text(json.dumps(lock))
    listed = run_cli(capsys, "data", "list")[1].splitlines()
    state = listed[listed.index(f"musique: {ds.title}") + 1]
    assert f"unusable: {data.lock_path(ds)}: records {MUSIQUE} as 63 bytes, the registry expects 28.9 MB" in state
    status, _, err = run_cli(capsys, "data", "verify", "musique")
    assert status == 2 and "remove it and" in err and err.count("\n") == 1


def test_a_first_fetch_whose_mirror_fails_keeps_no_lock_and_no_listing(home, monkeypatch, capsys):
    """A first fetch that keeps no file (the mirror answers 404) records nothing, so a later fetch from the
    real source does not meet a lock with the failed mirror's listing (issue 29)."""
    with serve(lambda name: None) as url:  # every file: 404
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "musique")
    assert status == 2 and err.count("\n") == 1
    assert not data.lock_path(data.get("musique")).exists() and files_under(home) == set()


def test_a_refused_file_discards_every_file_of_that_first_fetch(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_tofu_project(tmp_path, files=("a.jsonl", "b.jsonl"))))
    served = {"a.jsonl": b'{"id": "a", "ok": true}\n', "b.jsonl": b'{"id": "b"}\n["not an object"]\n'}
    with serve(served.get) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "tofu")
    assert status == 2
    assert err == (
        f"rcakit: error: tofu: b.jsonl: refused at first fetch (line 2 is not a JSON object); "
        f"nothing from {url}b.jsonl was kept or recorded\n"
    )
    assert files_under(home) == set() and not data.lock_path(data.get("tofu")).exists()


def test_a_body_longer_than_the_registry_allows_is_cut_off_and_refused(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_tofu_project(tmp_path, high=100)))
    with serve(lambda p: b'{"id": 1}\n' * 10_000) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        status, _, err = run_cli(capsys, "data", "fetch", "tofu")
    assert status == 2
    assert "tofu: q.jsonl: refused at first fetch (100.0 kB by its Content-Length, more than the 100 bytes" in err
    assert files_under(home) == set()


@pytest.mark.parametrize(
    ("fmt", "body", "problem"),
    [
        ("jsonl", b'{"a": 1}\n\n{"b": 2}\n', None),
        ("jsonl", b'{"a": 1}\n{"b": \n', "line 2 is not JSON"),
        ("jsonl", b'{"a": 1}\n\xff\xfe\n', "line 2 is not JSON"),
        ("jsonl", b"\n\n", "no JSON line"),
        ("json", b'{"question_ID": "x", "history": []}', None),
        ("json", b'{"question_ID": "x",}', "not a JSON document"),
        ("parquet", b"PAR1" + b"\0" * 8 + b"PAR1", None),
        ("parquet", b"PAR1" + b"\0" * 8 + b"PAR2", "not a Parquet file (no PAR1 at both ends)"),
        ("parquet", b"PAR1PAR1", "too short for a Parquet file"),
        ("text", b"---\nlicense: mit\n---\n# Card\n", None),
        ("text", b"\n  <!DOCTYPE HTML><html></html>", "an HTML page"),
        ("text", b"caf\xe9", "not UTF-8 text"),
    ],
)
def test_each_format_check_accepts_its_format_and_names_what_is_wrong(tmp_path, fmt, body, problem):
    path = tmp_path / "file"
    path.write_bytes(body)
    assert formats.Expectation(0, 1000, fmt).problem(path) == problem
    assert (
        formats.Expectation(len(body) + 1, 1000, fmt)
        .problem(path)
        .endswith(f"{len(body)} bytes, the registry expects {len(body) + 1} bytes to 1.0 kB")
    )


def test_a_registry_expectation_is_checked_when_the_registry_is_read(tmp_path, monkeypatch):
    for expect, message in (
        ({"*.jsonl": {"bytes": [10, 5]}}, "'bytes' must be \\[low, high\\]"),
        ({"*.jsonl": {"bytes": [1, 5], "format": "csv"}}, "unknown format 'csv'"),
        ({"*.json": {"bytes": [1, 5]}}, "'q.jsonl' is recorded at first fetch and needs"),
    ):
        project = registry_project(
            tmp_path, tofu={"root": "q.jsonl", "files": {"q.jsonl": {"sha256": None}}, "expect": expect}
        )
        monkeypatch.setenv("RCAKIT_ROOT", str(project))
        with pytest.raises(RcakitError, match=message):
            data.registry()


# ---------------------------------------------------------------- verify


def test_verify_rehashes_what_is_on_disk_and_finds_one_flipped_byte(tmp_path, home, monkeypatch, capsys):
    monkeypatch.setenv("RCAKIT_ROOT", str(_tofu_project(tmp_path, files=("a.jsonl", "b.jsonl"))))
    status, _, err = run_cli(capsys, "data", "verify", "tofu")
    assert status == 2 and err == "rcakit: error: data set 'tofu' is not fetched (run 'rcakit data fetch tofu')\n"
    served = {"a.jsonl": b'{"id": "a", "ok": true}\n', "b.jsonl": b'{"id": "b", "ok": false}\n'}
    with serve(served.get) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        assert run_cli(capsys, "data", "fetch", "tofu")[0] == 0
    status, out, err = run_cli(capsys, "data", "verify", "tofu")
    assert (status, out, err) == (0, "a.jsonl: ok\nb.jsonl: ok\n", "")
    target = home / "tofu" / "b.jsonl"
    flipped = bytearray(served["b.jsonl"])
    flipped[8] ^= 0x20  # "b" -> "B": same size, still a JSON object
    target.write_bytes(bytes(flipped))
    status, out, err = run_cli(capsys, "data", "verify", "tofu")
    lock = data.lock_path(data.get("tofu"))
    assert status == 2
    assert out.splitlines() == [
        "a.jsonl: ok",
        f"b.jsonl: sha256 {hashlib.sha256(flipped).hexdigest()} differs "
        f"from the one recorded at first fetch in {lock}, "
        f"{hashlib.sha256(served['b.jsonl']).hexdigest()}",
    ]
    assert err == (
        "rcakit: error: tofu: 1 of 2 files do not match (first: b.jsonl); 'rcakit data fetch tofu' fetches them anew\n"
    )
    (home / "tofu" / "a.jsonl").unlink()
    assert run_cli(capsys, "data", "verify", "tofu")[1].splitlines()[0] == "a.jsonl: missing"


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


@pytest.mark.slow
def test_data_list_on_a_clone_with_no_shared_folder_shows_the_three_data_sets(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(project_root() / "rcakit", clone / "rcakit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(project_root() / "data", clone / "data")
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_ROOT", "RCAKIT_DATA_URL")}
    env.update(RCAKIT_DATA_DIR=str(tmp_path / "empty-home"), PYTHONPATH=str(clone))
    done = subprocess.run(
        [sys.executable, "-m", "rcakit", "data", "list"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for name, licence in (("who-and-when", "MIT"), ("longrca-bench", "none declared"), ("musique", "CC BY 4.0")):
        line = next(i for i, text in enumerate(done.stdout.splitlines()) if text.startswith(f"{name}: "))
        status = done.stdout.splitlines()[line + 1]
        assert f"licence {licence}; not fetched" in status
    assert "size 6.8 MB, 185 files" in done.stdout
    assert not (tmp_path / "empty-home").exists()
