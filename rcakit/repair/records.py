"""What the gcjr-ablations chapter records in ``results/gcjr-ablations.json``, in one place.

The chapter computes each section with :mod:`rcakit.repair.experiments`; this
module turns those sections into the one results dict the chapter compares
with the paper (``data/claims.yaml``) and records, so no notebook assembles
it by hand and every key is named once.

Used in the chapters: `gcjr-ablations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit.repair.experiments import Runs, closed_forms, main_numbers


def hidden_curve_records(curve: pd.DataFrame) -> list[dict]:
    """The mean hidden-edge curve as records ``{fraction, fem, recall}``, in fraction order (GCJR §Limitations)."""
    means = curve.xs("mean", axis=1, level=1)
    return [{"fraction": fraction, "fem": row["fem"], "recall": row["recall"]} for fraction, row in means.iterrows()]


def noise_records(summary: pd.DataFrame) -> dict[str, list[dict]]:
    """The stochastic sweep as the chapter records it: GCJR rows, and exhaustive rows without SC."""
    by_method = {name: rows.drop(columns="method") for name, rows in summary.groupby("method")}
    return {
        "stochastic": by_method["GCJR"].to_dict("records"),
        "stochastic_exhaustive": by_method["exhaustive"].drop(columns="sc").to_dict("records"),
    }


def chapter_numbers(
    *,
    runs: Runs,
    ablation: Mapping[str, Any],
    baselines: pd.DataFrame,
    curve: pd.DataFrame,
    stochastic: pd.DataFrame,
    sc_noise: Mapping[str, Any],
    cost: Mapping[str, Any],
    pilot: Mapping[str, Any],
    q: int,
) -> dict[str, Any]:
    """Every section's numbers under the keys ``data/claims.yaml`` reads: the main comparison, the
    ablations, the baselines (GCJR's own row left out), the hidden-edge curve, the noise sweep, SC under
    noise, the replay cost, the four-agent pilot and the closed forms at this ``q``."""
    return {
        **main_numbers(runs),
        "ablation": dict(ablation),
        "baselines": baselines.drop(index="GCJR").to_dict("index"),
        "hidden_curve": hidden_curve_records(curve),
        **noise_records(stochastic),
        "sc_under_noise": dict(sc_noise),
        "cost": dict(cost),
        "pilot": dict(pilot),
        "closed": closed_forms(q),
    }
