"""The strict experiment protocol of AgenticRAG-FP §6 and its metrics.

A question is eligible at depth d only if its clean trace reaches hop d and
answers correctly. Each eligible (question, depth, intervention) case is
injected and resumed; a case that still answers correctly is *recovered* and
stays out of attribution. Exact-hop accuracy is over failed cases only, with
the authors' percentile bootstrap (B = 1000, seed 42). Each finished case is
written to a ``CaseStore``, so a killed sweep resumes.
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
from rcakit.rag.agent import Agent, RuleReader, Trace
from rcakit.rag.interventions import CONTENT, STAGE, STRUCTURAL, corrupt_content, inject, query_contaminated
from rcakit.rag.retrieval import Retriever
from rcakit.rag.text import OUTCOMES, classify_outcome
from rcakit.rag.world import build_world, World
from rcakit.results import results_dir
from rcakit.stats import bootstrap_accuracy_ci
from rcakit.store import CaseStore

DIAGNOSERS = ("coverage", "coverage_gold_hop", "constant_hop1", "rule_based", "propagation_aware", "suf_regen")


@dataclass
class Lab:
    """A world, its retriever-backed agent, and the clean trace of every question."""

    world: World
    agent: Agent
    seed: int
    clean: dict[str, Trace] = field(default_factory=dict)

    def __post_init__(self):
        self.clean = {q.id: self.agent.run(q) for q in self.world.questions}


def build_lab(seed: int, n_entities: int = 2400, n_questions: int = 120, hops: int = 3, top_k: int = 3,
              reading_noise: float = 0.2, distractor_rate: float = 0.3, spare_hops: int = 1) -> Lab:
    """World, BM25 retriever, RuleReader agent and clean traces, all from ``seed``."""
    world = build_world(seed, n_entities=n_entities, n_questions=n_questions, hops=hops,
                        distractor_rate=distractor_rate)
    agent = Agent(world, Retriever(world.corpus), RuleReader(world, reading_noise, seed), top_k, spare_hops)
    return Lab(world, agent, seed)


def eligible(trace: Trace, depth: int) -> bool:
    """Strict eligibility: the clean trace reaches hop ``depth`` and answers correctly."""
    return len(trace.hops) >= depth and trace.correct


def diagnose(lab: Lab, trace: Trace, threshold: float, judge: dg.Judge | None = None) -> dict[str, list]:
    """Every diagnoser's [stage, hop, cost] on one failed trace; ``llm_judge`` only with a judge."""
    found = {
        "coverage": dg.coverage(trace, threshold),
        "coverage_gold_hop": dg.coverage_gold_hop(trace),
        "constant_hop1": dg.constant_hop1(trace),
        "rule_based": dg.rule_based(trace),
        "propagation_aware": dg.propagation_aware(lab.agent, trace),
        "suf_regen": dg.suf_regen(lab.agent, trace),
    }
    if judge is not None:
        found["llm_judge"] = dg.llm_judge(trace, judge)
    return {name: [d.stage, d.hop, d.cost] for name, d in found.items()}


def downstream_intact(trace: Trace, depth: int) -> bool:
    """Whether the trace's pooled evidence still states every certified fact of the hops after ``depth``.

    Frozen-hop repair can only flip an answer when this holds (it never re-retrieves later hops).
    """
    pooled = [d for hop in trace.hops for d in hop.docs]
    return all(dg.states_fact(pooled, g.subject, g.object) for g in trace.question.hops[depth:])


def _finish(lab, case: dict, injected: Trace, threshold: float, judge) -> dict:
    case.update(correct=injected.correct, answer=injected.answer, cost=injected.cost,
                n_hops=len(injected.hops), downstream_intact=downstream_intact(injected, case["depth"]))
    case["diagnoses"] = {} if injected.correct else diagnose(lab, injected, threshold, judge)
    return case


def structural_case(lab: Lab, qid: str, depth: int, kind: str, threshold: float = 0.05, judge=None) -> dict:
    """Inject ``kind`` at ``depth`` into question ``qid``'s clean trace, resume, diagnose if it fails."""
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{kind}")
    injected = inject(lab.agent, lab.clean[qid], depth, kind, rng)
    case = {"qid": qid, "depth": depth, "kind": kind, "true_stage": STAGE[kind], "skipped": False}
    return _finish(lab, case, injected, threshold, judge)


