"""Execute chapters with papermill (the book's build is :mod:`rcakit.book.build`).

A chapter's MyST source is read with jupytext and handed to papermill as a
notebook; the executed copy lands in ``book/chapters/<id with _>.ipynb`` with
the injected parameters visible. Before any kernel starts, ``preflight``
checks everything a user can get wrong: parameter names, types, bounds and
rules, the output, store and data folders, and (when a model is chosen) one
cheap probe of the model server.

papermill writes into a hidden temporary notebook beside the executed one,
and ``rcakit.results.record`` into a staging folder. Only a run that finishes
replaces ``<stem>.ipynb`` and the results (atomically, ``rcakit.io``); a run
whose code fails leaves its notebook in ``<book>/failed/`` for inspection,
never published; a killed or interrupted run leaves the last good notebook
and results as they were and no temporary file. Each executed notebook
records what produced it (``rcakit.book.provenance``), so ``rcakit book``
re-executes only the chapters that are missing or stale.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.book import provenance, registry, staging
from rcakit.book.kernel import (
    interrupts_reach_the_kernel,
    ipc_kernel_manager,
    kernel_warnings,
    matplotlib_home,
    quiet_loggers,
    stop_kernels,
)
from rcakit.chapters._checks import RULES
from rcakit.io import atomic_write, create_exclusive, fresh_folder, publish, real_folder, writable_dir
from rcakit.llm.spec import TIMEOUT_ENV, default_timeout
from rcakit.paths import book_dir, project_root, resolve
from rcakit.progress import warn
from rcakit.results import results_dir


class ChapterFailed(RuntimeError):
    """A chapter's code raised while executing (not a user input error)."""


def chapters_dir() -> Path:
    """Where executed chapters land: ``<book>/chapters``."""
    return book_dir() / "chapters"


def executed_notebook(chapter: registry.Chapter, folder: Path | None = None) -> Path:
    """Where a chapter's executed notebook lands: ``<folder or chapters_dir()>/<stem>.ipynb``."""
    return (folder or chapters_dir()) / (chapter.notebook.stem + ".ipynb")


def run_parameters(chapter_id: str, overrides: Mapping[str, Any] | None = None, quick: bool = False) -> dict[str, Any]:
    """The checked parameters of a run: defaults, then ``quick`` values, then overrides.

    ``$RCAKIT_LLM_TIMEOUT`` replaces the default of a chapter's ``llm_timeout``
    parameter; an explicit ``-p llm_timeout`` still wins.
    """
    chapter = registry.get(chapter_id)
    merged = {**(chapter.quick if quick else {}), **(overrides or {})}
    if "llm_timeout" in chapter.parameters and "llm_timeout" not in merged and os.environ.get(TIMEOUT_ENV):
        merged["llm_timeout"] = default_timeout()
    return registry.validate(chapter_id, merged, RULES.get(chapter_id))


