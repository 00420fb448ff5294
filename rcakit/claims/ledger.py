"""The claims ledger: ``data/claims.yaml`` read, checked, and asked for a chapter's papers and numbers.

The file holds, per chapter id, the paper the chapter reproduces (``paper``,
``"<short name>: <title>"``), its citation, typed-in published data blocks
(``published``) and a list of claims. A claim names the table or section of
the paper it comes from (``source``), the paper's value (``paper``) and the
dotted key under which the chapter records its own number in
``results/<chapter_id>.json`` (``measured``; a list of keys, first depth
first, for a ``trend``), with one rule (``expect``, ``ci``, ``tolerance`` or
``trend``) and a ``kind``, one of :data:`KINDS`. The rules and
what each kind means are in :mod:`rcakit.claims.verdicts`.

The file is read again whenever its modification time changes, and each
claim's ``kind``, ``expect`` rule and ``needs`` list are checked when its
chapter's entry is asked for: a bad one is a one-line ``RcakitError`` naming
the chapter and the claim.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.io import read_yaml
from rcakit.paths import project_root

KINDS = ("identity", "mechanism", "calibrated", "published", "not comparable")
UNCLASSIFIED = "unclassified"  # shown for a claim that has no kind yet
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {  # the comparisons an ``expect`` rule may make
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


def claims_path() -> Path:
    """``data/claims.yaml`` of the project."""
    return project_root() / "data" / "claims.yaml"


def _load() -> dict[str, Any]:
    path = claims_path()
    return _parse(path, path.stat().st_mtime)


@functools.lru_cache(maxsize=4)
def _parse(path: Path, mtime: float) -> dict[str, Any]:
    """The YAML file, re-read whenever its modification time changes."""
    return read_yaml(path, "claims file")  # size, UTF-8, aliases and depth checked, one line naming the file


def chapters_with_claims() -> list[str]:
    """The chapter ids the ledger has an entry for, in the file's order."""
    return list(_load())


def chapter_claims(chapter_id: str) -> dict[str, Any]:
    """The ``claims.yaml`` entry of one chapter: paper, citation, claims, published.

    Each claim's ``kind`` and ``expect`` rule are checked; a bad one is a
    one-line ``RcakitError`` naming the chapter and the claim.
    """
    entry = _load().get(chapter_id)
    if entry is None:
        raise RcakitError(f"data/claims.yaml: no section for chapter {chapter_id!r}")
    for claim in entry.get("claims", []):
        _check_claim(chapter_id, claim)
    return entry


def _check_claim(chapter_id: str, claim: Mapping[str, Any]) -> None:
    where = f"data/claims.yaml: {chapter_id}: claim {claim.get('claim')!r}"
    kind = claim.get("kind")
    if kind is not None and kind not in KINDS:
        raise RcakitError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if "expect" in claim:
        op, _, threshold = str(claim["expect"]).partition(" ")
        try:
            float(threshold)
        except ValueError:
            op = None
        if op not in OPERATORS:
            raise RcakitError(
                f"{where}: expect {claim['expect']!r} is not '<op> <number>' with op in {' '.join(OPERATORS)}"
            )
    if "trend" in claim and (claim["trend"] not in ("falls", "rises") or not isinstance(claim.get("measured"), list)):
        raise RcakitError(f"{where}: a trend is 'falls' or 'rises', measured as a list of keys (first depth first)")
    if isinstance(claim.get("measured"), list) and "trend" not in claim:
        raise RcakitError(f"{where}: a list of measured keys needs a trend rule")
    if "needs" in claim and not isinstance(claim["needs"], (list, str)):
        raise RcakitError(f"{where}: needs must be a parameter name or a list of them")


def first_screen(chapter_id: str) -> tuple[str, bool]:
    """The chapter's ``why`` (one sentence under its three-line verdict; empty if it has none) and whether
    its first screen links to a section labelled ``(<chapter_id>-protocol)=``; a bad value is one line."""
    entry = chapter_claims(chapter_id)
    why, protocol = entry.get("why", ""), entry.get("protocol", False)
    if not isinstance(why, str) or "\n" in why.strip() or not isinstance(protocol, bool):
        raise RcakitError(f"data/claims.yaml: {chapter_id}: why is one line of text and protocol true or false")
    return why.strip(), protocol


def published(chapter_id: str, name: str) -> Any:
    """A published data block (e.g. a typed-in table) of one chapter."""
    return chapter_claims(chapter_id)["published"][name]


def paper_value(chapter_id: str, measured: str) -> Any:
    """The paper's value of the claim that the chapter records under ``measured``."""
    for claim in chapter_claims(chapter_id)["claims"]:
        if claim["measured"] == measured:
            return claim["paper"]
    raise RcakitError(f"data/claims.yaml: {chapter_id}: no claim is measured as {measured!r}")


def paper_name(chapter_id: str) -> str | None:
    """The paper's short name (``"CAR"``, ``"GCJR"``), or None for a page that reproduces no paper."""
    title = str(chapter_claims(chapter_id).get("paper", ""))
    short, colon, _ = title.partition(":")
    return short.strip() if colon and short.strip() != "No paper" else None
