"""Exact-hop accuracy as the two RAG chapters show it (AgenticRAG-FP Tables 2-3, §7): sections and tables.

Every section here reads an :class:`~rcakit.rag.experiments.arm.ArmRun` and
returns a :class:`rcakit.sections.Section`: the accuracy table with its
bootstrap intervals, the other views of the same cases, each probe's branches,
the LLM methods' cost, the LLM judge's verdicts, and the LLM reader's replay
fidelity. A section that needs a language model the run did not have comes
back skipped, with the reason.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rcakit import prose
from rcakit.claims import published
from rcakit.llm.accounting import cost_table
from rcakit.rag import diagnosers as dg
from rcakit.rag import llm_methods as lm
from rcakit.rag.experiments.arm import ArmRun
from rcakit.rag.metrics import PROBE_CAPS, accuracy_points, attribution, capped_probes, failed_share, interval_pairs
from rcakit.rag.protocol import DIAGNOSERS, PROBES
from rcakit.sections import Section

NO_MODEL = "no language model ran (provider = none)"


def _cell(c: dict | None) -> str:
    """One accuracy cell as 'point [lo, hi]', or 'n/a'."""
    if c is None or np.isnan(c["point"]):
        return "n/a"
    return f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def accuracy_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """The Table-2-style frame: one row per diagnoser, 'point [lo, hi]' per depth, plus failed n."""
    keys = [str(d) for d in depths]
    names = sorted(result["accuracy"], key=lambda n: DIAGNOSERS.index(n) if n in DIAGNOSERS else len(DIAGNOSERS))
    rows = {name: {f"hop {d}": _cell(result["accuracy"][name].get(d)) for d in keys} for name in names}
    rows["failed n"] = {f"hop {d}": str(result["failed_n"][d]) for d in keys}
    if "llm_judged_n" in result:  # the LLM judge reads a sample of the failed cases
        rows["llm_judge n"] = {f"hop {d}": str(result["llm_judged_n"][d]) for d in keys}
    rows["recovery"] = {f"hop {d}": f"{result['recovery'][d]:.2f}" for d in keys}
    return pd.DataFrame(rows).T


CASES, PROBE_ACCURACY = "failed cases by branch", "probe accuracy"  # branch_table's column groups
BRANCH_ACCURACY = "branch accuracy"


def branch_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """Per probe and depth: failed cases per branch, each branch's accuracy on its cases, and the probe's
    accuracy with and without the fallback branch.
    """
    rows = {}
    for probe in PROBES:
        for d in map(str, depths):
            if d not in result["probe_branch"].get(probe, {}):
                continue
            row = {(CASES, b): result["probe_branch"][probe][d][b] for b in dg.BRANCHES}
            row.update({(BRANCH_ACCURACY, b): result["branch_accuracy"][probe][d][b] for b in dg.BRANCHES[:3]})
            row[(PROBE_ACCURACY, "all")] = result["accuracy"][probe][d]["point"]
            row[(PROBE_ACCURACY, "without fallback")] = result["accuracy_without_fallback"][probe][d]["point"]
            rows[(probe, int(d))] = row
    index = pd.MultiIndex.from_tuples(list(rows), names=["probe", "depth"])  # empty when no case failed
    columns = pd.MultiIndex.from_tuples(
        [(CASES, b) for b in dg.BRANCHES]
        + [(BRANCH_ACCURACY, b) for b in dg.BRANCHES[:3]]
        + [(PROBE_ACCURACY, "all"), (PROBE_ACCURACY, "without fallback")]
    )
    return pd.DataFrame(list(rows.values()), index=index, columns=columns)


VIEWS = {"stage accuracy": "stage_accuracy", "mean |hop error|": "mae", "mean tokens": "mean_cost"}


def views_table(result: dict) -> pd.DataFrame:
    """Stage accuracy, mean absolute hop error and mean tokens spent, per diagnoser and depth, side by side."""
    return pd.concat({label: pd.DataFrame(result[key]).T for label, key in VIEWS.items()}, axis=1)


ORACLE_LABELS = {"oracle_gold_hop": "oracle_gold_hop (oracle)"}  # what reads the world's certified facts


def label_oracle(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every row or column of a diagnoser that reads the world's gold facts marked "(oracle)"."""
    return frame.rename(index=ORACLE_LABELS, columns=ORACLE_LABELS)


