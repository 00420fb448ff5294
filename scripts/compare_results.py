"""Are the chapters' results byte-identical before and after a change?

    python scripts/compare_results.py [--base REV | --base-results DIR] [--quick]
                                      [--expect KEY]... [--keep DIR] [CHAPTER ...]

Runs every chapter (or the ones named) at its default parameters (``--quick``:
its quick values) twice, into separate results folders: once with the code of
git revision ``--base`` (default ``HEAD``), checked out with ``git worktree``
in a temporary folder, and once with the working tree as it is, uncommitted
changes included. ``--base-results DIR`` skips the base runs and compares
with the results files already in DIR (``<chapter>.json``).

Both runs use this Python and its installed dependencies; only the rcakit
code differs (the base run puts its worktree first on ``PYTHONPATH``, which
the chapter's kernel inherits). For each chapter one line says whether
``<chapter>.json`` is byte-identical and, if not, the first keys whose values
differ (dotted paths, as ``rcakit.results.lookup`` reads them). ``--expect
KEY`` names a key that differs on purpose (``params.store``, say): a chapter
whose only differences are expected keys is reported as such and passes.

Exit status: 0 when every chapter passes, 1 otherwise. The closing ``claims``
page records no results and is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOWN_KEYS = 5  # differing keys listed per chapter
SKIPPED = {"claims"}  # pages that record no results


def differing_keys(a, b, prefix: str = "") -> list[str]:
    """Dotted paths where the JSON values ``a`` and ``b`` differ, in sorted key order."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        return [k for key in keys for k in _child(a, b, key, prefix)]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [k for i in range(len(a)) for k in differing_keys(a[i], b[i], f"{prefix}{i}.")]
    same = type(a) is type(b) and a == b
    return [] if same else [prefix.rstrip(".") or "(whole file)"]


def _child(a: dict, b: dict, key: str, prefix: str) -> list[str]:
    if key not in a or key not in b:
        side = "base" if key in a else "head"
        return [f"{prefix}{key} (only in {side})"]
    return differing_keys(a[key], b[key], f"{prefix}{key}.")


def compare(chapter: str, base: Path, head: Path, expected: set[str]) -> tuple[bool, str]:
    """``(passes, one report line)`` for ``<chapter>.json`` in the two results folders."""
    a, b = base / f"{chapter}.json", head / f"{chapter}.json"
    for side, path in (("base", a), ("head", b)):
        if not path.is_file():
            return False, f"{chapter}: no results file in the {side} run ({path})"
    if a.read_bytes() == b.read_bytes():
        return True, f"{chapter}: byte-identical"
    try:
        keys = differing_keys(json.loads(a.read_text()), json.loads(b.read_text()))
    except ValueError as err:
        return False, f"{chapter}: differs, and a file is not JSON: {err}"
    unexpected = [k for k in keys if k.partition(" (only in ")[0] not in expected]
    if not keys:
        return False, f"{chapter}: same values, different bytes (formatting or key order)"
    if not unexpected:
        return True, f"{chapter}: identical except the expected keys {', '.join(keys)}"
    shown = ", ".join(unexpected[:SHOWN_KEYS]) + (
        f" (and {len(unexpected) - SHOWN_KEYS} more)" if len(unexpected) > SHOWN_KEYS else ""
    )
    return False, f"{chapter}: differs at {shown}"


def run_chapters(code: Path, chapters: list[str], out: Path, quick: bool) -> dict[str, str]:
    """Run each chapter with the rcakit in ``code`` into ``out``; a failure message per failed chapter."""
    env = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_ROOT", "RCAKIT_LLM_TIMEOUT")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        RCAKIT_RESULTS_DIR=str(out / "results"),
        RCAKIT_BOOK_DIR=str(out / "book"),
        RCAKIT_PROGRESS="0",
    )
    failures = {}
    cli = book_module(code, "cli")
    for chapter in chapters:
        cmd = [sys.executable, "-m", cli, "run", chapter, *(["--quick"] if quick else [])]
        print(f"  {code.name or code}: rcakit run {chapter}{' --quick' if quick else ''}", file=sys.stderr)
        proc = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines()
            failures[chapter] = lines[-1] if lines else f"exit status {proc.returncode}"
    return failures


def _python_in(code: Path, source: str) -> str:
    """What ``python -c source`` prints with the checkout ``code`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run([sys.executable, "-c", source], cwd=code, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


def rcakit_of(code: Path) -> Path:
    """The folder of the rcakit package that Python imports when ``code`` comes first on the path."""
    return Path(_python_in(code, "import rcakit; print(rcakit.__file__)").strip()).parent


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def book_module(code: Path, name: str) -> str:
    """The dotted name of the book module ``name`` (``registry``, ``cli``) in the rcakit of ``code``.

    The book machinery moved under ``rcakit/book/`` (issue 32); a base before that keeps it at the top.
    """
    old = {"registry": "chapters"}.get(name, name)
    return f"rcakit.book.{name}" if (rcakit_of(code) / "book" / "__init__.py").exists() else f"rcakit.{old}"


def chapter_order(code: Path) -> list[str]:
    order = _python_in(code, f"import {book_module(code, 'registry')} as r; print(*r.ORDER)")
    return [c for c in order.split() if c not in SKIPPED]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("chapters", nargs="*", help="chapter ids (default: every chapter of the working tree)")
    p.add_argument("--base", default="HEAD", help="git revision to compare with (default HEAD)")
    p.add_argument("--base-results", type=Path, help="compare with the results files in this folder instead")
    p.add_argument("--quick", action="store_true", help="run with the chapters' quick values")
    p.add_argument("--expect", action="append", default=[], metavar="KEY", help="a key that differs on purpose")
    p.add_argument("--keep", type=Path, help="write both runs here (kept) instead of a temporary folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chapters = args.chapters or chapter_order(ROOT)
    with tempfile.TemporaryDirectory(prefix="rcakit-compare-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        failures = {}
        if args.base_results is None:
            revision = git("rev-parse", "--verify", args.base + "^{commit}").strip()
            tree = Path(tmp) / "base-checkout"  # apart from work / "base", which outlives the checkout
            git("worktree", "add", "--detach", str(tree), revision)
            try:
                if rcakit_of(tree) != tree / "rcakit":
                    print(f"compare: the base run would not import {tree / 'rcakit'}", file=sys.stderr)
                    return 1
                print(f"base: {args.base} ({revision[:12]}) in {tree}", file=sys.stderr)
                failures.update(
                    {
                        c: f"base run failed: {m}"
                        for c, m in run_chapters(tree, chapters, work / "base", args.quick).items()
                    }
                )
            finally:
                git("worktree", "remove", "--force", str(tree))
            base_results = work / "base" / "results"
        else:
            base_results = args.base_results
        print(f"head: the working tree {ROOT}", file=sys.stderr)
        for c, m in run_chapters(ROOT, chapters, work / "head", args.quick).items():
            failures.setdefault(c, f"head run failed: {m}")
        passed = True
        for chapter in chapters:
            ok, line = (
                (False, f"{chapter}: {failures[chapter]}")
                if chapter in failures
                else compare(chapter, base_results, work / "head" / "results", set(args.expect))
            )
            passed &= ok
            print(line)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
