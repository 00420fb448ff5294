"""The remote side of a fetch: the pooch downloader with its size cap and format check, and the Hub's file list.

Nothing a server sends is trusted: the downloader stops reading past the
most the registry allows (the known size, or the top of the expected size
range), checks a file fetched on first use against its size range and format
(:mod:`rcakit.data.formats`) on pooch's temporary file, and treats a body
shorter than its ``Content-Length`` as a dropped connection. A Hub listing is
read up to :data:`LISTING_LIMIT` bytes, and every name it lists must be a path
inside the data set's folder (``rcakit.data.catalog.path_problem``) before any
of it is used. Each failure is one ``RcakitError`` line naming the file or
the list.
"""

from __future__ import annotations

import errno
import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.data.catalog import DataSet, FileEntry, folder, path_problem
from rcakit.data.formats import Expectation, size_words

DATA_URL_ENV = "RCAKIT_DATA_URL"
HUB_ENV = "HF_ENDPOINT"
HUB_URL = "https://huggingface.co"
TIMEOUT = 60.0  # seconds to wait for a server to answer, per request
RETRIES = 1  # pooch retries a dropped connection, a 5xx or a hash mismatch this often
CHUNK = 2**16
LISTING_LIMIT = 64 * 10**6  # bytes: a Hub file list longer than this is not one
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


class HTTPStatus(Exception):
    """A 4xx answer: final, so pooch does not retry it (it retries only network errors)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status, self.reason = status, reason


class Refused(Exception):
    """Bytes outside the registry's size range or format: final (pooch retries ``ValueError`` only)."""


def store_for(ds: DataSet, path: Path, entries: list[FileEntry]) -> Any:
    """A pooch store fetching ``entries`` of ``ds`` into ``path``, each checked against its sha256 when known."""
    import pooch

    base = os.environ.get(DATA_URL_ENV) or ds.base_url
    base = base if base.endswith("/") else base + "/"
    return pooch.create(
        path=path,
        base_url=base,
        registry={e.path: e.sha256 for e in entries},
        urls={e.path: base + urllib.parse.quote(e.path) for e in entries},
        retry_if_failed=RETRIES,
    )


def download(ds: DataSet, store: Any, entry: FileEntry, *, downloader: Downloader, lock: Path | None) -> None:
    """One ``store.fetch``, every failure but a refusal turned into one line naming the file.

    ``lock`` is the lock file that recorded the file's sha256 (``None``: the registry pinned it).
    """
    import requests

    where = f"{ds.name}: {entry.path}"
    url = store.get_url(entry.path)
    try:
        store.fetch(entry.path, downloader=downloader)
    except HTTPStatus as err:
        raise RcakitError(f"{where}: {url} answered HTTP {err.status} {err.reason}") from None
    except requests.exceptions.RequestException as err:
        host = urllib.parse.urlsplit(url).netloc
        raise RcakitError(f"{where}: cannot download from {host}: {_reason(err)}") from None
    except ValueError as err:
        if "hash" not in str(err):
            raise
        against = f"the sha256 recorded at the first fetch in {lock}" if lock else "the registry's sha256"
        raise RcakitError(f"{where}: the bytes from {url} do not match {against}; nothing was kept") from None
    except OSError as err:
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the file system is full" if full else (err.strerror or str(err))
        raise RcakitError(f"{where}: cannot write into {folder(ds)}: {what}; nothing was kept") from None


def _reason(err: Exception) -> str:
    """A short cause for a requests error: the OS's words ("Connection refused") when present."""
    import requests

    if isinstance(err, requests.exceptions.Timeout):
        return f"no answer within {TIMEOUT:g} s"
    found = _ERRNO_TEXT.search(str(err))
    if found:
        return found.group(1).strip().rstrip(".").lower()
    return type(err).__name__


