"""A chapter's parameters as a typed, frozen value: one class per chapter, made from its parameters cell.

The parameters cell stays the one place a default is written. The registry
(:mod:`rcakit.book.registry`) reads it and :func:`params_class` turns it into a
frozen dataclass: one field per line of the cell, in the cell's order, typed by
its default (``int``, ``float``, ``bool``, ``str``, ``list[int]``, ...; a
parameter whose default is ``None`` is ``str | None``), and
a ``Literal`` of the allowed values where the front matter lists ``choices``.
:func:`rcakit.book.check_params` returns an instance: the checked values, read
as attributes (``params.seed``) or, since the class is also a read-only
mapping, as ``params["seed"]``, which is how :func:`rcakit.results.record`
writes them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Literal

__all__ = ["ChapterParams", "field_type", "params_class"]


@dataclass(frozen=True)
class ChapterParams(Mapping[str, Any]):
    """The base of every chapter's parameters class: frozen, typed fields that also read as a mapping."""

    def __getitem__(self, name: str) -> Any:
        if name not in self._names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def field_type(default: Any, choices: Sequence[Any] | None = None) -> Any:
    """The type of a parameter, from its default and its allowed values (``choices``)."""
    if choices:
        return Literal[tuple(choices)]  # type: ignore[valid-type]
    if default is None:
        return str | None  # providers, base URLs, optional files: None means "not set"
    if isinstance(default, list):
        element = type(default[0]) if default else Any
        return list[element]
    return type(default)


def _default(value: Any) -> Any:
    """A dataclass default: a list gets a factory, so no two instances share one."""
    if isinstance(value, list):
        return field(default_factory=functools.partial(list, value))
    return field(default=value)


@functools.cache
def _cached_class(name: str, spec: tuple[tuple[str, Any, Any], ...]) -> type[ChapterParams]:
    specs = [(n, t, _default(list(d) if isinstance(d, tuple) else d)) for n, t, d in spec]
    cls = make_dataclass(name, specs, bases=(ChapterParams,), frozen=True)
    cls.__module__ = __name__
    return cls


def params_class(
    chapter_id: str, defaults: Mapping[str, Any], choices: Mapping[str, Sequence[Any]] | None = None
) -> type[ChapterParams]:
    """The frozen dataclass of a chapter's parameters: ``car-shapley`` -> ``CarShapleyParams``.

    ``defaults`` are the parameters cell's values in its order; ``choices`` the
    front matter's allowed values. The same inputs give the same class.
    """
    choices = choices or {}
    name = "".join(part.capitalize() for part in chapter_id.split("-")) + "Params"
    spec = tuple(
        (n, field_type(d, choices.get(n)), tuple(d) if isinstance(d, list) else d) for n, d in defaults.items()
    )
    return _cached_class(name, spec)
