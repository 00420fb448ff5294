"""rcakit.data against hostile and broken servers (issue 29, items 8, 13, 20 and 22).

Every server is a thread on 127.0.0.1 that answers from a script: a status,
headers, a body, and a pause before each byte (a trickle); it records when
each request came. The tests check the one line a failure prints, that the
data home holds nothing the fetch could not vouch for (no partial file, no
staging folder, no lock file after a refused first fetch), and, for the slow
servers, that the fetch ended long before the server would have.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rcakit.book.cli import main
from support.shared_data import hub_listed, registry_project

SERVER_LIFETIME = 120.0  # seconds; a server that outlives its test shuts itself down
RECORD = b'{"question_ID": "q1", "history": [' + b'{"step": 0, "content": "go"}, ' * 18 + b"{}]}\n"  # 560 bytes


@dataclass
class Reply:
    """One answer: ``per_byte`` seconds pass before each byte of ``body``; ``length`` replaces its Content-Length."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    per_byte: float = 0.0
    length: str | None = None


@dataclass
class Served:
    url: str
    requests: list[tuple[float, str]]  # (time.monotonic(), path) of each request, in order

    def paths(self) -> list[str]:
        return [path for _, path in self.requests]


@contextlib.contextmanager
def scripted(answer: Callable[[str, int], Reply]) -> Iterator[Served]:
    """Serve ``answer(path, n)`` (``n``: how many requests for ``path`` so far, this one included) on 127.0.0.1
    over HTTP/1.1 keep-alive, in a thread that stops with the block (a trickle stops at once)."""
    stop = threading.Event()
    requests: list[tuple[float, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # a client that reads a body to its end waits for the server to close

        def do_GET(self) -> None:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
            requests.append((time.monotonic(), path))
            reply = answer(path, sum(p == path for _, p in requests))
            self.send_response(reply.status)
            self.send_header("Content-Length", reply.length or str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for i in range(len(reply.body)) if reply.per_byte else ():
                if stop.wait(reply.per_byte):
                    return
                self.wfile.write(reply.body[i : i + 1])
                self.wfile.flush()
            if not reply.per_byte:
                self.wfile.write(reply.body)

        def handle(self) -> None:
            with contextlib.suppress(OSError):  # the client left: a cut-off download
                super().handle()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    watchdog = threading.Timer(SERVER_LIFETIME, lambda: (stop.set(), server.shutdown()))
    watchdog.daemon = True
    thread.start()
    watchdog.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_address[1]}/", requests)
    finally:
        stop.set()
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def files(table: dict[str, bytes], **replies: Reply) -> Callable[[str, int], Reply]:
    """An ``answer`` serving ``table`` (404 for any other path), ``replies`` taking the place of some paths."""

    def answer(path: str, n: int) -> Reply:
        if path in replies:
            return replies[path]
        return Reply(body=table[path]) if path in table else Reply(404)

    return answer


# ---------------------------------------------------------------- projects and the data home


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data-home"
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(folder))
    for name in ("RCAKIT_DATA_URL", "RCAKIT_FETCH_TIMEOUT", "RCAKIT_TRACEBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/")  # never the real Hub
    return folder


def project(tmp_path: Path, monkeypatch, **sets: dict) -> Path:
    """Point ``RCAKIT_ROOT`` at a project whose registry holds the given small data sets."""
    root = registry_project(tmp_path, **sets)
    monkeypatch.setenv("RCAKIT_ROOT", str(root))
    return root


def pinned(body: bytes = RECORD) -> dict:
    """A data set ``tiny`` of one file, ``f.json``, whose sha256 and size the registry pins."""
    return {"root": "f.json", "files": {"f.json": {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}}}


def first_fetch() -> dict:
    """A data set of one file, ``f.json``, trusted on first use (a JSON document of 10 to 1,000 bytes)."""
    return {
        "root": "f.json",
        "files": {"f.json": {"sha256": None, "size": None}},
        "expect": {"*.json": {"bytes": [10, 1000], "format": "json"}},
    }


API = f"api/datasets/someone/tiny/revision/{'a' * 40}"
GOOD_HUB = {"README.md": b"card", "data/full/1.json": b"[]", "data/full/2.json": b"[]"}


def hub(names: list[str], table: dict[str, bytes] = GOOD_HUB, **replies: Reply) -> Callable[[str, int], Reply]:
    """An ``answer`` for a Hub whose revision API lists ``names`` and that serves ``table`` as the files."""
    listing = json.dumps({"siblings": [{"rfilename": n} for n in names]}).encode()
    return files({API: listing, **table}, **replies)


def use(served: Served, monkeypatch) -> None:
    """Fetch from ``served``: its files and its Hub API."""
    monkeypatch.setenv("RCAKIT_DATA_URL", served.url)
    monkeypatch.setenv("HF_ENDPOINT", served.url.rstrip("/"))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def everything_in(folder: Path) -> set[str]:
    """Every entry below ``folder``, files, folders and links alike (hidden ones too)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")} if folder.exists() else set()


def one_error_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("rcakit: error: "), err
    return err.removeprefix("rcakit: error: ").rstrip("\n")


# ---------------------------------------------------------------- item 8: deadlines


@pytest.mark.parametrize("kind", ["pinned", "first fetch"])
def test_a_trickling_mirror_is_cut_off_at_its_deadline_and_leaves_nothing(tmp_path, home, monkeypatch, capsys, kind):
    """A mirror sending one byte a second (560 s for this file) is cut off about RCAKIT_FETCH_TIMEOUT seconds in,
    in one line naming the file and the deadline; the data home holds nothing, no lock file either. The same
    deadline lets a mirror that sends at once through."""
    project(tmp_path, monkeypatch, tiny=pinned() if kind == "pinned" else first_fetch())
    monkeypatch.setenv("RCAKIT_FETCH_TIMEOUT", "1")
    with scripted(files({}, **{"f.json": Reply(body=RECORD, per_byte=1.0)})) as served:
        use(served, monkeypatch)
        status, out, err = run_cli(capsys, "data", "fetch", "tiny")
    line = one_error_line(err)
    assert status == 2 and out == ""  # the trickle would take 560 s: only the deadline ends it with this line
    assert line.startswith(f"tiny: f.json: {served.url}f.json ") and line.endswith("; nothing was kept")
    assert "deadline of" in line and "$RCAKIT_FETCH_TIMEOUT" in line and "1 s per 10.0 kB" in line
    assert everything_in(home) == set()
    with scripted(files({"f.json": RECORD})) as served:
        use(served, monkeypatch)
        status, out, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 0, err
    assert (home / "tiny" / "f.json").read_bytes() == RECORD
    assert everything_in(home) == {"tiny", "tiny/f.json"} | ({"tiny.lock.json"} if kind != "pinned" else set())


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf", "1e999"])
def test_rcakit_fetch_timeout_must_be_a_positive_number(tmp_path, home, monkeypatch, capsys, value):
    project(tmp_path, monkeypatch, tiny=pinned())
    monkeypatch.setenv("RCAKIT_FETCH_TIMEOUT", value)
    status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2
    assert one_error_line(err) == f"RCAKIT_FETCH_TIMEOUT: expected a number of seconds > 0, got {value!r}"
    assert not home.exists()


def test_a_retry_after_past_the_fetchs_deadline_is_not_waited_for(tmp_path, home, monkeypatch, capsys):
    project(tmp_path, monkeypatch, tiny=pinned())
    monkeypatch.setenv("RCAKIT_FETCH_TIMEOUT", "2")  # this fetch's deadline: 2 s plus 0.056 s for 560 bytes
    with scripted(files({}, **{"f.json": Reply(429, headers={"Retry-After": "20"})})) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2
    line = one_error_line(err)
    assert line.startswith(f"tiny: f.json: {served.url}f.json answered HTTP 429 Too Many Requests and asks ")
    assert "to wait 20 s (Retry-After), past the fetch's deadline (2 s left; $RCAKIT_FETCH_TIMEOUT sets it)" in line
    assert served.paths() == ["f.json"] and everything_in(home) == set()


# ---------------------------------------------------------------- item 22: status codes and headers


@pytest.mark.parametrize(
    ("reply", "words", "tries"),
    [
        (Reply(502), "answered HTTP 502 Bad Gateway 2 times", 2),  # pooch retries a 5xx once
        (Reply(503, headers={"Retry-After": "0"}), "answered HTTP 503 Service Unavailable 3 times", 3),
        (Reply(429, headers={"Retry-After": "0"}), "answered HTTP 429 Too Many Requests 3 times", 3),
        (
            Reply(429, headers={"Retry-After": "3600"}),
            "answered HTTP 429 Too Many Requests and asks to wait 3600 s (Retry-After), "
            "more than the 30 s rcakit waits",
            1,
        ),
    ],
    ids=["502", "503 retried", "429 retried", "429 asking an hour"],
)
def test_a_server_error_is_one_line_with_the_status_and_the_url(
    tmp_path, home, monkeypatch, capsys, reply, words, tries
):
    project(tmp_path, monkeypatch, tiny=pinned())
    with scripted(files({}, **{"f.json": reply})) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2
    assert one_error_line(err) == f"tiny: f.json: {served.url}f.json {words}; nothing was kept"
    assert served.paths() == ["f.json"] * tries
    assert everything_in(home) == set()


def test_a_content_length_that_is_not_a_number_is_refused_at_once(tmp_path, home, monkeypatch, capsys):
    """Before, the client read to the end of a kept-alive connection: a read timeout, retried, two minutes."""
    project(tmp_path, monkeypatch, tiny=first_fetch())
    with scripted(files({}, **{"f.json": Reply(body=RECORD, length="560abc")})) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 2  # refused on the header, not after the default 60 s read timeout (that line names it)
    assert one_error_line(err) == (
        f"tiny: f.json: {served.url}f.json sent a Content-Length of '560abc', not a number of bytes; nothing was kept"
    )
    assert served.paths() == ["f.json"] and everything_in(home) == set()


def test_a_429_is_retried_after_its_retry_after(tmp_path, home, monkeypatch, capsys):
    project(tmp_path, monkeypatch, tiny=pinned())

    def answer(path: str, n: int) -> Reply:
        return Reply(429, headers={"Retry-After": "1"}) if n == 1 else Reply(body=RECORD)

    with scripted(answer) as served:
        use(served, monkeypatch)
        status, out, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 0, err
    assert served.paths() == ["f.json", "f.json"]
    assert served.requests[1][0] - served.requests[0][0] >= 1.0  # a lower bound: a busy machine only waits longer
    assert (home / "tiny" / "f.json").read_bytes() == RECORD and Path(out.strip()) == home / "tiny" / "f.json"


def test_the_hubs_file_list_is_retried_after_a_429(tmp_path, home, monkeypatch, capsys):
    project(tmp_path, monkeypatch, tiny=hub_listed())
    listing = hub([*GOOD_HUB])

    def answer(path: str, n: int) -> Reply:
        return Reply(429, headers={"Retry-After": "1"}) if path == API and n == 1 else listing(path, n)

    with scripted(answer) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    assert status == 0, err
    assert served.paths()[:2] == [API, API] and served.requests[1][0] - served.requests[0][0] >= 1.0


# ---------------------------------------------------------------- item 13: Hub listings

HOSTILE_LISTINGS = {
    "one name twice, so the count is right": (
        ["README.md", "data/full/1.json", "data/full/1.json"],
        "'data/full/1.json' twice (a data set names each file once)",
    ),
    "two names, one file where case is ignored": (
        ["README.md", "data/full/A.json", "data/full/a.json"],
        "'data/full/A.json' and 'data/full/a.json', one file where case or Unicode normalisation is ignored",
    ),
    "two names, one file once normalised": (
        ["README.md", "data/full/\u00e9.json", "data/full/e\u0301.json"],
        "'data/full/\u00e9.json' and 'data/full/e\u0301.json', one file where case or Unicode normalisation is ignored",
    ),
    "a file that is also a folder": (
        ["README.md", "data/full/1.json", "data/full/1.json/2.json"],
        "'data/full/1.json' both as a file and as the folder of 'data/full/1.json/2.json'",
    ),
    "a 5,000-character name": (
        ["README.md", "data/full/1.json", "data/full/" + "y" * 5000 + ".json"],
        "(5015 characters), which is not a path inside the data set's folder (5015 bytes long, more than the 1024 "
        "allowed)",
    ),
    "a component of 305 bytes in 155 characters": (
        ["README.md", "data/full/1.json", "data/full/" + "\u00e9" * 150 + ".json"],
        "which is not a path inside the data set's folder (a path component of 305 bytes, more than the 255 a file "
        "system allows)",
    ),
    "a right-to-left override": (
        ["README.md", "data/full/1.json", "data/full/\u202enosj.exe.json"],
        "'data/full/\\u202enosj.exe.json', which is not a path inside the data set's folder (it holds U+202E, a "
        "control or invisible formatting character)",
    ),
    "a line separator": (["README.md", "data/full/1.json", "data/full/2\u2028.json"], "(it holds U+2028, a control"),
    "a NUL": (["README.md", "data/full/1.json", "data/full/2\x00.json"], "'data/full/2\\x00.json', which is not"),
    "a lone surrogate": (["README.md", "data/full/1.json", "data/full/\ud800.json"], "(it holds U+D800, a control"),
}


@pytest.mark.parametrize("kind", list(HOSTILE_LISTINGS))
def test_a_hostile_hub_listing_is_refused_before_anything_is_kept(tmp_path, home, monkeypatch, capsys, kind):
    """Refused in one line that says nothing was fetched or recorded, and it is so: no file is requested, the
    data home stays empty (no lock file), and a later fetch from a good Hub and the listing work."""
    names, words = HOSTILE_LISTINGS[kind]
    project(tmp_path, monkeypatch, tiny=hub_listed(), zzz=pinned())
    with scripted(hub(names)) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    line = one_error_line(err)
    assert status == 2
    assert line.startswith(f"tiny: file list: {served.url}{API} lists ")
    assert words in line and line.endswith("; nothing was fetched or recorded")
    assert len(line) < 600  # a long name is cut short in the line
    assert served.paths() == [API] and everything_in(home) == set()
    with scripted(hub([*GOOD_HUB])) as served:
        use(served, monkeypatch)
        assert run_cli(capsys, "data", "fetch", "tiny")[0] == 0
    status, out, err = run_cli(capsys, "data", "list")
    assert status == 0 and err == ""
    assert f"fetched: {home / 'tiny' / 'data' / 'full'}" in out and "zzz: Tiny" in out


@pytest.mark.parametrize(
    ("listing", "words"),
    [
        (
            ["README.md", "data/full/1.json", "data/full/" + "y" * 300 + ".json"],
            "(a path component of 305 bytes, more than the 255 a file system allows)",
        ),
        (["README.md", "data/full/1.json", *["data/full/2.json"] * 1139], "'data/full/2.json' twice"),
    ],
    ids=["too long a name", "a name 1,139 times"],
)
def test_a_lock_an_earlier_version_wrote_from_a_hostile_listing_is_unusable_not_fatal(
    tmp_path, home, monkeypatch, capsys, listing, words
):
    """`rcakit data list` shows every data set and calls this one unusable; a fetch says, in one line, to remove it."""
    project(tmp_path, monkeypatch, tiny=hub_listed(), zzz=pinned())
    (home / "tiny" / "data" / "full").mkdir(parents=True)
    recorded = {}
    for name in ("README.md", "data/full/1.json"):
        (home / "tiny" / name).write_bytes(GOOD_HUB[name])
        recorded[name] = {"sha256": hashlib.sha256(GOOD_HUB[name]).hexdigest(), "size": len(GOOD_HUB[name])}
    lock = home / "tiny.lock.json"
    lock.write_text(json.dumps({"name": "tiny", "revision": "a" * 40, "listing": listing, "files": recorded}))
    status, out, err = run_cli(capsys, "data", "list")
    assert status == 0 and err == ""
    state = out.splitlines()[out.splitlines().index("tiny: Tiny") + 1]
    assert f"unusable: {lock}: names " in state and words in state and "zzz: Tiny" in out
    status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    line = one_error_line(err)
    assert status == 2 and words in line
    assert line.endswith(f"; remove it and {home / 'tiny'} to fetch tiny anew")


def test_a_failure_after_some_files_passed_says_which_were_kept_and_recorded(tmp_path, home, monkeypatch, capsys):
    """Not "nothing was kept" when two files were kept: the line counts them and names the lock file, which
    records exactly them; the data set stays not fetched."""
    project(tmp_path, monkeypatch, tiny=hub_listed())
    with scripted(hub([*GOOD_HUB], **{"data/full/2.json": Reply(500)})) as served:
        use(served, monkeypatch)
        status, _, err = run_cli(capsys, "data", "fetch", "tiny")
    lock = home / "tiny.lock.json"
    assert status == 2
    assert one_error_line(err) == (
        f"tiny: data/full/2.json: {served.url}data/full/2.json answered HTTP 500 Internal Server Error 2 times; "
        f"kept 2 files fetched before it (each passed its checks; its sha256 is in {lock})"
    )
    assert set(json.loads(lock.read_text())["files"]) == {"README.md", "data/full/1.json"}
    assert everything_in(home) == {
        "tiny",
        "tiny.lock.json",
        "tiny/README.md",
        "tiny/data",
        "tiny/data/full",
        "tiny/data/full/1.json",
    }
    assert "not fetched" in run_cli(capsys, "data", "list")[1]


# ---------------------------------------------------------------- item 20: SIGTERM and SIGKILL mid-fetch


def _fetch_in_a_process(root: Path, home: Path, url: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_TRACEBACK", "RCAKIT_FETCH_TIMEOUT")}
    env.update(RCAKIT_ROOT=str(root), RCAKIT_DATA_DIR=str(home), RCAKIT_DATA_URL=url, HF_ENDPOINT=url.rstrip("/"))
    return subprocess.Popen(
        [sys.executable, "-m", "rcakit", "data", "fetch", "tiny"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _mid_download(process: subprocess.Popen, home: Path, served: Served) -> Path:
    """Wait until ``process`` is streaming into pooch's temporary file in its staging folder; that file."""
    limit = time.monotonic() + 60
    while time.monotonic() < limit and process.poll() is None:
        found = sorted(home.glob(".tiny.*.staging/tmp*"))
        if found and served.requests:
            time.sleep(0.5)  # a few bytes in
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"the fetch never started downloading: {process.communicate(timeout=5)}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pinned", "first fetch"])
def test_sigterm_mid_fetch_is_one_line_and_leaves_no_temporary_file(tmp_path, home, monkeypatch, kind):
    root = project(tmp_path, monkeypatch, tiny=pinned() if kind == "pinned" else first_fetch())
    with scripted(files({}, **{"f.json": Reply(body=RECORD, per_byte=0.1)})) as served:  # 56 s in all
        process = _fetch_in_a_process(root, home, served.url)
        assert _mid_download(process, home, served).is_file()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM and out == ""
    assert err == "rcakit: terminated (SIGTERM); no partial download was kept\n"
    assert everything_in(home) == set()  # no tmp* file, no .tiny.<pid>.staging, no lock file


