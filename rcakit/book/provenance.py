"""What produced an executed chapter, and whether it is still current.

Every notebook that :func:`rcakit.book.runner.run_chapter` publishes carries, in
its metadata under ``rcakit``, the digest of the chapter's source, the rcakit
modules its kernel imported and their digest, the state of every data input
(a data set or path it read, or the results files a summary page reads), and
the parameters it ran with. ``rcakit book`` re-executes a chapter only when
one of these changed (:func:`why_stale`), with the parameters it was run with,
so a user's rerun survives a rebuild and a warm rebuild is only the Sphinx build.

The digests are taken before the kernel starts (:func:`before_run`: the exact
source bytes handed to papermill, every rcakit module, the inputs), so an edit
made during a run leaves the page stale, never current. The block is read back
as untrusted data (:func:`load`): a wrong type is "no provenance" and a rerun,
and module names are resolved as files under the rcakit package, never imported.
The block also holds the digest of the page's cells and outputs
(:func:`page_digest`): a page holding anything rcakit did not write is rerun by
``rcakit book`` and refused by the build (:func:`foreign_output`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rcakit
from rcakit.book import registry

KEY = "rcakit"  # the notebook metadata key
DIGEST_CHARS = 16
MODULES_TAG = "rcakit-modules"  # the cell the runner appends, and removes, to read the kernel's imports
MODULES_SOURCE = (
    "import json as _json, sys as _sys\n"
    "print(_json.dumps(sorted(m for m in _sys.modules if m == 'rcakit' or m.startswith('rcakit.'))))"
)
MODULE_NAME = re.compile(r"rcakit(\.[A-Za-z_][A-Za-z0-9_]*)*")  # what may stand under ``modules``


def _sha(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


def source_digest(chapter: registry.Chapter, source: bytes | None = None) -> str:
    """Digest of the chapter's MyST source: ``source`` (the bytes a run read), else the file as it is now."""
    return _sha([chapter.notebook.read_bytes() if source is None else source])


def module_file(name: str) -> Path | None:
    """The source file of the rcakit module ``name`` (a dotted name), found as a file under the rcakit package
    folder: never imported (a name from a notebook's metadata is data, and importing a parent package runs
    it), ``None`` for a name that is not an rcakit module's."""
    if not MODULE_NAME.fullmatch(name):
        return None
    package = Path(rcakit.__file__).resolve().parent
    parts = name.split(".")[1:]
    candidates = [package.joinpath(*parts, "__init__.py")]
    if parts:
        candidates.append(package.joinpath(*parts[:-1], parts[-1] + ".py"))
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve().is_relative_to(package):
            return candidate
    return None


