"""Named data sets: a registry of pinned, hashed files fetched with pooch.

``data/registry.yaml`` names each data set the papers use (Who&When, LongRCA
Bench, MuSiQue) with its source pinned to one revision, its licence and
citation, and the sha256 of every file where the bytes are known here. A data
set whose hashes cannot be known in advance is trusted on first use: the
registry gives each of its files a plausible size range and, where the format
allows, a cheap format check; its first fetch refuses bytes that fail them and
records each accepted file's sha256 in ``<data home>/<name>.lock.json``, and
every later fetch verifies against that lock file.

- The data home is ``pooch.os_cache("rcakit")``; ``$RCAKIT_DATA_DIR`` moves it.
  A data set lives in ``<data home>/<name>/`` with the source's own layout.
  Every file name, from the registry, a lock file or a remote listing, must
  stay inside that folder (no control or bidi character, no component over
  255 bytes, each name once), or nothing is written.
- ``$RCAKIT_DATA_URL`` replaces a data set's base URL (a mirror holding a
  plain copy of the source tree at the pinned revision, or a test server).
  A Hub listing is read from ``$HF_ENDPOINT`` (default the Hugging Face Hub).
- ``$RCAKIT_FETCH_TIMEOUT`` (seconds, default 60) bounds each wait for a
  server; a file of ``n`` bytes must then arrive within that plus ``n / 10 kB``
  seconds, and a whole fetch within the sum over its files
  (:mod:`~rcakit.data.remote`).
- A failure (hash mismatch, refused bytes, HTTP error, a server too slow,
  unreachable host, full disk, Ctrl-C, SIGTERM) is one ``RcakitError`` line
  that says what was kept, and leaves no partial or unverified file behind.
  :func:`verify` re-hashes what is on disk.

Modules: :mod:`~rcakit.data.catalog` (the registry, the data home, lock files,
:func:`locate`), :mod:`~rcakit.data.formats` (the size and format checks of
trust on first use), :mod:`~rcakit.data.remote` (the downloader and the Hub's
file list), :mod:`~rcakit.data.download` (:func:`fetch`: the plan, the staging
folder, the lock file), :mod:`~rcakit.data.integrity` (:func:`verify`: re-hashing
what is on disk) and :mod:`~rcakit.data.cli` (``rcakit data list | fetch |
verify | path``).

A chapter parameter that takes a data path also takes a registry name:
:func:`locate` maps either to a local path. Used in the chapters:
`longrca-strata` (Who&When, LongRCA Bench) and the agentic-RAG chapters (MuSiQue).
"""

from __future__ import annotations

from rcakit.data.catalog import (
    DataSet,
    FileEntry,
    Listing,
    data_home,
    fetch_hint,
    get,
    is_fetched,
    local_path,
    locate,
    lock_path,
    registry,
)
from rcakit.data.cli import add_commands
from rcakit.data.download import fetch
from rcakit.data.formats import Expectation
from rcakit.data.integrity import FileCheck, verify

__all__ = [
    "DataSet",
    "Expectation",
    "FileCheck",
    "FileEntry",
    "Listing",
    "add_commands",
    "data_home",
    "fetch",
    "fetch_hint",
    "get",
    "is_fetched",
    "local_path",
    "locate",
    "lock_path",
    "registry",
    "verify",
]
