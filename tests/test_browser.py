"""The built quick book in a headless browser, opened from file:// with the network cut off.

On the primer and one paper chapter: the math is typeset by the MathJax copy the
book serves (no raw ``$`` left in the prose), every figure has a caption, an
exercise's solution stays hidden until its toggle is clicked, and no request
leaves the machine. Screenshots land in ``<book>/screenshots`` for a reviewer.
Without Debian's ``chromium`` (``make test`` installs it where apt is
available) the browser tests skip and print why. A last test needs no browser:
no built page references a remote script or stylesheet.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

PAGES = ["primer", "car_shapley"]  # the primer and one paper chapter
LAUNCH_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")

# The prose of a page: its main text without code, outputs, typeset math and scripts.
PROSE_JS = """() => {
  const main = document.querySelector('main').cloneNode(true);
  main.querySelectorAll('pre, code, .cell_input, .cell_output, mjx-container, script, style, .MathJax')
      .forEach(e => e.remove());
  return main.textContent;
}"""
CAPTIONS_JS = """() => {
  const images = [...document.querySelectorAll('main .cell_output img, main figure img')];
  return images.map(img => {
    const figure = img.closest('figure');
    const caption = figure && figure.querySelector('figcaption');
    return caption ? caption.textContent.trim() : '';
  });
}"""


def chromium() -> str | None:
    """Debian's chromium; installed with apt first when it is missing and apt is there."""
    found = shutil.which("chromium") or (Path("/usr/bin/chromium").exists() and "/usr/bin/chromium")
    if not found and shutil.which("apt-get"):
        subprocess.run("apt-get update -qq && apt-get install -y -qq chromium", shell=True,
                       capture_output=True, timeout=900)
        found = shutil.which("chromium")
    return found or None


def skip(reason: str):
    print(f"SKIPPED browser tests: {reason}")  # shown with -s, and in the -ra summary below
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    path = chromium()
    if path is None:
        skip("no chromium and no apt-get to install it (Debian: apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip("the playwright package is missing (pip install -e '.[dev]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=LAUNCH_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser, quick_book, tmp_path):
    """Open a built page with every non-local request aborted and recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    leaks: list[str] = []

    def route(route):
        if route.request.url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            leaks.append(route.request.url)
            route.abort()

    context.route("**/*", route)

    def opener(stem: str):
        page = context.new_page()
        page.goto((quick_book / "_build" / "html" / "chapters" / f"{stem}.html").as_uri(), wait_until="load")
        if page.locator("script[src*='mathjax']").count():  # Sphinx adds MathJax only to pages with math
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=15000)
            page.evaluate("() => MathJax.startup.promise")
        return page, leaks

    yield opener
    context.close()


def screenshot(page, quick_book: Path, name: str) -> Path:
    folder = quick_book / "screenshots"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.mark.parametrize("stem", PAGES)
def test_math_is_typeset_offline(open_page, quick_book, stem):
    page, leaks = open_page(stem)
    assert page.locator("mjx-container").count() >= 1, f"{stem}: no typeset math"
    assert page.locator("mjx-merror").count() == 0, f"{stem}: MathJax reported an error"
    scripts = page.eval_on_selector_all("script[src]", "els => els.map(e => e.src)")
    assert any(s.endswith("_static/mathjax/tex-chtml.js") and s.startswith("file:") for s in scripts), scripts
    prose = page.evaluate(PROSE_JS)
    raw = re.findall(r"\$\$|\$[^$\s][^$]*\$|\\\(|\\\[", prose)
    assert raw == [], f"{stem}: math source left untypeset: {raw[:5]}"
    screenshot(page, quick_book, stem)
    assert leaks == [], f"{stem}: requests left the machine: {leaks}"


@pytest.mark.parametrize("stem", PAGES)
def test_every_figure_has_a_caption(open_page, stem):
    page, leaks = open_page(stem)
    captions = page.evaluate(CAPTIONS_JS)
    assert captions, f"{stem}: no figures"
    assert all(captions), f"{stem}: {captions.count('')} of {len(captions)} figures have no caption"
    assert page.locator("figure figcaption .caption-number").count() == len(captions), f"{stem}: unnumbered figure"
    assert leaks == []


@pytest.mark.parametrize("stem", PAGES)
def test_a_solution_is_hidden_until_its_toggle_is_clicked(open_page, quick_book, stem):
    page, leaks = open_page(stem)
    solutions = page.locator("main .solution")
    assert solutions.count() >= 2, f"{stem}: fewer than two exercise solutions"
    first = solutions.first
    body = first.locator("section, .cell").first
    assert not body.is_visible(), f"{stem}: the first solution is visible before its toggle is clicked"
    first.locator(".admonition-title, summary, button.toggle-button").first.click()
    body.wait_for(state="visible", timeout=5000)
    assert body.is_visible()
    first.scroll_into_view_if_needed()
    folder = quick_book / "screenshots"
    folder.mkdir(exist_ok=True)
    first.screenshot(path=str(folder / f"{stem}-solution-open.png"))
    assert leaks == []


REMOTE = re.compile(
    r"""<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?//"""
    r"""|<link\b(?=[^>]*\brel\s*=\s*["']?(?:stylesheet|preload|modulepreload))[^>]*\bhref\s*=\s*["']?(?:https?:)?//"""
    r"""|<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?//[^>]*\brel\s*=\s*["']?(?:stylesheet|preload|modulepreload)""",
    re.IGNORECASE,
)


def remote_references(html: str) -> list[str]:
    """The script and stylesheet tags of a page that load from another machine."""
    return [m.group(0) for m in REMOTE.finditer(html)]


def test_the_remote_reference_check_catches_a_cdn():
    assert remote_references('<script src="https://cdn.example/mathjax.js"></script>')
    assert remote_references("<link rel='stylesheet' href='//fonts.example/f.css'>")
    assert remote_references('<link href="http://x.example/s.css" rel="stylesheet">')
    assert not remote_references('<script src="_static/mathjax/tex-chtml.js"></script><a href="https://x">x</a>')


def test_no_page_loads_a_remote_script_or_stylesheet(quick_book):
    pages = sorted((quick_book / "_build" / "html").rglob("*.html"))
    assert len(pages) >= 8
    found = {str(p.relative_to(quick_book)): remote_references(p.read_text(encoding="utf-8")) for p in pages}
    assert {p: refs for p, refs in found.items() if refs} == {}