def code_state(modules: Iterable[str] | None = None) -> dict[str, str]:
    """The digest of each rcakit module's source file, by dotted name (every module of the package when
    ``modules`` is ``None``; a vanished module reads ``<missing>``)."""
    if modules is None:
        package = Path(rcakit.__file__).resolve().parent
        modules = [
            ".".join(("rcakit", *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
            for path in package.rglob("*.py")
        ]
    state = {}
    for name in sorted(set(modules)):
        path = module_file(name)
        state[name] = _sha([path.read_bytes()]) if path is not None else "<missing>"
    return state


def module_digest(modules: Iterable[str], state: Mapping[str, str] | None = None) -> str:
    """Digest of the source files of ``modules`` (dotted names), as they are now or as ``state`` (a
    :func:`code_state` taken earlier) had them; a vanished module counts as changed."""
    names = sorted(set(modules))
    state = code_state(names) if state is None else state
    return _sha(chunk for name in names for chunk in (name.encode(), state.get(name, "<missing>").encode()))


def path_state(path: Path | None) -> str:
    """A digest of what a data input holds: each file's relative path, size and modification time."""
    if path is None:
        return "absent"
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    chunks = []
    for p in files:
        st = p.stat()
        chunks.append(f"{p.relative_to(path) if path.is_dir() else p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return _sha(chunks)


def input_state(chapter: registry.Chapter, params: Mapping[str, Any]) -> dict[str, str]:
    """The state of every input the chapter reads besides its code: data parameters and results files."""
    from rcakit import data
    from rcakit.results import results_dir

    state = {}
    for name, kind in chapter.paths.items():
        if kind == "data":
            value = params[name]
            state[name] = "absent" if value in registry.UNSET else path_state(data.locate(str(value), name))
    if chapter.reads_results:
        folder = results_dir()
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        state["results"] = _sha(p.name.encode() + b"\0" + p.read_bytes() for p in files)
    return state


@dataclass(frozen=True)
class Before:
    """What a run is handed, taken before its kernel starts: the digest of the exact source bytes given to
    papermill, every rcakit module's digest (the kernel's imports are known only afterwards) and the inputs."""

    source: str
    code: dict[str, str]
    inputs: dict[str, str]


def before_run(chapter: registry.Chapter, params: Mapping[str, Any], source: bytes) -> Before:
    """The :class:`Before` of a run of ``chapter`` with ``params`` that reads the MyST text ``source``."""
    return Before(source_digest(chapter, source), code_state(), input_state(chapter, params))


def record(
    chapter: registry.Chapter, params: Mapping[str, Any], modules: list[str], before: Before, page: str
) -> dict[str, Any]:
    """The provenance block stored in an executed notebook's metadata: what the run was handed (``before``),
    never what the files hold once it returned, and ``page``, the digest of the page it wrote
    (:func:`page_digest`)."""
    return {
        "chapter": chapter.id,
        "source_digest": before.source,
        "modules": modules,
        "code_digest": module_digest(modules, before.code),
        "inputs": before.inputs,
        "parameters": json.loads(json.dumps(params)),
        "page_digest": page,
    }


def changed_during_run(
    chapter: registry.Chapter, params: Mapping[str, Any], modules: list[str], before: Before
) -> list[str]:
    """What changed between ``before`` and now: the source, the code the kernel imported, the data (in words)."""
    changed = []
    if before.source != source_digest(chapter):
        changed.append("the source")
    if module_digest(modules, before.code) != module_digest(modules):
        changed.append("rcakit's code")
    if before.inputs != input_state(chapter, params):
        changed.append("the data")
    return changed


def page_digest(cells: Iterable[Mapping[str, Any]]) -> str:
    """Digest of what a page shows: each cell's type, source and outputs (multi-line strings joined, as
    nbformat reads them), so an output or a cell that rcakit did not write is seen."""

    def joined(value: Any) -> Any:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "".join(value)
        if isinstance(value, list):
            return [joined(v) for v in value]
        if isinstance(value, dict):
            return {k: joined(v) for k, v in value.items() if k != "execution_count"}
        return value

    shown = [[c.get("cell_type"), joined(c.get("source")), joined(c.get("outputs", []))] for c in cells]
    return _sha([json.dumps(shown, sort_keys=True).encode()])


SCHEMA: dict[str, type] = {
    "chapter": str,
    "source_digest": str,
    "modules": list,
    "code_digest": str,
    "inputs": dict,
    "parameters": dict,
    "page_digest": str,
}


def _problem(block: Any) -> str | None:
    """What is wrong with a provenance block read from a notebook (data rcakit did not necessarily write)."""
    if not isinstance(block, dict):
        return "none recorded"
    for key, kind in SCHEMA.items():
        if not isinstance(block.get(key), kind):
            return f"{key} is not a {kind.__name__}"
    if not all(isinstance(m, str) and MODULE_NAME.fullmatch(m) for m in block["modules"]):
        return "modules holds a name that is not an rcakit module's"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in block["inputs"].items()):
        return "inputs holds a value that is not a digest"
    return None


def load(notebook: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """The notebook (as JSON), its provenance block and, when the block is unusable, why (one line naming
    the file); a notebook that cannot be read, is not JSON or nests too deeply has neither."""
    try:
        nb = json.loads(notebook.read_bytes())
    except FileNotFoundError:
        return None, None, "no executed notebook"
    except OSError as err:
        return None, None, f"no provenance ({notebook}: {err.strerror or err})"
    except RecursionError:
        return None, None, f"no provenance ({notebook}: nested too deeply)"
    except ValueError:
        return None, None, f"no provenance ({notebook}: not a notebook)"
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    block = meta.get(KEY) if isinstance(meta, dict) else None
    problem = _problem(block)
    if problem is not None:
        return nb if isinstance(nb, dict) else None, None, f"no provenance ({notebook}: {problem})"
    return nb, block, ""


def read(notebook: Path) -> dict[str, Any] | None:
    """The provenance block of an executed notebook, or ``None`` (missing, unreadable, of the wrong shape)."""
    return load(notebook)[1]


def why_stale(chapter: registry.Chapter, notebook: Path, params: Mapping[str, Any]) -> str | None:
    """Why ``notebook`` must be re-executed with ``params``, or ``None`` when it is current."""
    nb, block, problem = load(notebook)
    if nb is None or block is None:
        return problem
    if block["chapter"] != chapter.id:
        return "another chapter's page"
    if _foreign(nb, block) is not None:
        return "outputs changed"
    if block["parameters"] != json.loads(json.dumps(params)):
        return "other parameters"
    if block["source_digest"] != source_digest(chapter):
        return "source changed"
    if block["code_digest"] != module_digest(block["modules"]):
        return "code changed"
    if block["inputs"] != input_state(chapter, params):
        return "data changed"
    return None


def foreign_output(notebook: Path) -> str | None:
    """Why the page ``notebook`` must not be published: it holds cells or outputs rcakit did not write (its
    page digest is missing or differs), or ``None``."""
    nb, block, problem = load(notebook)
    if nb is None or block is None:
        return problem
    return _foreign(nb, block)


def _foreign(nb: dict[str, Any], block: dict[str, Any]) -> str | None:
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return "its cells are not a list of cells"
    if block["page_digest"] != page_digest(cells):
        return "its cells or outputs differ from what rcakit wrote"
    return None
