"""ASCII math a reader should see typeset, and where the book's sources hide it without a browser.

:data:`ASCII_MATH` is the one pattern of both checks: the browser test applies
it to what a built page shows outside code and typeset math; :func:`claim_texts`
and :func:`notebook_prose` give it the same text before a build, from the claim
texts and notes of ``data/claims.yaml`` (outside their ``$…$`` math) and from the
Markdown prose of the chapter notebooks (outside code, math, glue and roles).
"""

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

# phi_0, q^2, v(empty), <=, >=, C(n,2), D_h, sum |effects| and the like.
ASCII_MATH = re.compile(
    r"\b(?:phi|Delta|theta|gamma|tau|pi)_\w|\b[A-Za-z]_[A-Za-z0-9]\b|\w\^\d|\bv\(empty|<=|>=|\bC\(\s*\w+\s*,\s*\d\s*\)"
    r"|\bsum\s*\|"
)
# A table cell that is only a bin label (``<=100``, ``10 < n <= 50``), perhaps with its size (``<=100 (n=71)``):
# allowed.
_SIZE = r"(?:\s*\(n\s*=\s*[\d,]+\))?\s*$"
BIN_LABEL = re.compile(
    r"^\s*(?:<=|>=|<|>)\s*[\d,.]+" + _SIZE + r"|^\s*[\d,.]+\s*(?:<=|<)\s*\w+\s*(?:<=|<)\s*[\d,.]+" + _SIZE
)

INLINE_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.DOTALL)
FENCE = re.compile(r"^(`{3,}|~{3,})")
# What MyST renders as code, math, a glued value or a link target rather than prose.
NOT_PROSE = re.compile(
    r"\{(?:glue|glue:\w+|math|eq|ref|numref|doc|download|term|cite|py:\w+)\}`[^`]*`"  # roles
    r"|`[^`\n]+`"  # inline code
    r"|\]\([^)\s]*\)"  # a link's target
    r"|<!--.*?-->"  # comments
    r"|^\([\w-]+\)=\s*$",  # labels
    re.DOTALL | re.MULTILINE,
)


def ascii_math(text: str) -> list[str]:
    """The ASCII math in ``text``, each match with a little context."""
    return [text[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ") for m in ASCII_MATH.finditer(text)]


def outside_math(text: str) -> str:
    """``text`` without its ``$…$`` and ``$$…$$`` math."""
    return INLINE_MATH.sub(" ", text)


def claim_texts(path: Path) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every text of ``data/claims.yaml`` a page shows: each chapter's paper line and
    ``why``, each claim's text and note."""
    ledger = yaml.safe_load(path.read_text(encoding="utf-8"))
    for chapter, entry in ledger.items():
        for field in ("paper", "why"):
            if isinstance(entry.get(field), str):
                yield f"{chapter}.{field}", entry[field]
        for i, claim in enumerate(entry.get("claims") or []):
            for field in ("claim", "note"):
                if claim.get(field):
                    yield f"{chapter}.claims[{i}].{field}", str(claim[field])


def notebook_prose(path: Path) -> str:
    """The Markdown prose of a MyST page: its text without front matter, code cells, code and math blocks,
    directive options, and the math, glue, roles, inline code and link targets in its lines (the body of
    an admonition, a figure or any other directive is prose)."""
    kept: list[str] = []
    fences: list[tuple[str, bool]] = []  # (fence, prose inside) from the outermost in
    lines = path.read_text(encoding="utf-8").splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # jupytext's front matter
        start = next((i + 1 for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), len(lines))
    for line in lines[start:]:
        stripped = line.strip()
        opened = FENCE.match(stripped)
        if opened and fences and stripped == fences[-1][0]:
            fences.pop()
            continue
        if opened and stripped != opened.group(1):
            kind = stripped[len(opened.group(1)) :].strip()
            fences.append((opened.group(1), _prose_directive(kind)))
            continue
        if opened:  # a bare fence that closes nothing opens a plain code block
            fences.append((opened.group(1), False))
            continue
        if fences and not all(prose for _, prose in fences):
            continue
        if fences and stripped.startswith(":") and re.match(r"^:[\w-]+:", stripped):
            continue  # a directive's option
        kept.append(line)
    return outside_math(NOT_PROSE.sub(" ", "\n".join(kept)))


def _prose_directive(kind: str) -> bool:
    """Whether a fenced block's body is prose a reader sees (an admonition, a figure's caption, a
    glossary), not code or math."""
    name = kind.split()[0] if kind else ""
    return name.startswith("{") and name.strip("{}") not in {"code-cell", "code-block", "code", "math", "raw"}
