"""Family-level metrics and the per-case evaluation loop (GCJR §Results).

Per case, with predicted family P (ranked) and true family T = F_{q,θ}
under noiseless replay:

- FEM: 1 if P == T as sets of sets (Family Exact Match).
- AJ: ``|P ∩ T| / |P ∪ T|``, sets compared as whole sets; 1 when both are empty.
- recall: ``|P ∩ T| / |T|``, the share of true minimal repairs recovered.
- RS@1: 1 if the first-ranked set of P is a member of T (0 if P is empty).
  When T is empty (no repair of size <= q exists, e.g. a Joint-AND case at
  q = 1), RS@1 is 1 for the empty P and 0 otherwise, as AJ and recall are 1
  when both are empty: FEM = 1 then implies RS@1 = 1 at every q.
- repair_success1: 1 if the first-ranked set restores success under
  noiseless replay, minimal or not (an alternative reading of RS@1).
- SC: 1 if P is the same under all three schedules (schedule consistency).
  Under noiseless replay no schedule changes an outcome, so SC = 1 for any
  order-independent method by construction; under stochastic replay the
  schedule decides which seeds a set sees, and SC can fail.
- MV: 1 if P holds a non-minimal set, i.e. a strict superset of a member of T
  (minimality violation).
- replays: seed replays on the first schedule, as counted by the oracle
  itself (``Oracle.calls``), never as reported by the method.

Over a group of cases each metric is a mean; macro FEM is the mean over the
in-scope types of the per-type FEM. ``per_kind`` gives the per-type means
once, for every table and result that needs them. ``replay_reduction`` is
GCJR's saving in counted replays against exhaustive search, and
``theta_label`` the short exact label of θ that tables and results carry.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rcakit.repair.benchmark import true_family
from rcakit.repair.families import RepairResult
from rcakit.repair.graph import IN_SCOPE_KINDS, KINDS, Case
from rcakit.repair.oracle import THETA, ReplayOracle, ThetaLike, clean_success, threshold
from rcakit.repair.search import Method, in_domain

SCORES = ("fem", "aj", "recall", "rs1", "repair_success1", "mv", "sc", "replays")  # per-case metric columns


def family_scores(case: Case, result: RepairResult, truth: frozenset[Any]) -> dict[str, Any]:
    """FEM, AJ, recall, RS@1, repair_success1 and MV of one output (see module doc)."""
    pred = result.family
    union = pred | truth
    top = result.ranking[0] if result.ranking else None
    return {
        "fem": float(pred == truth),
        "aj": len(pred & truth) / len(union) if union else 1.0,
        "recall": len(pred & truth) / len(truth) if truth else 1.0,
        "rs1": float(top in truth) if top is not None else float(not truth),
        "repair_success1": float(top is not None and clean_success(case, case.mask(top))),
        "mv": float(any(t < s for s in pred for t in truth)),
    }


def format_family(family: Iterable[frozenset[Any]]) -> str:
    """A family as stable text, e.g. ``{B1, C0} | {A0}``; ``∅`` for no set."""
    sets = sorted("{" + ", ".join(sorted(s)) + "}" for s in family)
    return " | ".join(sets) if sets else "∅"


def counted_run(case: Case, method: Method, **oracle_args: Any) -> tuple[RepairResult, int]:
    """``method``'s result on one case and the seed replays its oracle counted."""
    oracle = ReplayOracle(case, **oracle_args)
    return method(case, oracle), oracle.calls


def evaluate_method(
    cases: list[Case],
    method: Method,
    *,
    q: int = 2,
    r: int = 3,
    theta: ThetaLike = THETA,
    noise: float = 0.0,
    schedules: Iterable[int] = (0, 1, 2),
) -> pd.DataFrame:
    """Run ``method`` on every case under each schedule; one row per case.

    Metrics and ``replays`` come from the first schedule listed; ``sc``
    compares the families of all listed schedules. ``in_scope`` marks cases
    whose true family lies in GCJR's domain on the true graph.
    """
    rows = []
    for case in cases:
        truth = true_family(case, q)
        runs = [counted_run(case, method, r=r, theta=theta, noise=noise, schedule=s) for s in schedules]
        first, calls = runs[0]
        rows.append(
            {
                "case_id": case.case_id,
                "kind": case.kind,
                "in_scope": in_domain(case, truth),
                "n": len(case.candidates),
                **family_scores(case, first, truth),
                "sc": float(all(res.family == first.family for res, _ in runs)),
                "replays": calls,
                "family": format_family(first.family),
                "truth": format_family(truth),
            }
        )
    return pd.DataFrame(rows)


def scoped(frame: pd.DataFrame) -> pd.DataFrame:
    """The in-scope rows of an evaluation (true family inside GCJR's domain D_G)."""
    return frame[frame["in_scope"]]


def summarise(frame: pd.DataFrame) -> dict[str, Any]:
    """The mean metrics of a group of cases, with macro FEM over the in-scope types present."""
    by_kind = frame[frame["kind"].isin(IN_SCOPE_KINDS)].groupby("kind")["fem"].mean()
    return {
        "fem": frame["fem"].mean(),
        "macro_fem": by_kind.mean(),
        "aj": frame["aj"].mean(),
        "rs1": frame["rs1"].mean(),
        "sc": frame["sc"].mean(),
        "mv": frame["mv"].mean(),
        "mean_replays": frame["replays"].mean(),
        "recall": frame["recall"].mean(),
        "repair_success1": frame["repair_success1"].mean(),
    }


def summary_table(runs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``summarise`` of the in-scope cases of each evaluation, one row per method (GCJR §Results table)."""
    return pd.DataFrame({name: summarise(scoped(frame)) for name, frame in runs.items()}).T


def per_kind(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-type means of the metric columns, one row per type present, in the order of ``KINDS``.

    Beside the means: ``in_scope``, the share of the type's cases in GCJR's
    domain, and ``empty``, how many cases returned the empty family.
    """
    groups = frame.groupby("kind")
    table = groups[list(SCORES)].mean()
    table["in_scope"] = groups["in_scope"].mean()
    table["empty"] = groups["family"].apply(lambda f: int((f == "∅").sum()))
    return table.reindex([k for k in KINDS if k in table.index])


def theta_label(theta: ThetaLike) -> str:
    """θ as a short exact label for tables and results, e.g. ``"2/3"``."""
    return str(threshold(theta))


def replay_reduction(runs: Mapping[str, pd.DataFrame]) -> float:
    """1 - GCJR / exhaustive mean replays on the in-scope cases (the paper's 55.1%)."""
    means = summary_table(runs)["mean_replays"]
    return 1 - means["GCJR"] / means["exhaustive"]
