"""The remote side of a fetch: the pooch downloader (size cap, format check, deadlines) and the Hub's file list.

Nothing a server sends is trusted: the downloader stops reading past the
most the registry allows (the known size, or the top of the expected size
range), checks a file fetched on first use against its size range and format
(:mod:`rcakit.data.formats`) on pooch's temporary file, and treats a body
shorter than its ``Content-Length`` as a dropped connection (a
``Content-Length`` that is not a number is refused at once). A Hub listing is
read up to :data:`LISTING_LIMIT` bytes, and its names must be the files of one
data set (``rcakit.data.catalog.names_problem``: each a path inside its folder,
none listed twice) before any of it is used.

No server holds a fetch for long. ``$RCAKIT_FETCH_TIMEOUT`` (seconds, default
60, a positive number) bounds each wait for a connection or a read; after that
long a download must have averaged :data:`MIN_RATE` (10 kB/s), so a file of
``n`` bytes arrives within ``RCAKIT_FETCH_TIMEOUT + n / MIN_RATE`` seconds or
is cut off; and a whole fetch gets the sum of its files' allowances, sizes
taken as the most the registry allows (:class:`Deadline`). HTTP 429 and 503
are retried :data:`STATUS_RETRIES` times, after the numeric or dated
``Retry-After`` (at most :data:`RETRY_AFTER_CAP` seconds, never past the
deadline); another 5xx is retried once by pooch. Each failure is one
``RcakitError`` line naming the file or the list, and the status and URL
where a server answered.
"""

from __future__ import annotations

import email.utils
import errno
import json
import os
import re
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from rcakit import RcakitError
from rcakit.data.catalog import DataSet, FileEntry, folder, names_problem, shown
from rcakit.data.formats import Expectation, size_words
from rcakit.deadlines import seconds_from_env

DATA_URL_ENV = "RCAKIT_DATA_URL"
HUB_ENV = "HF_ENDPOINT"
HUB_URL = "https://huggingface.co"
TIMEOUT_ENV = "RCAKIT_FETCH_TIMEOUT"
TIMEOUT = 60.0  # seconds: the default of $RCAKIT_FETCH_TIMEOUT
MIN_RATE = 10_000  # bytes per second a download must average once its first timeout has passed
RETRIES = 1  # pooch retries a dropped connection, a 5xx or a hash mismatch this often
STATUS_RETRIES = 2  # a 429 or 503 answer is retried this often
RETRY_AFTER_CAP = 30.0  # seconds: a longer Retry-After is not waited for
RETRY_WAIT = 1.0  # seconds before retrying a 429 or 503 that gives no usable Retry-After
CHUNK = 2**16
LISTING_LIMIT = 64 * 10**6  # bytes: a Hub file list longer than this is not one
NOTHING = "nothing was fetched or recorded"  # what a refused Hub listing leaves
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
_DIGITS = re.compile(r"[0-9]+")


class HTTPStatus(Exception):
    """A 4xx answer, or a 429 or 503 after its retries: final, so pooch does not retry it."""

    def __init__(self, status: int, reason: str, detail: str = "") -> None:
        super().__init__(status, reason, detail)
        self.status, self.reason, self.detail = status, reason, detail

    def words(self, url: str) -> str:
        """``<url> answered HTTP <status> <reason>`` and why it was not retried (further)."""
        return f"{url} answered HTTP {self.status} {self.reason}{self.detail}".rstrip()


class Refused(Exception):
    """Bytes outside the registry's size range or format: final (pooch retries ``ValueError`` only)."""


class BadAnswer(Exception):
    """An answer rcakit does not take (too slow, a malformed header): final; the text follows the URL."""


def fetch_timeout() -> float:
    """``$RCAKIT_FETCH_TIMEOUT`` in seconds (default :data:`TIMEOUT`); one line unless a positive number."""
    return seconds_from_env(TIMEOUT_ENV, TIMEOUT)


