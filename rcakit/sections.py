"""What one chapter section computes, in the one shape every chapter reads.

A chapter is a sequence of sections, one per claim of its paper. Each chapter
has one module it drives (``rcakit/chapters/<stem>.py``, beside its notebook),
and every section that module computes comes back as a :class:`Section`:

- ``table``: the frame the page shows (already formatted for a reader, or a
  raw frame that :meth:`Section.show` formats);
- ``numbers``: what the chapter records in ``results/<chapter>.json``, under
  the keys ``data/claims.yaml`` reads;
- ``facts``: the values the prose quotes, glued under flat names
  (:func:`rcakit.prose.glue_all`);
- ``skipped``: why the section could not run (a missing input, a setting
  outside its scope), or ``None``.

The chapter glues ``section.facts``, shows ``section.table`` and, at the end,
records :func:`collect` of its sections, so no notebook builds a results dict
by hand and every recorded key is named once, in the package.

Used in the chapters: every chapter with a results file.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pandas as pd
from IPython.display import HTML, Markdown

from rcakit import prose, tables

__all__ = ["Section", "collect"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Section:
    """One section's table, recorded numbers, prose facts, and the reason it was skipped (if it was).

    A skipped section has no table, numbers or facts: :meth:`show` then displays
    a note giving the reason, so a notebook needs no ``if`` cell around it.
    """

    table: pd.DataFrame | None = None
    numbers: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    facts: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    skipped: str | None = None
    decimals: int | Mapping[Any, int] = 3
    listing: str | None = None  # Markdown shown in the table's place: a short list where cells would be paragraphs

    def __post_init__(self) -> None:
        if self.skipped is not None and (self.table is not None or self.numbers or self.facts):
            raise ValueError("a skipped section carries no table, numbers or facts")

    @classmethod
    def skip(cls, reason: str) -> Section:
        """A section that could not run, and why (one sentence a reader understands)."""
        if not reason.strip():
            raise ValueError("a skipped section needs a reason")
        return cls(skipped=reason)

    def glue(self, prefix: str = "") -> None:
        """Glue every fact for the prose (flattened, ``prefix`` before each name), displaying nothing."""
        prose.glue_all(self.facts, prefix)

    def show(self) -> Any:
        """The table as a reader sees it (fixed decimals, a dash for "not applicable"), its ``listing`` when it
        has one, or the skip note."""
        if self.skipped is not None:
            return HTML(
                '<div class="admonition note"><p class="admonition-title">Not run</p>'
                f"<p>This section did not run: {html.escape(self.skipped)}</p></div>"
            )
        if self.listing is not None:
            return Markdown(self.listing)
        if self.table is None:
            raise ValueError("this section has no table to show")
        return tables.format_table(self.table, self.decimals)


def collect(*sections: Section) -> dict[str, Any]:
    """The numbers of all ``sections`` merged into one results dict; a value two sections give is an error.

    Sections may nest their numbers under a shared key (several sections of
    one claim under ``interaction``, say): mappings merge key by key, and only
    a leaf given twice is refused, so every recorded key is named once. No
    section's numbers are written into. Skipped sections contribute nothing,
    so a claim that reads their keys is reported "not measured" by
    :func:`rcakit.claims.compare` rather than failing.
    """
    numbers: dict[str, Any] = {}
    for section in sections:
        _merge_into(numbers, section.numbers, "")
    return numbers


def _merge_into(into: dict[str, Any], more: Mapping[str, Any], path: str) -> None:
    for key, value in more.items():
        here = f"{path}{key}"
        if key in into and isinstance(into[key], dict) and isinstance(value, Mapping):
            _merge_into(into[key], value, f"{here}.")
        elif key in into:
            raise ValueError(f"results key {here!r} comes from two sections; name each once")
        else:
            into[key] = _copied(value)


def _copied(value: Any) -> Any:
    """Nested mappings copied as dicts (merging never writes into a section's numbers); leaves as they are."""
    return {k: _copied(v) for k, v in value.items()} if isinstance(value, Mapping) else value
