"""The attribution-families chapter: every method on every testbed case, and each section it shows.

:func:`compare_methods` scores the chosen methods on the three testbeds
(:mod:`rcakit.attribution.scoring`: a fresh oracle per method and case, one
replay memo shared by all); each section of the chapter then comes back as
a :class:`rcakit.sections.Section`:

- :func:`families_section`: what each method can express and what it assumes;
- :func:`cases_section`: the cases per testbed and fault type;
- :func:`testbed_section`: one testbed's accuracies with 95% Wilson intervals
  beside the mean seed replays per case;
- :func:`findings_section`: the findings the chapter states, and the memo's figures;
- :func:`main_section`: methods x testbeds, mean accuracy beside mean replays.

The sections' tables name methods, testbeds and fault types for a reader
(:func:`named`); the numbers they record keep the ids.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from IPython.display import Markdown

from rcakit import tables
from rcakit.attribution.adapters import FAMILY_OF, METHOD_NAMES, Method
from rcakit.attribution.oracle import ReplayMemo
from rcakit.attribution.scoring import (
    METHOD_TIMEOUT,
    answer_text,
    check_method_timeout,
    correct,
    family_text,
    run_method,
    score_methods,
    summary,
)
from rcakit.attribution.testbeds import FAULT_TYPE_NAMES, FAULT_TYPES, TESTBED_NAMES, TestbedCase
from rcakit.sections import Section

__all__ = [
    "METHOD_TIMEOUT",
    "READER_NAMES",
    "Comparison",
    "accuracy_table",
    "answer_text",
    "cases_section",
    "check_method_timeout",
    "compare_methods",
    "correct",
    "cost_frontier",
    "families_section",
    "families_table",
    "family_text",
    "findings",
    "findings_section",
    "main_section",
    "main_table",
    "memo_figures",
    "named",
    "results_tree",
    "run_method",
    "score_methods",
    "summary",
    "testbed_points",
    "testbed_section",
]


READER_NAMES = {**METHOD_NAMES, **TESTBED_NAMES, **FAULT_TYPE_NAMES}  # id -> a reader's name, for tables


def named(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the method, testbed and fault-type ids in its index and columns given a reader's names.

    Ids without a name (a user's method) are kept; only labels change, never a value.
    """
    return table.rename(index=READER_NAMES, columns=READER_NAMES)


@dataclass(frozen=True)
class Comparison:
    """Every method's row per case (:func:`score_methods`), their :func:`summary` per cell, and the shared memo."""

    scores: pd.DataFrame
    summary: pd.DataFrame
    memo: ReplayMemo


