"""The strict experiment protocol of AgenticRAG-FP §6 and its metrics.

A question is eligible at depth d only if its clean trace reaches hop d and
answers correctly. Each eligible (question, depth, intervention) case is
injected and resumed; a case that still answers correctly is *recovered* and
stays out of attribution. Exact-hop accuracy is over failed cases only, with
the authors' percentile bootstrap (B = 1000, seed 42). Each finished case is
written to a ``CaseStore``, so a killed sweep resumes.

The LLM judge runs after the sweep, on a seeded sample of at most
``llm_max_cases`` failed cases per depth whose traces are rebuilt from their
seeds; its calls go through the response cache, so its cost reads the same on
every rerun. With an LLM reader, each case records the reader usage it caused,
so the agent's cost is the same whether a case was computed or resumed.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.rag import diagnosers as dg
from rcakit.rag.agent import Agent, LLMReader, RuleReader, Trace
from rcakit.rag.interventions import CONTENT, STAGE, STRUCTURAL, corrupt_content, inject, query_contaminated
from rcakit.rag.retrieval import Retriever
from rcakit.rag.text import OUTCOMES, classify_outcome, jaccard
from rcakit.rag.world import build_world, World
from rcakit.results import results_dir
from rcakit.stats import bootstrap_accuracy_ci
from rcakit.store import CaseStore

TRACE_READERS = ("coverage", "rule_based", "fallback_rule")  # see only the final trace
PROBES = ("propagation_aware", "suf_regen")  # re-execute the agent; three branches each
CONTROLS = ("constant_hop1", "oracle_gold_hop")  # a constant, and an oracle on the world's certified facts
DIAGNOSERS = TRACE_READERS + ("continue_retrieving",) + PROBES + CONTROLS


@dataclass
class Lab:
    """A world, its retriever-backed agent, and the clean trace of every question."""

    world: World
    agent: Agent
    seed: int
    clean: dict[str, Trace] = field(default_factory=dict)
    clean_usage: dict = field(default_factory=dict)

    def __post_init__(self):
        self.clean = {q.id: self.agent.run(q) for q in self.world.questions}
        usage = reader_usage(self)
        self.clean_usage = usage.totals() if usage is not None else {}


def build_lab(seed: int, n_entities: int = 2400, n_questions: int = 120, hops: int = 3, top_k: int = 3,
              reading_noise: float = 0.2, distractor_rate: float = 0.3, spare_hops: int = 1,
              reader_chat=None) -> Lab:
    """World, BM25 retriever, agent and clean traces, all from ``seed``.

    The reader is the ``RuleReader``, or an ``LLMReader`` over ``reader_chat``
    (a cached provider) with the rule reader as its fallback.
    """
    world = build_world(seed, n_entities=n_entities, n_questions=n_questions, hops=hops,
                        distractor_rate=distractor_rate)
    reader = RuleReader(world, reading_noise, seed)
    if reader_chat:
        reader = LLMReader(reader_chat, reader, seed)
    agent = Agent(world, Retriever(world.corpus), reader, top_k, spare_hops)
    return Lab(world, agent, seed)


def reader_usage(lab: Lab):
    """The LLM reader's ``MethodUsage``, or ``None`` for the rule reader."""
    return getattr(getattr(lab.agent.reader, "chat", None), "accounting", None)


def eligible(trace: Trace, depth: int) -> bool:
    """Strict eligibility: the clean trace reaches hop ``depth`` and answers correctly."""
    return len(trace.hops) >= depth and trace.correct


def diagnose(lab: Lab, trace: Trace, threshold: float) -> dict[str, list]:
    """Every offline diagnoser's [stage, hop, cost, branch] on one failed trace."""
    found = {
        "coverage": dg.coverage(trace, threshold),
        "rule_based": dg.rule_based(trace),
        "fallback_rule": dg.fallback_rule(trace),
        "continue_retrieving": dg.continue_retrieving(lab.agent, trace),
        "propagation_aware": dg.propagation_aware(lab.agent, trace),
        "suf_regen": dg.suf_regen(lab.agent, trace),
        "constant_hop1": dg.constant_hop1(trace),
        "oracle_gold_hop": dg.oracle_gold_hop(trace),
    }
    return {name: [d.stage, d.hop, d.cost, d.branch] for name, d in found.items()}


