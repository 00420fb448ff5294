"""The pilot experiment: GCJR and exhaustive search on the workflow's cases (GCJR §Key results, DualSolve-MAS).

Each search gets its own :class:`~rcakit.repair.pilot.run.WorkflowOracle`,
so each pays its own model calls. GCJR is scored against exhaustive search's
family (the paper's FEM in the pilot), exhaustive search against the planted
one. With the scripted policy and no slip, the planted family is the family
under replay by construction, so FEM = 1 for GCJR holds by the exactness
argument (GCJR §Technical contribution); the call counts are what the
workflow's graph gives. The pilot reports FEM, RS@1 and MV of
:func:`rcakit.repair.metrics.family_scores`, not its symbolic
``repair_success1``.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit.llm.base import Provider
from rcakit.repair.metrics import family_scores
from rcakit.repair.oracle import THETA, ThetaLike
from rcakit.repair.pilot.agents import AgentPolicy, make_policy
from rcakit.repair.pilot.run import WorkflowCase, WorkflowOracle, pilot_cases
from rcakit.repair.search import exhaustive, gcjr

SCORED = ("fem", "rs1", "mv")


def _agents(
    policy: str | AgentPolicy,
    *,
    provider: str | Provider | None,
    seed: int,
    slip: float,
    timeout: float | None = None,
    base_url: str | None = None,
) -> AgentPolicy:
    if not isinstance(policy, str):
        return policy
    return make_policy(policy, provider, seed=seed, slip=slip, timeout=timeout, base_url=base_url)


def evaluate_pilot(
    cases: list[WorkflowCase],
    *,
    policy: str | AgentPolicy = "scripted",
    provider: str | Provider | None = None,
    seed: int = 0,
    slip: float = 0.0,
    r: int = 3,
    theta: ThetaLike = THETA,
) -> pd.DataFrame:
    """GCJR and exhaustive search on each case, each with its own oracle; one row per case.

    The reference family is exhaustive search's (the paper's FEM in the
    pilot); ``planted`` says whether it equals the planted family.
    """
    agents = _agents(policy, provider=provider, seed=seed, slip=slip)
    rows = []
    for w in cases:
        runs = {}
        for name, method in (("gcjr", gcjr), ("exhaustive", exhaustive)):
            oracle = WorkflowOracle(w, agents, r=r, theta=theta)
            runs[name] = (method(w.case, oracle), oracle)
        truth = runs["exhaustive"][0].family
        rows.append(
            {
                "case_id": w.case.case_id,
                "kind": w.case.kind,
                "n": len(w.case.candidates),
                **{f"gcjr_{k}": v for k, v in family_scores(w.case, runs["gcjr"][0], truth).items() if k in SCORED},
                **{
                    f"exhaustive_{k}": v
                    for k, v in family_scores(w.case, runs["exhaustive"][0], w.case.family).items()
                    if k in SCORED
                },
                "gcjr_calls": runs["gcjr"][1].calls,
                "exhaustive_calls": runs["exhaustive"][1].calls,
                "planted": truth == w.case.family,
                "clean_fails": not w.clean_correct,
                "failed_passes": w.failed_correct,
                "seeds_disagree": bool(runs["exhaustive"][1].seed_splits or runs["gcjr"][1].seed_splits),
            }
        )
    return pd.DataFrame(rows)


def run_pilot(
    cases: list[WorkflowCase] | None = None,
    *,
    n_cases: int = 24,
    seed: int = 0,
    policy: str | AgentPolicy = "scripted",
    provider: str | Provider | None = None,
    slip: float = 0.0,
    r: int = 3,
    theta: ThetaLike = THETA,
    timeout: float | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """The pilot's numbers (GCJR §Key results, DualSolve-MAS): FEM, RS@1, MV and mean calls, and the saving.

    GCJR is scored against exhaustive search's family, exhaustive search
    against the planted one. Cases whose clean run fails, whose failed run
    passes, or whose replays disagree across seeds are counted apart, and
    FEM is also given over the cases with none of these (``fem_regular``).
    ``timeout`` bounds each model reply when ``provider`` is a spec string, whose server (for ``openai:``)
    is ``base_url``.
    """
    agents = _agents(policy, provider=provider, seed=seed, slip=slip, timeout=timeout, base_url=base_url)
    if cases is None:
        cases = pilot_cases(n_cases, seed, agents)
    frame = evaluate_pilot(cases, policy=agents, r=r, theta=theta)
    irregular = frame["clean_fails"] | frame["failed_passes"] | frame["seeds_disagree"]
    regular = frame[~irregular]
    gcjr_calls, exh_calls = frame["gcjr_calls"].mean(), frame["exhaustive_calls"].mean()
    return {
        "n_cases": len(frame),
        "gcjr": {
            **{k: float(frame[f"gcjr_{k}"].mean()) for k in SCORED},
            "mean_calls": float(gcjr_calls),
            "fem_regular": float(regular["gcjr_fem"].mean()) if len(regular) else float("nan"),
        },
        "exhaustive": {**{k: float(frame[f"exhaustive_{k}"].mean()) for k in SCORED}, "mean_calls": float(exh_calls)},
        "saving": float(1 - gcjr_calls / exh_calls) if exh_calls else float("nan"),
        "planted_recovered": int(frame["planted"].sum()),
        "clean_failures": int(frame["clean_fails"].sum()),
        "failed_runs_passing": int(frame["failed_passes"].sum()),
        "seed_disagreements": int(frame["seeds_disagree"].sum()),
    }


PILOT_ROWS = {  # label: (key in run_pilot's numbers, key in the paper's pilot block or None)
    "FEM, GCJR against exhaustive search": ("gcjr.fem", "gcjr.fem"),
    "RS@1, GCJR": ("gcjr.rs1", "gcjr.rs1"),
    "MV, GCJR": ("gcjr.mv", "gcjr.mv"),
    "mean model calls, GCJR": ("gcjr.mean_calls", "gcjr.mean_calls"),
    "mean model calls, exhaustive search": ("exhaustive.mean_calls", "exhaustive.mean_calls"),
    "saving, 1 - GCJR/exhaustive": ("saving", "saving"),
    "cases": ("n_cases", "n_cases"),
    "shown apart: clean runs that fail": ("clean_failures", None),
    "shown apart: failed runs that pass": ("failed_runs_passing", None),
    "shown apart: cases whose replay seeds disagree": ("seed_disagreements", None),
    "FEM over the cases with none of these": ("gcjr.fem_regular", None),
    "exhaustive family = planted family (cases)": ("planted_recovered", None),
}


def _dotted(tree: Mapping[str, Any], dotted: str) -> object:
    for part in dotted.split("."):
        tree = tree[part]
    return tree


def pilot_beside_paper(numbers: Mapping[str, Any], paper: Mapping[str, Any]) -> pd.DataFrame:
    """The pilot's numbers beside the paper's (GCJR §Key results, DualSolve-MAS).

    The counts shown apart (and FEM over the regular cases) have no paper value.
    The columns hold objects, so a count prints as an integer beside the rates.
    """
    labels = list(PILOT_ROWS)
    paper_column = [float("nan") if theirs is None else _dotted(paper, theirs) for _, theirs in PILOT_ROWS.values()]
    ours_column = [_dotted(numbers, ours) for ours, _ in PILOT_ROWS.values()]
    return pd.DataFrame(
        {
            "paper": pd.Series(paper_column, labels, dtype=object),
            "workbench": pd.Series(ours_column, labels, dtype=object),
        }
    )
