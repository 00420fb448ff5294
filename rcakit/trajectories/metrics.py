"""LongRCA scoring (§6.1) and the Who&When official scorer.

Role and step are scored independently. A role is right when its normalised
form (:func:`~rcakit.trajectories.normalise_role`) is non-empty, in
the trajectory's recorded role set and equal to the normalised reference; a
step is valid when it is an integer (or a string of digits) inside
``0..T-1``. Every accuracy divides by all N trajectories, so an invalid or
missing output counts as wrong. MAE is source-weighted over valid outputs:
``sum_b N_b * MAE_b / N``; a source without any valid output has no MAE term
and its weight is left out of both sums (the paper leaves that case open).

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.trajectories.schema import Prediction, Trajectory, normalise_role


def valid_step(step: Any, length: int) -> int | None:
    """The predicted step as an int when it is a valid index into ``length`` steps, else ``None``."""
    if isinstance(step, (int, np.integer)) and not isinstance(step, bool):
        value = int(step)
    elif isinstance(step, str) and re.fullmatch(r"\s*\d+\s*", step):
        value = int(step)
    else:
        return None
    return value if 0 <= value < length else None


def role_correct(role: Any, trajectory: Trajectory) -> bool:
    """LongRCA role accuracy for one case (never derived from the predicted step)."""
    predicted = normalise_role(role)
    return bool(predicted) and predicted in trajectory.roles and predicted == normalise_role(trajectory.truth.role)


def score_cases(trajectories: Sequence[Trajectory], predictions: Sequence[Prediction]) -> pd.DataFrame:
    """One row per labelled trajectory: length, root, distance, role hit, valid step, absolute error.

    ``exact_official`` and ``agent_official`` are Who&When's substring checks
    (:func:`official_step_hit`, :func:`official_agent_hit`), kept beside the
    strict ``exact`` and ``role_ok`` so both scorers read the same predictions.
    """
    if len(trajectories) != len(predictions):
        raise RcakitError(f"predictions: {len(predictions)} for {len(trajectories)} trajectories")
    rows = []
    for traj, pred in zip(trajectories, predictions, strict=True):
        if traj.label is None:
            raise RcakitError(f"trajectory {traj.id}: has no label to score against")
        step = valid_step(pred.step, len(traj))
        rows.append(
            {
                "id": traj.id,
                "source": traj.source,
                "length": len(traj),
                "root": traj.label.step,
                "root_to_end": traj.root_to_end,
                "role_ok": role_correct(pred.role, traj),
                "step": np.nan if step is None else step,
                "valid": step is not None,
                "abs_err": np.nan if step is None else abs(step - traj.label.step),
                "exact_official": official_step_hit(pred.step, traj.label.step),
                "agent_official": official_agent_hit(pred.role, traj.label.role),
            }
        )
    frame = pd.DataFrame(rows)
    frame["exact"] = frame["abs_err"] == 0
    frame["within5"] = frame["abs_err"] <= 5
    return frame


def within_k(cases: pd.DataFrame, k: int) -> float:
    """Share of all N cases with a valid step at most ``k`` away from the reference."""
    return float((cases["abs_err"] <= k).sum() / len(cases))


def source_weighted_mae(cases: pd.DataFrame) -> float:
    """``sum_b N_b * mean_{valid in b} |r_hat - r*| / sum_b N_b`` over sources with a valid output."""
    per_source = cases.groupby("source").agg(n=("valid", "size"), mae=("abs_err", "mean"))
    per_source = per_source.dropna(subset=["mae"])
    if per_source.empty:
        return float("nan")
    return float((per_source["n"] * per_source["mae"]).sum() / per_source["n"].sum())


def summarise(cases: pd.DataFrame) -> dict[str, Any]:
    """``{role_acc, exact, within5, mae, n}`` over all N cases (invalid = wrong)."""
    n = len(cases)
    return {
        "role_acc": float(cases["role_ok"].sum() / n),
        "exact": within_k(cases, 0),
        "within5": within_k(cases, 5),
        "mae": source_weighted_mae(cases),
        "n": n,
    }


def official_hit(predicted: Any, reference: Any) -> bool:
    """Who&When's official check, for step and agent alike: the reference string occurs in the predicted one.

    So a predicted step ``"12"`` counts for a reference step ``1``, and a
    predicted agent ``"WebSurfer 2"`` for ``"WebSurfer"`` (the substring
    quirk of the Who&When evaluation script, Zhang et al. 2025 §4); ``None``
    is a miss.
    """
    return predicted is not None and str(reference) in str(predicted)


official_step_hit = official_hit  # the step column of the official scorer
official_agent_hit = official_hit  # the agent column of the official scorer


def who_and_when_official(trajectories: Sequence[Trajectory], predictions: Sequence[Prediction]) -> dict[str, Any]:
    """The official scorer's agent and step accuracy, each over all N logs."""
    n = len(trajectories)
    pairs = list(zip(trajectories, predictions, strict=True))
    agent = sum(official_agent_hit(p.role, t.truth.role) for t, p in pairs)
    step = sum(official_step_hit(p.step, t.truth.step) for t, p in pairs)
    return {"agent": agent / n, "step": step / n, "n": n}
