"""The chapter registry.

A chapter is a MyST notebook under ``notebooks/``. Its ``parameters`` cell
holds the defaults, one plain literal per line with a comment, ``seed``
first; a page without one (the closing ``claims`` page, which only reads the
other chapters' results) takes no parameters. Its front matter carries an
``rcakit`` block that says what a valid value is:

- ``title``; ``quick``: the small values CI runs with;
- ``bounds: {name: [lo, hi]}`` (``null`` for an open end): required for every
  numeric parameter, seeds included; for a list parameter the bounds hold for
  each element (the element type is the type of the default's elements, and
  a list may not be empty);
- ``choices: {name: [a, b]}``: the allowed values of a string parameter;
- ``paths: {name: dir | store | data}``: ``dir`` is a folder the chapter
  writes (it must exist or be creatable, and be writable); ``store`` is such a
  folder for case stores, where a relative path is taken from the results
  folder (``rcakit.store.store_folder``), not the project; ``data`` is a file or
  folder it reads (it must exist, unless it is the default value, which a
  chapter may treat as optional data that is not installed);
- ``requires: {"name=value": [other, ...]}``: when ``name`` has that value, each
  ``other`` must be set (not ``none``), e.g. ``{agent=llm: [provider]}``; a rule
  ``name!=value`` fires when ``name`` has any other value, and an entry
  ``other=value`` needs ``other`` to have exactly that value, e.g.
  ``{world!=synthetic: [agent=llm, provider]}``.

So each chapter's knobs live in one place, next to the code that uses them,
and every user error is found before a kernel starts. ``ORDER`` fixes the
order of the book; the closing ``claims`` page comes last. ``PAGES`` adds the
landing page (``intro``), executed last because it reads every results file.
"""

from __future__ import annotations

import ast
import functools
import io
import math
import tokenize
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.deadlines import MAX_COUNT, MAX_SECONDS
from rcakit.params import ChapterParams, params_class
from rcakit.paths import project_root

ORDER = [
    "primer",
    "car-shapley",
    "gcjr-ablations",
    "coverage-collapse",
    "content-corruption",
    "longrca-strata",
    "attribution-families",
    "own-traces",
    "claims",
]
PAGES = [*ORDER, "intro"]  # executed in this order; the landing page reads every chapter's results


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
    bounds: dict[str, list[Any]] = field(default_factory=dict)
    choices: dict[str, list[Any]] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    requires: dict[str, list[Any]] = field(default_factory=dict)
    reads_results: bool = False  # a summary page: re-executed whenever a results file changed

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


@functools.cache
def _read(chapter_id: str, mtime: float) -> Chapter:
    import jupytext

    path = notebook_path(chapter_id)
    nb = jupytext.read(path)
    meta = nb.metadata.get("rcakit", {})
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) > 1:
        raise RcakitError(f"{path}: expected at most one cell tagged 'parameters', found {len(cells)}")
    chapter = Chapter(
        id=chapter_id,
        notebook=path,
        title=meta.get("title", chapter_id),
        parameters=parse_parameters(cells[0].source) if cells else {},
        quick=dict(meta.get("quick", {})),
        bounds=dict(meta.get("bounds", {})),
        choices=dict(meta.get("choices", {})),
        paths=dict(meta.get("paths", {})),
        requires={k: _as_list(v) for k, v in dict(meta.get("requires", {})).items()},
        reads_results=bool(meta.get("reads_results", False)),
    )
    check_declarations(chapter)
    return chapter


PATH_KINDS = ("dir", "store", "data")
UNSET = ("none", "", None)  # an optional parameter (a provider) that is switched off
INT_LIMIT = 2**63  # larger integers are typos: no count or seed of a chapter needs them


def _as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def is_numeric(default: Any) -> bool:
    """An int or float default, or a list of them (bools are not numbers here)."""
    if isinstance(default, list):
        return bool(default) and all(is_numeric(v) for v in default)
    return isinstance(default, (int, float)) and not isinstance(default, bool)


def check_declarations(chapter: Chapter) -> None:
    """The front matter covers the parameters cell: a one-line error names the gap.

    Every numeric parameter needs ``bounds`` (so a new one cannot slip in
    unchecked); ``paths`` kinds and ``requires`` rules must name parameters.
    """
    where = chapter.notebook or chapter.id
    for name, p in chapter.parameters.items():
        if is_numeric(p.default) and name not in chapter.bounds:
            raise RcakitError(f"{where}: numeric parameter {name!r} has no bounds in the front matter")
        if isinstance(p.default, list) and not p.default:
            raise RcakitError(f"{where}: list parameter {name!r} needs a non-empty default (its element type)")
    for name, kind in chapter.paths.items():
        if name not in chapter.parameters or kind not in PATH_KINDS:
            raise RcakitError(f"{where}: paths: {name!r}: {kind!r} must name a parameter and one of {PATH_KINDS}")
    for rule, needed in chapter.requires.items():
        name = str(rule).partition("=")[0].removesuffix("!")
        if name not in chapter.parameters or not all(str(n).partition("=")[0] in chapter.parameters for n in needed):
            raise RcakitError(f"{where}: requires: {rule!r}: {needed!r} must name parameters")


