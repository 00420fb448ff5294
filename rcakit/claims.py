"""The papers' published numbers, and how the workbench's numbers compare.

``data/claims.yaml`` holds, per chapter id, the paper it reproduces and a list
of claims. Each claim names the table or section it comes from, the paper's
value, and the dotted key under which the chapter records its own number in
``results/<chapter_id>.json``. A claim's verdict follows the first rule it has:

- ``expect``: a comparison the measured value must satisfy, e.g. ``">= 0.45"``;
- ``ci``: the dotted key of a measured ``[lo, hi]``; agrees if the paper's value is inside;
- ``tolerance``: agrees if ``|measured - paper| <= tolerance``;
- otherwise the row is shown with the verdict ``reported``.

A claim with ``when`` (e.g. ``{q: 0.3}``) describes the paper's setting only;
under other parameters its verdict is ``other parameters``.

Claims marked ``holds: true`` are the ones the workbench is meant to
reproduce; ``assert_holds`` fails a chapter run when one of them does not.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Mapping

import pandas as pd
import yaml

from rcakit.paths import project_root
from rcakit.results import lookup

_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}


@functools.lru_cache(maxsize=1)
def _load() -> dict:
    path = project_root() / "data" / "claims.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def chapter_claims(chapter_id: str) -> dict:
    """The ``claims.yaml`` entry of one chapter: paper, citation, claims, published."""
    return _load()[chapter_id]


def published(chapter_id: str, name: str) -> Any:
    """A published data block (e.g. a typed-in table) of one chapter."""
    return _load()[chapter_id]["published"][name]


def _get(tree: Mapping, key: str | None) -> Any:
    if key is None:
        return None
    try:
        return lookup(tree, key)
    except (KeyError, IndexError, TypeError):
        return None


def _verdict(claim: dict, value: Any, ci: Any, params: Mapping | None) -> str:
    when = claim.get("when", {})
    if params is not None and any(params.get(k) != v for k, v in when.items()):
        return "other parameters"
    if value is None:
        return "not measured"
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        return "agrees" if _OPS[op](value, float(threshold)) else "differs"
    if ci is not None and None not in ci:
        return "agrees" if ci[0] <= claim["paper"] <= ci[1] else "differs"
    if "tolerance" in claim:
        return "agrees" if abs(value - claim["paper"]) <= claim["tolerance"] else "differs"
    return "reported"


def compare(chapter_id: str, measured: Mapping, params: Mapping | None = None) -> pd.DataFrame:
    """One row per claim: the paper's value beside the workbench's, with a verdict.

    ``measured`` is the chapter's results dict (nested, as recorded);
    ``params`` defaults to ``measured["params"]`` when that is present.
    """
    if params is None:
        params = measured.get("params")
    rows = []
    for claim in chapter_claims(chapter_id)["claims"]:
        value = _get(measured, claim["measured"])
        ci = _get(measured, claim.get("ci"))
        rows.append(
            {
                "claim": claim["claim"],
                "source": claim["source"],
                "paper": claim["paper"],
                "workbench": value,
                "CI": "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                "rule": claim.get("expect") or ("paper in CI" if ci else (f"±{claim['tolerance']}" if "tolerance" in claim else "")),
                "verdict": _verdict(claim, value, ci, params),
                "holds": bool(claim.get("holds", False)),
            }
        )
    return pd.DataFrame(rows)


def assert_holds(table: pd.DataFrame) -> None:
    """Raise ``AssertionError`` naming every ``holds`` claim that did not agree."""
    bad = table[table["holds"] & ~table["verdict"].isin(["agrees", "other parameters"])]
    if len(bad):
        raise AssertionError("claims not reproduced: " + "; ".join(bad["claim"]))


def compare_all(results: Mapping[str, Mapping]) -> pd.DataFrame:
    """The closing page's table: every chapter's claims against its results file, in book order."""
    from rcakit.chapters import ORDER

    frames = []
    for chapter_id in sorted(_load(), key=lambda cid: ORDER.index(cid) if cid in ORDER else len(ORDER)):
        table = compare(chapter_id, results.get(chapter_id, {}))
        table.insert(0, "chapter", chapter_id)
        frames.append(table)
    return pd.concat(frames, ignore_index=True)
