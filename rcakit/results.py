"""Machine-readable chapter results: ``results/<chapter_id>.json``.

Tests, the closing claims page and outside checks read these files. Keys are
sorted and numbers are plain JSON, so the same parameters and seed give a
byte-identical file. Each file is replaced atomically (``rcakit.io``): a full
disk or a killed run leaves the last good file in place.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError, __version__
from rcakit.io import atomic_write, read_regular
from rcakit.paths import project_root


def results_dir() -> Path:
    """``$RCAKIT_RESULTS_DIR`` if set, else ``<project>/results``."""
    env = os.environ.get("RCAKIT_RESULTS_DIR")
    return Path(env) if env else project_root() / "results"


def to_jsonable(obj: Any) -> Any:
    """Plain-Python copy of ``obj``: numpy and pandas values, tuples, NaN -> None."""
    if isinstance(obj, pd.DataFrame):
        obj = obj.to_dict(orient="list")
    if isinstance(obj, pd.Series):
        obj = obj.tolist()
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


STAGE_ENV = "RCAKIT_RESULTS_STAGE"


def record(chapter_id: str, numbers: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    """Write ``numbers`` plus ``params`` and the rcakit version to ``results/<chapter_id>.json``, and under
    ``llm_output_modes`` the structured-output mode each model's replies came in, when a model was asked.

    Returns nothing, so the cell that calls it shows nothing. Inside a run that
    ``rcakit.book.runner`` started, the file is staged in ``$RCAKIT_RESULTS_STAGE``
    and published beside the executed notebook only when the whole notebook
    succeeded: a run that fails later keeps the last good results.
    """
    payload = dict(to_jsonable(numbers))
    payload["params"] = to_jsonable(params)
    payload["rcakit_version"] = __version__
    llm = sys.modules.get("rcakit.llm.base")  # not imported: no model was asked anything
    modes = llm.output_modes() if llm is not None else {}
    if modes:  # how each model was asked for JSON: structured output, a JSON object or plain text
        payload["llm_output_modes"] = modes
    stage = os.environ.get(STAGE_ENV)
    folder = Path(stage) if stage else results_dir()
    _check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / f"{chapter_id}.json", json.dumps(payload, sort_keys=True, indent=2) + "\n")


def result_path(chapter_id: str) -> Path:
    """Where ``record`` publishes a chapter's results."""
    return results_dir() / f"{chapter_id}.json"


def load(chapter_id: str) -> dict[str, Any]:
    """Read back ``results/<chapter_id>.json``."""
    return _read(results_dir() / f"{chapter_id}.json")


def load_all() -> dict[str, dict[str, Any]]:
    """Every results file in the results folder, keyed by chapter id.

    A results path that is not a folder, or a file that is not a JSON object,
    is a one-line ``RcakitError`` (never an empty table of "not measured").
    """
    folder = results_dir()
    _check_folder(folder)
    return {p.stem: _read(p) for p in sorted(folder.glob("*.json"))}


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise RcakitError(f"results folder {folder} is a file, not a folder (RCAKIT_RESULTS_DIR)")


def _read(path: Path) -> dict[str, Any]:
    try:
        tree = json.loads(read_regular(path, "results file").decode("utf-8"))
    except OSError as err:
        raise RcakitError(f"{path}: cannot read results: {err.strerror or err}") from None
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RcakitError(f"{path}: not a results file: {str(err).splitlines()[0][:120]}") from None
    if not isinstance(tree, dict):
        raise RcakitError(f"{path}: not a results file: expected a JSON object, got {type(tree).__name__}")
    return tree


def measured_value(tree: Mapping[str, Any], dotted: str) -> Any:
    """:func:`lookup`, then the value's type checked before any verdict is given on it: a number (``bool`` is
    not one), ``None`` (not measured) or a list of those (an interval); anything else, a string ``"1"`` or a
    ``true`` that would compare equal to 1, is one ``RcakitError`` line naming the key."""
    value = lookup(tree, dotted)
    if not _numeric(value):
        shown = " ".join(repr(value)[:60].split())
        raise RcakitError(
            f"results: {dotted} holds {shown} ({type(value).__name__}), not a number; rcakit writes numbers "
            "there: rerun the chapter"
        )
    return value


def _numeric(value: Any, depth: int = 0) -> bool:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return True
    return isinstance(value, list) and depth < 2 and all(_numeric(v, depth + 1) for v in value)


def lookup(tree: Mapping[str, Any], dotted: str) -> Any:
    """``lookup(r, "interaction.phi.0")``: walk dicts by key and lists by index."""
    node: Any = tree
    for part in dotted.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node