def accuracy_section(run: ArmRun, names: Sequence[str]) -> Section:
    """Exact-hop accuracy of every diagnoser by injected hop, 'point [lo, hi]' with failed n and recovery,
    the oracle marked; records the run's scores with their intervals and quotes the points of ``names``
    (``acc_<name>_<hop>``, text: a depth with no failed case reads :data:`~rcakit.prose.NO_CASE`) and the
    failed counts (``failed_<hop>``)."""
    result = run.result
    numbers = {**result, "accuracy_ci": interval_pairs(dict(result))}
    facts = {"acc": _quoted_points(result, run.depths, names), "failed": result["failed_n"]}
    return Section(table=label_oracle(accuracy_table(result, run.depths)), numbers=numbers, facts=facts)


def _quoted_points(
    result: dict, depths: Iterable[int], names: Iterable[str] | None = None, view: str = "accuracy"
) -> dict[str, dict[str, str]]:
    """:func:`~rcakit.rag.metrics.accuracy_points` as prose text for every depth (:func:`rcakit.prose.by_depth`)."""
    return {name: prose.by_depth(p, depths) for name, p in accuracy_points(result, names, view).items()}


def _every_depth(counts: dict[str, dict[str, int]], depths: Iterable[int]) -> dict[str, dict[str, int]]:
    """Branch counts for every depth: a depth with no failed case decided no case by any branch."""
    return {str(d): counts.get(str(d), dict.fromkeys(dg.BRANCHES, 0)) for d in depths}


def published_section(chapter_id: str, table: str) -> Section:
    """The paper's own table ``table`` of ``chapter_id`` (``data/claims.yaml``), one row per diagnoser."""
    return Section(table=pd.DataFrame(published(chapter_id, table)).T)


def views_section(run: ArmRun) -> Section:
    """Stage accuracy, mean absolute hop error and mean tokens spent, per diagnoser and injected hop."""
    return Section(table=label_oracle(views_table(run.result)), decimals=2)


def branches_section(run: ArmRun, *, downstream: bool = False) -> Section:
    """Per probe and injected hop: the failed cases each branch decided (their accuracies are
    :func:`branch_accuracy_section`'s table); quotes the counts (``branch_n_...``, 0 at a depth with no failed
    case), the accuracy without the fallback (``without_fallback_...``, text as in :func:`accuracy_section`)
    and each branch's hit share (``hit_share_...``).

    ``downstream`` adds the oracle column (the share of failed cases whose evidence still states every later
    hop's fact), records it as ``oracle_downstream_intact`` and quotes it (``downstream_intact_<hop>``).
    """
    result = run.result
    facts: dict[str, Any] = {
        "without_fallback": _quoted_points(result, run.depths, PROBES, view="accuracy_without_fallback"),
        "branch_n": {name: _every_depth(result["probe_branch"].get(name, {}), run.depths) for name in PROBES},
        "hit_share": result["branch_hit_share"],
    }
    table = branch_table(result, run.depths)[[CASES]].copy()
    if not downstream:
        return Section(table=table, facts=facts, decimals=2)
    intact = failed_share(run.cases, "downstream_intact", run.depths)
    table[("oracle", "downstream facts intact")] = [intact[str(d)] for _, d in table.index]
    facts["downstream_intact"] = prose.by_depth(intact, run.depths)
    return Section(table=table, numbers={"oracle_downstream_intact": intact}, facts=facts, decimals=2)