def downstream_intact(trace: Trace, depth: int) -> bool:
    """Whether the trace's pooled evidence still states every certified fact of the hops after ``depth``.

    Frozen-hop repair can only flip an answer when this holds (it never re-retrieves later hops).
    """
    pooled = [d for hop in trace.hops for d in hop.docs]
    return all(dg.states_fact(pooled, g.subject, g.object) for g in trace.question.hops[depth:])


def injected_fact_kept(trace: Trace, depth: int, at_hop: bool = False) -> bool:
    """Whether the trace still states the injected hop's certified fact: anywhere in its evidence, or
    (``at_hop``) in hop ``depth``'s own evidence. A property of the trace, read with the world's gold facts.
    """
    gold = trace.question.hops[depth - 1]
    if at_hop:
        docs = trace.hops[depth - 1].docs if depth <= len(trace.hops) else ()
    else:
        docs = [d for hop in trace.hops for d in hop.docs]
    return dg.states_fact(docs, gold.subject, gold.object)


def _finish(lab, case: dict, injected: Trace, threshold: float) -> dict:
    depth = case["depth"]
    case.update(correct=injected.correct, answer=injected.answer, cost=injected.cost,
                n_hops=len(injected.hops), downstream_intact=downstream_intact(injected, depth),
                fact_in_trace=injected_fact_kept(injected, depth),
                fact_at_hop=injected_fact_kept(injected, depth, at_hop=True))
    case["diagnoses"] = {} if injected.correct else diagnose(lab, injected, threshold)
    return case


def _structural(lab: Lab, qid: str, depth: int, kind: str) -> Trace:
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{kind}")
    return inject(lab.agent, lab.clean[qid], depth, kind, rng)


def _corruption(lab: Lab, qid: str, depth: int):
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{CONTENT}")
    return corrupt_content(lab.agent, lab.clean[qid], depth, [q.answer for q in lab.world.questions], rng)


def _resumed(lab: Lab, qid: str, depth: int, hop) -> Trace:
    clean = lab.clean[qid]
    return lab.agent.resume_from(clean.question, clean.hops[:depth - 1] + (hop,), depth + 1)


def injected_trace(lab: Lab, case: dict) -> Trace:
    """The failed (or recovered) trace of a stored, non-skipped case, rebuilt from its seeds."""
    qid, depth, kind = case["qid"], int(case["depth"]), case["kind"]
    if kind != CONTENT:
        return _structural(lab, qid, depth, kind)
    made = _corruption(lab, qid, depth)
    if made is None:
        raise RcakitError(f"case {kind}:{qid}:{depth}: skipped, it has no trace")
    return _resumed(lab, qid, depth, made[1])


def structural_case(lab: Lab, qid: str, depth: int, kind: str, threshold: float = 0.05) -> dict:
    """Inject ``kind`` at ``depth`` into question ``qid``'s clean trace, resume, diagnose if it fails."""
    injected = _structural(lab, qid, depth, kind)
    case = {"qid": qid, "depth": depth, "kind": kind, "true_stage": STAGE[kind], "skipped": False}
    return _finish(lab, case, injected, threshold)


def content_case(lab: Lab, qid: str, depth: int, threshold: float = 0.05) -> dict:
    """Certified content corruption at ``depth``; a case with no certifiable span is marked skipped."""
    made = _corruption(lab, qid, depth)
    case = {"qid": qid, "depth": depth, "kind": CONTENT, "true_stage": STAGE[CONTENT], "skipped": made is None}
    if made is None:
        return case
    corruption, hop = made
    injected = _resumed(lab, qid, depth, hop)
    case.update(strategy=corruption.strategy, replacement_kind=corruption.kind, original=corruption.original,
                replacement=corruption.replacement,
                same_type=lab.world.types.get(corruption.replacement) == lab.world.types.get(corruption.original),
                outcome=classify_outcome(injected.answer, injected.gold, corruption.replacement),
                has_later_query=len(injected.hops) > depth,
                contaminated=query_contaminated(injected, corruption))
    return _finish(lab, case, injected, threshold)


def _code_digest() -> str:
    """Digest of this package's source, so a store written by other code is never reused."""
    h = hashlib.sha1()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def case_store(chapter_id: str, params: dict, folder=None) -> CaseStore:
    """The chapter's case store under ``results/cases``, named by a digest of its parameters and of the code."""
    fingerprint = {**params, "rcakit.rag code": _code_digest()}
    digest = hashlib.sha1(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:12]
    base = folder if folder is not None else results_dir() / "cases"
    return CaseStore(Path(base) / f"{chapter_id}-{digest}.jsonl", fingerprint=fingerprint)


