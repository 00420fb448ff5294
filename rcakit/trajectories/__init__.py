"""Long agent trajectories: schema, loaders, a synthetic benchmark, locators, metrics and strata.

The LongRCA Bench task (responsible role and earliest decisive root-cause
step, scored independently) on LongRCA records, Who&When logs and seeded
synthetic long-horizon runs. Submodules, by concept:

- :mod:`~rcakit.trajectories.schema`: ``Trajectory``, ``Step``, ``Label``, ``Prediction``, role normalisation;
- :mod:`~rcakit.trajectories.loaders`: ``load_longrca``, ``load_who_and_when``, ``validate_path``;
- :mod:`~rcakit.trajectories.synthetic`: the calibrated generator with planted roots;
- :mod:`~rcakit.trajectories.locators`: the ``Locator`` interface and the offline locators;
- :mod:`~rcakit.trajectories.llm_locators`: Who&When's prompting baselines and an RCTA-style pipeline on a language model (imported on demand);
- :mod:`~rcakit.trajectories.metrics`: LongRCA scoring and the Who&When official scorer;
- :mod:`~rcakit.trajectories.strata`: length and root-to-end bins with Wilson intervals;
- :mod:`~rcakit.trajectories.evaluation`: run locators over a set and tabulate metrics and strata;
- :mod:`~rcakit.trajectories.figures`: the two-panel strata figure in the layout of LongRCA Figure 6.
"""

from rcakit.trajectories.loaders import (
    WHO_AND_WHEN_SIZES,
    WHO_AND_WHEN_SUBSETS,
    LoadResult,
    entry_problem,
    load_longrca,
    load_who_and_when,
    read_longrca,
    read_who_and_when,
    validate_path,
    who_and_when_root,
)
from rcakit.trajectories.locators import (
    OFFLINE_LOCATORS,
    FirstErrorSignalLocator,
    HandoffTraceLocator,
    Locator,
    RandomLocator,
    TerminalLocator,
    error_word,
    expected_random_accuracy,
    offline_locators,
    run_locators,
)
from rcakit.trajectories.metrics import (
    official_step_hit,
    role_correct,
    score_cases,
    source_weighted_mae,
    summarise,
    valid_step,
    who_and_when_official,
    within_k,
)
from rcakit.trajectories.schema import (
    Label,
    Prediction,
    Step,
    Trajectory,
    normalise_role,
    split_handoff,
    strip_annotation,
)
from rcakit.trajectories.strata import STRATA, bin_of, bins_dict, published_strata, stratify
from rcakit.trajectories.synthetic import (
    GeneratorConfig,
    calibration_table,
    generate_benchmark,
    generate_trajectory,
    shape_statistics,
)

__all__ = [name for name in dir() if not name.startswith("_")]