def branch_accuracy_section(run: ArmRun) -> Section:
    """Per probe and injected hop: each branch's exact-hop accuracy on the failed cases it decided, and the
    probe's accuracy with and without its fallback branch (the counts are :func:`branches_section`'s)."""
    table = branch_table(run.result, run.depths)
    return Section(table=table[[BRANCH_ACCURACY, PROBE_ACCURACY]], decimals=2)


def probe_budget_section(run: ArmRun) -> Section:
    """Propagation-Aware's and Suf-Regen's exact-hop accuracy per injected hop at this run's probe budget and
    at each of the authors' strict caps (:data:`~rcakit.rag.metrics.PROBE_CAPS`) below it, derived from the
    run's own cases (:func:`~rcakit.rag.metrics.capped_probes`); records ``probe_budget`` and quotes
    ``probe_cap_<cap>_<probe>_<hop>`` (text, as in :func:`accuracy_section`)."""
    own = run.lab.max_probes
    caps = [c for c in PROBE_CAPS if own is None or c < own]
    views = {f"max_probes = {own or 0} (this run)": run.result}
    views |= {f"max_probes = {c}": attribution(capped_probes(run.cases, c), run.depths) for c in caps}
    points = {label: accuracy_points(result, PROBES) for label, result in views.items()}
    table = pd.DataFrame(
        {
            (name, label): {f"hop {d}": p[name].get(str(d)) for d in run.depths}
            for label, p in points.items()
            for name in PROBES
        }
    )
    table = table[[c for name in PROBES for c in table.columns if c[0] == name]]
    quoted = {str(c): _quoted_points(views[f"max_probes = {c}"], run.depths, PROBES) for c in caps}
    numbers = {"probe_budget": {str(c): points[f"max_probes = {c}"] for c in caps}}
    return Section(table=table, numbers=numbers, facts={"probe_cap": quoted}, decimals=2)


def cost_section(run: ArmRun) -> Section:
    """The LLM methods' calls, tokens and abstentions, in total and per case (``rcakit.llm.accounting``)."""
    if not run.llm_cost:
        return Section.skip(f"{NO_MODEL}, so no model call was made")
    return Section(table=cost_table(run.llm_cost), numbers={"llm_cost": run.llm_cost})


def judge_section(run: ArmRun) -> Section:
    """Per injected hop of the judged cases: how many the LLM judge assigned to each hop (0 = none or
    abstained), then every diagnoser's exact-hop accuracy on those same cases; quotes the judge's summary
    (``judge_judged``, ``judge_abstained``, ``judge_modal_hop``, ...)."""
    summary = run.judge_summary
    if summary is None or run.judged is None or run.same_cases is None:
        return Section.skip(f"{NO_MODEL}, so no LLM judge read the failed cases")
    counts = lm.hop_counts(run.judged, run.depths).rename(index="hop {}".format)
    same = lm.same_case_table(run.same_cases, run.depths).T
    table = pd.concat({"judge's hop (0 = none or abstained)": counts, "accuracy on the judged cases": same}, axis=1)
    facts = {"judge": {k: v for k, v in summary.items() if k not in ("hop_counts", "same_cases")}}
    return Section(table=table.rename_axis("injected hop"), numbers={"llm_judge": summary}, facts=facts, decimals=2)


def replay_section(run: ArmRun) -> Section:
    """The LLM reader's replay action-match rate with its 95% Wilson interval (CAR §3)."""
    if run.replay is None:
        return Section.skip("the agent's reader is the rule reader, which replays exactly by construction")
    r = run.replay
    row = {"reads": r["n"], "matched": r["matched"], "rate": r["rate"], "95% low": r["ci"][0], "95% high": r["ci"][1]}
    table = pd.DataFrame([row], index=pd.Index(["llm_reader"], name="reader"))
    return Section(table=table, numbers={"replay_action_match": r})
