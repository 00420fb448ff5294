"""Numbers for a chapter's prose: every value the text quotes is glued from the computation.

myst-nb's ``glue`` stores a value in the executed notebook and the text reads it
back with ``{glue:text}`name:.3f```, so no number in prose is typed by hand.
``glue_all`` glues every leaf of a nested mapping under flattened names, as
plain Python numbers (numpy scalars would render as ``np.float64(...)``).
A value that is undefined at some valid parameter (a depth with no failed case
to count) is glued as text by :func:`number`, :func:`percent` or
:func:`by_depth`, since ``{glue:text}`name:.2f``` cannot format a missing value.

Used in the chapters: every chapter with prose numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rcakit.results import to_jsonable
from rcakit.tables import is_missing


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as one level, keys joined by ``_`` (``{"acc": {"x": {"1": v}}}`` -> ``{"acc_x_1": v}``)."""
    out = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_"))
        else:
            out[name] = value
    return out


NO_CASE = "— (no such case)"


def number(value: float | None, decimals: int = 2) -> str:
    """A value as prose text to ``decimals`` places (``0.5`` -> ``"0.50"``), or :data:`NO_CASE` when undefined
    (``None`` or ``NaN``: a mean over no case)."""
    return NO_CASE if is_missing(value) else f"{value:.{decimals}f}"


def percent(value: float | None, decimals: int = 1) -> str:
    """A share as prose text (``0.97`` -> ``"97.0%"``), or :data:`NO_CASE` when it is undefined (``None`` or
    ``NaN``)."""
    return NO_CASE if is_missing(value) else f"{value:.{decimals}%}"


def by_depth(
    values: Mapping[str, float | None], depths: Iterable[int], text: Callable[[float | None], str] = number
) -> dict[str, str]:
    """``{depth: text}`` for every one of ``depths`` (keys ``"1"``, ``"2"``, ...) through ``text``
    (:func:`number` or :func:`percent`): a depth absent from ``values`` or None there had no case to count
    and reads :data:`NO_CASE`."""
    return {str(d): text(values.get(str(d))) for d in depths}


def glue_all(values: Mapping[str, Any], prefix: str = "") -> None:
    """Glue every leaf of ``values`` (flattened, as plain Python values) for the prose, displaying nothing."""
    from myst_nb import glue

    for name, value in flatten(to_jsonable(values), prefix).items():
        glue(name, value, display=False)