def sweep(lab: Lab, arm: str, depths: Iterable[int], store: CaseStore, threshold: float = 0.05,
          progress: Callable | None = None) -> pd.DataFrame:
    """Run (or resume) every eligible case of ``arm`` ("structural" or "content"); one row per case."""
    if arm not in ("structural", "content"):
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    kinds, depths = (STRUCTURAL if arm == "structural" else (CONTENT,)), list(depths)
    items = [(f"{arm}:{qid}:{d}:{k}", (qid, d, k)) for d in depths for qid, tr in lab.clean.items()
             if eligible(tr, d) for k in kinds]
    if not items:
        raise RcakitError(f"{arm} sweep: no eligible case at depths {list(depths)}: the clean agent answered no "
                          "question correctly (a weak LLM reader?); use more questions or another reader")

    def case(item):
        qid, d, k = item
        if arm == "structural":
            return structural_case(lab, qid, d, k, threshold)
        return content_case(lab, qid, d, threshold)

    def work(item):
        usage = reader_usage(lab)
        if usage is None:
            return case(item)
        before = usage.totals()
        out = case(item)
        out["reader_usage"] = {k: v - before[k] for k, v in usage.totals().items() if k != "cases"}
        return out

    return pd.DataFrame(store.run(items, work, progress))


PREDICTION_COLUMNS = ["qid", "depth", "kind", "strategy", "diagnoser", "pred_hop", "branch", "hit", "stage_hit",
                      "hop_error", "cost"]


def predictions(cases: pd.DataFrame) -> pd.DataFrame:
    """Long table of failed, non-skipped cases: one row per (case, diagnoser) with hit, branch and errors."""
    rows = []
    for case in cases.to_dict("records"):
        for name, (stage, hop, cost, branch) in (case.get("diagnoses") or {}).items():
            rows.append({"qid": case["qid"], "depth": case["depth"], "kind": case["kind"],
                         "strategy": case.get("strategy"), "diagnoser": name, "pred_hop": hop, "branch": branch,
                         "hit": hop == case["depth"], "stage_hit": stage == case["true_stage"],
                         "hop_error": abs(hop - case["depth"]), "cost": cost})
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def _ci(hits) -> dict:
    point, lo, hi = bootstrap_accuracy_ci(list(hits), n_boot=1000, seed=42)
    return {"point": point, "lo": lo, "hi": hi}


def branch_record(grp: pd.DataFrame) -> dict:
    """One probe's failed cases at one depth, by branch: counts, each branch's accuracy among the cases it
    decided (``None`` when it decided none), and its share of all the probe's hits.
    """
    counts, accuracy, hits = {}, {}, {}
    for b in dg.BRANCHES:
        mine = grp[grp["branch"] == b]
        counts[b] = int(len(mine))
        accuracy[b] = float(mine["hit"].mean()) if len(mine) else None
        hits[b] = float(mine["hit"].sum() / len(grp)) if len(grp) else None
    return {"counts": counts, "accuracy": accuracy, "hit_share": hits}


def attribution(cases: pd.DataFrame, depths: Iterable[int]) -> dict:
    """Exact-hop accuracy with bootstrap CI, stage accuracy, MAE, failed n, eligible n and recovery by depth.

    For each probe it adds ``probe_branch`` (failed cases per branch),
    ``branch_accuracy`` (each branch's accuracy on the cases it decided),
    ``branch_hit_share`` (the share of all failed cases each branch named
    correctly; these sum to the probe's accuracy) and
    ``accuracy_without_fallback`` (flip and continue only, with CI).
    """
    live = cases[~cases["skipped"].astype(bool)]
    preds = predictions(live)
    out = {k: {} for k in ("accuracy", "stage_accuracy", "mae", "mean_cost", "probe_branch", "branch_accuracy",
                           "branch_hit_share", "accuracy_without_fallback")}
    out.update(failed_n={}, eligible_n={}, recovery={})
    for d in depths:
        at = live[live["depth"] == d]
        key = str(d)
        out["eligible_n"][key] = int(len(at))
        out["failed_n"][key] = int((~at["correct"].astype(bool)).sum()) if len(at) else 0
        out["recovery"][key] = float(at["correct"].mean()) if len(at) else float("nan")
        for name, grp in preds[preds["depth"] == d].groupby("diagnoser"):
            out["accuracy"].setdefault(name, {})[key] = _ci(grp["hit"])
            out["stage_accuracy"].setdefault(name, {})[key] = float(grp["stage_hit"].mean())
            out["mae"].setdefault(name, {})[key] = float(grp["hop_error"].mean())
            out["mean_cost"].setdefault(name, {})[key] = float(grp["cost"].mean())
            if name in PROBES:
                record = branch_record(grp)
                out["probe_branch"].setdefault(name, {})[key] = record["counts"]
                out["branch_accuracy"].setdefault(name, {})[key] = record["accuracy"]
                out["branch_hit_share"].setdefault(name, {})[key] = record["hit_share"]
                counterfactual = grp["hit"] & (grp["branch"] != "fallback")
                out["accuracy_without_fallback"].setdefault(name, {})[key] = _ci(counterfactual)
    return out


