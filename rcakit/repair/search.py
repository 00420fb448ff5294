"""GCJR and exhaustive search over replayed candidate sets (GCJR §Methodology).

Both are one procedure, ``replay_search``, with different switches: GCJR
slices the graph, admits only structurally plausible multi-event sets and
prunes sets that contain a successful smaller set; exhaustive search does
none of that and keeps the final inclusion-minimality filter. The paper's
ablations are further settings of the same switches (``ABLATIONS``).
The search is typed against the :class:`~rcakit.repair.Oracle`
interface, so it runs unchanged on every replay oracle, and returns a
:class:`~rcakit.repair.families.RepairResult`.

Used in the chapters: `primer`, `gcjr-ablations`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx

from rcakit import RcakitError
from rcakit.repair.families import RepairResult, minimal_sets, ranked
from rcakit.repair.graph import Case, Structure, failure_slice
from rcakit.repair.oracle import Oracle

Method = Callable[[Case, Oracle], RepairResult]  # a repair method: a case and its oracle -> a family


@dataclass(frozen=True)
class SearchConfig:
    """Switches of the replay search.

    - ``q``: largest set size (the paper evaluates q = 2).
    - ``slicing``: keep only candidates in the failure slice B(o).
    - ``admission``: admit a set of size >= 2 only if every pair in it has
      different agents, is incomparable and converges at a join (pairwise for q > 2).
    - ``prune``: skip a set that contains an already successful smaller set
      (successful-singleton pruning at q = 2).
    - ``minimality``: return only inclusion-minimal successes.
    """

    q: int = 2
    slicing: bool = True
    admission: bool = True
    prune: bool = True
    minimality: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.q, int) and self.q >= 1):
            raise RcakitError(f"SearchConfig: q = {self.q!r} must be an integer >= 1")


GCJR = SearchConfig()
EXHAUSTIVE = SearchConfig(slicing=False, admission=False, prune=False)

ABLATIONS = {
    "gcjr": GCJR,
    "singleton_only": replace(GCJR, q=1),
    # Successful-singleton pruning is a minimality device too: "no minimality"
    # switches off both it and the final filter (a reading of the paper).
    "no_minimality": replace(GCJR, prune=False, minimality=False),
    "no_pruning": replace(GCJR, prune=False),
    "no_slicing": replace(GCJR, slicing=False),
    "no_admission": replace(GCJR, admission=False),
}


def replay_search(
    case: Case, oracle: Oracle, pool: list[str], config: SearchConfig, *, structure: Structure | None = None
) -> RepairResult:
    """Replay ∅, every singleton of ``pool``, then larger sets level by level.

    ∅ is replayed once (h(∅) = 0 is assumed; its replay is charged, as the
    paper's "1" in r(1+m+p) is), then the m singletons, then the admitted,
    unpruned larger sets.
    """
    admits = None  # every set is admitted unless the admission rule is on
    if config.admission and config.q > 1:
        admits = (structure or Structure(case.graph)).admissible_set
    means = {frozenset(): oracle.replay(()).mean}
    successes: list[frozenset[Any]] = []
    for k in range(1, config.q + 1):
        for combo in itertools.combinations(pool, k):
            s = frozenset(combo)
            if k > 1 and admits is not None and not admits(combo):
                continue
            if config.prune and any(t <= s for t in successes):
                continue
            outcome = oracle.replay(s)
            means[s] = outcome.mean
            if outcome.success:
                successes.append(s)
    family = minimal_sets(successes) if config.minimality else frozenset(successes)
    return RepairResult(family, ranked(family, means, pool))


def gcjr(case: Case, oracle: Oracle, config: SearchConfig = GCJR, graph: nx.DiGraph[Any] | None = None) -> RepairResult:
    """Graph-Constrained Joint Replay on GCJR's view of the graph.

    ``graph`` is the dependency graph GCJR sees (default: the true one); the
    oracle always replays on the true graph, so a hidden edge can only
    mislead the search, never the replay. Candidates are enumerated in the
    oracle's schedule; the returned family does not depend on that order.
    """
    view = case.graph if graph is None else graph
    order = case.order(oracle.schedule)
    if config.slicing:
        keep = failure_slice(view, case.sink)
        order = [v for v in order if v in keep]
    structure = Structure(view) if config.admission and config.q > 1 else None
    return replay_search(case, oracle, order, config, structure=structure)


def exhaustive(case: Case, oracle: Oracle, q: int = 2) -> RepairResult:
    """Every set of size <= q over all candidates, then the minimality filter."""
    return gcjr(case, oracle, replace(EXHAUSTIVE, q=q))


def in_domain(case: Case, family: Iterable[frozenset[str]], graph: nx.DiGraph[Any] | None = None) -> bool:
    """Whether every set of ``family`` lies in GCJR's candidate domain D_G.

    D_G: singletons of the slice, and admissible sets of slice events. GCJR
    is exact on a case when its true family lies in D_G (GCJR §Technical
    contribution); a case outside is out of scope.
    """
    view = case.graph if graph is None else graph
    keep = failure_slice(view, case.sink)
    structure = Structure(view)
    return all(s <= keep and (len(s) == 1 or structure.admissible_set(tuple(sorted(s)))) for s in family)


def ablation_configs(q: int = 2) -> dict[str, SearchConfig]:
    """``ABLATIONS`` at search size ``q`` (singleton-only stays at 1)."""
    return {name: cfg if name == "singleton_only" else replace(cfg, q=q) for name, cfg in ABLATIONS.items()}
