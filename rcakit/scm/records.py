"""What the car-shapley chapter records in ``results/car-shapley.json``, in one place.

The chapter computes each section with :mod:`rcakit.scm` and
:mod:`rcakit.shapley`; :func:`chapter_numbers` turns those sections into the
one results dict the chapter compares with the paper (``data/claims.yaml``)
and records, so no notebook assembles it by hand and every key is named once.

Used in the chapters: `car-shapley`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rcakit.scm.contrastive import Contrastive
from rcakit.scm.support_agent import SupportReport
from rcakit.shapley import ShapleyEstimate


def chapter_numbers(
    *,
    shap: ShapleyEstimate,
    phi_interval: str,
    analytic: Sequence[float],
    analytic_efficiency: float,
    efficiency: Mapping[str, Any],
    coverage: Mapping[str, Any],
    contrastive_abs_sum: float,
    contrast: Contrastive,
    support: SupportReport,
) -> dict[str, Any]:
    """The interaction SCM's Shapley split with its intervals, efficiency and coverage (CAR §5), the
    pivotal SCM's contrastive effects and locus (§4), and the support agent's report (§3, Figure 1)."""
    car = coverage["chapter"]["car"][0]
    return {
        "interaction": {
            "phi": shap.values,
            "phi_ci": np.column_stack([shap.ci_low, shap.ci_high]),
            "phi_interval": phi_interval,
            "efficiency": shap.efficiency,
            "analytic_efficiency": analytic_efficiency,
            "efficiency_gap": efficiency["efficiency_gap"],
            "efficiency_ci_from_v_empty": efficiency["efficiency_ci"],
            "analytic_phi": analytic,
            "rollouts": shap.spent,
            "permutations": shap.permutations,
            "truncated": shap.truncated,
            "contrastive_abs_sum": contrastive_abs_sum,
            "coverage": {"car_phi_0": car["coverage"], "car_phi_0_ci": [car["lo"], car["hi"]], "study": coverage},
        },
        "pivotal": {
            "locus": contrast.locus,
            "effects": contrast.table["effect"],
            "effect_ci": contrast.table[["effect_lo", "effect_hi"]].to_numpy(),
        },
        "support_agent": support.numbers(),
    }