def pooled_accuracy(preds: pd.DataFrame) -> dict:
    """Exact-hop accuracy with bootstrap CI per diagnoser over all rows of ``preds`` (a slice), plus its case count."""
    out = {name: _ci(grp["hit"]) for name, grp in preds.groupby("diagnoser")}
    out["n"] = int(len(preds.drop_duplicates(["qid", "depth", "kind"])))
    return out


def interval_pairs(result: dict) -> dict:
    """``{diagnoser: {depth: [lo, hi]}}`` from ``attribution``'s accuracy cells (for claims' ``ci`` keys)."""
    return {name: {d: [c["lo"], c["hi"]] for d, c in cells.items()} for name, cells in result["accuracy"].items()}


def accuracy_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """The Table-2-style frame: one row per diagnoser, 'point [lo, hi]' per depth, plus failed n."""
    depths = [str(d) for d in depths]
    fmt = lambda c: "n/a" if c is None or np.isnan(c["point"]) else f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"  # noqa: E731
    names = sorted(result["accuracy"], key=lambda n: DIAGNOSERS.index(n) if n in DIAGNOSERS else len(DIAGNOSERS))
    rows = {name: {f"hop {d}": fmt(result["accuracy"][name].get(d)) for d in depths} for name in names}
    rows["failed n"] = {f"hop {d}": str(result["failed_n"][d]) for d in depths}
    if "llm_judged_n" in result:  # the LLM judge reads a sample of the failed cases
        rows["llm_judge n"] = {f"hop {d}": str(result["llm_judged_n"][d]) for d in depths}
    rows["recovery"] = {f"hop {d}": f"{result['recovery'][d]:.2f}" for d in depths}
    return pd.DataFrame(rows).T


def branch_table(result: dict, depths: Iterable[int]) -> pd.DataFrame:
    """Per probe and depth: failed cases per branch, each branch's accuracy on its cases, and the probe's
    accuracy with and without the fallback branch.
    """
    rows = {}
    for probe in PROBES:
        for d in map(str, depths):
            if d not in result["probe_branch"].get(probe, {}):
                continue
            row = {f"n {b}": result["probe_branch"][probe][d][b] for b in dg.BRANCHES}
            row.update({f"accuracy {b}": result["branch_accuracy"][probe][d][b] for b in dg.BRANCHES[:3]})
            row["accuracy"] = result["accuracy"][probe][d]["point"]
            row["without fallback"] = result["accuracy_without_fallback"][probe][d]["point"]
            rows[(probe, int(d))] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.names = ["probe", "depth"]
    return frame


def branches_by_intervention(cases: pd.DataFrame, probe: str) -> pd.DataFrame:
    """How often each branch of ``probe`` fired, and how often it named the injected hop, per (intervention, depth)."""
    preds = predictions(cases[~cases["skipped"].astype(bool)])
    preds = preds[preds["diagnoser"] == probe]
    counts = pd.crosstab([preds["kind"], preds["depth"]], preds["branch"]).reindex(columns=list(dg.BRANCHES),
                                                                                 fill_value=0)
    named = preds[preds["hit"]]
    hits = pd.crosstab([named["kind"], named["depth"]], named["branch"]).reindex(
        index=counts.index, columns=list(dg.BRANCHES[:3]), fill_value=0)
    return counts.join(hits.add_suffix(" hits")).fillna(0).astype(int)


def failed_share(cases: pd.DataFrame, column: str, depths: Iterable[int]) -> dict:
    """``{depth: share}`` of failed, non-skipped cases whose boolean ``column`` holds."""
    live = cases[~cases["skipped"].astype(bool)]
    failed = live[~live["correct"].astype(bool)]
    out = {}
    for d in depths:
        at = failed[failed["depth"] == d]
        out[str(d)] = float(at[column].astype(bool).mean()) if len(at) else None
    return out


