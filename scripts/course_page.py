"""Fill the measured table of the course page, ``book/course.md``: each chapter's reading and run time.

    python scripts/course_page.py [--check]

Reading time is the words of a chapter's prose at 200 words a minute: the
Markdown of ``notebooks/<stem>.md`` without its front matter, code cells,
display math, directives' options and comments (a glued number counts as one
word). Run time is the README's measured table ("run time, quick / defaults",
one run of ``benchmarks/bench_book.py``). The table sits between two marker
comments of the page; everything else on it is prose. ``--check`` exits 1 when
the page's table is not what this script would write (a test runs it).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "course.md"
BEGIN, END = "<!-- course-times: begin (scripts/course_page.py) -->", "<!-- course-times: end -->"
WORDS_PER_MINUTE = 200
CHAPTERS = [  # (chapter id, how the course page names it)
    ("primer", "1 A primer: attribution by intervention"),
    ("car-shapley", "2 Shapley efficiency on SCMs (CAR)"),
    ("gcjr-ablations", "3 Minimal repair families (GCJR)"),
    ("coverage-collapse", "4 Coverage collapse (AgenticRAG-FP)"),
    ("content-corruption", "5 Certified content corruption (AgenticRAG-FP)"),
    ("longrca-strata", "6 Long trajectories by stratum (LongRCA)"),
    ("attribution-families", "7 Every attribution family on the same faults"),
]
WORD = re.compile(r"[A-Za-z0-9][\w'’-]*")
FENCE = re.compile(r"^(`{3,}|:{3,})")


def prose(markdown: str) -> str:
    """The text a reader reads of a MyST chapter: no front matter, code cells, display math or options."""
    body = markdown.split("\n---\n", 1)[1] if markdown.startswith("---\n") else markdown
    kept, code, math_block = [], None, False
    for line in body.splitlines():
        stripped = line.strip()
        fence = FENCE.match(stripped)
        if code is not None:
            if stripped == code:
                code = None
            continue
        if fence and "code-cell" in stripped:
            code = fence.group(1)
            continue
        if stripped.startswith("$$"):
            math_block = not math_block if stripped == "$$" or not stripped.endswith("$$") else math_block
            continue
        if math_block or fence or stripped.startswith((":", "%", "+++", "(")):
            continue
        kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"\{[a-z:]+\}`([^`<]*)(?:<[^>]*>)?`", r"\1", text)  # {term}`x <y>` reads x
    return re.sub(r"\$[^$]+\$", " x ", text)  # inline math reads as one word


def reading_minutes(markdown: str) -> int:
    """Minutes to read ``markdown``'s prose at :data:`WORDS_PER_MINUTE`, rounded up."""
    return math.ceil(len(WORD.findall(prose(markdown))) / WORDS_PER_MINUTE)


def run_times(readme: str) -> dict[str, str]:
    """The README's "run time, quick / defaults" column, by chapter id."""
    rows = re.findall(r"^\| `([a-z-]+)` \|.*\| ([\d.]+ s / [\d.]+ s) \|$", readme, flags=re.MULTILINE)
    return dict(rows)


def table() -> str:
    """The page's measured table, in Markdown."""
    runs = run_times((ROOT / "README.md").read_text(encoding="utf-8"))
    lines = [
        "| chapter | words of prose | reading time | run time, quick / defaults |",
        "| --- | --- | --- | --- |",
    ]
    for cid, name in CHAPTERS:
        source = (ROOT / "notebooks" / f"{cid.replace('-', '_')}.md").read_text(encoding="utf-8")
        words = len(WORD.findall(prose(source)))
        lines.append(f"| {name} | {words:,} | {reading_minutes(source)} min | {runs.get(cid, '—')} |")
    return "\n".join(lines)


def page(current: str) -> str:
    """``current`` with the text between the markers replaced by :func:`table`."""
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    current = PAGE.read_text(encoding="utf-8")
    wanted = page(current)
    if "--check" in argv:
        if wanted != current:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/course_page.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        from rcakit.io import atomic_write

        atomic_write(PAGE, wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
