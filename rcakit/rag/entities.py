"""The synthetic world's entities: six types, their shares, and names drawn from small token pools.

Names are built from a few roots, endings, first names and words, so many
entities share name tokens with others (the distractors that make BM25
imperfect), and a share of entities gets a look-alike ("Mara Junova Jr")
whose name contains every token of the original.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import random

# The share of each entity type among the world's entities.
TYPE_COUNTS = {"person": 0.36, "film": 0.22, "company": 0.13, "university": 0.08, "city": 0.17, "country": 0.04}

_ROOTS = (
    "Vel",
    "Kar",
    "Ost",
    "Mira",
    "Tan",
    "Bel",
    "Dor",
    "Esk",
    "Lum",
    "Quar",
    "Ren",
    "Sal",
    "Tor",
    "Ul",
    "Var",
    "Wen",
    "Ys",
    "Zar",
    "Hal",
    "Jun",
    "Kel",
    "Nor",
    "Pel",
    "Riv",
)
_ENDS = ("ane", "ith", "ora", "und", "ess", "ark", "ion", "ova", "ell", "ada", "urn", "ix")
_FIRST = (
    "Ada",
    "Bram",
    "Cora",
    "Dane",
    "Elin",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lev",
    "Mara",
    "Niko",
    "Olga",
    "Pavel",
    "Rosa",
    "Sven",
    "Tia",
    "Umar",
    "Vera",
    "Wim",
    "Yara",
    "Zeno",
)
_ADJ = (
    "Silver",
    "Quiet",
    "Last",
    "Broken",
    "Golden",
    "Hidden",
    "Northern",
    "Crimson",
    "Endless",
    "Paper",
    "Distant",
    "Iron",
    "Glass",
    "Burning",
    "Hollow",
    "Winter",
)
_NOUN = (
    "Harbor",
    "Garden",
    "River",
    "Crown",
    "Signal",
    "Orchard",
    "Bridge",
    "Mirror",
    "Letter",
    "Season",
    "Tower",
    "Voyage",
    "Lantern",
    "Circle",
    "Frontier",
    "Echo",
)
_FIRM = ("Pictures", "Industries", "Systems", "Holdings", "Works", "Studios", "Group", "Labs")


def entity_name(kind: str, rng: random.Random) -> str:
    """A fresh name of type ``kind``, drawn from the token pools (it may repeat an earlier draw)."""
    root = lambda: rng.choice(_ROOTS) + rng.choice(_ENDS)  # noqa: E731
    if kind == "person":
        return f"{rng.choice(_FIRST)} {root()}"
    if kind == "film":
        return rng.choice([f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)}", f"{rng.choice(_ADJ)} {rng.choice(_NOUN)}s"])
    if kind == "company":
        return f"{root()} {rng.choice(_FIRM)}"
    if kind == "university":
        return rng.choice([f"University of {root()}", f"{root()} Institute"])
    if kind == "city":
        return rng.choice([root(), f"Port {root()}", f"{root()} Falls", f"New {root()}"])
    return rng.choice([f"{root()}ia", f"Republic of {root()}", f"{root()}land"])


def draw_entities(n_entities: int, rng: random.Random) -> dict[str, str]:
    """``name -> type`` for about ``n_entities`` distinct entities, each type's share as in ``TYPE_COUNTS``
    (at least three of each; a type whose pool runs dry after 50 draws per wanted name stops short)."""
    types: dict[str, str] = {}
    for kind, share in TYPE_COUNTS.items():
        target, tries = max(3, round(share * n_entities)), 0
        while sum(t == kind for t in types.values()) < target and tries < 50 * target:
            tries += 1
            name = entity_name(kind, rng)
            types.setdefault(name, kind)
    return types


_VARIANT = {
    "person": "Jr",
    "film": "Returns",
    "company": "International",
    "university": "Annex",
    "city": "Heights",
    "country": "Territories",
}


def draw_lookalikes(types: dict[str, str], rate: float, rng: random.Random) -> dict[str, str]:
    """``name -> original`` for look-alike entities whose names contain every token of an original."""
    chosen = [n for n in sorted(types) if rng.random() < rate]
    return {f"{n} {_VARIANT[types[n]]}": n for n in chosen if f"{n} {_VARIANT[types[n]]}" not in types}
