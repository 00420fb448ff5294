"""The chapter registry.

A chapter is a MyST notebook under ``notebooks/``. Its front matter carries an
``rcakit`` block (id, title, ``quick`` parameters for CI, and ``bounds`` or
``choices`` for parameters with a valid range); its ``parameters`` cell holds
the defaults, one plain literal per line with a comment. So each chapter's
knobs live in one place, next to the code that uses them. ``ORDER`` fixes the
order of the book; the closing ``claims`` page comes last.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rcakit import RcakitError
from rcakit.paths import project_root

ORDER = [
    "car-shapley",
    "gcjr-ablations",
    "coverage-collapse",
    "content-corruption",
    "longrca-strata",
    "claims",
]


@dataclass(frozen=True)
class Parameter:
    """One line of a chapter's parameters cell."""

    name: str
    default: Any
    comment: str = ""


@dataclass(frozen=True)
class Chapter:
    """A chapter: its notebook, title, parameters, quick values and valid ranges."""

    id: str
    notebook: Path
    title: str
    parameters: dict[str, Parameter]
    quick: dict[str, Any] = field(default_factory=dict)
    bounds: dict[str, list] = field(default_factory=dict)
    choices: dict[str, list] = field(default_factory=dict)

    @property
    def defaults(self) -> dict[str, Any]:
        return {name: p.default for name, p in self.parameters.items()}


def notebook_path(chapter_id: str) -> Path:
    return project_root() / "notebooks" / (chapter_id.replace("-", "_") + ".md")


def parse_parameters(source: str) -> dict[str, Parameter]:
    """Names, literal defaults and trailing comments of a parameters cell."""
    comments = {
        tok.start[0]: tok.string.lstrip("# ").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    params = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise RcakitError(f"parameters cell: line {node.lineno} is not 'name = literal'")
        name = node.targets[0].id
        params[name] = Parameter(name, ast.literal_eval(node.value), comments.get(node.lineno, ""))
    return params


@functools.lru_cache(maxsize=None)
def _read(chapter_id: str, mtime: float) -> Chapter:
    import jupytext

    path = notebook_path(chapter_id)
    nb = jupytext.read(path)
    meta = nb.metadata.get("rcakit", {})
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise RcakitError(f"{path}: expected one cell tagged 'parameters', found {len(cells)}")
    return Chapter(
        id=chapter_id,
        notebook=path,
        title=meta.get("title", chapter_id),
        parameters=parse_parameters(cells[0].source),
        quick=dict(meta.get("quick", {})),
        bounds=dict(meta.get("bounds", {})),
        choices=dict(meta.get("choices", {})),
    )


def get(chapter_id: str) -> Chapter:
    """The chapter with this id; an unknown id is a one-line ``RcakitError``."""
    if chapter_id not in ORDER:
        raise RcakitError(f"unknown chapter {chapter_id!r}; known: {', '.join(ORDER)}")
    path = notebook_path(chapter_id)
    if not path.exists():
        raise RcakitError(f"chapter {chapter_id!r}: notebook {path} is missing")
    return _read(chapter_id, path.stat().st_mtime)


def all_chapters() -> list[Chapter]:
    """Every chapter, in book order."""
    return [get(cid) for cid in ORDER]


def coerce(chapter: Chapter, name: str, value: Any) -> Any:
    """``value`` as the type of the parameter's default; strings are parsed.

    Raises a one-line ``RcakitError`` naming the chapter and parameter when the
    name is unknown, the type does not fit, or the value is outside its range.
    """
    if name not in chapter.parameters:
        known = ", ".join(chapter.parameters)
        raise RcakitError(f"{chapter.id}: unknown parameter {name!r}; known: {known}")
    default = chapter.parameters[name].default
    value = _convert(chapter.id, name, default, value)
    _check_range(chapter, name, value)
    return value


def _convert(chapter_id: str, name: str, default: Any, value: Any) -> Any:
    kind = type(default)
    fail = RcakitError(f"{chapter_id}: parameter {name!r} expects {kind.__name__}, got {value!r}")
    if isinstance(value, str) and kind is not str:
        try:
            value = ast.literal_eval(value) if value not in ("true", "false") else value == "true"
        except (ValueError, SyntaxError):
            raise fail from None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not kind and not (default is None):
        raise fail
    return value


def _check_range(chapter: Chapter, name: str, value: Any) -> None:
    if name in chapter.bounds:
        lo, hi = chapter.bounds[name]
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise RcakitError(
                f"{chapter.id}: parameter {name!r} = {value!r} is outside [{lo}, {hi}]"
            )
    if name in chapter.choices and value not in chapter.choices[name]:
        options = ", ".join(map(str, chapter.choices[name]))
        raise RcakitError(f"{chapter.id}: parameter {name!r} = {value!r} is not one of {options}")


def validate(chapter_id: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The full parameter set of a run: defaults updated by checked ``overrides``."""
    chapter = get(chapter_id)
    params = chapter.defaults
    for name, value in overrides.items():
        params[name] = coerce(chapter, name, value)
    return params


def check_params(chapter_id: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Inside a chapter: validate the parameter values the kernel holds.

    Returns the parameters as a dict, for ``rcakit.results.record``. Raises a
    one-line ``RcakitError`` on a wrong type or an out-of-range value.
    """
    chapter = get(chapter_id)
    return {name: coerce(chapter, name, namespace[name]) for name in chapter.parameters}
