"""Long agent trajectories: schema, loaders, a synthetic benchmark, locators, metrics and strata.

The LongRCA Bench task (responsible role and earliest decisive root-cause
step, scored independently) on LongRCA records, Who&When logs and seeded
synthetic long-horizon runs. Submodules, by concept:

- :mod:`~rcakit.trajectories.schema`: ``Trajectory``, ``Step``, ``Label``, ``Prediction``, role normalisation;
- :mod:`~rcakit.trajectories.loaders`: ``load_longrca``, ``load_who_and_when``, ``validate_path``, built on
  :mod:`~rcakit.trajectories.reading` (record files), :mod:`~rcakit.trajectories.parsing` (field checks),
  :mod:`~rcakit.trajectories.longrca_format` and :mod:`~rcakit.trajectories.who_and_when_format`;
- :mod:`~rcakit.trajectories.release`: the public LongRCA Bench release checked against the paper's description;
- :mod:`~rcakit.trajectories.signals`: the error, repair and evidence markup the generator writes and locators read;
- :mod:`~rcakit.trajectories.synthetic`: the calibrated generator with planted roots;
- :mod:`~rcakit.trajectories.locators`: the ``Locator`` interface and the offline locators;
- :mod:`~rcakit.trajectories.llm_locators`: Who&When's prompting baselines on a language model (imported on demand);
- :mod:`~rcakit.trajectories.rcta`: an RCTA-style pipeline on a language model (imported on demand);
- :mod:`~rcakit.trajectories.metrics`: LongRCA scoring and the Who&When official scorer;
- :mod:`~rcakit.trajectories.strata`: length and root-to-end bins with Wilson intervals;
- :mod:`~rcakit.trajectories.evaluation`: run locators over sets, the Explore sweep, tables and strata;
- :mod:`~rcakit.trajectories.llm_evaluation`: the language-model locators on a seeded subset, with their cost.

The longrca-strata chapter's sections and figures are in ``rcakit.chapters.longrca_strata``.

Used in the chapters: `longrca-strata`.
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
)
from rcakit.trajectories.metrics import (
    official_agent_hit,
    official_hit,
    official_step_hit,
    role_correct,
    score_cases,
    source_weighted_mae,
    summarise,
    valid_step,
    who_and_when_official,
    within_k,
)
from rcakit.trajectories.release import paper_source, release_checks, release_folder, release_shape
from rcakit.trajectories.schema import (
    Label,
    Prediction,
    Step,
    Trajectory,
    normalise_role,
    split_handoff,
    strip_annotation,
)
from rcakit.trajectories.signals import ERROR_SIGNAL, EVIDENCE_TOKEN, REPAIR_SIGNAL, evidence_tokens
from rcakit.trajectories.strata import STRATA, bin_of, bins_dict, published_strata, stratify
from rcakit.trajectories.synthetic import (
    GeneratorConfig,
    calibration_table,
    generate_benchmark,
    generate_trajectory,
    planted_features,
    shape_statistics,
)

__all__ = [
    "ERROR_SIGNAL",
    "EVIDENCE_TOKEN",
    "FirstErrorSignalLocator",
    "GeneratorConfig",
    "HandoffTraceLocator",
    "Label",
    "LoadResult",
    "Locator",
    "OFFLINE_LOCATORS",
    "Prediction",
    "REPAIR_SIGNAL",
    "RandomLocator",
    "STRATA",
    "Step",
    "TerminalLocator",
    "Trajectory",
    "WHO_AND_WHEN_SIZES",
    "WHO_AND_WHEN_SUBSETS",
    "bin_of",
    "bins_dict",
    "calibration_table",
    "entry_problem",
    "error_word",
    "evidence_tokens",
    "expected_random_accuracy",
    "generate_benchmark",
    "generate_trajectory",
    "load_longrca",
    "load_who_and_when",
    "normalise_role",
    "official_agent_hit",
    "official_hit",
    "official_step_hit",
    "offline_locators",
    "paper_source",
    "planted_features",
    "published_strata",
    "read_longrca",
    "read_who_and_when",
    "release_checks",
    "release_folder",
    "release_shape",
    "role_correct",
    "score_cases",
    "shape_statistics",
    "source_weighted_mae",
    "split_handoff",
    "stratify",
    "strip_annotation",
    "summarise",
    "valid_step",
    "validate_path",
    "who_and_when_official",
    "within_k",
]
