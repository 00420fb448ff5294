"""Scoring every method on every testbed case, and the tables the chapter shows.

Accuracy takes the form of the ground truth (a family F of minimal repair
sets): a point p is right when F = {{p}}; a family when it equals F exactly;
a ranking when its top k players, ``k = |∪F|``, are exactly ``∪F`` (a ranking cannot
say whether the sets are joint or alternative, so it is scored on the players
alone). Each proportion gets a 95% Wilson interval. Cost is what the oracle
counted while the method ran on the case alone (seed replays, one rollout
each on the support agent), beside the model tokens and the replays the
shared memo answered.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from rcakit import RcakitError, stats
from rcakit.attribution.adapters import FAMILY_OF, Method, is_built_in
from rcakit.attribution.oracle import Attribution, NotApplicable, ReplayMemo
from rcakit.attribution.testbeds import FAULT_TYPES, TestbedCase


def correct(attribution: Attribution, truth: frozenset) -> bool:
    """Whether an attribution matches the certified family (see the module docstring)."""
    if attribution.kind == "point":
        return attribution.answer is not None and truth == frozenset([frozenset([attribution.answer])])
    if attribution.kind == "family":
        return frozenset(map(frozenset, attribution.answer)) == truth
    union = frozenset().union(*truth)
    return frozenset(list(attribution.answer)[: len(union)]) == union


def family_text(family: Iterable[Iterable[object]]) -> str:
    """A family as text, sets and members sorted: ``{a, b} | {c}`` (``{}`` for the empty family)."""
    sets = sorted("{" + ", ".join(sorted(map(str, s))) + "}" for s in family)
    return " | ".join(sets) if sets else "{}"


def answer_text(attribution: Attribution) -> str:
    """An attribution's answer as text: a point's name, a ranking as ``a > b``, a family as :func:`family_text`."""
    if attribution.kind == "point":
        return str(attribution.answer)
    if attribution.kind == "ranking":
        return " > ".join(map(str, attribution.answer))
    return family_text(attribution.answer)


METHOD_TIMEOUT = 60.0  # seconds a user's method may spend on one case


def check_method_timeout(value: float, param: str = "method_timeout") -> float:
    """``value`` as seconds, a number > 0 and finite; anything else is a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise RcakitError(f"{param}: expected a number of seconds > 0, got {value!r}")
    return float(value)


def run_method(
    method: Method,
    case: TestbedCase,
    memo: ReplayMemo,
    budget: int | None = None,
    *,
    name: str | None = None,
    method_timeout: float = METHOD_TIMEOUT,
) -> Attribution | None:
    """One method on one case with a fresh oracle: its attribution with the oracle's cost, or None.

    A built-in method is called as it is. A user's method (one whose code is
    not rcakit's) runs on a daemon thread for at most ``method_timeout``
    seconds; past that, or when it raises, a one-line :class:`RcakitError`
    names the method (``name``, else its own name) and the case. A method
    stopped by the limit is abandoned, and ends with the process.
    """
    oracle = case.oracle(memo)
    what = f"method {name or _method_name(method)!r} on {case.case.testbed} case {case.case.case_id!r}"
    try:
        if is_built_in(method):
            found = method(case.case, oracle, budget)
        else:
            found = _within(method, (case.case, oracle, budget), check_method_timeout(method_timeout), what)
    except NotApplicable:
        return None
    if not isinstance(found, Attribution):
        raise RcakitError(f"{what} returned {type(found).__name__}, not an Attribution")
    return Attribution(found.kind, found.answer, oracle.cost())


def _method_name(method: Method) -> str:
    base = getattr(method, "func", method)
    return getattr(base, "__name__", None) or type(base).__name__


def _within(method: Method, args: tuple, seconds: float, what: str) -> Attribution:
    """``method(*args)`` on a daemon thread, waited for ``seconds`` at most; its errors name it (``what``)."""
    from rcakit.parallel import one_line

    done: list = []

    def call() -> None:
        try:
            done.append((True, method(*args)))
        except BaseException as exc:  # noqa: B036 - whatever a user's method raises reaches the caller
            done.append((False, exc))

    thread = threading.Thread(target=call, daemon=True, name="rcakit-user-method")
    thread.start()
    thread.join(seconds)
    if not done:
        raise RcakitError(
            f"{what}: stopped after {seconds:g} s (method_timeout); raise method_timeout or make the method faster"
        )
    ok, value = done[0]
    if ok:
        return value
    if isinstance(value, NotApplicable):
        raise value
    raise RcakitError(f"{what} failed: {one_line(value)}") from value


