"""The package's layers run one way, and no import chain comes back to where it started.

From the bottom: ``base`` (paths, atomic writes, deadlines, results files, statistics, Shapley
values, stores, parallel runs, language models, data sets), ``science`` (the
mechanisms, estimators and scoring of ``scm``, ``repair``, ``rag``,
``trajectories`` and ``attribution``), ``page`` (what a chapter builds a page
with: sections, prose, claims, tables, figures, and ``check_params``),
``chapters`` (``rcakit.chapters.<stem>``, one module per notebook) and ``book``
(the runner, kernel, staging, provenance, inputs, the HTML build and the command
line). A module imports from its own layer or one below it, anywhere in its file,
functions included. The book machinery (``rcakit/book/``, the registry included)
imports no science package: what a chapter's inputs and rules need from the science
is the chapter layer's (``rcakit.chapters._checks``).
"""

import ast
from pathlib import Path

import networkx as nx

from rcakit.paths import project_root

LAYERS = {  # module prefix -> layer (the longest prefix decides)
    "rcakit": 0,
    "rcakit.scm": 1,
    "rcakit.repair": 1,
    "rcakit.rag": 1,
    "rcakit.trajectories": 1,
    "rcakit.attribution": 1,
    "rcakit.sections": 2,
    "rcakit.pages": 2,  # a chapter's lecture and audit pages, and which page a section is on
    "rcakit.prose": 2,
    "rcakit.claims": 2,
    "rcakit.results": 0,  # where results files live and how they are read: stores use it too
    "rcakit.tables": 2,
    "rcakit.plotting": 2,
    "rcakit.params": 2,
    "rcakit.book": 4,  # the package itself: check_params, all a chapter needs, with the chapters' own rules
    "rcakit.book.registry": 2,
    "rcakit.chapters": 3,
    "rcakit.book.build": 4,
    "rcakit.book.cli": 4,
    "rcakit.book.inputs": 4,
    "rcakit.book.kernel": 4,
    "rcakit.book.provenance": 4,
    "rcakit.book.runner": 4,
    "rcakit.book.staging": 4,
    "rcakit.__main__": 4,
}
NAMES = ["base", "science", "page", "chapters", "book"]


def import_graph(package: Path) -> nx.DiGraph:
    """Module -> rcakit module it imports (anywhere in the file, functions included), read from the source.

    An import of a subpackage's ``__init__`` by one of its own modules is left out: it is how a module reaches
    its siblings' re-exports, never a dependency of the package on itself.
    """

    def name(path: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name(p): p for p in package.rglob("*.py")}
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                targets = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name in modules]
            graph.add_edges_from((module, t) for t in targets if not module.startswith(t + "."))
    return graph


def layer(module: str, layers: dict[str, int]) -> int:
    """The layer of ``module``: that of the longest prefix in ``layers`` (whole dotted parts)."""
    parts = module.split(".")
    return next(layers[p] for i in range(len(parts), 0, -1) if (p := ".".join(parts[:i])) in layers)


def upward_imports(graph: nx.DiGraph, layers: dict[str, int]) -> list[str]:
    """Each import that reaches a higher layer, as ``importer (layer) -> imported (layer)``."""
    return sorted(
        f"{a} ({NAMES[layer(a, layers)]}) -> {b} ({NAMES[layer(b, layers)]})"
        for a, b in graph.edges
        if layer(b, layers) > layer(a, layers)
    )


def science_imports(graph: nx.DiGraph, layers: dict[str, int], package: str) -> list[str]:
    """Each import by ``package`` or one of its modules of a science module, as ``importer -> imported``."""
    science = NAMES.index("science")
    return sorted(
        f"{a} -> {b}"
        for a, b in graph.edges
        if (a == package or a.startswith(package + ".")) and layer(b, layers) == science
    )


def _planted(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


def test_the_package_has_no_import_circle(tmp_path):
    """No module reaches, through any chain of imports, back to itself; a planted circle is found."""
    assert list(nx.simple_cycles(import_graph(project_root() / "rcakit"))) == []
    planted = _planted(
        tmp_path, {"__init__.py": "", "a.py": "from pkg.b import f\n", "b.py": "def f():\n    from pkg import a\n"}
    )
    assert [sorted(c) for c in nx.simple_cycles(import_graph(planted))] == [["pkg.a", "pkg.b"]]


def test_the_layers_run_one_way():
    """The science imports nothing from the page tools, the chapters or the book machinery, and so on up."""
    assert upward_imports(import_graph(project_root() / "rcakit"), LAYERS) == []


def test_a_planted_upward_import_is_found(tmp_path):
    """A science module that imports a chapter, even inside a function, breaks the layer rule."""
    planted = _planted(
        tmp_path,
        {
            "__init__.py": "",
            "rag/__init__.py": "",
            "rag/agent.py": "def run():\n    from pkg.chapters import coverage\n",
            "chapters/__init__.py": "",
            "chapters/coverage.py": "from pkg.rag import agent\n",
        },
    )
    layers = {"pkg": 0, "pkg.rag": 1, "pkg.chapters": 3}
    assert upward_imports(import_graph(planted), layers) == [
        "pkg.rag.agent (science) -> pkg.chapters.coverage (chapters)"
    ]


def test_the_book_machinery_imports_no_science_package():
    """``rcakit/book/`` reaches the science only through the chapter layer, even in a function."""
    assert science_imports(import_graph(project_root() / "rcakit"), LAYERS, "rcakit.book") == []


def test_a_planted_science_import_in_the_book_is_found(tmp_path):
    """A book module that imports a science module inside a function is named, though the layers allow it;
    the registry (a page-layer module under ``book/``) is held to the same rule."""
    planted = _planted(
        tmp_path,
        {
            "__init__.py": "",
            "rag/__init__.py": "",
            "rag/musique.py": "",
            "book/__init__.py": "",
            "book/inputs.py": "def check():\n    from pkg.rag import musique\n",
            "book/registry.py": "import pkg.rag\n",
        },
    )
    layers = {"pkg": 0, "pkg.rag": 1, "pkg.book": 4, "pkg.book.registry": 2}
    assert upward_imports(import_graph(planted), layers) == []
    assert science_imports(import_graph(planted), layers, "pkg.book") == [
        "pkg.book.inputs -> pkg.rag.musique",
        "pkg.book.registry -> pkg.rag",
    ]
