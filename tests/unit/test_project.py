"""The project around the package: environment.yml, the lint gate, compare_results, the API page."""

import ast
import json
import tomllib
from pathlib import Path

import pytest
import yaml

from rcakit.paths import project_root
from support import ROOT

LINT = ROOT / "scripts" / "lint.py"


def _lint(*paths):
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(LINT), *map(str, paths)], capture_output=True, text=True)


def _script(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_environment_yml_mirrors_pyproject_lower_bounds():
    import re

    import yaml

    from rcakit.paths import project_root

    project = tomllib.loads((project_root() / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [
        d for k, v in project["optional-dependencies"].items() if k != "local-llm" for d in v
    ]
    env = yaml.safe_load((project_root() / "environment.yml").read_text())["dependencies"]
    pins = [d for d in env if isinstance(d, str)] + next(d["pip"] for d in env if isinstance(d, dict))
    conda_names = {"torch": "pytorch"}  # conda-forge's name for the same package
    for requirement in declared:
        if requirement.startswith("rcakit["):  # an extra that includes another extra
            continue
        name = re.split(r"[<>=]", requirement)[0]
        conda = conda_names.get(name, name)
        expected = requirement.replace(name, conda, 1)
        mirrored = [p.split("#")[0].strip() for p in pins if re.split(r"[<>=]", p)[0] == conda]
        assert mirrored == [expected], f"{requirement} is not mirrored in environment.yml"


def test_make_test_runs_the_lint_gate_before_pytest():
    import re

    makefile = (ROOT / "Makefile").read_text()
    recipe = [line.strip() for line in re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()]
    lint = recipe.index("$(PY) scripts/lint.py")  # the entry point the tests below run
    first_pytest = min(i for i, line in enumerate(recipe) if "pytest" in line)
    assert lint < first_pytest  # under .SHELLFLAGS -e a lint finding stops the target before any test runs
    assert "-eo pipefail" in makefile


@pytest.mark.slow
def test_lint_gate_fails_on_an_unused_import_in_code_and_in_a_chapter(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("import os\n\nprint(os.sep)\n")
    assert _lint(clean).returncode == 0
    dirty = tmp_path / "dirty.py"
    dirty.write_text("import os\nimport sys\n\nprint(os.sep)\n")
    proc = _lint(clean, dirty)
    assert proc.returncode == 1 and f"{dirty}:2:8: F401" in proc.stdout and "`sys` imported but unused" in proc.stdout
    head = (ROOT / "notebooks" / "claims.md").read_text().split("\n---\n")[0] + "\n---\n"
    cell = "```{{code-cell}} ipython3\n{}\n```\n\n"
    chapter = tmp_path / "toy.md"
    body = "# Toy\n\n" + cell.format(":tags: [parameters]\n\nseed = 0  # s")
    body += cell.format("import math\n\nmath.pi * seed")  # an import atop a later cell is not E402
    chapter.write_text(head + body)  # the last expression of a cell is its output, not B018
    assert _lint(chapter).returncode == 0, _lint(chapter).stdout
    chapter.write_text(head + body + cell.format("import json\n\nseed"))
    proc = _lint(tmp_path)  # a folder: its .py files and its chapters
    assert proc.returncode == 1
    assert f"{chapter}:cell 4:1:8: F401 [*] `json` imported but unused" in proc.stdout
    assert f"{dirty}:2:8: F401" in proc.stdout and "`math`" not in proc.stdout


def test_compare_results_names_the_differing_keys_and_passes_only_identical_or_expected(tmp_path):
    cmp = _script("compare_results")
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    tree = {"a": {"phi": [0.5, 0.25], "n": 3}, "params": {"seed": 0, "store": "results/cases"}}
    (base / "x.json").write_text(json.dumps(tree, sort_keys=True, indent=2) + "\n")
    (head / "x.json").write_text(json.dumps(tree, sort_keys=True, indent=2) + "\n")
    assert cmp.compare("x", base, head, set()) == (True, "x: byte-identical")
    moved = {**tree, "params": {"seed": 0, "store": "cases"}}
    (head / "x.json").write_text(json.dumps(moved, sort_keys=True, indent=2) + "\n")
    assert cmp.compare("x", base, head, set()) == (False, "x: differs at params.store")
    assert cmp.compare("x", base, head, {"params.store"}) == (
        True,
        "x: identical except the expected keys params.store",
    )
    changed = {"a": {"phi": [0.5, 0.26], "n": 3.0, "new": 1}, "params": moved["params"]}
    (head / "x.json").write_text(json.dumps(changed, sort_keys=True, indent=2) + "\n")
    ok, line = cmp.compare("x", base, head, {"params.store"})
    assert not ok and line == "x: differs at a.n, a.new (only in head), a.phi.1"  # 3 and 3.0 are other bytes
    assert cmp.compare("x", base, head, {"params.store", "a.new"}) == (False, "x: differs at a.n, a.phi.1")
    (head / "x.json").write_text(json.dumps(tree, sort_keys=True) + "\n")  # same values, other layout
    assert cmp.compare("x", base, head, set())[0] is False
    assert cmp.compare("y", base, head, set()) == (False, f"y: no results file in the base run ({base / 'y.json'})")
    assert cmp.differing_keys([1, 2], [1, 2, 3]) == ["(whole file)"]


def test_api_pages_list_every_public_module_and_are_up_to_date():
    api = _script("api_page")
    pages = api.pages()
    folder = ROOT / "book" / "api"
    assert {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.md")} == pages
    everything = "".join(pages.values())
    for name in (
        "rcakit.scm",
        "rcakit.shapley",
        "rcakit.repair",
        "rcakit.rag",
        "rcakit.trajectories",
        "rcakit.llm",
        "rcakit.stats",
        "rcakit.claims",
    ):
        assert f".. automodule:: {name}\n   :members:" in everything
        assert f"   {name}\n" in pages["index.md"]  # the index's summary table
    assert api.source_of("rcakit.no_such_module") is None
    import pkgutil

    import rcakit

    for module in pkgutil.iter_modules(rcakit.__path__):  # a new module cannot go undocumented
        if module.name == "__main__":  # `python -m rcakit`, the command line's entry
            continue
        assert f".. automodule:: rcakit.{module.name}\n" in everything, module.name


def test_the_table_of_contents_lists_the_api_pages_in_order():
    api = _script("api_page")
    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text(encoding="utf-8"))
    entry = next(c for c in toc["chapters"] if c["file"] == "api/index")
    assert [s["file"] for s in entry["sections"]] == [f"api/{slug}" for slug, _, _ in api.PARTS]


@pytest.mark.slow
def test_the_api_pages_build_strictly_on_their_own(tmp_path):
    """The API pages alone, with the book's configuration, build with ``-W -n``: a docstring's
    dotted link to an object the pages do not document fails here in seconds, not at the end of
    the quick book's build."""
    import shutil
    import subprocess
    import sys

    book = ROOT / "book"
    shutil.copytree(book / "api", tmp_path / "api")
    shutil.copy(book / "_config.yml", tmp_path)
    shutil.copy(book / "references.bib", tmp_path)
    toc = yaml.safe_load((book / "_toc.yml").read_text(encoding="utf-8"))
    entry = next(c for c in toc["chapters"] if c["file"] == "api/index")
    (tmp_path / "_toc.yml").write_text(
        yaml.safe_dump({"format": "jb-book", "root": "api/index", "chapters": entry["sections"]}), encoding="utf-8"
    )
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb), "build", str(tmp_path), "--builder", "html", "--all", "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, "\n".join(line for line in proc.stdout.splitlines() if "WARNING" in line)


def test_no_docstring_or_claim_cites_a_tracker_issue():
    """CONTRIBUTING: docstrings cite paper sections, never a tracker issue, which a reader of the package
    or the book cannot open."""
    import re

    root = project_root()
    files = [*root.glob("rcakit/**/*.py"), *root.glob("benchmarks/*.py"), root / "data" / "claims.yaml"]
    cited = [
        f"{path.relative_to(root)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bissues? \d+", line)
    ]
    assert not cited, f"tracker issues cited at {', '.join(cited)}"


def test_no_docstring_holds_a_control_character():
    """A docstring with math must be a raw string: in a plain one ``\\times`` or ``\\frac`` becomes a tab or a
    form feed, and the rendered API page prints "imes" or "rac"."""
    root = project_root()
    bad = []
    for path in [*root.glob("rcakit/**/*.py"), *root.glob("benchmarks/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False) or ""
                if any(c in doc for c in "\t\x0b\x0c\x08\x07"):
                    bad.append(f"{path.relative_to(root)}:{getattr(node, 'name', 'module')}")
    assert not bad, f"control characters (an escape in a plain string?) in the docstrings of {', '.join(bad)}"


def test_the_package_ships_its_type_hints():
    """PEP 561: ``py.typed`` beside the package and listed as package data, so an installed rcakit is typed."""
    assert (project_root() / "rcakit" / "py.typed").is_file()
    pyproject = tomllib.loads((project_root() / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["rcakit"]


def test_no_claim_text_or_note_carries_ascii_math_outside_its_dollar_math():
    """The claim texts and notes are shown in the verdict boxes and the claims tables, where ``$…$`` is
    typeset and everything else is shown as written: ``phi_0`` or ``q^2`` there is ASCII math on a page."""
    from support.ascii_math import ascii_math, claim_texts, outside_math

    found = {where: ascii_math(outside_math(text)) for where, text in claim_texts(ROOT / "data" / "claims.yaml")}
    assert {where: hits for where, hits in found.items() if hits} == {}


def test_no_notebook_prose_carries_ascii_math_outside_code_math_and_glue():
    from support.ascii_math import ascii_math, notebook_prose

    pages = sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))
    found = {path.stem: ascii_math(notebook_prose(path)) for path in pages}
    assert {stem: hits for stem, hits in found.items() if hits} == {}


def test_the_static_ascii_math_scan_reads_prose_not_code_math_or_glue(tmp_path):
    from support.ascii_math import ascii_math, claim_texts, notebook_prose, outside_math

    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext: {}\n---\n# A page\n\nThe value phi_0 and $\\phi_1 <= 1$, {glue:text}`v_0`, `x_1 >= 2`.\n\n"
        "```{code-cell} ipython3\nphi_2 = q**2  # x_1 <= 3\n```\n\n$$\nv(N) >= q^2\n$$\n\n"
        ":::{admonition} Note\nThen C(n,2) pairs.\n:::\n\n```{note}\nAnd sum |effects|.\n```\n",
        encoding="utf-8",
    )
    hits = " ".join(ascii_math(notebook_prose(page)))
    assert "phi_0" in hits and "C(n,2)" in hits and "sum |" in hits
    assert not any(word in hits for word in ("phi_1", "phi_2", "x_1", "v_0", "q^2"))
    ledger = tmp_path / "claims.yaml"
    ledger.write_text(
        'page:\n  why: "fine"\n  claims:\n    - claim: "$\\\\phi_0 = (1 - q^2)/2$"\n      note: "As for phi_0."\n',
        encoding="utf-8",
    )
    texts = dict(claim_texts(ledger))
    assert [ascii_math(outside_math(t)) != [] for t in texts.values()] == [False, False, True]


def test_a_shown_code_line_wider_than_the_code_box_fails_the_notebook_check(tmp_path):
    check = _script("check_notebooks")
    head = (ROOT / "notebooks" / "claims.md").read_text().split("\n---\n")[0] + "\n---\n"
    cell = "```{{code-cell}} ipython3\n{}\n```\n\n"
    fits = "x = " + "1" * (check.CODE_WIDTH - 4)  # exactly as wide as the box
    wide = fits + "1"
    chapter = tmp_path / "toy.md"
    body = "# Toy\n\n" + cell.format(":tags: [parameters]\n\nseed = 0  # s") + cell.format(f"{fits}\nseed")
    body += cell.format(f":tags: [remove-cell]\n\n{wide}") + cell.format(f":tags: [remove-input]\n\n{wide}")
    chapter.write_text(head + body)
    assert check.problems(chapter) == []  # a line at the width fits; removed cells are not shown
    chapter.write_text(head + body + cell.format(f":tags: [hide-input]\n\nseed\n{wide}"))
    assert check.problems(chapter) == [
        f"{chapter}: cell 6 line 2 is {check.CODE_WIDTH + 1} characters, wider than the code box (77)"
    ]
    assert check.main([str(chapter)]) == 1