@pytest.mark.slow
def test_the_next_fetch_removes_what_a_killed_fetch_left_and_nothing_else(tmp_path, home, monkeypatch, capsys):
    """After a SIGKILL, the dead process's ``.tiny.<pid>.staging`` (with pooch's tmp file) goes at the next fetch;
    a live process's staging folder, a link at such a name, and its target stay."""
    root = project(tmp_path, monkeypatch, tiny=pinned())
    with scripted(files({}, **{"f.json": Reply(body=RECORD, per_byte=0.1)})) as served:
        process = _fetch_in_a_process(root, home, served.url)
        partial = _mid_download(process, home, served)
        process.kill()
        process.communicate(timeout=30)
    assert partial.is_file() and partial.parent.name == f".tiny.{process.pid}.staging"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (home / f".tiny.{live.pid}.staging").mkdir()
        target = tmp_path / "elsewhere"
        target.mkdir()
        (target / "keep.txt").write_text("kept")
        (home / ".tiny.4194305.staging").symlink_to(target, target_is_directory=True)  # above any pid
        with scripted(files({"f.json": RECORD})) as served:
            use(served, monkeypatch)
            status, _, err = run_cli(capsys, "data", "fetch", "tiny")
        assert status == 0, err
        assert everything_in(home) == {"tiny", "tiny/f.json", f".tiny.{live.pid}.staging", ".tiny.4194305.staging"}
        assert (target / "keep.txt").read_text() == "kept"
    finally:
        live.kill()
        live.wait()
