"""The structural arm's own sections (AgenticRAG-FP §7.1): the coverage-collapse chapter beyond Table 2.

Each function reads an :class:`~rcakit.rag.experiments.arm.ArmRun` of the
structural arm and returns a :class:`rcakit.sections.Section` whose numbers
go to ``results/coverage-collapse.json`` and whose facts the prose quotes:
which intervention each probe branch decides, two counted facts of the hop
budget, what no trace reader can name, recovery per intervention, why
coverage names hop 1, and what the failed traces still hold (an oracle).

Used in the chapters: `coverage-collapse`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rcakit import prose
from rcakit.rag.experiments.accuracy import label_oracle
from rcakit.rag.experiments.arm import ArmRun
from rcakit.rag.metrics import least_share_predicting
from rcakit.rag.propagation import (
    branches_by_intervention,
    coverage_mechanism,
    hop_jaccard_summary,
    intervention_record,
    per_intervention,
    probe_on_kinds,
    protocol_checks,
    trace_properties,
    trace_reader_reach,
)
from rcakit.sections import Section


def branch_kinds_section(run: ArmRun, probe: str = "propagation_aware") -> Section:
    """Per (intervention, injected hop): the failed cases each branch of ``probe`` decided, then how many of
    them it named correctly; quotes the early terminations named by the continue branch (``et_continue_<hop>``
    of ``et_failed_<hop>``) and the query drifts named by a flip (``drift_flip_hits_<hop>``)."""
    by_kind = branches_by_intervention(run.cases, probe)
    return Section(table=by_kind, facts=probe_on_kinds(by_kind, run.depths))


def checks_section(run: ArmRun) -> Section:
    """Two facts of the authors' hop budget counted over the run (``protocol_checks``), quoted as
    ``checks_<name>``."""
    checks = protocol_checks(run.cases, run.params["hops"])
    table = pd.Series(checks, name="cases").to_frame()
    return Section(table=table, numbers={"protocol_checks": checks}, facts={"checks": checks})


def reach_section(run: ArmRun) -> Section:
    """Per injected hop: failed cases, those whose hop is absent from the trace, and those no trace reader
    names (``trace_reader_reach``), quoted as ``reach_<hop>_<name>``."""
    reach = trace_reader_reach(run.cases, run.depths)
    table = pd.DataFrame(reach).T.rename_axis("injected hop")
    return Section(table=table, numbers={"trace_reader_reach": reach}, facts={"reach": reach})


def intervention_section(run: ArmRun, names: Sequence[str] | None = None) -> Section:
    """Injected cases, recovery and the exact-hop accuracy of ``names`` (every diagnoser by default) per
    (intervention, injected hop); quotes recovery as ``recovery_<intervention>_<hop>_recovery``."""
    by_kind = per_intervention(run.cases)
    record = intervention_record(by_kind)
    shown = by_kind if names is None else by_kind.reindex(columns=["injected", "recovery", *names])
    table = label_oracle(shown.rename_axis(["intervention", "injected hop"]))
    return Section(table=table, numbers={"per_intervention": record}, facts={"recovery": record}, decimals=2)


def hop_scores_section(run: ArmRun) -> Section:
    """Per hop of the clean, correct traces: the share whose coverage score reaches the threshold, the
    largest score and the number of hops; quotes hop 1's share as ``hop1_above_share``."""
    summary = hop_jaccard_summary(run.lab, run.params["coverage_threshold"])
    return Section(table=summary, facts={"hop1_above_share": float(summary["share"].get(1, 0.0))})


def mechanism_section(run: ArmRun) -> Section:
    """Per injected hop, the share of failed cases in which coverage predicts hop 1 (all of them, and those
    whose trace has a hop 1), quoted as ``coverage_hop1_share_<hop>``; records both and Suf-Regen's least
    share of hop-1 predictions over the depths. The quoted shares are text (:func:`rcakit.prose.by_depth`)."""
    mechanism = coverage_mechanism(run.lab, run.cases, run.params["coverage_threshold"], run.depths)
    all_cases, with_hop1 = mechanism["coverage_predicts_hop1"], mechanism["coverage_predicts_hop1_with_hop1"]
    numbers = {
        "coverage_predicts_hop1": all_cases,
        "coverage_predicts_hop1_with_hop1": with_hop1,
        "suf_regen_hop1_share_min": least_share_predicting(mechanism["predictions"], "suf_regen", 1, run.depths),
    }
    table = pd.DataFrame({"all failed cases": all_cases, "failed cases with a hop 1": with_hop1})
    shares = prose.by_depth(with_hop1, run.depths, prose.percent)  # a depth may have no such case
    return Section(table=table, numbers=numbers, facts={"coverage_hop1_share": shares})


ORACLE_KEYS = {  # what the failed traces still hold, read with the world's certified facts
    "fact anywhere in the trace": ("oracle_injected_fact_in_trace", "fact_in_trace"),
    "fact at the injected hop": ("oracle_injected_fact_at_hop", None),
    "downstream facts intact": ("oracle_downstream_intact", "downstream_intact"),
}


def trace_section(run: ArmRun) -> Section:
    """Per injected hop, the share of failed cases whose trace still states the injected hop's fact
    (anywhere, at its own hop) and every later hop's fact: oracle measurements, recorded with an
    ``oracle_`` prefix and quoted as text (:func:`rcakit.prose.by_depth`) as ``fact_in_trace_<hop>`` and
    ``downstream_intact_<hop>``."""
    kept = trace_properties(run.cases, run.depths)
    numbers = {key: kept[label] for label, (key, _) in ORACLE_KEYS.items()}
    facts = {fact: prose.by_depth(kept[label], run.depths) for label, (_, fact) in ORACLE_KEYS.items() if fact}
    table = pd.DataFrame(kept).rename(columns=lambda c: f"{c} (oracle)").rename_axis("injected hop")
    return Section(table=table, numbers=numbers, facts=facts)