def _trusted_stores(chapter: registry.Chapter, recorded: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` without a case-store folder that leads out of the results folder: a notebook's metadata is
    not rcakit's to trust, so such a value (edited in, or from another machine) falls back to the default, with
    one warning line."""
    from rcakit.store import store_folder

    kept = dict(recorded)
    home = results_dir().resolve()
    for name, kind in chapter.paths.items():
        value = kept.get(name)
        if kind == "store" and isinstance(value, str) and not store_folder(value).resolve().is_relative_to(home):
            warn(f"{chapter.id}: the recorded {name} {value!r} leads out of {home}; the page runs with the default")
            del kept[name]
    return kept


def book_parameters(chapter_id: str, defaults: bool = False, quick: bool = False) -> dict[str, Any]:
    """The parameters ``rcakit book`` runs a page with.

    The ones its executed notebook was last run with, when there is one and
    they are still valid for the chapter; else (or with ``defaults``/``quick``)
    the defaults or the quick values.
    """
    chapter = registry.get(chapter_id)
    block = None if defaults or quick else provenance.read(executed_notebook(chapter))
    if block is None:
        return run_parameters(chapter_id, quick=quick)
    recorded = {k: v for k, v in block["parameters"].items() if k in chapter.parameters}
    recorded = _trusted_stores(chapter, recorded)
    try:
        return run_parameters(chapter_id, recorded)
    except RcakitError:  # the chapter changed under the rerun: back to the defaults
        return run_parameters(chapter_id)


def preflight(chapter_id: str, params: Mapping[str, Any], output_dir: Path | None = None) -> None:
    """Every check that needs no kernel, each failure a one-line ``RcakitError``.

    The executed-notebook and results folders (and the failed-runs folder, which must not be a link), the
    chapter's ``paths``
    (``dir``: writable folder; ``store``: writable folder, relative to the
    results folder; ``data``: a data set name, whose lock must be usable when
    it is fetched, or a path that must exist), one probe per language model
    the parameters choose, ``data/claims.yaml`` and every input file, plug-in and scheduler
    address (``rcakit.book.inputs``).
    """
    from rcakit.store import store_folder

    chapter = registry.get(chapter_id)
    writable_dir(output_dir or chapters_dir(), "book folder (RCAKIT_BOOK_DIR)")
    writable_dir(results_dir(), "results folder (RCAKIT_RESULTS_DIR)")
    real_folder(failed_dir(output_dir), "the failed-runs folder", create=False)  # a link: the run would delete in it
    for name, kind in chapter.paths.items():
        where = f"{chapter_id}: parameter {name!r}"
        if kind == "dir":
            writable_dir(resolve(params[name]), where)
        elif kind == "store":
            writable_dir(store_folder(params[name]), where)
        elif params[name] not in registry.UNSET:
            _check_data(params[name], name, where)
    from rcakit.book.inputs import check_claims_file, check_parameters  # each read before a kernel

    check_claims_file()  # the ledger every chapter's verdicts read, found broken now, not at the end of the run
    check_parameters(chapter_id, params)  # before the model probe: a bad file is named before any network
    _probe_models(chapter_id, params)


def _check_data(value: Any, name: str, where: str) -> None:
    """A data parameter the user chose: a registry name, or a path that must exist and be readable.

    A registry name goes through :func:`rcakit.data.locate` (an unusable lock
    file is an error here); when it is not fetched, the chapter says how to
    fetch it and runs its other sections.
    """
    from rcakit import data

    if str(value) in data.registry():
        try:
            data.locate(str(value), name)
        except RcakitError as err:
            raise RcakitError(f"{where}: {err}") from None
        return
    path = resolve(value)
    try:
        if not path.exists():
            raise RcakitError(f"{where}: {path} does not exist")
        if path.is_dir():
            os.listdir(path)
        elif path.is_file():
            with path.open("rb") as fh:
                fh.read(1)
        else:  # a FIFO or a device would block or never end
            raise RcakitError(f"{where}: {path} is not a regular file or folder")
    except OSError as err:
        raise RcakitError(f"{where}: {path} cannot be read: {err.strerror or err}") from None


def _probe_models(chapter_id: str, params: Mapping[str, Any]) -> None:
    """One connection probe per distinct model spec (``none`` needs none); an OpenAI-compatible server is
    the one ``llm_base_url`` names, when the chapter has that parameter."""
    specs = {}
    for name in registry.provider_parameters(params):
        if params[name] not in registry.UNSET:
            specs.setdefault(params[name], name)
    if not specs:
        return
    from rcakit.llm.spec import probe

    for spec, name in specs.items():
        try:
            probe(spec, timeout=params.get("llm_timeout"), param=name, base_url=params.get("llm_base_url"))
        except RcakitError as err:
            raise RcakitError(f"{chapter_id}: {err}") from None


def present(chapter: registry.Chapter, params: Mapping[str, Any], name: str) -> bool:
    """Whether the optional input that parameter ``name`` names is there.

    A data parameter is present when its data set is fetched or its path
    exists; any other parameter (a model provider) when it is not ``none``.
    """
    value = params.get(name)
    if value in registry.UNSET:
        return False
    if chapter.paths.get(name) == "data":
        from rcakit import data

        return data.locate(str(value), name) is not None
    return True


def select_cells(nb: Any, chapter: registry.Chapter, params: Mapping[str, Any]) -> Any:
    """Keep the cells that apply to this run's inputs, before any of them executes.

    A cell tagged ``needs-<param>`` is kept only when that parameter's input is
    present (:func:`present`); one tagged ``missing-<param>`` (the section's
    one admonition: what it computes, how to get the input, the rerun command)
    only when it is absent. So a page never shows prose with missing numbers
    or cells without outputs, and nbval re-executes exactly what was kept.
    """

    def keep(cell: Any) -> bool:
        for tag in cell.metadata.get("tags", []):
            kind, _, name = tag.partition("-")
            if kind in ("needs", "missing") and name in chapter.parameters:
                if present(chapter, params, name) != (kind == "needs"):
                    return False
        return True

    nb.cells = [cell for cell in nb.cells if keep(cell)]
    return nb


def code_span(text: str) -> str:
    """``text`` as one Markdown code span whatever it holds: the fence is one backtick longer than the longest
    run inside, so a backtick in a parameter value cannot end the span and let raw HTML through (a code span
    shows ``<img ...>`` as text). ``text`` holds no newline (a ``repr``)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def rerun_note(chapter: registry.Chapter, params: Mapping[str, Any]) -> str | None:
    """The admonition a page shows near its top when it ran with other than the default parameters."""
    changed = {k: v for k, v in params.items() if v != chapter.parameters[k].default}
    if not changed:
        return None
    quick = changed == chapter.quick
    listed = ", ".join(
        f"{code_span(f'{k} = {v!r}')} (default {code_span(repr(chapter.parameters[k].default))})"
        for k, v in changed.items()
    )
    how = "with the chapter's quick values (`--quick`)" if quick else "with parameters other than the defaults"
    return (
        f":::{{admonition}} A rerun\n:class: note\n"
        f"This page was executed {how}: {listed}. The verdicts below are for these values. "
        f"`rcakit book --defaults` rebuilds it at the defaults.\n:::"
    )


def _prepare(nb: Any, chapter: registry.Chapter, params: Mapping[str, Any]) -> Any:
    """The notebook as it will execute: selected cells, the rerun note, and the imports probe last."""
    import nbformat

    nb = select_cells(nb, chapter, params)
    note = rerun_note(chapter, params) if chapter.parameters else None
    if note:
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(note, metadata={"tags": ["rcakit-rerun"]}))
    probe = nbformat.v4.new_code_cell(provenance.MODULES_SOURCE, metadata={"tags": [provenance.MODULES_TAG]})
    nb.cells.append(probe)
    return nb


MAX_OUTPUT_BYTES = 5 * 10**6  # one output on a page: a larger image or text is left off, with a note
SHOWN_STDERR_CHARS = 2000  # of what the kernel wrote on stderr, the last characters relayed to the terminal


def _finish(tmp: Path, chapter: registry.Chapter, params: Mapping[str, Any], before: provenance.Before) -> None:
    """Take the imports probe out of the executed notebook, keep stderr and oversized outputs off the page
    (:func:`_published_outputs`), store the provenance in its metadata, and hide
    papermill's injected parameters cell from the page (``remove-cell``): the chapter's own parameters cell
    shows the defaults, and the "A rerun" box says what this run changed. The provenance is what the run
    was handed (``before``); a source, code or data that changed while it ran leaves the page stale, with
    one warning line."""
    import nbformat

    nb = nbformat.read(tmp, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    probe = nb.cells.pop()
    assert provenance.MODULES_TAG in probe.metadata.get("tags", []), "the imports probe must be the last cell"
    text = "".join(o.get("text", "") for o in probe.get("outputs", []) if o.get("name") == "stdout")
    modules = json.loads(text.strip().splitlines()[-1])
    stderr: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = _published_outputs(cell.outputs, stderr)
    if stderr:
        shown = " | ".join(line for line in "".join(stderr).splitlines() if line.strip())
        warn(f"{chapter.id}: the kernel wrote on stderr (kept off the page): {shown[-SHOWN_STDERR_CHARS:]}")
    nb.metadata[provenance.KEY] = provenance.record(chapter, params, modules, before, provenance.page_digest(nb.cells))
    if changed := provenance.changed_during_run(chapter, params, modules, before):
        warn(
            f"{chapter.id}: {' and '.join(changed)} changed while the chapter ran; the page shows what the run "
            "read and is recorded as stale ('rcakit book' runs it again)"
        )
    atomic_write(tmp, nbformat.writes(nb) + "\n")


def _published_outputs(outputs: list[Any], stderr: list[str]) -> list[Any]:
    """``outputs`` as a page shows them: a stream on stderr (a library's warning, a path of the machine)
    goes into ``stderr`` for the terminal instead, and an output larger than :data:`MAX_OUTPUT_BYTES` is
    replaced by a note saying so."""
    import nbformat

    from rcakit.data.formats import size_words

    kept = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            stderr.append(str(output.get("text", "")))
            continue
        size = len(json.dumps(output))
        if size > MAX_OUTPUT_BYTES:
            note = (
                f"*An output of {size_words(size)} was left off this page: "
                f"it is larger than the {size_words(MAX_OUTPUT_BYTES)} a page publishes.*"
            )
            output = nbformat.v4.new_output("display_data", data={"text/markdown": note, "text/plain": note})
        kept.append(output)
    return kept


def run_chapter(
    chapter_id: str,
    overrides: Mapping[str, Any] | None = None,
    quick: bool = False,
    output_dir: Path | None = None,
    show_progress: bool = True,
) -> Path:
    """Execute one chapter; return the path of the executed notebook.

    ``show_progress`` shows papermill's cell-by-cell bar. The notebook runs
    into ``.<stem>.<pid>.running.ipynb`` and its results into a staging folder
    beside the results folder; only a run in which every cell succeeded
    publishes both, results first. A failing cell raises ``ChapterFailed``
    naming the cell and the error and keeps the partly executed notebook in
    ``<book>/failed/`` (:func:`failed_dir`); the last good notebook and results
    stay byte for byte. A SIGTERM, Ctrl-C or a dead kernel leaves no temporary file.
    Warnings the kernel raised for the person running it
    (``rcakit.progress.warn``) are printed on stderr afterwards. A second run of
    the same chapter while one runs is refused (``rcakit.book.staging.chapter_lock``).
    """
    params = run_parameters(chapter_id, overrides, quick)
    preflight(chapter_id, params, output_dir)
    chapter = registry.get(chapter_id)
    folder = output_dir or chapters_dir()
    with staging.chapter_lock(results_dir(), chapter_id):  # a second run of this chapter now is refused
        return _run_locked(chapter, params, folder, show_progress)


def _run_locked(chapter: registry.Chapter, params: dict[str, Any], folder: Path, show_progress: bool) -> Path:
    import jupytext

    chapter_id = chapter.id
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale(folder)
    out = executed_notebook(chapter, folder)
    source = chapter.notebook.read_bytes()  # the exact text papermill is handed, and its provenance
    before = provenance.before_run(chapter, params, source)
    text = source.decode("utf-8")
    nb = _prepare(jupytext.reads(text, fmt={"extension": chapter.notebook.suffix}), chapter, params)
    tmp = folder / f".{chapter.notebook.stem}.{os.getpid()}{staging.RUNNING_SUFFIX}"
    stage = results_dir() / f".{chapter_id}.{os.getpid()}{staging.STAGE_SUFFIX}"
    with staging.cleanup(tmp, stage):
        try:
            create_exclusive(tmp)  # never written through a link planted at this run's own name
            fresh_folder(stage)
            with kernel_warnings(), matplotlib_home(), staging.staged_results(stage):
                _execute(chapter_id, nb, tmp, out, params, show_progress)
            _finish(tmp, chapter, params, before)
            for staged in sorted(stage.glob("*.json")) if stage.is_dir() else []:
                publish(staged, results_dir() / staged.name)
            publish(tmp, out)
            (real_folder(failed_dir(folder), "the failed-runs folder", create=False) / out.name).unlink(missing_ok=True)
        except OSError as err:  # a disk that filled up during the run, say
            raise ChapterFailed(
                f"chapter {chapter_id!r}: cannot write {err.filename or folder}: "
                f"{err.strerror or err}; the last good {out.name} is kept"
            ) from None
    return out


def remove_stale(folder: Path | None = None) -> list[Path]:
    """:func:`rcakit.book.staging.remove_stale` over the chapters folder and the results folder."""
    return staging.remove_stale([folder or chapters_dir(), results_dir()])


def _execute(chapter_id: str, nb: Any, tmp: Path, out: Path, params: dict[str, Any], show_progress: bool) -> None:
    with tempfile.TemporaryFile() as log, interrupts_reach_the_kernel(), staging.deferred_termination(stop_kernels):
        try:
            _papermill(chapter_id, nb, tmp, out, params, show_progress, log)
        except ChapterFailed:
            if os.environ.get("RCAKIT_TRACEBACK"):
                log.seek(0)
                sys.stderr.write(log.read().decode("utf-8", "replace"))
            raise


def _papermill(
    chapter_id: str, nb: Any, tmp: Path, out: Path, params: dict[str, Any], show_progress: bool, log: Any
) -> None:
    import papermill
    from nbclient.exceptions import DeadKernelError

    try:
        with quiet_loggers("traitlets", "papermill", "nbclient"):  # rcakit says what failed, in one line
            _execute_notebook(papermill, nb, tmp, params, show_progress, log)
    except DeadKernelError:
        raise ChapterFailed(
            f"chapter {chapter_id!r}: the kernel died (a crash in native code?); "
            f"the last good {out.name} is kept; RCAKIT_TRACEBACK=1 shows the kernel's log"
        ) from None
    except papermill.PapermillExecutionError as err:
        if err.ename == "KeyboardInterrupt":
            raise KeyboardInterrupt from None
        kept = real_folder(failed_dir(out.parent), "the failed-runs folder")
        failed = publish(tmp, kept / out.name)
        raise ChapterFailed(
            f"chapter {chapter_id!r} failed in cell {err.exec_count}: {err.ename}: "
            f"{_first_line(err.evalue)} (see {failed}; the last good {out.name} and results are kept)"
        ) from None


def _execute_notebook(
    papermill: Any, nb: Any, tmp: Path, params: dict[str, Any], show_progress: bool, log: Any
) -> None:
    papermill.execute_notebook(
        nb,
        str(tmp),
        parameters=params,
        cwd=str(project_root()),
        kernel_name="python3",
        progress_bar=show_progress,
        log_output=False,
        kernel_manager_class=ipc_kernel_manager(log),
    )


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def failed_dir(folder: Path | None = None) -> Path:
    """Where a failed run's notebook is kept for inspection: ``<book>/failed``, outside the pages."""
    return (folder or chapters_dir()).parent / "failed"


def failed_notebooks(folder: Path | None = None) -> list[Path]:
    """Notebooks of failed runs: each is its chapter's latest run, since a good run removes it.

    Existence decides, not modification times, so a page with a time in the
    future (a copied book, a clock set wrong) cannot hide a failure.
    """
    where = failed_dir(folder or chapters_dir())
    return sorted(path for path in where.glob("*.ipynb") if path.is_file() and not path.is_symlink())