def url_from_env(name: str, default: str) -> str:
    """``$name`` (a base URL: ``$RCAKIT_DATA_URL``, ``$HF_ENDPOINT``), else ``default``; one ``RcakitError`` line
    unless it is an ``http(s)`` URL with a host and a usable port (``http://[::1``, a port of 99999)."""
    value = os.environ.get(name) or default
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port out of range or not a number
    except ValueError as err:
        raise RcakitError(
            f"{name}: {value[:80]!r} is not a usable URL ({err}); expected http(s)://host[:port]/"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RcakitError(f"{name}: {value[:80]!r} is not a usable URL; expected http(s)://host[:port]/")
    return value


def check_urls() -> None:
    """Both base URLs a fetch reads from the environment, checked before anything is touched."""
    url_from_env(DATA_URL_ENV, "http://localhost/")
    url_from_env(HUB_ENV, HUB_URL)


def allowance(size: int | None, timeout: float) -> float:
    """The seconds a download of ``size`` bytes may take: ``timeout``, plus one per :data:`MIN_RATE` bytes."""
    return timeout + (size or 0) / MIN_RATE


class Deadline:
    """The end of one fetch, ``seconds`` from now; ``timeout`` bounds each wait and opens each file's allowance."""

    def __init__(self, timeout: float, seconds: float) -> None:
        self.timeout, self.seconds = timeout, seconds
        self.end = time.monotonic() + seconds

    @classmethod
    def for_sizes(cls, sizes: Iterable[int | None]) -> Deadline:
        """A fetch of files of at most ``sizes`` bytes: :func:`fetch_timeout` per wait, the sum of their
        :func:`allowance` in all."""
        timeout = fetch_timeout()
        return cls(timeout, sum(allowance(size, timeout) for size in sizes))

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self, doing: str = "was still downloading") -> None:
        """A :class:`BadAnswer` (``<url> <doing> when the fetch passed its deadline``) once past its end."""
        if self.left() < 0:
            raise BadAnswer(
                f"{doing} when the fetch passed its deadline of {self.seconds:.1f} s "
                f"({self.timeout:g} s per file, ${TIMEOUT_ENV}, plus 1 s per {size_words(MIN_RATE)} of their sizes)"
            )


class Pace:
    """One download's clock: after ``received`` bytes it may have taken :func:`allowance` of them, no more."""

    def __init__(self, deadline: Deadline, started: float) -> None:
        self.deadline, self.started = deadline, started

    def check(self, received: int) -> None:
        """A :class:`BadAnswer` when the download is past its allowance or the fetch past its deadline."""
        took = time.monotonic() - self.started
        allowed = allowance(received, self.deadline.timeout)
        if took > allowed:
            raise BadAnswer(
                f"sent {size_words(received)} in {took:.1f} s, past its deadline of {allowed:.1f} s "
                f"({self.deadline.timeout:g} s, ${TIMEOUT_ENV}, plus 1 s per {size_words(MIN_RATE)} received)"
            )
        self.deadline.check()


def store_for(ds: DataSet, path: Path, entries: list[FileEntry]) -> Any:
    """A pooch store fetching ``entries`` of ``ds`` into ``path``, each checked against its sha256 when known."""
    import pooch

    base = url_from_env(DATA_URL_ENV, ds.base_url)
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
    The line says what happened to this file only; the caller says what the fetch kept.
    """
    import requests

    where = f"{ds.name}: {entry.path}"
    url = store.get_url(entry.path)
    try:
        store.fetch(entry.path, downloader=downloader)
    except (HTTPStatus, BadAnswer, requests.exceptions.RequestException) as err:  # a 5xx also on pooch's retry
        raise RcakitError(f"{where}: {_network_words(err, url, 'download from', 1 + RETRIES)}") from None
    except ValueError as err:
        if "hash" not in str(err):
            raise
        against = f"the sha256 recorded at the first fetch in {lock}" if lock else "the registry's sha256"
        raise RcakitError(f"{where}: the bytes from {url} do not match {against}") from None
    except OSError as err:
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the file system is full" if full else (err.strerror or str(err))
        raise RcakitError(f"{where}: cannot write into {folder(ds)}: {what}") from None


def _network_words(err: Exception, url: str, verb: str, tries: int) -> str:
    """What went wrong with ``url``, worded to follow the file's or the list's name: the status a server
    answered (with ``tries``, the times it was asked, for a 5xx), an answer rcakit refused, or why the host
    could not be reached (``cannot <verb> <host>: ...``)."""
    import requests

    if isinstance(err, HTTPStatus):
        return err.words(url)
    if isinstance(err, BadAnswer):
        return f"{url} {err}"
    if isinstance(err, requests.exceptions.HTTPError):
        return _status_words(err, url) + (f" {tries} times" if tries > 1 else "")
    return f"cannot {verb} {urllib.parse.urlsplit(url).netloc}: {_reason(err)}"


def _status_words(err: Any, url: str) -> str:
    """``<url> answered HTTP <status> <reason>`` for requests' ``HTTPError``."""
    response = err.response
    if response is None:
        return f"{url} answered an HTTP error"
    return f"{url} answered HTTP {response.status_code} {response.reason or ''}".rstrip()


