"""Numbers for a chapter's prose: every value the text quotes is glued from the computation.

myst-nb's ``glue`` stores a value in the executed notebook and the text reads it
back with ``{glue:text}`name:.3f```, so no number in prose is typed by hand.
``glue_all`` glues every leaf of a nested mapping under flattened names, as
plain Python numbers (numpy scalars would render as ``np.float64(...)``).

Used in the chapters: every chapter with prose numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from rcakit.results import to_jsonable


def flatten(values: Mapping, prefix: str = "") -> dict:
    """A nested mapping as one level, keys joined by ``_`` (``{"acc": {"x": {"1": v}}}`` -> ``{"acc_x_1": v}``)."""
    out = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_"))
        else:
            out[name] = value
    return out


def glue_all(values: Mapping, prefix: str = "") -> None:
    """Glue every leaf of ``values`` (flattened, as plain Python values) for the prose, displaying nothing."""
    from myst_nb import glue

    for name, value in flatten(to_jsonable(values), prefix).items():
        glue(name, value, display=False)