class Downloader:
    """A pooch downloader: streams ``url`` into pooch's temporary file, fsyncs it, moves one bar.

    It reads at most ``limit`` bytes (the known size, or the top of the
    expected range) and, given an ``expectation``, checks the finished
    temporary file against it; either failure is a :class:`Refused`.
    """

    def __init__(self, bar: Any, limit: int | None = None, expectation: Expectation | None = None) -> None:
        self.bar, self.limit, self.expectation = bar, limit, expectation

    def __call__(self, url: str, output_file: str, pooch_store: Any = None, check_only: bool = False) -> None:
        import requests

        with requests.get(url, stream=True, timeout=TIMEOUT) as response:
            if 400 <= response.status_code < 500:
                raise HTTPStatus(response.status_code, response.reason or "")
            response.raise_for_status()  # a 5xx: requests' HTTPError, which pooch retries
            self._check_declared(response)
            written = 0
            try:
                with open(output_file, "wb") as fh:
                    for chunk in response.iter_content(CHUNK):
                        if self.limit is not None and written + len(chunk) > self.limit:
                            raise Refused(f"more than {size_words(self.limit)}, the most the registry allows")
                        _write(fh, chunk)
                        written += len(chunk)
                        self.bar.update(len(chunk))
                    fh.flush()
                    os.fsync(fh.fileno())
            except BaseException:
                self.bar.update(-written)
                raise
            _check_length(response, written)
        problem = self.expectation.problem(Path(output_file)) if self.expectation else None
        if problem:
            raise Refused(problem)

    def _check_declared(self, response: Any) -> None:
        declared = response.headers.get("Content-Length")
        if (
            self.limit is not None
            and declared
            and declared.isdigit()
            and not response.headers.get("Content-Encoding")
            and int(declared) > self.limit
        ):
            raise Refused(
                f"{size_words(int(declared))} by its Content-Length, more than the "
                f"{size_words(self.limit)} the registry allows"
            )


def _write(fh: Any, chunk: bytes) -> None:
    fh.write(chunk)


def _check_length(response: Any, written: int) -> None:
    """A body shorter than its Content-Length is a dropped connection (retried), never a file."""
    import requests

    declared = response.headers.get("Content-Length")
    if declared and not response.headers.get("Content-Encoding") and int(declared) != written:
        raise requests.exceptions.ConnectionError(f"got {written} of {declared} bytes")


def hub_listing(ds: DataSet) -> list[str]:
    """The listing's file names at the pinned revision, from the Hub's revision API.

    Every name the Hub lists must be a path inside the data set's folder, or the
    whole list is refused before anything is written.
    """
    listing = ds.listing
    assert listing is not None  # the registry gives a data set either pinned files or a listing
    url = f"{os.environ.get(HUB_ENV, HUB_URL).rstrip('/')}/api/datasets/{listing.repo}/revision/{ds.revision}"
    where = f"{ds.name}: file list"
    try:
        names = [s["rfilename"] for s in json.loads(_read_capped(url, where))["siblings"]]
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{where}: {url} did not return a Hub file list") from None
    for name in names:
        why = path_problem(name)
        if why:
            raise RcakitError(
                f"{where}: {url} lists {name!r}, which is not a path inside the data set's "
                f"folder ({why}); nothing was fetched"
            )
    chosen = sorted((n for n in names if n.startswith(listing.prefix) and n.endswith(listing.suffix)), key=_natural_key)
    if len(chosen) != listing.count:
        raise RcakitError(
            f"{where}: the Hub lists {len(chosen)} '{listing.suffix}' files under "
            f"{listing.prefix} at revision {ds.revision}; the registry expects {listing.count}"
        )
    missing = [n for n in listing.extra if n not in names]
    if missing:
        raise RcakitError(f"{where}: {', '.join(missing)} not at revision {ds.revision}")
    return [*listing.extra, *chosen]


def _read_capped(url: str, where: str) -> bytes:
    """The body of a 200 answer from ``url``, at most :data:`LISTING_LIMIT` bytes; one line otherwise."""
    import requests

    try:
        with requests.get(url, timeout=TIMEOUT, stream=True) as response:
            if response.status_code != 200:
                raise RcakitError(f"{where}: {url} answered HTTP {response.status_code} {response.reason}")
            body = bytearray()
            for chunk in response.iter_content(CHUNK):
                body += chunk
                if len(body) > LISTING_LIMIT:
                    raise RcakitError(f"{where}: {url} sent more than {size_words(LISTING_LIMIT)}, not a Hub file list")
    except requests.exceptions.RequestException as err:
        raise RcakitError(f"{where}: cannot reach {urllib.parse.urlsplit(url).netloc}: {_reason(err)}") from None
    return bytes(body)


def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
