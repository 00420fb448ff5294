"""The public LongRCA Bench release: where it lies, and how it compares with the paper's description.

The release is one JSON record per trajectory under ``data/full/`` of the
Hugging Face dataset (Appendix A schema), fetched by ``rcakit data fetch
longrca-bench``. :func:`release_folder` finds the records under a data-set
root, its ``data/full`` folder or a single record file. :func:`release_checks`
sets what the loaded records show beside what the paper says of its data
(§1 and §3: 1,140 trajectories from five sources, 178,137 steps, median 145
and maximum 728 steps, the root-to-end distances; Tables 6-8: the counts per
source and per difficulty bin). A public release can differ from the paper's
snapshot, so every difference is a row of the table, never an error.

The records carry no source field: the source is read from the
source-prefixed ``question_ID``. The paper does not spell the prefixes out, so
:func:`paper_source` matches the id, lower-cased with every character that is
not a letter or a digit dropped, against the sources' names written the same
way (``swebenchpro``, ``terminalbench``, ``travelplanner``, ``vitabench``,
``webarena``); an id that matches none keeps its own prefix and shows up as a
source the paper does not list. The longrca-strata chapter reads, checks and
scores a release (``rcakit.chapters.longrca_strata.ReleaseRun``).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.strata import STRATA, bin_of

RELEASE_RECORDS = Path("data") / "full"  # where the Hugging Face release keeps its records
_SOURCE_KEYS = (  # normalised id prefix -> the source as Table 6 names it (longest prefixes first)
    ("swebenchpro", "SWE-bench Pro"),
    ("swebench", "SWE-bench Pro"),
    ("terminalbench", "Terminal Bench 2"),
    ("tbench", "Terminal Bench 2"),
    ("travelplanner", "TravelPlanner"),
    ("vitabench", "VitaBench"),
    ("webarena", "WebArena Verified"),
)


_LABELS = {
    "trajectories": "trajectories",
    "total_steps": "total steps",
    "mean_length": "mean length",
    "median_length": "median length",
    "max_length": "maximum length",
    "median_root_to_end": "median root-to-end",
    "p90_root_to_end": "P90 root-to-end",
    "max_root_to_end": "maximum root-to-end",
}


def release_folder(path: str | Path) -> Path:
    """The records under ``path``: ``<path>/data/full`` for a data-set root, else ``path`` itself."""
    path = Path(path)
    inner = path / RELEASE_RECORDS
    return inner if path.is_dir() and inner.is_dir() else path


def _normalised(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def paper_source(trajectory: Trajectory) -> str:
    """The source of a release record as Table 6 names it, from its id (else its recorded source)."""
    for text in (trajectory.id, trajectory.source):
        key = _normalised(text)
        for prefix, name in _SOURCE_KEYS:
            if key.startswith(prefix):
                return name
    return trajectory.source


def release_shape(trajectories: Sequence[Trajectory]) -> pd.DataFrame:
    """One row per trajectory: its paper source, length ``T`` and root-to-end distance ``(T-1) - r``.

    An unlabelled record has no root, so its distance is missing.
    """
    rows = [
        {
            "source": paper_source(t),
            "length": len(t.steps),
            "root_to_end": len(t.steps) - 1 - t.label.step if t.label else np.nan,
        }
        for t in trajectories
    ]
    return pd.DataFrame(rows, columns=["source", "length", "root_to_end"])


def _decimals(value: float) -> int:
    """How many decimals the paper printed ``value`` with (``156.3`` -> 1, ``145`` -> 0)."""
    text = repr(value)
    return len(text.split(".")[1]) if isinstance(value, float) and "." in text else 0


def release_checks(shape: pd.DataFrame, paper: Mapping[str, Any]) -> pd.DataFrame:
    """The loaded release beside the paper's description of its data (§1, §3; Tables 6, 7, 8).

    ``shape`` comes from :func:`release_shape`; ``paper`` is the typed-in
    description (``sources``: trajectories per source; ``trajectories``,
    ``total_steps``, ``mean_length``, ``median_length``, ``max_length``,
    ``median_root_to_end``, ``p90_root_to_end``, ``max_root_to_end``;
    ``length_bins`` and ``distance_bins``: trajectories per Figure 6 bin). One
    row per check: the paper's value, the release's, their difference, and
    whether the release's value printed as the paper prints it is the same
    (percentiles: numpy's linear interpolation; the paper does not say which).
    Sources the paper does not list are rows too, with no paper value.
    """
    counts = shape["source"].value_counts()
    distance = shape["root_to_end"].dropna()
    rows = [(f"trajectories from {s}", n, int(counts.get(s, 0))) for s, n in paper["sources"].items()]
    rows += [(f"trajectories from {s}", None, int(n)) for s, n in counts.items() if s not in paper["sources"]]
    some = len(distance) > 0
    stats = {
        "trajectories": len(shape),
        "total_steps": int(shape["length"].sum()),
        "mean_length": float(shape["length"].mean()),
        "median_length": float(shape["length"].median()),
        "max_length": int(shape["length"].max()),
        "median_root_to_end": float(distance.median()) if some else np.nan,
        "p90_root_to_end": float(np.percentile(distance, 90)) if some else np.nan,
        "max_root_to_end": float(distance.max()) if some else np.nan,
    }
    rows += [(_LABELS[name], paper[name], value) for name, value in stats.items()]
    for by, values in (("length", shape["length"]), ("distance", distance)):
        labels = STRATA[by][2]
        binned = pd.Series(bin_of(values.to_numpy(), by)).value_counts()
        name = "length" if by == "length" else "root-to-end"
        sizes = zip(labels, paper[f"{by}_bins"], strict=True)
        rows += [(f"{name} bin {b}", n, int(binned.get(b, 0))) for b, n in sizes]
    matches = [p is not None and pd.notna(r) and round(float(r), _decimals(p)) == p for _, p, r in rows]
    table = pd.DataFrame(rows, columns=["check", "paper", "release"]).set_index("check").astype(float)
    table["difference"] = table["release"] - table["paper"]
    table["matches"] = matches
    return table


def differences(checks: pd.DataFrame) -> list[str]:
    """The checks on which the release differs from the paper (empty when it matches throughout)."""
    return list(checks.index[~checks["matches"]])