def content_case(lab: Lab, qid: str, depth: int, threshold: float = 0.05, judge=None) -> dict:
    """Certified content corruption at ``depth``; a case with no certifiable span is marked skipped."""
    rng = random.Random(f"{lab.seed}:{qid}:{depth}:{CONTENT}")
    clean = lab.clean[qid]
    answers = [q.answer for q in lab.world.questions]
    made = corrupt_content(lab.agent, clean, depth, answers, rng)
    case = {"qid": qid, "depth": depth, "kind": CONTENT, "true_stage": STAGE[CONTENT], "skipped": made is None}
    if made is None:
        return case
    corruption, hop = made
    injected = lab.agent.resume_from(clean.question, clean.hops[:depth - 1] + (hop,), depth + 1)
    case.update(strategy=corruption.strategy, replacement_kind=corruption.kind, original=corruption.original,
                replacement=corruption.replacement,
                same_type=lab.world.types.get(corruption.replacement) == lab.world.types.get(corruption.original),
                outcome=classify_outcome(injected.answer, clean.gold, corruption.replacement),
                has_later_query=len(injected.hops) > depth,
                contaminated=query_contaminated(injected, corruption))
    return _finish(lab, case, injected, threshold, judge)


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
          judge=None, progress: Callable | None = None) -> pd.DataFrame:
    """Run (or resume) every eligible case of ``arm`` ("structural" or "content"); one row per case."""
    if arm not in ("structural", "content"):
        raise RcakitError(f"arm: expected 'structural' or 'content', got {arm!r}")
    kinds = STRUCTURAL if arm == "structural" else (CONTENT,)
    items = [(f"{arm}:{qid}:{d}:{k}", (qid, d, k)) for d in depths for qid, tr in lab.clean.items()
             if eligible(tr, d) for k in kinds]

    def work(item):
        qid, d, k = item
        if arm == "structural":
            return structural_case(lab, qid, d, k, threshold, judge)
        return content_case(lab, qid, d, threshold, judge)

    return pd.DataFrame(store.run(items, work, progress))


def predictions(cases: pd.DataFrame) -> pd.DataFrame:
    """Long table of failed, non-skipped cases: one row per (case, diagnoser) with hit and errors."""
    rows = []
    for case in cases.to_dict("records"):
        for name, (stage, hop, cost) in (case.get("diagnoses") or {}).items():
            rows.append({"qid": case["qid"], "depth": case["depth"], "kind": case["kind"],
                         "strategy": case.get("strategy"), "diagnoser": name, "pred_hop": hop,
                         "hit": hop == case["depth"], "stage_hit": stage == case["true_stage"],
                         "hop_error": abs(hop - case["depth"]), "cost": cost})
    return pd.DataFrame(rows, columns=["qid", "depth", "kind", "strategy", "diagnoser", "pred_hop", "hit",
                                       "stage_hit", "hop_error", "cost"])


def _ci(hits) -> dict:
    point, lo, hi = bootstrap_accuracy_ci(list(hits), n_boot=1000, seed=42)
    return {"point": point, "lo": lo, "hi": hi}


def attribution(cases: pd.DataFrame, depths: Iterable[int]) -> dict:
    """Exact-hop accuracy with bootstrap CI, stage accuracy, MAE, failed n, eligible n and recovery by depth."""
    live = cases[~cases["skipped"].astype(bool)]
    preds = predictions(live)
    out = {k: {} for k in ("accuracy", "stage_accuracy", "mae", "mean_cost")}
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
    rows = {name: {f"hop {d}": fmt(cells.get(d)) for d in depths} for name, cells in result["accuracy"].items()}
    rows["failed n"] = {f"hop {d}": str(result["failed_n"][d]) for d in depths}
    rows["recovery"] = {f"hop {d}": f"{result['recovery'][d]:.2f}" for d in depths}
    return pd.DataFrame(rows).T


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