def _reason(err: Exception) -> str:
    """A short cause for a requests error: the OS's words ("Connection refused") when present."""
    import requests

    if isinstance(err, requests.exceptions.Timeout):
        return f"no answer within {fetch_timeout():g} s (${TIMEOUT_ENV})"
    found = _ERRNO_TEXT.search(str(err))
    if found:
        return found.group(1).strip().rstrip(".").lower()
    return type(err).__name__


def answer(url: str, deadline: Deadline) -> tuple[Any, float]:
    """An open response from ``url`` below 400 and when its request began.

    A 429 or 503 is retried :data:`STATUS_RETRIES` times after the wait its
    ``Retry-After`` asks, else :data:`RETRY_WAIT`; then, or when that wait is
    over :data:`RETRY_AFTER_CAP` or past the deadline, it is an
    :class:`HTTPStatus`, as is any other 4xx. Another 5xx is requests'
    ``HTTPError``, which pooch retries.
    """
    import requests

    for attempt in range(1 + STATUS_RETRIES):
        deadline.check("was not yet requested")
        started = time.monotonic()
        response = requests.get(url, stream=True, timeout=deadline.timeout)
        status = response.status_code
        if status < 400:
            return response, started
        response.close()
        if status not in (429, 503):
            if status < 500:
                raise HTTPStatus(status, response.reason or "")
            raise requests.exceptions.HTTPError(f"HTTP {status}", response=response)
        wait = _retry_wait(response.headers.get("Retry-After"))
        why = _no_retry(wait, attempt, deadline)
        if why:
            raise HTTPStatus(status, response.reason or "", why)
        time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _retry_wait(raw: str | None) -> float:
    """The seconds a ``Retry-After`` asks for (a number or an HTTP date), else :data:`RETRY_WAIT`."""
    text = (raw or "").strip()
    if _DIGITS.fullmatch(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return RETRY_WAIT
    return max(0.0, when.timestamp() - time.time())


def _no_retry(wait: float, attempt: int, deadline: Deadline) -> str | None:
    """Why a 429 or 503 is not retried after ``attempt`` retries and a wait of ``wait`` s, or ``None``."""
    if attempt == STATUS_RETRIES:
        return f" {1 + STATUS_RETRIES} times"
    if wait > RETRY_AFTER_CAP:
        return f" and asks to wait {wait:.0f} s (Retry-After), more than the {RETRY_AFTER_CAP:g} s rcakit waits"
    if wait > deadline.left():
        return (
            f" and asks to wait {wait:.0f} s (Retry-After), past the fetch's deadline "
            f"({max(deadline.left(), 0):.0f} s left; ${TIMEOUT_ENV} sets it)"
        )
    return None


def chunks(response: Any) -> Iterator[bytes]:
    """The body as it arrives (whatever the socket holds, up to :data:`CHUNK` bytes), so that a trickle is
    seen as one; urllib3's errors become requests' (a read timeout, a dropped connection)."""
    import requests
    import urllib3

    try:
        while chunk := response.raw.read1(CHUNK, decode_content=True):
            yield chunk
    except urllib3.exceptions.ReadTimeoutError as err:
        raise requests.exceptions.ReadTimeout(str(err)) from None
    except urllib3.exceptions.DecodeError as err:
        raise requests.exceptions.ContentDecodingError(str(err)) from None
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.SSLError) as err:
        raise requests.exceptions.ConnectionError(str(err)) from None


def declared_length(response: Any) -> int | None:
    """The answer's ``Content-Length`` (``None`` if absent); one that is not a number is a :class:`BadAnswer`."""
    raw = response.headers.get("Content-Length")
    if raw is None:
        return None
    if not _DIGITS.fullmatch(raw.strip()):
        raise BadAnswer(f"sent a Content-Length of {shown(raw)}, not a number of bytes")
    return int(raw)


