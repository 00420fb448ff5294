"""Replay oracles: the one interface and base class, and the Controlled-DAG oracle.

- ``base``: replay under r shared seeds, θ = 2/3 and the rule h_θ, the
  :class:`Oracle` interface and :class:`SharedSeedOracle`, the one base class
  of every replay oracle, which counts its own calls;
- ``controlled_dag``: the symbolic counterfactual replay of a Controlled-DAG
  case, with noise (:class:`ReplayOracle`), and one seed's replay of one set
  (:func:`replay_once`).

Used in the chapters: `primer`, `gcjr-ablations`, `attribution-families`.
"""

from rcakit.repair.oracle.base import (
    THETA,
    Counts,
    Oracle,
    Replay,
    SharedSeedOracle,
    ThetaLike,
    is_count,
    threshold,
)
from rcakit.repair.oracle.controlled_dag import ReplayOracle, clean_success, replay_once, seed_outcomes

__all__ = [
    "Counts",
    "Oracle",
    "Replay",
    "ReplayOracle",
    "SharedSeedOracle",
    "THETA",
    "ThetaLike",
    "clean_success",
    "is_count",
    "replay_once",
    "seed_outcomes",
    "threshold",
]
