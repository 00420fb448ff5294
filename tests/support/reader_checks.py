"""What a reader of the book must never meet in a table, a figure or a glossary term (issue 31).

One extraction in the page (:data:`READER_JS`) and pure functions over it, so
``tests/chapters/test_browser.py`` runs them on every built page and shows on a planted
page that each one fails when it should. A page fails when:

- a table is wider than the text column (it would scroll or run under the sidebar);
- a column of counts shows a fractional number, or a column of whole numbers
  prints them with decimals (``84.000``);
- a table header or row label is a snake_case identifier (``propagation_aware``);
- it shows a second parameters cell (papermill's injected one);
- a figure's smallest text is under :data:`MIN_TEXT_PX` pixels as the page
  shows it at 1280 px, or a figure does not record its smallest text
  (:data:`rcakit.plotting.SMALLEST_TEXT_KEY`, written by every chapter figure);
- the first use of a glossary term in a chapter's prose is not a link to the glossary (a term
  inside a link to another page, a heading, a caption, code or a table does not count as a use).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from PIL import Image

from rcakit.plotting import SMALLEST_TEXT_KEY
from rcakit.tables import RATE_WORDS, names_a_rate

MIN_TEXT_PX = 9.0
READER_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const article = main.querySelector('.bd-article') || main;
  const style = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const textOf = cell => {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll('mjx-container, .MathJax, script').forEach(e => e.replaceWith('[math]'));
    return copy.textContent.replace(/\\s+/g, ' ').trim();
  };
  const grid = section => {  // the rows of a thead or tbody as a grid, rowspan and colspan filled in
    const out = [];
    [...(section ? section.rows : [])].forEach((tr, r) => {
      out[r] = out[r] || [];
      let c = 0;
      for (const cell of tr.cells) {
        while (out[r][c]) c++;
        const text = textOf(cell), th = cell.tagName === 'TH';
        for (let dr = 0; dr < cell.rowSpan; dr++)
          for (let dc = 0; dc < cell.colSpan; dc++)
            (out[r + dr] = out[r + dr] || [])[c + dc] = {text, th, origin: dr === 0 && dc === 0};
        c += cell.colSpan;
      }
    });
    return out.map(row => [...row].map(x => x || null));
  };
  const tables = [...main.querySelectorAll('table')].map(t => ({
    width: Math.max(t.scrollWidth, t.getBoundingClientRect().width),
    overflow: t.scrollWidth > t.clientWidth + 1,
    head: grid(t.tHead),
    body: [].concat(...[...t.tBodies].map(grid)),
  }));
  const images = [...main.querySelectorAll('img')].map(img => ({
    src: img.src, width: img.getBoundingClientRect().width, natural: img.naturalWidth,
    output: !!img.closest('.cell_output, .output'),
  }));
  const skip = 'h1, h2, h3, h4, h5, h6, pre, code, .cell_input, .cell_output, table, mjx-container, script, '
    + 'style, .MathJax, figcaption, .verdict, dl.py, .headerlink, nav, .admonition-title, .toctree-wrapper, '
    + '.prev-next-area, footer, a:not([href*="glossary.html#term-"])';  // a link elsewhere cannot be a term's
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const segments = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    segments.push([node.textContent, !!parent.closest('a[href*="glossary.html#term-"]')]);
  }
  const parameters = main.querySelectorAll('.cell.tag_parameters, .cell.tag_injected-parameters').length;
  return {column, tables, images, segments, parameters};
}"""

SNAKE_LABEL = re.compile(r"(?<![\\\w])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w])")
NUMBER = re.compile(r"[-−]?[\d,]+(?:\.\d+)?")
WHOLE_WITH_DECIMALS = re.compile(r"[-−]?[\d,]+\.0+")
SETTING = re.compile(r"\b\w+\s*=\s*[\d.,]+")  # "n=386" in a header names a stratum's size, not its values
COUNT_WORDS = {"n", "count", "counts", "cases", "calls", "replays", "rollouts", "runs", "seeds", "trajectories"}
COUNT_WORDS |= {"questions", "steps", "pairs", "events", "probes", "eligible", "skipped"}


def is_count_header(header: str) -> bool:
    """A header that names a count: a count noun ("failed n", "replays") and no word of a rate or mean."""
    words = set(re.findall(r"[a-z%0-9]+", SETTING.sub(" ", header.lower())))
    return bool(words & COUNT_WORDS) and not words & RATE_WORDS