class Downloader:
    """A pooch downloader: streams ``url`` into pooch's temporary file, fsyncs it, moves one bar.

    It reads at most ``limit`` bytes (the known size, or the top of the
    expected range), keeps to the ``deadline`` (:class:`Pace`) and, given an
    ``expectation``, checks the finished temporary file against it; the first
    two failures are a :class:`Refused` or a :class:`BadAnswer`.
    """

    def __init__(
        self,
        bar: Any,
        limit: int | None = None,
        expectation: Expectation | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.bar, self.limit, self.expectation = bar, limit, expectation
        self.deadline = deadline or Deadline.for_sizes([limit])

    def __call__(self, url: str, output_file: str, pooch_store: Any = None, check_only: bool = False) -> None:
        response, started = answer(url, self.deadline)
        with response:
            declared = None if response.headers.get("Content-Encoding") else declared_length(response)
            self._check_declared(declared)
            written = self._save(response, output_file, Pace(self.deadline, started))
            _check_length(declared, written)
        problem = self.expectation.problem(Path(output_file)) if self.expectation else None
        if problem:
            raise Refused(problem)

    def _check_declared(self, declared: int | None) -> None:
        if self.limit is not None and declared is not None and declared > self.limit:
            raise Refused(
                f"{size_words(declared)} by its Content-Length, more than the "
                f"{size_words(self.limit)} the registry allows"
            )

    def _save(self, response: Any, output_file: str, pace: Pace) -> int:
        """Write the body into ``output_file`` (fsynced); the bytes written."""
        written = 0
        try:
            with open(output_file, "wb") as fh:
                for chunk in chunks(response):
                    if self.limit is not None and written + len(chunk) > self.limit:
                        raise Refused(f"more than {size_words(self.limit)}, the most the registry allows")
                    pace.check(written + len(chunk))
                    _write(fh, chunk)
                    written += len(chunk)
                    self.bar.update(len(chunk))
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            self.bar.update(-written)
            raise
        return written


def _write(fh: Any, chunk: bytes) -> None:
    fh.write(chunk)


def _check_length(declared: int | None, written: int) -> None:
    """A body shorter than its Content-Length is a dropped connection (retried), never a file."""
    import requests

    if declared is not None and declared != written:
        raise requests.exceptions.ConnectionError(f"got {written} of {declared} bytes")


def hub_listing(ds: DataSet) -> list[str]:
    """The listing's file names at the pinned revision, from the Hub's revision API.

    The names the Hub lists must be the files of one data set (each a path
    inside its folder, none twice, none both a file and a folder), or the whole
    list is refused before anything is written: its line ends with :data:`NOTHING`.
    """
    listing = ds.listing
    assert listing is not None  # the registry gives a data set either pinned files or a listing
    url = f"{url_from_env(HUB_ENV, HUB_URL).rstrip('/')}/api/datasets/{listing.repo}/revision/{ds.revision}"
    where = f"{ds.name}: file list"
    listed = _sibling_names(url, where)
    problem = names_problem(listed)
    if problem:
        raise RcakitError(f"{where}: {url} lists {problem}; {NOTHING}")
    names = cast(list[str], listed)  # names_problem refused any name that is not a str
    chosen = sorted((n for n in names if n.startswith(listing.prefix) and n.endswith(listing.suffix)), key=_natural_key)
    if len(chosen) != listing.count:
        raise RcakitError(
            f"{where}: the Hub lists {len(chosen)} '{listing.suffix}' files under "
            f"{listing.prefix} at revision {ds.revision}; the registry expects {listing.count}; {NOTHING}"
        )
    missing = [n for n in listing.extra if n not in names]
    if missing:
        raise RcakitError(f"{where}: {', '.join(missing)} not at revision {ds.revision}; {NOTHING}")
    return [*listing.extra, *chosen]


def _sibling_names(url: str, where: str) -> list[object]:
    """The ``rfilename`` of every entry of the Hub's ``siblings``, not yet checked; one line if there is none."""
    try:
        siblings = json.loads(_read_capped(url, where))["siblings"]
        if not isinstance(siblings, list):
            raise TypeError
        return [s["rfilename"] for s in siblings]
    except (ValueError, KeyError, TypeError):
        raise RcakitError(f"{where}: {url} did not return a Hub file list; {NOTHING}") from None


def _read_capped(url: str, where: str) -> bytes:
    """The body of a 200 answer from ``url``, at most :data:`LISTING_LIMIT` bytes, at the pace of
    :class:`Pace`; one line ending with :data:`NOTHING` otherwise."""
    import requests

    deadline = Deadline.for_sizes([LISTING_LIMIT])
    try:
        response, started = answer(url, deadline)
        with response:
            if response.status_code != 200:
                raise HTTPStatus(response.status_code, response.reason or "")
            return _capped_body(response, where, url, Pace(deadline, started))
    except (HTTPStatus, BadAnswer, requests.exceptions.RequestException) as err:
        raise RcakitError(f"{where}: {_network_words(err, url, 'reach', 1)}; {NOTHING}") from None


def _capped_body(response: Any, where: str, url: str, pace: Pace) -> bytes:
    declared_length(response)  # a malformed Content-Length is refused before the body
    body = bytearray()
    for chunk in chunks(response):
        body += chunk
        if len(body) > LISTING_LIMIT:
            raise RcakitError(
                f"{where}: {url} sent more than {size_words(LISTING_LIMIT)}, not a Hub file list; {NOTHING}"
            )
        pace.check(len(body))
    return bytes(body)


def _natural_key(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
