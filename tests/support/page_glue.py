"""What a strict book build would say about an executed page's glued prose, without building the book.

``problems(notebook)`` lists every ``{glue:...}`` reference in the page's
markdown whose name was not glued, or whose value myst-nb cannot format with
the reference's format spec (a ``None`` read as ``:.2f``): exactly the
warnings that fail ``jupyter-book build -W``. The seeds sweep runs it on every
run, so a seed whose page would not build fails there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from myst_nb.core.variables import format_plain_text

REFERENCE = re.compile(r"\{glue(?::(\w+))?\}`([^`]+)`")


def glued(notebook: dict) -> dict[str, dict]:
    """Glued name -> its output data, mime prefix removed."""
    out = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            scrap = output.get("metadata", {}).get("scrapbook")
            if scrap:
                prefix = scrap.get("mime_prefix", "")
                out[scrap["name"]] = {k.removeprefix(prefix): v for k, v in output.get("data", {}).items()}
    return out


def problems(path: Path) -> list[str]:
    """One line per glue reference that a strict build would warn about."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    values = glued(notebook)
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for kind, reference in REFERENCE.findall("".join(cell["source"])):
            name, _, spec = reference.partition(":")
            if name not in values:
                found.append(f"{path.name}: {{glue:{kind}}}`{reference}`: nothing glued under {name!r}")
            elif kind == "text" and spec:
                try:
                    format_plain_text(values[name].get("text/plain", ""), spec)
                except (TypeError, ValueError) as exc:
                    found.append(f"{path.name}: {{glue:text}}`{reference}`: {exc}")
    return found
