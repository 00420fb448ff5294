"""What a claim's chapter section needs, and why a claim is not measured.

A chapter's optional inputs are its data-set parameters and its language-model
(provider) parameters (``rcakit.book.registry``). The runner keeps or drops cells by
their tags before a kernel starts: a ``needs-<param>`` cell runs only when that
input is present, a ``missing-<param>`` cell stands in for it when absent (see
CONTRIBUTING.md). A claim whose section holds such cells computes its number
only when the input is there; when the number is missing, :func:`why_missing`
says which input the section waited for, so "not measured" is never read as
disagreeing.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def input_parameters(chapter_id: str) -> dict[str, str]:
    """The chapter's optional inputs: parameter name -> ``"data"`` (a data set) or ``"model"`` (a provider)."""
    from rcakit.book import registry

    if chapter_id not in registry.PAGES:
        return {}
    chapter = registry.get(chapter_id)
    found = {name: "data" for name, kind in chapter.paths.items() if kind == "data"}
    found.update({name: "model" for name in registry.provider_parameters(chapter.parameters)})
    return found


def section_inputs(chapter_id: str) -> dict[str, list[str]]:
    """Per ``##`` heading of the chapter, the parameters its cells are tagged as needing.

    The tags are the runner's (``needs-<param>``, ``missing-<param>``): a
    section with such cells computes something only when that input is there.
    """
    from rcakit.book import registry

    path = registry.notebook_path(chapter_id)
    return _section_inputs(path, path.stat().st_mtime) if path.exists() else {}


@functools.lru_cache(maxsize=16)
def _section_inputs(path: Path, mtime: float) -> dict[str, list[str]]:
    import jupytext

    found: dict[str, list[str]] = {}
    current = None
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    current = line[3:].strip()
                    found.setdefault(current, [])
        for tag in cell.metadata.get("tags", []):
            kind, _, name = tag.partition("-")
            if kind in ("needs", "missing") and current is not None and name not in found[current]:
                found[current].append(name)
    return found


def _needs(
    claim: Mapping[str, Any], inputs: Mapping[str, str], sections: Mapping[str, list[str]], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The inputs (parameter -> the data set it names, or None) the claim's section needs.

    From the claim's ``needs`` or its ``when`` on an input; else from the tags
    of the cells of its section, the data sets first (a section on a data set
    may add a model), each named by the parameter's default.
    """
    named = claim.get("needs", [])
    needs: dict[str, Any] = {name: None for name in ([named] if isinstance(named, str) else named)}
    needs.update({k: v for k, v in claim.get("when", {}).items() if k in inputs})
    if needs:
        return needs
    tagged = [name for name in sections.get(str(claim.get("section")), []) if name in inputs]
    data = [name for name in tagged if inputs[name] == "data"]  # a section on a data set may add a model
    for name in data or tagged:
        default = defaults.get(name)
        needs[name] = default if inputs[name] == "data" and default not in (None, "", "none") else None
    return needs


def _missing_words(needs: Mapping[str, Any], inputs: Mapping[str, str], measured: Mapping[str, Any]) -> str:
    """Why a number is not there, in a few words."""
    parts = []
    for name, value in needs.items():
        if inputs.get(name) == "model":
            parts.append(f"needs a language model (parameter {name})")
        else:
            what = f"the data set {value}" if isinstance(value, str) else "its data"
            parts.append(f"needs {what} (parameter {name})")
    if parts:
        return "; ".join(parts)
    return "the chapter has not run" if not measured else "not recorded by this run"


def why_missing(
    chapter_id: str, claim: Mapping[str, Any], inputs: Mapping[str, str], measured: Mapping[str, Any]
) -> str:
    """Why the claim's number was not recorded: the input its section needs, or that the chapter has not run."""
    from rcakit.book import registry

    defaults = registry.get(chapter_id).defaults if chapter_id in registry.PAGES else {}
    return _missing_words(_needs(claim, inputs, section_inputs(chapter_id), defaults), inputs, measured)
