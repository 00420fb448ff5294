"""Every file, plug-in and address a chapter's parameters name, checked before its kernel starts.

A chapter that meets a bad input inside its kernel fails with exit status 1
and a ``.failed`` notebook; the same input found here is one line and exit
status 2, with nothing run ("every input checked before the
kernel"). :func:`check_parameters` runs one check per parameter a chapter
has, and each check is the loader's own validation, stopped as early as it
can be, so there is one definition of a valid input:

- the files and plug-ins a chapter reads (``world``, ``retriever``,
  ``authors_runs``, ``longrca``, ``who_and_when_path``, ``methods``,
  ``traces``) are the chapters' own checks, declared in the chapter layer
  (``rcakit.chapters._checks.INPUTS``), so that the book imports no science
  package;
- ``scheduler``: a Dask handshake with the connect timeout
  (:func:`rcakit.parallel.probe_scheduler`), checked last (the network last).

A rule between parameters that needs no file or network (a budget that
depends on another parameter) is ``rcakit.book.registry.check_rules``' business,
so that it also holds inside the kernel.

Each error is one line that names the parameter and the file (and line).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.chapters._checks import INPUTS


def check_claims_file() -> None:
    """``data/claims.yaml`` read through ``rcakit.io.read_yaml`` and checked against its schema (a mapping of
    chapter ids to sections, each a mapping whose ``claims`` is a list of mappings, every claim's rules as
    ``rcakit.claims.ledger`` checks them): every chapter's verdicts read it, so a malformed file is one line
    naming it before a kernel starts."""
    from rcakit.claims import ledger

    path = ledger.claims_path()
    if not path.exists() and not path.is_symlink():
        return  # a project without claims (a test's toy root): nothing reads it
    tree = ledger._parse(path, _mtime(path))
    if not isinstance(tree, dict):
        raise RcakitError(f"{path}: the claims file must map chapter ids to sections, got {type(tree).__name__}")
    for chapter_id, section in tree.items():
        where = f"{path}: {chapter_id!r:.60}"
        if not isinstance(chapter_id, str) or not isinstance(section, dict):
            raise RcakitError(f"{where}: expected a chapter id mapped to a section (paper, claims, published)")
        claims = section.get("claims", [])
        if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
            raise RcakitError(f"{where}: claims must be a list of mappings")
        ledger.chapter_claims(chapter_id)  # each claim's kind, expect rule and needs


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError as err:
        raise RcakitError(f"{path}: cannot read the claims file: {err.strerror or err}") from None


def check_parameters(chapter_id: str, params: Mapping[str, Any]) -> None:
    """Check every input ``params`` name for chapter ``chapter_id``; a bad one raises one ``RcakitError``.

    ``params`` are the checked parameters of the run (``runner.run_parameters``).
    Local files come first, the network (a scheduler) last.
    """
    for name, check in {**INPUTS, "scheduler": dask_scheduler}.items():
        if name in params:
            try:
                check(params[name], params)
            except RcakitError as err:
                raise RcakitError(f"{chapter_id}: {err}") from None


def dask_scheduler(value: Any, params: Mapping[str, Any]) -> None:
    """``scheduler`` (or ``$RCAKIT_DASK_SCHEDULER`` when it is empty): a Dask scheduler that answers
    a handshake within :data:`PREFLIGHT_SECONDS` (a live scheduler answers in milliseconds, so a
    silent port is refused well inside the kernel's own connect timeout)."""
    from rcakit import parallel

    address = parallel.scheduler_address(str(value))
    if address:
        parallel.stall_timeout()  # a bad $RCAKIT_DASK_TIMEOUT is one line here, not in the kernel
        parallel.probe_scheduler(address, min(PREFLIGHT_SECONDS, parallel.CONNECT_SECONDS))


PREFLIGHT_SECONDS = 5.0


__all__ = ["check_parameters"]
