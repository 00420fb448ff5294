"""The shared Who&When copy served on 127.0.0.1, for the data tests, the bad-input table and the session fixtures.

``../shared/data/who_and_when`` is byte-identical to the pinned commit but
keeps the subset folders without the ``Who&When/`` prefix; :func:`who_and_when_tree`
serves it in the repository's own layout. Every server here is a bounded thread
on 127.0.0.1 that stops by itself.
"""

from __future__ import annotations

import http.server
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from rcakit import data
from rcakit.paths import project_root

SHARED = project_root().parent / "shared" / "data" / "who_and_when"
SERVER_LIFETIME = 120.0  # seconds; a server that outlives its test shuts itself down


TINY_DATA_SET = {  # the registry fields every small test data set shares
    "title": "Tiny",
    "description": "d",
    "source": "s",
    "revision": "a" * 40,
    "base_url": "https://example.invalid/resolve/" + "a" * 40 + "/",
    "reader": "r",
    "licence": "none declared",
    "licence_note": "no licence declared; its terms are yours to check",
    "bibkey": "k",
    "citation": "c",
}


def registry_project(tmp_path: Path, **sets: dict) -> Path:
    """``<tmp_path>/project``, whose ``data/registry.yaml`` holds the given small data sets (``name=fields``
    over :data:`TINY_DATA_SET`); a folder for ``RCAKIT_ROOT``."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True, exist_ok=True)
    registry = {name: {**TINY_DATA_SET, **fields} for name, fields in sets.items()}
    (root / "data" / "registry.yaml").write_text(yaml.safe_dump(registry))
    return root


def hub_listed(count: int = 2) -> dict:
    """A data set whose file list comes from the Hub: ``README.md`` and ``count`` files ``data/full/*.json``."""
    return {
        "root": "data/full",
        "listing": {
            "repo": "someone/tiny",
            "prefix": "data/full/",
            "suffix": ".json",
            "count": count,
            "extra": ["README.md"],
        },
        "expect": {
            "data/full/*.json": {"bytes": [2, 1000], "format": "json"},
            "README.md": {"bytes": [2, 1000], "format": "text"},
        },
    }


@contextmanager
def serve(content: Callable[[str], bytes | None]) -> Iterator[str]:
    """Serve ``content(path)`` (``None``: 404) on 127.0.0.1 in a thread; yield the base URL."""
    server = start_server(content)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.stop()


def start_server(content: Callable[[str], bytes | None]) -> http.server.ThreadingHTTPServer:
    """A started server for ``content`` (see :func:`serve`); ``server.stop()`` ends it."""

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

    def stop() -> None:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    server.stop = stop
    return server


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