def score_methods(
    testbeds: Mapping[str, list[TestbedCase]],
    methods: Mapping[str, Method],
    budget: int | None = None,
    memo: ReplayMemo | None = None,
    *,
    progress: Callable[[Iterable], Iterable] | None = None,
    method_timeout: float = METHOD_TIMEOUT,
) -> pd.DataFrame:
    """One row per (testbed, case, method) that applies: kind, correct, replays, tokens, memo hits.

    A user's method gets ``method_timeout`` seconds per case (:func:`run_method`).
    """
    check_method_timeout(method_timeout)
    memo = memo if memo is not None else ReplayMemo()
    items = [(bed, case) for bed, cases in testbeds.items() for case in cases]
    rows = []
    for bed, case in progress(items) if progress else items:
        for name, method in methods.items():
            found = run_method(method, case, memo, budget, name=name, method_timeout=method_timeout)
            if found is None:
                continue
            rows.append(
                {
                    "testbed": bed,
                    "fault_type": case.fault_type,
                    "case_id": case.case.case_id,
                    "method": name,
                    "kind": found.kind,
                    "answer": answer_text(found),
                    "truth": family_text(case.truth),
                    "correct": correct(found, case.truth),
                    "replays": found.cost.replays,
                    "tokens": found.cost.tokens,
                    "memo_hits": found.cost.memo_hits,
                }
            )
    return pd.DataFrame(rows)


def summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per testbed, fault type and method: n, accuracy, Wilson 95% interval, mean replays, tokens, memo hits."""
    grouped = scores.groupby(["testbed", "fault_type", "method"], sort=False)
    table = grouped.agg(
        kind=("kind", "first"),
        n=("correct", "size"),
        hits=("correct", "sum"),
        mean_cost=("replays", "mean"),
        mean_tokens=("tokens", "mean"),
        mean_memo_hits=("memo_hits", "mean"),
    ).reset_index()
    cis = [stats.wilson_ci(int(h), int(n)) for h, n in zip(table["hits"], table["n"], strict=True)]
    table["accuracy"] = table["hits"] / table["n"]
    table["ci_lo"], table["ci_hi"] = [c[0] for c in cis], [c[1] for c in cis]
    return table.drop(columns="hits")


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
        "exhaustive_support_double": _accuracy(scores, "exhaustive", "support_agent", "double"),
    }


def _accuracy(scores: pd.DataFrame, method: str, testbed: str, fault_type: str | None = None) -> float:
    part = scores[(scores["method"] == method) & (scores["testbed"] == testbed)]
    if fault_type is not None:
        part = part[part["fault_type"] == fault_type]
    return _share(part["correct"])


def results_numbers(table: pd.DataFrame, scores: pd.DataFrame, memo: ReplayMemo) -> dict:
    """What the chapter records: the per-cell tree, the findings, the memo's figures and the case counts."""
    counts = scores.drop_duplicates(["testbed", "case_id"]).groupby(["testbed", "fault_type"]).size()
    return {
        **results_tree(table),
        "findings": findings(scores),
        "memo": memo_figures(memo, scores),
        "cases": {bed: part.droplevel(0).to_dict() for bed, part in counts.groupby(level=0)},
    }


def main_table(table: pd.DataFrame) -> pd.DataFrame:
    """Methods x testbeds: mean accuracy over the fault types, and mean seed replays per case."""
    acc = table.pivot_table(index="method", columns="testbed", values="accuracy", aggfunc="mean", sort=False)
    cost = table.pivot_table(index="method", columns="testbed", values="mean_cost", aggfunc="mean", sort=False)
    return acc.add_prefix("accuracy ").join(cost.add_prefix("replays ")).reindex(list(dict.fromkeys(table["method"])))