def trace_reader_reach(cases: pd.DataFrame, depths: Iterable[int], readers=TRACE_READERS) -> dict:
    """Per depth: failed cases, those whose injected hop is absent from the trace (an early termination's
    hop was never run), and those that none of ``readers`` names.
    """
    live = cases[~cases["skipped"].astype(bool)]
    failed = live[~live["correct"].astype(bool)]
    preds = predictions(failed)
    named = preds[preds["diagnoser"].isin(list(readers)) & preds["hit"]]
    named_keys = set(zip(named["qid"], named["depth"], named["kind"]))
    out = {}
    for d in depths:
        at = failed[failed["depth"] == d]
        keys = list(zip(at["qid"], at["depth"], at["kind"]))
        out[str(d)] = {"failed": int(len(at)), "hop_absent": int((at["n_hops"] < d).sum()),
                       "named_by_none": int(sum(k not in named_keys for k in keys))}
    return out


def share_predicting(preds: pd.DataFrame, diagnoser: str, hop: int, depths: Iterable[int],
                     min_hops: int = 0) -> dict:
    """``{depth: share}`` of ``diagnoser``'s failed cases in which it predicts ``hop``.

    ``min_hops`` keeps only cases whose trace has at least that many hops
    (``preds`` must then carry ``n_hops``; see ``predictions_with_hops``).
    """
    sub = preds[preds["diagnoser"] == diagnoser]
    if min_hops:
        sub = sub[sub["n_hops"] >= min_hops]
    return {str(d): float((sub[sub["depth"] == d]["pred_hop"] == hop).mean()) if (sub["depth"] == d).any()
            else None for d in depths}


def predictions_with_hops(cases: pd.DataFrame) -> pd.DataFrame:
    """``predictions`` of the failed, non-skipped cases with each case's trace length joined as ``n_hops``."""
    live = cases[~cases["skipped"].astype(bool)]
    lengths = live.set_index(["qid", "depth", "kind"])["n_hops"]
    preds = predictions(live)
    return preds.join(lengths, on=["qid", "depth", "kind"])


def hop_answer_jaccard(lab: Lab) -> pd.DataFrame:
    """Coverage's score, Jaccard(gold answer, joined documents), of every non-empty hop of every clean correct trace."""
    rows = [{"hop": h.index, "jaccard": jaccard(t.gold, " ".join(d.text for d in h.docs))}
            for t in lab.clean.values() if t.correct for h in t.hops if h.docs]
    return pd.DataFrame(rows, columns=["hop", "jaccard"])


def per_intervention(cases: pd.DataFrame) -> pd.DataFrame:
    """Injected n, recovery and each diagnoser's exact-hop accuracy per (intervention, depth)."""
    live = cases[~cases["skipped"].astype(bool)]
    base = live.groupby(["kind", "depth"]).agg(injected=("correct", "size"), recovery=("correct", "mean"))
    preds = predictions(live)
    acc = preds.pivot_table(index=["kind", "depth"], columns="diagnoser", values="hit", aggfunc="mean")
    return base.join(acc)


def outcome_shares(cases: pd.DataFrame, by: str = "depth") -> pd.DataFrame:
    """Absorbed / resisted / derailed shares and n over all injected, non-skipped content cases."""
    live = cases[~cases["skipped"].astype(bool)]
    table = pd.crosstab(live[by], live["outcome"], normalize="index").reindex(columns=list(OUTCOMES), fill_value=0.0)
    table["n"] = live.groupby(by).size()
    return table


def prediction_histogram(preds: pd.DataFrame, diagnoser: str, depths) -> pd.DataFrame:
    """Share of failed cases at each injected depth that ``diagnoser`` assigns to each hop."""
    sub = preds[preds["diagnoser"] == diagnoser]
    return pd.crosstab(sub["depth"], sub["pred_hop"], normalize="index").reindex(index=list(depths))



def outcome_counts(cases: pd.DataFrame, by: str) -> dict:
    """``{group: {absorbed, resisted, derailed, n}}`` counts over injected, non-skipped content cases."""
    live = cases[~cases["skipped"].astype(bool)]
    table = pd.crosstab(live[by], live["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    return {str(k): {**{o: int(row[o]) for o in OUTCOMES}, "n": int(row.sum())} for k, row in table.iterrows()}