def get(chapter_id: str) -> Chapter:
    """The chapter with this id; an unknown id is a one-line ``RcakitError``."""
    if chapter_id not in PAGES:
        raise RcakitError(f"unknown chapter {chapter_id!r}; known: {', '.join(PAGES)}")
    path = notebook_path(chapter_id)
    if not path.exists():
        raise RcakitError(f"chapter {chapter_id!r}: notebook {path} is missing")
    return _read(chapter_id, path.stat().st_mtime)


def all_chapters() -> list[Chapter]:
    """Every chapter, in book order."""
    return [get(cid) for cid in ORDER]


def _check_text(where: str, value: Any) -> None:
    """A string value must be text that UTF-8 can hold: a byte the shell passed that is not UTF-8 arrives as a
    lone surrogate, which no notebook, results file or page could store."""
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                shown = text.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
                raise RcakitError(f"{where}: '{shown}' is not UTF-8 text") from None


def coerce(chapter: Chapter, name: str, value: Any) -> Any:
    """``value`` as the type of the parameter's default; strings are parsed.

    Raises a one-line ``RcakitError`` naming the chapter and parameter when the
    name is unknown, the type does not fit, or the value is outside its range.
    A list is checked element by element against the type of the default's
    elements and the parameter's bounds.
    """
    if not chapter.parameters:
        raise RcakitError(f"{chapter.id}: takes no parameters, got {_short(name)}")
    if name not in chapter.parameters:
        known = ", ".join(chapter.parameters)
        raise RcakitError(f"{chapter.id}: unknown parameter {_short(name)}; known: {known}")
    default = chapter.parameters[name].default
    where = f"{chapter.id}: parameter {name!r}"
    _check_text(where, value)
    value = _parse(where, default, value)
    if isinstance(default, list):
        if not isinstance(value, list) or not value:
            raise RcakitError(f"{where} expects a non-empty list of {type(default[0]).__name__}, got {_short(value)}")
        value = [_check_one(chapter, f"{where} element {i}", name, default[0], v) for i, v in enumerate(value)]
        return value
    return _check_one(chapter, where, name, default, value)


def _parse(where: str, default: Any, value: Any) -> Any:
    """A string given for a non-string parameter, read as a Python literal."""
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        return value
    if value in ("true", "false"):
        return value == "true"
    if value.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):
        raise RcakitError(f"{where} = {_short(value)} is not a finite number")
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        digits = value.strip().lstrip("+-")
        if digits.isdigit() and not digits.isascii():
            raise RcakitError(f"{where} = {_short(value)} holds non-ASCII digits; type 0-9") from None
        if digits.isdigit():
            raise RcakitError(f"{where} = {_short(value)} is too large (the limit is 2**63)") from None
        kind = f"list of {type(default[0]).__name__}" if isinstance(default, list) else type(default).__name__
        raise RcakitError(f"{where} expects {kind}, got {_short(value)}") from None


