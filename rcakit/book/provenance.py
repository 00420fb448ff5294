"""What produced an executed chapter, and whether it is still current.

Every notebook that :func:`rcakit.book.runner.run_chapter` publishes carries, in
its metadata under ``rcakit``, the digest of the chapter's source, the rcakit
modules its kernel imported and their digest, the state of every data input
(a data set or path it read, or the results files a summary page reads), and
the parameters it ran with. ``rcakit book`` re-executes a chapter only when
one of these changed (:func:`why_stale`), with the parameters it was run with,
so a user's rerun survives a rebuild and a warm rebuild is only the Sphinx build.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rcakit.book import registry

KEY = "rcakit"  # the notebook metadata key
DIGEST_CHARS = 16
MODULES_TAG = "rcakit-modules"  # the cell the runner appends, and removes, to read the kernel's imports
MODULES_SOURCE = (
    "import json as _json, sys as _sys\n"
    "print(_json.dumps(sorted(m for m in _sys.modules if m == 'rcakit' or m.startswith('rcakit.'))))"
)


def _sha(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


def source_digest(chapter: registry.Chapter) -> str:
    """Digest of the chapter's MyST source."""
    return _sha([chapter.notebook.read_bytes()])


def module_digest(modules: Iterable[str]) -> str:
    """Digest of the source files of ``modules`` (dotted names); a vanished module counts as changed."""
    chunks = []
    for name in sorted(set(modules)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        body = origin.read_bytes() if origin is not None and origin.is_file() else b"<missing>"
        chunks += [name.encode(), body]
    return _sha(chunks)


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


def record(chapter: registry.Chapter, params: Mapping[str, Any], modules: list[str]) -> dict[str, Any]:
    """The provenance block stored in an executed notebook's metadata."""
    return {
        "chapter": chapter.id,
        "source_digest": source_digest(chapter),
        "modules": modules,
        "code_digest": module_digest(modules),
        "inputs": input_state(chapter, params),
        "parameters": json.loads(json.dumps(params)),
    }


def read(notebook: Path) -> dict[str, Any] | None:
    """The provenance block of an executed notebook, or ``None`` (missing, unreadable or from before it existed)."""
    try:
        meta = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return None
    block = meta.get(KEY) if isinstance(meta, dict) else None
    return block if isinstance(block, dict) and "parameters" in block else None


def why_stale(chapter: registry.Chapter, notebook: Path, params: Mapping[str, Any]) -> str | None:
    """Why ``notebook`` must be re-executed with ``params``, or ``None`` when it is current."""
    block = read(notebook)
    if block is None:
        return "no executed notebook" if not os.path.exists(notebook) else "no provenance"
    if block.get("parameters") != json.loads(json.dumps(params)):
        return "other parameters"
    if block.get("source_digest") != source_digest(chapter):
        return "source changed"
    if block.get("code_digest") != module_digest(block.get("modules", [])):
        return "code changed"
    if block.get("inputs") != input_state(chapter, params):
        return "data changed"
    return None
