"""What the two AgenticRAG-FP chapters record in their results files, each in one place.

The chapters compute each section with :mod:`rcakit.rag.experiments` and
:mod:`rcakit.rag.metrics`; these functions turn the sections into the one
results dict a chapter compares with the paper (``data/claims.yaml``) and
records, so no notebook assembles it by hand and every key is named once.
Numbers read from the world's gold facts keep their ``oracle_`` prefix.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rcakit.rag import metrics
from rcakit.rag.experiments import ArmRun, world_record


def coverage_collapse_numbers(
    *,
    run: ArmRun,
    mechanism: Mapping[str, Any],
    protocol: Mapping[str, Any],
    checks: Mapping[str, Any],
    reach: Any,
    kept: Mapping[str, Any],
    by_kind: pd.DataFrame,
) -> dict[str, Any]:
    """Exact-hop accuracy by depth with intervals (Table 2), why coverage names hop 1, Suf-Regen's least
    hop-1 share, the protocol run and its checks, what a trace reader can reach, the oracle's view of the
    injected fact, the world, the eligible questions, recovery per intervention, and the LLM methods."""
    lab, depths = run.lab, list(run.depths)
    return {
        **run.result,
        "accuracy_ci": metrics.interval_pairs(dict(run.result)),
        "coverage_predicts_hop1": mechanism["coverage_predicts_hop1"],
        "coverage_predicts_hop1_with_hop1": mechanism["coverage_predicts_hop1_with_hop1"],
        "suf_regen_hop1_share_min": metrics.least_share_predicting(mechanism["predictions"], "suf_regen", 1, depths),
        "protocol": protocol,
        "protocol_checks": checks,
        "trace_reader_reach": reach,
        "oracle_injected_fact_in_trace": kept["fact anywhere in the trace"],
        "oracle_injected_fact_at_hop": kept["fact at the injected hop"],
        "oracle_downstream_intact": kept["downstream facts intact"],
        "clean_accuracy": lab.clean_accuracy,
        "world": world_record(lab),
        "eligible_questions": lab.eligible_questions(depths),
        "per_intervention": metrics.intervention_record(by_kind),
        **run.llm_numbers(),
    }


def content_corruption_numbers(
    *,
    run: ArmRun,
    shares: pd.DataFrame,
    strategy_counts: Any,
    absorbed: Mapping[str, Any],
    contamination: Any,
    bridge: Mapping[str, Any],
    bridge_hop1: float | None,
    downstream: Any,
    protocol: Mapping[str, Any],
) -> dict[str, Any]:
    """Exact-hop accuracy by depth with intervals, the absorbed / resisted / derailed outcomes (Table 4) and
    their counts, the corruption strategies, what absorbed cases carry, query contamination, the bridge-entity
    slice beside its hop-1 share, the oracle's view downstream, the protocol, the world, the LLM methods."""
    lab, cases = run.lab, run.cases
    return {
        **run.result,
        "accuracy_ci": metrics.interval_pairs(dict(run.result)),
        "outcomes": metrics.outcome_record(shares),
        "outcome_counts": metrics.outcome_counts(cases, "depth"),
        "strategy_counts": strategy_counts,
        "absorbed_answer_fact_share": absorbed["absorbed_answer_fact_share"],
        "salient_entity_absorbed": absorbed["salient_entity_absorbed"],
        "query_contamination": contamination,
        "bridge_slice": bridge,
        "bridge_slice_ci": metrics.interval_of(dict(bridge)),
        "bridge_slice_hop1_share": bridge_hop1,
        "bridge_slice_suf_regen_gap": metrics.gap(bridge.get("suf_regen", {}).get("point"), bridge_hop1),
        "oracle_downstream_intact": downstream,
        "protocol": protocol,
        "skipped": int(cases["skipped"].sum()),
        "clean_accuracy": lab.clean_accuracy,
        "world": world_record(lab),
        **run.llm_numbers(),
    }
