"""Diagnosers: each maps a failed trace to a predicted (stage, hop, cost) (AgenticRAG-FP §5).

``coverage`` is Doctor-RAG's rule as the authors implement it; the active
probes ``propagation_aware`` (frozen-hop repair) and ``suf_regen`` (repair,
then regenerate the suffix) re-execute and pay for it in tokens.
``coverage_gold_hop`` and ``constant_hop1`` are the workbench's controls: the
first needs the world's certified per-hop facts, the second is the
prediction the coverage rule degenerates to. ``llm_judge`` works through any
``Judge`` callable (prompt -> reply), e.g. ``judge_for("ollama:MODEL")``;
it is skipped when the provider is "none".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from rcakit.rag.agent import Agent, Trace
from rcakit.rag.text import jaccard

STAGES = ("retrieval", "tool", "answer", "none")


@dataclass(frozen=True)
class Diagnosis:
    """A diagnoser's answer: stage, hop (0 = no hop) and the tokens it spent."""

    stage: str
    hop: int
    cost: int = 0


NO_HOP = Diagnosis("answer", 0, 0)


def coverage(trace: Trace, threshold: float = 0.05) -> Diagnosis:
    """Earliest hop with Jaccard(gold answer, joined hop documents) < threshold; empty hops score 0."""
    for hop in trace.hops:
        score = jaccard(trace.gold, " ".join(d.text for d in hop.docs)) if hop.docs else 0.0
        if score < threshold:
            return Diagnosis("retrieval", hop.index)
    return NO_HOP


def constant_hop1(trace: Trace) -> Diagnosis:
    """Control: always hop 1, the retrieval stage."""
    return Diagnosis("retrieval", 1)


def states_fact(docs, subject: str, obj: str) -> bool:
    """Whether a paragraph titled ``subject`` among ``docs`` names ``obj``."""
    pattern = re.compile(r"(?<![\w])" + re.escape(obj) + r"(?![\w])")
    return any(d.title == subject and pattern.search(d.text) for d in docs)


def coverage_gold_hop(trace: Trace) -> Diagnosis:
    """Earliest hop i whose certified fact (subject_i's paragraph naming object_i) is missing from hop i's evidence."""
    for i, gold in enumerate(trace.question.hops, start=1):
        docs = trace.hops[i - 1].docs if i <= len(trace.hops) else ()
        if not states_fact(docs, gold.subject, gold.object):
            return Diagnosis("retrieval", i)
    return NO_HOP


def rule_based(trace: Trace) -> Diagnosis:
    """Visible symptoms in order: an empty hop, a hop the reader could not ground, else the answer step."""
    for hop in trace.hops:
        if not hop.docs:
            return Diagnosis("retrieval", hop.index)
    for hop in trace.hops:
        if hop.mode in ("guessed", "unresolved"):
            return Diagnosis("retrieval", hop.index)
    return Diagnosis("answer", len(trace.hops))


def propagation_aware(agent: Agent, trace: Trace) -> Diagnosis:
    """Frozen-hop repair: re-retrieve hop h with its own query, keep all other hops, force an answer.

    The first h whose repair flips the answer to correct is the prediction.
    """
    cost = 0
    for h, hop in enumerate(trace.hops, start=1):
        hops = list(trace.hops)
        hops[h - 1] = replace(hop, docs=agent.fetch(hop.query))
        probe = agent.force_answer(trace.question, hops)
        cost += probe.extra_cost
        if probe.correct:
            return Diagnosis("retrieval", h, cost)
    return replace(NO_HOP, cost=cost)


def suf_regen(agent: Agent, trace: Trace) -> Diagnosis:
    """Suffix regeneration: keep hops 1..h-1, repair hop h by re-retrieval, let the agent redo h+1.."""
    cost = 0
    for h, hop in enumerate(trace.hops, start=1):
        repaired = replace(hop, docs=agent.fetch(hop.query), entity=None, mode="unread")
        probe = agent.resume_from(trace.question, trace.hops[:h - 1] + (repaired,), h + 1)
        cost += sum(x.cost for x in probe.hops[h - 1:]) + probe.extra_cost
        if probe.correct:
            return Diagnosis("retrieval", h, cost)
    return replace(NO_HOP, cost=cost)


class Judge(Protocol):
    """A language-model judge: a prompt in, the model's text reply out (providers arrive with ``rcakit.llm``)."""

    def __call__(self, prompt: str) -> str: ...


def judge_prompt(trace: Trace) -> str:
    """The complete hop-level trace as the judge sees it, asking for JSON {stage, hop}."""
    lines = [f"Question: {trace.question.text}", f"Final answer: {trace.answer}",
             f"Reference answer: {trace.gold}", "The answer is wrong. Hops:"]
    for hop in trace.hops:
        lines.append(f"Hop {hop.index}: query={hop.query!r}; extracted={hop.entity!r}")
        lines += [f"  [{d.id}] {d.title}: {d.text}" for d in hop.docs] or ["  (no documents)"]
    lines.append('Which hop first caused the failure? Reply with JSON {"stage": one of '
                 f'{list(STAGES)}, "hop": an integer 1..{len(trace.hops)}}}.')
    return "\n".join(lines)


def parse_judge_reply(reply: str, n_hops: int) -> Diagnosis | None:
    """The judge's JSON reply as a Diagnosis; ``None`` when it is malformed or out of range."""
    match = re.search(r"\{.*\}", reply or "", re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
        stage, hop = str(data["stage"]), int(data["hop"])
    except (TypeError, ValueError, KeyError, json.JSONDecodeError):
        return None
    return Diagnosis(stage, hop) if stage in STAGES and 0 <= hop <= n_hops else None


def llm_judge(trace: Trace, judge: Judge | Callable[[str], str]) -> Diagnosis:
    """Ask ``judge`` once, retry once on a malformed reply, then abstain (hop 0)."""
    prompt = judge_prompt(trace)
    for _ in range(2):
        found = parse_judge_reply(judge(prompt), len(trace.hops))
        if found is not None:
            return replace(found, cost=len(prompt.split()))
    return replace(NO_HOP, stage="none", cost=2 * len(prompt.split()))


def judge_for(provider: str, seed: int = 0) -> Judge | None:
    """A ``Judge`` over ``rcakit.llm``'s provider named by ``provider``; ``None`` for "none".

    The model sees ``judge_prompt`` as one user message, at temperature 0
    behind the shared response cache, so a rerun reads the same replies. An
    unknown provider is ``rcakit.llm``'s one-line ``RcakitError``.
    """
    from rcakit.llm import cached, provider_from_spec

    backend = cached(provider_from_spec(provider))
    if not backend:
        return None
    return lambda prompt: backend.chat([{"role": "user", "content": prompt}], seed=seed, max_tokens=64).text