def _check_one(chapter: Chapter, where: str, name: str, default: Any, value: Any) -> Any:
    kind = type(default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not kind and default is not None:
        raise RcakitError(f"{where} expects {kind.__name__}, got {_short(value)}")
    if kind is int and abs(value) >= INT_LIMIT:
        raise RcakitError(f"{where} = {_short(value)} is too large (the limit is 2**63)")
    if kind is float and not math.isfinite(value):
        raise RcakitError(f"{where} = {value!r} is not a finite number")
    _check_range(chapter, where, name, value)
    return value


def bounds_of(chapter: Chapter, name: str) -> tuple[Any, Any]:
    """A numeric parameter's bounds, an open upper end closed by the platform's (``rcakit.deadlines``): a
    ``*_timeout`` at ``MAX_SECONDS``, any other integer but a seed at ``MAX_COUNT`` (a count); ``None``
    stays open (a seed, a float that is neither)."""
    lo, hi = chapter.bounds[name]
    if hi is None:
        default = chapter.parameters[name].default if name in chapter.parameters else None
        kind = type(default[0] if isinstance(default, list) and default else default)
        if name.endswith("_timeout"):
            hi = MAX_SECONDS
        elif kind is int and name != "seed":
            hi = MAX_COUNT
    return lo, hi


def _check_range(chapter: Chapter, where: str, name: str, value: Any) -> None:
    if name in chapter.bounds:
        lo, hi = bounds_of(chapter, name)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            shown = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            raise RcakitError(f"{where} = {value!r} is outside {shown}")
    if name in chapter.choices and value not in chapter.choices[name]:
        options = ", ".join(map(str, chapter.choices[name]))
        raise RcakitError(f"{where} = {_short(value)} is not one of {options}")


Rule = Callable[[Mapping[str, Any]], None]  # a rule between one chapter's parameters (rcakit.chapters._checks)


def check_rules(chapter: Chapter, params: Mapping[str, Any], rule: Rule | None = None) -> None:
    """Cross-parameter checks: ``requires`` rules, the chapter's own ``rule`` (the chapter layer declares
    it, ``rcakit.chapters._checks.RULES``, and the book passes it in) and provider specs (no network).

    Every parameter named ``provider`` or ending in ``_provider`` is parsed by
    ``rcakit.llm.spec.check_spec`` (the backend is not loaded), and
    ``llm_base_url`` by ``rcakit.llm.spec.check_base_url``; a ``scheduler``
    parameter must be ``""`` or a Dask address ``tcp://HOST:PORT``.
    """
    for requirement, needed in chapter.requires.items():
        name, _, wanted = str(requirement).partition("=")
        negated = name.endswith("!")
        name = name.removesuffix("!")
        if (str(params.get(name)) == wanted) == negated:
            continue
        shown = f"{name!r} = {params.get(name)!r}" if negated else f"{name!r} = {wanted!r}"
        for entry in needed:
            other, equals, value = str(entry).partition("=")
            if equals and str(params.get(other)) != value:
                raise RcakitError(
                    f"{chapter.id}: parameter {shown} needs {other!r} = {value!r}, got {params.get(other)!r}"
                )
            if not equals and params.get(other) in UNSET:
                raise RcakitError(
                    f"{chapter.id}: parameter {shown} needs {other!r} to be set, got {params.get(other)!r}"
                )
    if rule is not None:
        try:
            rule(params)
        except RcakitError as err:
            raise RcakitError(f"{chapter.id}: {err}") from None
    from rcakit.llm.spec import check_base_url, check_spec
    from rcakit.parallel import check_scheduler

    for name in provider_parameters(params):
        try:
            check_spec(params[name], param=name)
        except RcakitError as err:
            raise RcakitError(f"{chapter.id}: {err}") from None
    if "llm_base_url" in params:  # '' or an http(s) URL without credentials; no network
        try:
            check_base_url(params["llm_base_url"])
        except RcakitError as err:
            raise RcakitError(f"{chapter.id}: {err}") from None
    if "scheduler" in params:  # '' or tcp://HOST:PORT (rcakit.parallel); no network
        try:
            check_scheduler(params["scheduler"])
        except RcakitError as err:
            raise RcakitError(f"{chapter.id}: {err}") from None


def provider_parameters(params: Mapping[str, Any]) -> list[str]:
    """The names of the parameters that choose a language model."""
    return [n for n in params if n == "provider" or n.endswith("_provider")]


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to one readable line, however large the value."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a 5,000-digit int, a deeply nested list
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def validate(chapter_id: str, overrides: Mapping[str, Any], rule: Rule | None = None) -> dict[str, Any]:
    """The full parameter set of a run: defaults updated by checked ``overrides``, and ``rule`` (the
    chapter's own, if it has one) checked on them."""
    chapter = get(chapter_id)
    params = chapter.defaults
    for name, value in overrides.items():
        params[name] = coerce(chapter, name, value)
    check_rules(chapter, params, rule)
    return params


def check_params(chapter_id: str, namespace: Mapping[str, Any], rule: Rule | None = None) -> ChapterParams:
    """Inside a chapter: validate the parameter values the kernel holds.

    Returns them as the chapter's frozen parameters class
    (:func:`rcakit.params.params_class`, e.g. ``CarShapleyParams``): fields in
    the cell's order, typed by the defaults, ``Literal`` where the front matter
    lists choices; it reads as a mapping too, for ``rcakit.results.record``.
    Raises a one-line ``RcakitError`` on a wrong type or an out-of-range value, or when ``rule`` (the
    chapter's own, which ``rcakit.book.check_params`` passes) refuses them.
    """
    chapter = get(chapter_id)
    values = {name: coerce(chapter, name, namespace[name]) for name in chapter.parameters}
    check_rules(chapter, values, rule)
    return params_class(chapter_id, chapter.defaults, chapter.choices)(**values)