def compare_methods(
    testbeds: Mapping[str, list[TestbedCase]],
    methods: Mapping[str, Method],
    *,
    budget: int | None = None,
    method_timeout: float = METHOD_TIMEOUT,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> Comparison:
    """Every method on every case of ``testbeds`` through one :class:`ReplayMemo`, scored and summarised.

    ``budget`` caps the seed replays a method may spend per case (None: each
    method's own default); a user's method gets ``method_timeout`` seconds per case.
    """
    memo = ReplayMemo()
    scores = score_methods(testbeds, methods, budget, memo, progress=progress, method_timeout=method_timeout)
    return Comparison(scores, summary(scores), memo)


def results_tree(table: pd.DataFrame) -> dict:
    """``{testbed: {fault type: {method: {n, accuracy, ci, mean_cost, mean_tokens, mean_memo_hits}}}}``."""
    tree: dict = {}
    for row in table.to_dict(orient="records"):
        tree.setdefault(row["testbed"], {}).setdefault(row["fault_type"], {})[row["method"]] = {
            "n": int(row["n"]),
            "accuracy": float(row["accuracy"]),
            "ci": [float(row["ci_lo"]), float(row["ci_hi"])],
            "mean_cost": float(row["mean_cost"]),
            "mean_tokens": float(row["mean_tokens"]),
            "mean_memo_hits": float(row["mean_memo_hits"]),
        }
    return tree


def accuracy_table(table: pd.DataFrame, testbed: str) -> pd.DataFrame:
    """One testbed's accuracies as "acc [lo, hi]" (methods x fault types), beside the mean replay cost."""
    part = table[table["testbed"] == testbed]
    cell = part.apply(lambda r: f"{r.accuracy:.2f} [{r.ci_lo:.2f}, {r.ci_hi:.2f}]", axis=1)
    wide = part.assign(cell=cell).pivot(index="method", columns="fault_type", values="cell")
    wide = wide[[t for t in FAULT_TYPES[testbed] if t in wide.columns]]
    cost = part.groupby("method", sort=False)["mean_cost"].mean().rename("mean replays")
    order = list(dict.fromkeys(part["method"]))
    return wide.join(cost).reindex(order)


def cost_frontier(points: pd.DataFrame) -> pd.DataFrame:
    """The methods no other beats on both axes (lower cost, higher accuracy), cheapest first."""
    ranked = points.sort_values(["cost", "accuracy"], ascending=[True, False])
    best = -np.inf
    keep = []
    for label, accuracy in ranked["accuracy"].items():
        if accuracy > best:
            keep.append(label)
            best = accuracy
    return ranked.loc[keep]


def testbed_points(table: pd.DataFrame, testbed: str) -> pd.DataFrame:
    """Per method on one testbed: mean accuracy over its fault types and mean replay cost."""
    part = table[table["testbed"] == testbed]
    return part.groupby("method", sort=False).agg(accuracy=("accuracy", "mean"), cost=("mean_cost", "mean"))


def families_table(methods: Iterable[str]) -> pd.DataFrame:
    """What each built-in method can express and what it assumes."""
    assumes = {
        "post-hoc reader": "the recorded trace (or graph) only; no replay",
        "single-intervention probe": "a replayable prefix and a clean counterpart of one unit at a time",
        "contrastive resampling": "a stochastic policy to resample from each step on (an SCM)",
        "Shapley": "replay of arbitrary coalitions; a value to share (no joint/alternative distinction)",
        "repair-family search": "replay of sets with clean counterparts; GCJR also a dependency graph",
    }
    expresses = {
        "coverage": "point",
        "rule_based": "point",
        "centrality": "point",
        "propagation_aware": "point",
        "suf_regen": "point",
        "singleton_replay": "family (singletons)",
        "contrastive": "point",
        "shapley_exact": "ranking",
        "shapley_mc": "ranking",
        "shapley_rollouts": "ranking",
        "shapley_top2": "family (one pair)",
        "gcjr": "family",
        "exhaustive": "family",
    }
    rows = [
        {
            "method": m,
            "family": FAMILY_OF.get(m, "user method"),
            "expresses": expresses.get(m, "any"),
            "assumes": assumes.get(FAMILY_OF.get(m, ""), "what its author states"),
        }
        for m in methods
    ]
    return pd.DataFrame(rows).set_index("method")


def memo_figures(memo: ReplayMemo, scores: pd.DataFrame) -> dict:
    """Seed replays charged to the methods, those the memo answered, and those actually computed."""
    return {
        "charged": int(scores["replays"].sum()),
        "memo_hits": int(scores["memo_hits"].sum()),
        "computed": int(memo.computed),
    }


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else float("nan")


def findings(scores: pd.DataFrame) -> dict:
    """The measured findings the chapter states (each could have come out the other way).

    - ``gcjr_equals_singleton_rag``: share of RAG cases where GCJR returns the
      same family as singleton replay (pairs of hops are comparable, so GCJR's
      admission screens every pair out);
    - ``exhaustive_joint_rag`` / ``gcjr_joint_rag``: their accuracy on the
      jointly necessary RAG pairs;
    - ``top2_pair_on_either``: share of either-suffices cases (RAG
      double_either, Controlled-DAG alt_or) where Shapley top-2 returns the
      two repairs as one joint pair;
    - ``ranking_on_either``: share of the same cases where exact Shapley puts
      both repairs on top (the ranking, read as players, is right);
    - ``locus_share``: per support-agent variant, the share of cases whose
      contrastive locus falls on each step, and ``locus_later_double`` the
      share of double-injection cases whose locus is the later injected step;
    - ``probe_minus_reader_rag_single``: Propagation-Aware's accuracy minus
      coverage's on single RAG faults;
    - ``mc_minus_exact_dag``: Monte-Carlo Shapley's accuracy minus exact
      Shapley's, over every Controlled-DAG case;
    - ``exhaustive_support_double``: exhaustive search on the support agent's
      two injections, replayed with finitely many rollouts.
    """

    def rows(method: str, testbed: str | None = None, fault_types: Sequence[str] | None = None) -> pd.DataFrame:
        part = scores[scores["method"] == method]
        if testbed is not None:
            part = part[part["testbed"] == testbed]
        if fault_types is not None:
            part = part[part["fault_type"].isin(fault_types)]
        return part.set_index(["testbed", "case_id"])

    g, s = rows("gcjr", "rag_hops"), rows("singleton_replay", "rag_hops")
    either = ("double_either", "alt_or")
    top2, exact = rows("shapley_top2", fault_types=either), rows("shapley_exact", fault_types=either)
    pair = top2["answer"] == top2["truth"].str.replace("} | {", ", ", regex=False)
    contrast = scores[(scores["method"] == "contrastive") & (scores["testbed"] == "support_agent")]
    locus = {
        t: part["answer"].value_counts(normalize=True).sort_index().to_dict()
        for t, part in contrast.groupby("fault_type", sort=False)
    }
    return {
        "gcjr_equals_singleton_rag": _share(g["answer"] == s["answer"].reindex(g.index)),
        "gcjr_joint_rag": _share(rows("gcjr", "rag_hops", ["double_joint"])["correct"]),
        "exhaustive_joint_rag": _share(rows("exhaustive", "rag_hops", ["double_joint"])["correct"]),
        "top2_pair_on_either": _share(pair),
        "ranking_on_either": _share(exact["correct"]),
        "locus_share": locus,
        "locus_later_double": _share(contrast.loc[contrast["fault_type"] == "double", "answer"] == "lookup_order"),
        "probe_minus_reader_rag_single": _accuracy(scores, "propagation_aware", "rag_hops", "single")
        - _accuracy(scores, "coverage", "rag_hops", "single"),
        "mc_minus_exact_dag": _accuracy(scores, "shapley_mc", "controlled_dag")
        - _accuracy(scores, "shapley_exact", "controlled_dag"),
        "rollouts_minus_exact_dag": _accuracy(scores, "shapley_rollouts", "controlled_dag")
        - _accuracy(scores, "shapley_exact", "controlled_dag"),
        "exhaustive_support_double": _accuracy(scores, "exhaustive", "support_agent", "double"),
    }


def _accuracy(scores: pd.DataFrame, method: str, testbed: str, fault_type: str | None = None) -> float:
    part = scores[(scores["method"] == method) & (scores["testbed"] == testbed)]
    if fault_type is not None:
        part = part[part["fault_type"] == fault_type]
    return _share(part["correct"])


def main_table(table: pd.DataFrame) -> pd.DataFrame:
    """Methods x testbeds: mean accuracy over the fault types, and mean seed replays per case."""
    acc = table.pivot_table(index="method", columns="testbed", values="accuracy", aggfunc="mean", sort=False)
    cost = table.pivot_table(index="method", columns="testbed", values="mean_cost", aggfunc="mean", sort=False)
    both = pd.concat({"accuracy": acc, "replays per case": cost}, axis=1)
    return both.reindex(list(dict.fromkeys(table["method"])))


def families_section(methods: Iterable[str]) -> Section:
    """What each chosen method can express (point, ranking, family) and what it assumes (:func:`families_table`)."""
    return Section(table=named(families_table(methods)))


def case_counts(scores: pd.DataFrame) -> dict[str, dict[str, int]]:
    """``{testbed: {fault type: cases}}`` among the cases some method was scored on."""
    counts = scores.drop_duplicates(["testbed", "case_id"]).groupby(["testbed", "fault_type"]).size()
    return {str(bed): {str(t): int(n) for t, n in part.droplevel(0).items()} for bed, part in counts.groupby(level=0)}


def cases_section(comparison: Comparison) -> Section:
    """The cases per testbed and fault type, recorded under ``cases``."""
    cases = comparison.scores.drop_duplicates(["testbed", "case_id"])
    table = cases.groupby(["testbed", "fault_type"], sort=False).size().rename("cases").to_frame()
    return Section(table=named(table), numbers={"cases": case_counts(comparison.scores)})


def testbed_section(comparison: Comparison, testbed: str) -> Section:
    """One testbed's accuracies as "acc [lo, hi]" beside mean replays (:func:`accuracy_table`).

    Recorded under the testbed's name as :func:`results_tree`'s branch; skipped
    when no chosen method applies to the testbed.
    """
    part = comparison.summary[comparison.summary["testbed"] == testbed]
    if part.empty:
        return Section.skip(f"no chosen method applies to the {TESTBED_NAMES.get(testbed, testbed)} testbed.")
    table = named(accuracy_table(comparison.summary, testbed))
    return Section(table=table, numbers={testbed: results_tree(part)[testbed]}, decimals=1)


NOT_MEASURED = (
    "A dash marks a finding this run could not measure: a method it reads was not among the chosen ones, "
    "or no case of its kind was drawn."
)


def findings_section(comparison: Comparison) -> Section:
    """The chapter's findings (:func:`findings`) and the memo's figures (:func:`memo_figures`), recorded and quoted.

    The prose quotes each share as Markdown with two decimals, or a dash when
    the run could not measure it (``findings_note`` then says why), so a run
    with any choice of methods renders.
    """
    found = findings(comparison.scores)
    memo = memo_figures(comparison.memo, comparison.scores)
    shares = {k: v for k, v in found.items() if isinstance(v, float)}
    quoted = {k: Markdown(tables.DASH if math.isnan(v) else f"{v:.2f}") for k, v in shares.items()}
    note = NOT_MEASURED if any(math.isnan(v) for v in shares.values()) else ""
    facts = {"findings": {**found, **quoted, "note": Markdown(note)}, "memo": memo}
    return Section(numbers={"findings": found, "memo": memo}, facts=facts)


def main_section(comparison: Comparison) -> Section:
    """Methods x testbeds: mean accuracy over the fault types beside mean seed replays per case (:func:`main_table`)."""
    return Section(table=named(main_table(comparison.summary)), decimals=2)
