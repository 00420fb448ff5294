"""The book machinery: from a chapter's MyST notebook to an executed page and the HTML.

- :mod:`rcakit.book.registry`: the chapters, their parameters cells and what a
  valid value is (``check_params`` is what a chapter's first code cell calls);
- :mod:`rcakit.book.inputs`: the data files, plug-ins and servers a parameter
  names, each checked before a kernel starts;
- :mod:`rcakit.book.runner`, :mod:`rcakit.book.kernel`,
  :mod:`rcakit.book.staging`: papermill in a kernel, its deadline and signals,
  and writes that only land when a chapter finished;
- :mod:`rcakit.book.provenance`: whether an executed page is stale;
- :mod:`rcakit.book.build`: Jupyter Book over the executed pages;
- :mod:`rcakit.book.cli`: the ``rcakit`` command.

The science packages (``scm``, ``repair``, ``rag``, ``trajectories``,
``attribution``) import nothing from here, and nothing here imports them: what a
chapter's inputs and rules need from the science is declared in the chapter
layer (``rcakit.chapters._checks``). The chapters import only
:func:`check_params`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rcakit.book import registry
from rcakit.params import ChapterParams


def check_params(chapter_id: str, namespace: Mapping[str, Any]) -> ChapterParams:
    """Inside a chapter: its parameters checked as the registry checks them
    (:func:`rcakit.book.registry.check_params`), with the chapter's own rule between them
    (``rcakit.chapters._checks.RULES``), so that a run started without the ``rcakit`` command is held to it too."""
    from rcakit.chapters._checks import RULES

    return registry.check_params(chapter_id, namespace, RULES.get(chapter_id))


__all__ = ["check_params"]