def _header_of(head: list[list[dict | None]], column: int) -> str:
    texts = [row[column]["text"] for row in head if column < len(row) and row[column] and row[column]["text"]]
    return " / ".join(dict.fromkeys(texts))


def table_problems(tables: list[dict], column: float) -> list[str]:
    """Wide tables, counts with fractions, and snake_case headers or row labels."""
    found = []
    for table in tables:
        head, body = table["head"], table["body"]
        headers = [_header_of(head, j) for j in range(max((len(r) for r in head + body), default=0))]
        if table["width"] > column + 1 or table["overflow"]:
            found.append(f"a table wider than the text column ({table['width']:.0f} > {column:.0f} px): {headers}")
        labels = [c["text"] for row in head + body for c in row if c and c["th"] and c["origin"]]
        found += [f"a snake_case table label: {label!r}" for label in labels if SNAKE_LABEL.search(label)]
        for j, header in enumerate(headers):
            values = [row[j]["text"] for row in body if j < len(row) and row[j] and not row[j]["th"]]
            numbers = [v for v in values if NUMBER.fullmatch(v)]
            fractional = [v for v in numbers if "." in v]
            whole = numbers and all(WHOLE_WITH_DECIMALS.fullmatch(v) for v in numbers)
            whole_count = whole and not names_a_rate(header) and any(abs(float(_plain(v))) >= 2 for v in numbers)
            if fractional and (is_count_header(header) or whole_count):
                found.append(f"a count with a fractional part in column {header!r}: {fractional[0]!r}")
    return found


def _plain(number: str) -> str:
    return number.replace(",", "").replace("−", "-")


def figure_problems(images: list[dict]) -> list[str]:
    """Figures whose smallest text, as shown, is under :data:`MIN_TEXT_PX`, or that do not record it."""
    found = []
    for image in images:
        url = urlparse(image["src"])
        path = Path(unquote(url.path))
        if url.scheme != "file" or path.suffix.lower() != ".png" or not image["output"]:
            continue
        with Image.open(path) as png:
            recorded = png.info.get(SMALLEST_TEXT_KEY)
        if recorded is None:
            found.append(f"a figure that does not record its smallest text: {path.name}")
            continue
        shown = float(recorded) * image["width"] / (image["natural"] / 2)  # a retina PNG holds 2x its CSS pixels
        if shown < MIN_TEXT_PX:
            found.append(f"figure text of {shown:.1f} px (under {MIN_TEXT_PX:g}): {path.name}")
    return found


def glossary_terms(glossary: Path) -> list[str]:
    """The terms of the book's glossary page: the unindented lines inside its ``{glossary}`` blocks."""
    terms, inside = [], False
    for line in glossary.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = line.startswith("```{glossary}")
        elif inside and line.strip() and not line[0].isspace():
            terms.append(line.strip())
    return terms


def term_pattern(term: str) -> re.Pattern[str]:
    """A term and its plural as a whole word; a term with a capital letter only in its own case."""
    flags = 0 if any(ch.isupper() for ch in term) else re.IGNORECASE
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?:s|es)?(?!\w)", flags)


def glossary_problems(segments: list[list], terms: list[str]) -> list[str]:
    """Each glossary term whose first use in the prose is not a link to the glossary."""
    text, starts, linked = "", [], []
    for segment, is_link in segments:
        starts.append(len(text))
        linked.append(is_link)
        text += segment
    found = []
    for term in terms:
        match = term_pattern(term).search(text)
        if match is None:
            continue
        at = max(i for i, start in enumerate(starts) if start <= match.start())
        if not linked[at]:
            context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
            found.append(f"the first use of {term!r} is not a glossary link: {context!r}")
    return found


def reader_problems(seen: dict, terms: list[str] | None) -> list[str]:
    """Every reader-grade defect of a page from :data:`READER_JS`; ``terms`` None skips the glossary check."""
    found = table_problems(seen["tables"], seen["column"]) + figure_problems(seen["images"])
    if seen["parameters"] > 1:
        found.append(f"{seen['parameters']} parameters cells (the injected one must be removed)")
    return found + (glossary_problems(seen["segments"], terms) if terms is not None else [])
