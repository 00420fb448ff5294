"""Diagnosers: each maps a failed trace to a predicted (stage, hop, cost) (AgenticRAG-FP §5).

``coverage`` is Doctor-RAG's rule as the authors implement it; the active
probes ``propagation_aware`` (frozen-hop repair) and ``suf_regen`` (repair,
then regenerate the suffix) re-execute and pay for it in tokens.
``coverage_gold_hop`` and ``constant_hop1`` are the workbench's controls: the
first needs the world's certified per-hop facts, the second is the
prediction the coverage rule degenerates to. ``LLMJudge`` (issue 6) asks a
language model through ``rcakit.llm`` and runs only when a provider is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rcakit.llm.base import request_seed
from rcakit.rag.agent import Agent, Trace, clip
from rcakit.rag.text import jaccard


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


JUDGE_STAGES = ("retrieval", "tool", "answer")
JUDGE_SYSTEM = (
    "You diagnose failed runs of a multi-hop search agent. Each hop ran one or two search queries and "
    "read the documents retrieved. Find where the failure first entered: the hop number, and the stage "
    "- retrieval (the hop's documents were missing, off-topic, misleading or wrong), tool (a query went "
    "astray), or answer (the evidence was fine but the final answer step failed). "
    'Reply with the JSON object {"stage": ..., "hop": ...} only.'
)


def judge_messages(trace: Trace, max_doc_chars: int) -> tuple[list[dict], int]:
    """The complete hop-level trace as the judge sees it (§5), and how many documents were cut.

    The judge sees the question, every hop's queries and documents (each cut
    at ``max_doc_chars`` with an explicit marker), the final and the gold answer.
    """
    lines, cut = [f"Question: {trace.question.text}", ""], 0
    for hop in trace.hops:
        lines.append(f"Hop {hop.index}")
        lines += [f"  query: {q}" for q in hop.queries or (hop.query,)]
        for doc in hop.docs:
            text, was_cut = clip(doc.text, max_doc_chars)
            cut += was_cut
            lines.append(f"  document [{doc.id}] {doc.title}: {text}")
        if not hop.docs:
            lines.append("  (no documents retrieved)")
    lines += ["", f"Final answer: {trace.answer or '(none)'}", f"Gold answer: {trace.gold}",
              f"The final answer is wrong. At which hop (1 to {len(trace.hops)}) and stage did the failure start?"]
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}], cut


class LLMJudge:
    """The LLM-Judge diagnoser (AgenticRAG-FP §5): a model reads the whole trace and names (stage, hop).

    ``chat`` is a cached provider (``rcakit.llm.cached``), possibly of another
    model family than the agent's. The reply is validated as
    ``Shape(stage=JUDGE_STAGES, hop=range(1, hops + 1))`` by
    ``rcakit.llm.ask_json``: one retry with the error shown, then an
    abstention, scored as stage "none", hop 0 (a miss). A trace with no hops
    (early termination at hop 1) has nothing to read: it gets hop 0 without a
    call. The seed is derived from the chapter seed and the case key, so a
    rerun hits the response cache. Documents are cut at ``max_doc_chars``
    (halved until the prompt fits the model's context window) and every cut is
    counted in ``truncated_docs``. ``cost`` is the tokens the diagnosis spent.
    """

    def __init__(self, chat, seed: int, max_doc_chars: int = 600, max_tokens: int = 32):
        self.chat, self.seed, self.max_doc_chars, self.max_tokens = chat, seed, max_doc_chars, max_tokens
        self.usage = getattr(chat, "accounting", None)
        self.truncated_docs = 0

    def _fitted(self, trace: Trace) -> list[dict]:
        limit, window = self.max_doc_chars, self.chat.context_window
        messages, cut = judge_messages(trace, limit)
        while window and limit > 50 and self.chat.count_tokens(messages) + self.max_tokens > window:
            limit //= 2
            messages, cut = judge_messages(trace, limit)
        self.truncated_docs += cut
        return messages

    def __call__(self, trace: Trace, key: str) -> Diagnosis:
        from rcakit.llm import Shape, ask_json

        if self.usage is not None:
            self.usage.add_case()
        if not trace.hops:
            return NO_HOP
        before = self._tokens()
        shape = Shape(stage=JUDGE_STAGES, hop=range(1, len(trace.hops) + 1))
        verdict = ask_json(self.chat, self._fitted(trace), shape, seed=request_seed(self.seed, key),
                           max_tokens=self.max_tokens, accounting=self.usage)
        cost = self._tokens() - before
        return Diagnosis("none", 0, cost) if verdict is None else Diagnosis(verdict["stage"], verdict["hop"], cost)

    def _tokens(self) -> int:
        if self.usage is None:
            return 0
        totals = self.usage.totals()
        return totals["input_tokens"] + totals["output_tokens"]
