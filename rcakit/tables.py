"""Tables as a reader sees them: fixed decimals, a dash for "not applicable", every row and column.

A chapter shows a computed table with :func:`format_table` instead of the bare
DataFrame. pandas' own display truncates long cells with "…", elides rows past
``display.max_rows``, prints ``NaN`` for a missing value, mixes ``0.008772``
with ``0.58`` in one column and adds a ``Name: …, dtype: …`` footer under a
Series. Here every float in a column gets the same number of decimals, a
column of whole numbers prints as integers with thousands separators, a
boolean as yes or no, a snake_case header or row label in words, a missing value (``None``,
``NaN``) prints as "—", and nothing is cut.

Used in the chapters: every table a chapter shows, and the closing page.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

DASH = "—"  # shown for a value that does not apply or was not measured


def is_missing(value: Any) -> bool:
    """``None``, ``NaN`` or ``pd.NA``: a value that does not apply."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(float(value))


def format_value(value: Any, decimals: int = 3, *, counts: bool = False) -> str:
    """One cell: a float with ``decimals`` decimals, an integer with thousands separators, a boolean as
    yes or no, a list element-wise, missing as "—". With ``counts`` (a column that mixes kinds of value),
    a whole float above 1 is a count and prints as an integer: ``12.0`` as 12, never 12.000."""
    if is_missing(value):
        return DASH
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        number = float(value)
        if counts and number.is_integer() and 1 < abs(number) < 1e15:
            return f"{int(number):,}"
        return f"{number:,.{decimals}f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v, decimals, counts=counts) for v in value) + "]"
    return str(value)


SNAKE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")
# Kept as written: math between \( … \) or $ … $, and HTML tags (a link's href names a file, underscores
# and all: ``<a href="car_shapley.html">`` must not become a dead ``car shapley.html``).
VERBATIM = re.compile(r"(\\\(.*?\\\)|\$[^$]*\$|<[^<>]*>)")


def column_label(label: Any) -> Any:
    """A label in words: ``failed_n`` reads "failed n" and ``oracle_gold_hop (oracle)`` "oracle gold hop
    (oracle)"; math between ``\\(`` and ``\\)`` (typeset in the page) and HTML tags (a link's target)
    keep their underscores."""
    if not isinstance(label, str):
        return label
    parts = VERBATIM.split(label)
    return "".join(part if i % 2 else SNAKE.sub(" ", part) for i, part in enumerate(parts))


def _words(index: pd.Index) -> pd.Index:
    """Every label of an index, and its names, in words (each level of a MultiIndex)."""
    if isinstance(index, pd.MultiIndex):
        levels = [list(_words(level)) for level in index.levels]
        return index.set_levels(levels).set_names([column_label(n) for n in index.names])
    if pd.api.types.is_numeric_dtype(index.dtype) or pd.api.types.is_bool_dtype(index.dtype):
        return index.rename(column_label(index.name))
    return pd.Index([column_label(v) for v in index], name=column_label(index.name))


def _whole(column: pd.Series) -> bool:
    """A numeric column whose every present value is a whole number (counts stored as floats)."""
    present = [v for v in column if not is_missing(v)]
    return bool(present) and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) and float(v).is_integer() and abs(float(v)) < 1e15
        for v in present
    )


# Words of a header that names a rate, share or mean: its column keeps its decimals even when every value
# is whole (an accuracy of 1 prints 1.00 beside 0.75, not 1).
RATE_WORDS = frozenset(
    {"mean", "per", "share", "shares", "rate", "ratio", "average", "accuracy", "recovery", "median", "fraction"}
    | {"coverage", "std", "rmse", "error", "%", "p90", "absorbed", "resisted", "derailed", "jaccard", "phi"}
)


def names_a_rate(label: Any) -> bool:
    """A header (or any level of a grouped header) with a word of :data:`RATE_WORDS`."""
    parts = label if isinstance(label, tuple) else (label,)
    words = {w for part in parts for w in re.findall(r"[a-z%]+", str(part).lower())}
    return bool(words & RATE_WORDS)


def format_column(column: pd.Series, decimals: int = 3) -> pd.Series:
    """A column as text, one rule for all its cells: whole-number floats print as integers, unless the
    column's header names a rate (:func:`names_a_rate`)."""
    if pd.api.types.is_float_dtype(column.dtype) and _whole(column) and not names_a_rate(column.name):
        return column.map(lambda v: format_value(v, 0))
    mixed = column.dtype == object
    return column.map(lambda v: format_value(v, decimals, counts=mixed)).astype(object)


@dataclass(frozen=True)
class Table:
    """A formatted table: text cells that render in full as HTML (in a notebook) and as plain text."""

    frame: pd.DataFrame
    index: bool = True
    escape: bool = True

    def to_html(self) -> str:
        """Every row and column; the cells are escaped unless the table was made with ``escape=False``."""
        return self.frame.to_html(
            index=self.index,
            border=0,
            escape=self.escape,
            max_rows=None,
            max_cols=None,
            classes="rcakit-table mathjax_process",
            na_rep=DASH,
        )

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", None, "display.width", 10_000):
            return self.frame.to_string(index=self.index, max_rows=None, max_cols=None, na_rep=DASH)


def _decimals_of(decimals: int | Mapping[Any, int], column: Any) -> int:
    return decimals.get(column, 3) if isinstance(decimals, Mapping) else decimals


def format_table(
    data: pd.DataFrame | pd.Series,
    decimals: int | Mapping[Any, int] = 3,
    index: bool | None = None,
    escape: bool = True,
) -> Table:
    """``data`` with every cell formatted for reading, ready to show in a notebook.

    ``decimals``: decimals of every float, or per column (others get 3).
    ``index``: show the row labels; by default only when they are not a plain
    0, 1, 2, … range. ``escape=False`` keeps HTML in the cells (links).
    A Series becomes a one-column table named after it: no dtype footer.
    """
    frame = data.to_frame(name=data.name if data.name is not None else "value") if isinstance(data, pd.Series) else data
    text = pd.DataFrame(
        {c: format_column(frame[c], _decimals_of(decimals, c)) for c in frame.columns}, index=frame.index
    )
    text.columns = _words(frame.columns)
    text.index = _words(_format_index(frame.index))
    if index is None:
        index = not isinstance(frame.index, pd.RangeIndex)
    return Table(text, index=index, escape=escape)


def _format_index(index: pd.Index) -> pd.Index:
    """Row labels with the cells' rules (a float label 0.5 stays 0.5, never 0.500000)."""
    if isinstance(index, pd.MultiIndex) or not pd.api.types.is_float_dtype(index.dtype):
        return index
    return pd.Index(
        [format_value(v, 3).rstrip("0").rstrip(".") if not is_missing(v) else DASH for v in index], name=index.name
    )
