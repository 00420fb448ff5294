"""Diagnosers: each maps a failed trace to a predicted (stage, hop, cost) (AgenticRAG-FP §5).

Trace readers see only the final trace: ``coverage`` is Doctor-RAG's rule as
the authors implement it, ``rule_based`` the authors' post-hoc symptom rule,
and ``fallback_rule`` the heuristic the probes fall back on. The active probes
``propagation_aware`` (frozen-hop repair) and ``suf_regen`` (repair, then
regenerate the suffix) re-execute the agent and pay for it in tokens; each has
the authors' three branches (flip, continue retrieving, fallback), and every
diagnosis records the branch that produced it. ``continue_retrieving`` is
branch 2 on its own. ``constant_hop1`` and ``oracle_gold_hop`` are the
workbench's controls: the first is the prediction coverage degenerates to,
the second reads the world's certified per-hop facts, which no real diagnoser
has. ``LLMJudge`` asks a language model through ``rcakit.llm`` and runs only
when a provider is given.

The authors attach confidences to the probes' branches (0.85 flip, 0.75
continue, 0.4 fallback); exact-hop accuracy does not use them, so they are
not kept here.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from rcakit import RcakitError
from rcakit.llm.accounting import MethodUsage
from rcakit.llm.base import Provider, request_seed
from rcakit.llm.prompts import Block, Budget, chat_messages, render
from rcakit.rag.agent import Agent
from rcakit.rag.settings import AUTHORS
from rcakit.rag.text import answer_correct, document_text, normalise, split_jaccard, split_tokens
from rcakit.rag.trace import Hop, Trace, tokens_read
from rcakit.rag.world import Paragraph

BRANCHES = ("flip", "continue", "fallback", "none")
UNGROUNDED = 0.05  # the rule-based diagnoser's answer-grounding threshold


@dataclass(frozen=True)
class Diagnosis:
    """A diagnoser's answer: stage, hop (0 = no hop), the tokens it spent, and the probe branch behind it.

    ``branch`` is ``flip``, ``continue`` or ``fallback`` for the probe branch
    that named the hop, and ``none`` when no branch named one or the
    diagnoser has no branches.
    """

    stage: str
    hop: int
    cost: int = 0
    branch: str = "none"


NO_HOP = Diagnosis("answer", 0, 0)


def _joined(docs: Iterable[Paragraph], tokenizer: str = AUTHORS.tokenizer) -> str:
    """The documents as one text: "title: text" each for the authors' tokenizer (the text alone for a
    recorded document with no title), the text alone otherwise."""
    return " ".join(document_text(getattr(d, "title", ""), d.text, tokenizer) for d in docs)


def coverage_score(gold: str, docs: Iterable[Paragraph], tokenizer: str = AUTHORS.tokenizer) -> float:
    """Coverage's J(a, D_h): Jaccard of the gold answer's and the joined documents' token sets, 0 for no
    documents; the tokens are the authors' (``lower().split()`` over "title: text") unless ``tokenizer``
    says otherwise (AgenticRAG-FP §4)."""
    docs = list(docs)
    return split_jaccard(gold, _joined(docs, tokenizer), tokenizer) if docs else 0.0


def coverage(trace: Trace, threshold: float = 0.05, tokenizer: str = AUTHORS.tokenizer) -> Diagnosis:
    """Earliest hop whose :func:`coverage_score` is below ``threshold``; empty hops score 0."""
    for hop in trace.hops:
        score = coverage_score(trace.gold, hop.docs, tokenizer)
        if score < threshold:
            return Diagnosis("retrieval", hop.index)
    return NO_HOP


def constant_hop1(trace: Trace) -> Diagnosis:
    """Control: always hop 1, the retrieval stage."""
    return Diagnosis("retrieval", 1)


def states_fact(docs: Iterable[Paragraph], subject: str, obj: str) -> bool:
    """Whether a paragraph titled ``subject`` among ``docs`` names ``obj``."""
    pattern = re.compile(r"(?<![\w])" + re.escape(obj) + r"(?![\w])")
    return any(d.title == subject and pattern.search(d.text) for d in docs)


def oracle_gold_hop(trace: Trace) -> Diagnosis:
    """Oracle control: the earliest hop i whose certified fact (subject_i's paragraph naming object_i) is missing.

    It reads the world's gold decomposition, which no diagnoser of the paper
    sees; it bounds what a per-hop evidence check could do, and is no evidence
    of what a real diagnoser does.
    """
    for i, gold in enumerate(trace.question.hops, start=1):
        docs = trace.hops[i - 1].docs if i <= len(trace.hops) else ()
        if not states_fact(docs, gold.subject, gold.object):
            return Diagnosis("retrieval", i)
    return NO_HOP


def visible_stage(trace: Trace, tokenizer: str = AUTHORS.tokenizer) -> str:
    """The authors' post-hoc stage rule, first match wins, from the final trace alone (§5).

    No document retrieved at all -> retrieval; no tool call (no hop issued a
    query) -> tool; an empty answer, or one whose Jaccard overlap with the
    retrieved documents is below ``UNGROUNDED`` (the authors' grounding test,
    over ``tokenizer``'s tokens), or a wrong answer -> answer; else none.
    """
    docs = [d for hop in trace.hops for d in hop.docs]
    if not docs:
        return "retrieval"
    if not any(hop.query for hop in trace.hops):
        return "tool"
    answer = trace.answer or ""
    if not normalise(answer) or split_jaccard(answer, _joined(docs, tokenizer), tokenizer) < UNGROUNDED:
        return "answer"
    return "none" if answer_correct(answer, trace.gold) else "answer"


def rule_based(trace: Trace, tokenizer: str = AUTHORS.tokenizer) -> Diagnosis:
    """The authors' rule-based diagnoser: ``visible_stage``; the retrieval stage gets the earliest
    hop with no documents (else hop 1), every other stage hop 0.

    It reads only what a recorded trace holds (each hop's query and
    documents, the answer and the gold answer), never agent-internal state.
    """
    stage = visible_stage(trace, tokenizer)
    if stage != "retrieval":
        return Diagnosis(stage, 0)
    empty = [i for i, hop in enumerate(trace.hops, start=1) if not hop.docs]
    return Diagnosis("retrieval", empty[0] if empty else 1)


def fallback_rule(trace: Trace, tokenizer: str = AUTHORS.tokenizer) -> Diagnosis:
    """The probes' branch 3: the earliest hop that is empty or whose documents share no token with the gold
    answer (``tokenizer``'s tokens: the authors' by default)."""
    gold = set(split_tokens(trace.gold, tokenizer))
    for hop in trace.hops:
        if not hop.docs or not gold & set(split_tokens(_joined(hop.docs, tokenizer), tokenizer)):
            return Diagnosis("retrieval", hop.index, branch="fallback")
    return NO_HOP


def repaired_docs(agent: Agent, trace: Trace, hop: Hop) -> tuple[tuple[Any, ...], int]:
    """Clean evidence for ``hop``: re-retrieve with its own recorded query, or with the question if that finds nothing.

    Returns the documents and the query words issued. The recorded query is
    the one the trace shows, so after a query drift it is the drifted query.
    With the authors' empty-search rule a search always returns documents, so
    the question is never needed there.
    """
    q = trace.question
    docs, issued = agent.fetch(q, hop.query), len(hop.query.split())
    if not docs:
        docs = agent.fetch(q, q.text)
        issued += len(trace.question.text.split())
    return docs, issued


def continue_retrieving(agent: Agent, trace: Trace) -> Diagnosis:
    """Branch 2 alone: keep all n hops, let the agent resume at hop n+1 within its hop budget.

    A correct answer names hop n+1 (an early termination, retrieval stage).
    Under the authors' budget a trace that already holds all its hops cannot
    retrieve again, so on it the probe is a plain re-answer from its evidence.
    """
    n = len(trace.hops)
    probe = agent.resume_from(trace.question, trace.hops, n + 1)
    cost = sum(h.word_cost for h in probe.hops[n:]) + probe.extra_words
    if probe.correct:
        return Diagnosis("retrieval", n + 1, cost, "continue")
    return replace(NO_HOP, cost=cost)


def agent_tokenizer(agent: Agent) -> str:
    """The tokenizer of the agent's corpora; the authors' for an agent with none (a scripted one)."""
    corpora = getattr(agent, "corpora", None)
    return getattr(corpora, "tokenizer", "authors")


def _after_no_flip(agent: Agent, trace: Trace, cost: int) -> Diagnosis:
    """Branches 2 and 3, once no hop's repair flipped the answer; ``cost`` is what branch 1 spent."""
    resumed = continue_retrieving(agent, trace)
    cost += resumed.cost
    if resumed.branch == "continue":
        return replace(resumed, cost=cost)
    return replace(fallback_rule(trace, agent_tokenizer(agent)), cost=cost)


def _probed(trace: Trace, max_probes: int | None) -> tuple[Hop, ...]:
    """The hops a probe repairs: 1..n, or 1..max_probes when the authors' cap is set (4 in their dense
    Table 2 runs, 2 in their BM25 structural runs; anote-ai/Research-AgenticRAG)."""
    return trace.hops if max_probes is None else trace.hops[:max_probes]


def propagation_aware(agent: Agent, trace: Trace, max_probes: int | None = None) -> Diagnosis:
    """Propagation-Aware (frozen hop), all three branches as the authors run it.

    (1) For h = 1..n (1..``max_probes`` with a cap): swap re-retrieved evidence into hop h (``repaired_docs``),
    keep every other hop as observed, force an answer; the first h that flips
    it to correct is the prediction. (2) Else ``continue_retrieving``. (3) Else
    ``fallback_rule``. The cost counts every query issued and every forced
    answer's and resumed hop's reading.
    """
    cost = 0
    for h, hop in enumerate(_probed(trace, max_probes), start=1):
        docs, issued = repaired_docs(agent, trace, hop)
        hops = list(trace.hops)
        hops[h - 1] = replace(hop, docs=docs)
        probe = agent.force_answer(trace.question, hops)
        cost += issued + probe.extra_words
        if probe.correct:
            return Diagnosis("retrieval", h, cost, "flip")
    return _after_no_flip(agent, trace, cost)


def suf_regen(agent: Agent, trace: Trace, max_probes: int | None = None) -> Diagnosis:
    """Suf-Regen: branch (1) keeps hops 1..h-1 and the repaired hop h, and lets the agent redo hops h+1..;
    branches (2) and (3) as in ``propagation_aware`` (``max_probes`` caps the hops repaired alike).
    """
    cost = 0
    for h, hop in enumerate(_probed(trace, max_probes), start=1):
        docs, issued = repaired_docs(agent, trace, hop)
        repaired = replace(hop, docs=docs, entity=None, mode="unread")
        probe = agent.resume_from(trace.question, trace.hops[: h - 1] + (repaired,), h + 1)
        cost += issued + tokens_read(docs) + sum(x.word_cost for x in probe.hops[h:]) + probe.extra_words
        if probe.correct:
            return Diagnosis("retrieval", h, cost, "flip")
    return _after_no_flip(agent, trace, cost)


JUDGE_STAGES = ("retrieval", "tool", "answer")  # the scoring taxonomy: a drifted query is a retrieval fault
JUDGE_HOPS = ("any", "trace")  # the authors': any hop >= 0 (n+1 included); the targeted variant's: 1..n
JUDGE_PROMPTS = ("authors", "rcakit")  # whose prompt the judge reads (anote-ai/Research-AgenticRAG)
# Per prompt: the characters a document may keep (None: in full) and the reply's token budget.
JUDGE_LIMITS = {"authors": (None, 256), "rcakit": (600, 32)}
# The authors' reply words, mapped onto the scoring taxonomy ("none": the judge found no fault).
AUTHORS_STAGES = {"retrieval": "retrieval", "answer_generation": "answer", "none": "none"}
AUTHORS_JUDGE_SYSTEM = (
    "You diagnose a multi-hop retrieval agent after the fact. You see the question, the evidence each hop "
    "retrieved, the agent's final answer and the gold answer. Name the earliest hop at which the agent went "
    'wrong, as one JSON object {"stage": "retrieval" | "answer_generation" | "none", "hop": H}, where H '
    "counts hops from 1, or is 0 when nothing went wrong."
)
JUDGE_SYSTEM = (
    "You diagnose failed runs of a multi-hop search agent. Each hop ran one or two search queries and "
    "read the documents retrieved. Find where the failure first entered: the hop number, and the stage "
    "- retrieval (the hop's documents were missing, off-topic, misleading or wrong, including documents "
    "that a query which drifted to the wrong entity brought back), tool (the hop's search was never "
    "called or the call failed), or answer (the evidence was fine but the final answer step failed). "
    'Reply with the JSON object {"stage": ..., "hop": ...} only.'
)


def check_judge_prompt(prompt: str) -> str:
    """``prompt`` if it names a judge prompt (:data:`JUDGE_PROMPTS`), else a one-line error."""
    if prompt not in JUDGE_PROMPTS:
        raise RcakitError(f"judge_prompt: expected one of {', '.join(JUDGE_PROMPTS)}, got {prompt!r}")
    return prompt


def document_blocks(trace: Trace) -> list[Block]:
    """Each hop's documents as one prompt block of ``("  [id] title", text)`` items."""
    return [Block(tuple((f"  [{d.id}] {d.title}", d.text) for d in hop.docs)) for hop in trace.hops]


def judge_prompt(
    trace: Trace, documents: list[str], hops: str = "any", prompt: str = "authors"
) -> list[dict[str, Any]]:
    """The complete hop-level trace as the judge sees it (§5), with each hop's rendered ``documents``.

    The judge sees the question, every hop's queries and documents, the final
    and the gold answer. The authors' prompt (``prompt = "authors"``) asks
    for the earliest wrong hop and lets the judge say that none went wrong;
    rcakit's states that the answer is wrong and, with ``hops = "any"``,
    offers hop n+1 (the agent stopped before a hop it needed).
    """
    authors = check_judge_prompt(prompt) == "authors"
    lines = [f"Question: {trace.question.text}", ""]
    for hop, shown in zip(trace.hops, documents, strict=True):
        lines.append(f"Hop {hop.index}")
        lines += [f"  query: {q}" for q in hop.queries or (hop.query,)]
        lines += ["  documents:", shown] if hop.docs else ["  (no documents retrieved)"]
    lines += ["", f"Final answer: {trace.answer or '(none)'}", f"Gold answer: {trace.gold}"]
    if not authors:
        n = len(trace.hops)
        ask = (
            f"At which hop (1 to {n}, or {n + 1} if the agent stopped before a hop it needed) and stage"
            if hops == "any"
            else f"At which hop (1 to {n}) and stage"
        )
        lines.append(f"The final answer is wrong. {ask} did the failure start?")
    return chat_messages(AUTHORS_JUDGE_SYSTEM if authors else JUDGE_SYSTEM, "\n".join(lines))


def judge_messages(
    trace: Trace, max_doc_chars: int | None, hops: str = "any", prompt: str = "authors"
) -> tuple[list[dict[str, Any]], int]:
    """The judge's messages with every document cut at ``max_doc_chars`` (``None``: kept whole), and how many
    were cut."""
    blocks = document_blocks(trace)
    return judge_prompt(trace, [render(b, max_doc_chars, None) for b in blocks], hops, prompt), sum(
        b.clipped(max_doc_chars) for b in blocks
    )


class LLMJudge:
    """The LLM-Judge diagnoser (AgenticRAG-FP §5): a model reads the whole trace and names (stage, hop).

    ``chat`` is a cached provider (``rcakit.llm.cached``), possibly of another
    model family than the agent's. ``prompt`` is whose prompt it reads
    (:data:`JUDGE_PROMPTS`): the authors' (every document in full, a reply of
    up to 256 tokens, stage ``retrieval``, ``answer_generation`` or ``none``,
    mapped onto the scoring taxonomy by :data:`AUTHORS_STAGES`) or rcakit's
    (documents cut at 600 characters, 32 tokens, hop n+1 offered in words);
    ``max_doc_chars`` and ``max_tokens`` override the prompt's limits
    (:data:`JUDGE_LIMITS`). With ``hops = "any"`` (the authors') the
    reply's hop is any integer and a negative
    hop is clipped to 0, so the judge may name hop n+1 (an early termination),
    even on a trace with no hops; with ``hops = "trace"`` (the earlier
    workbench's) the hop must lie in 1..n and a trace with no hops gets hop 0
    without a call. Validation is by ``rcakit.llm.ask_json``: one retry with
    the error shown, then an abstention, scored as stage "none", hop 0 (a
    miss). The seed is derived from the chapter seed and the case key, so a
    rerun hits the response cache. Documents are cut at ``max_doc_chars``;
    when the prompt does not fit the model's context window,
    ``rcakit.llm.prompts.Budget.fit`` cuts them further (the one way a prompt
    is fitted in rcakit). Every cut document is counted in ``truncated_docs``.
    ``cost`` is the tokens the diagnosis spent.

    :meth:`diagnose` changes nothing and returns its count of cut documents;
    the counter is the judge's running total that the results report
    (``rcakit.rag.llm_methods.judge_record``), added to by :meth:`__call__`
    and ``llm_methods.judge_cases``. Concurrent cases may share a judge, so
    the counter is added to under a lock, and a judge pickled to a Dask
    worker gets a new lock.
    """

    def __init__(
        self,
        chat: Provider,
        seed: int,
        *,
        max_doc_chars: int | None = None,
        max_tokens: int | None = None,
        hops: str = AUTHORS.judge_hops,
        prompt: str = AUTHORS.judge_prompt,
    ) -> None:
        if hops not in JUDGE_HOPS:
            raise RcakitError(f"judge_hops: expected one of {', '.join(JUDGE_HOPS)}, got {hops!r}")
        doc_chars, reply_tokens = JUDGE_LIMITS[check_judge_prompt(prompt)]
        self.chat, self.seed, self.hops, self.prompt = chat, seed, hops, prompt
        self.max_doc_chars = max_doc_chars if max_doc_chars is not None else doc_chars
        self.max_tokens = max_tokens if max_tokens is not None else reply_tokens
        self.truncated_docs = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def usage(self) -> MethodUsage | None:
        """The chat's usage (``None`` for a chat without accounting); inside ``rcakit.llm.cache.case_usage``
        a cached chat hands out a charger of its usage and the scope's, which reads as its usage."""
        return getattr(self.chat, "accounting", None)

    def _fitted(self, trace: Trace) -> tuple[list[dict[str, Any]], int]:
        budget = Budget(self.chat, self.max_tokens)
        messages, cut = judge_messages(trace, self.max_doc_chars, self.hops, self.prompt)
        if not budget.fits(messages):
            blocks = document_blocks(trace)
            fitted = budget.fit(blocks, lambda shown: judge_prompt(trace, shown, self.hops, self.prompt))
            messages, cut = fitted.messages, fitted.clipped(blocks)
        return messages, cut

    def __call__(self, trace: Trace, key: str) -> Diagnosis:
        found, cut = self.diagnose(trace, key)
        self.count_truncated(cut)
        return found

    def count_truncated(self, cut: int) -> None:
        """Add ``cut`` documents to ``truncated_docs`` (under a lock: concurrent cases share a judge)."""
        with self._lock:
            self.truncated_docs += cut

    def diagnose(self, trace: Trace, key: str) -> tuple[Diagnosis, int]:
        """The diagnosis and the number of documents cut, leaving ``truncated_docs`` alone.

        The cost is the tokens charged within this call alone
        (``rcakit.llm.cache.case_usage``), whatever runs beside it.
        """
        from rcakit.llm import Shape, ask_json
        from rcakit.llm.cache import case_usage

        usage = self.usage
        if usage is not None:
            usage.add_case()
        if not trace.hops and self.hops == "trace":
            return NO_HOP, 0
        hop_spec = int if self.hops == "any" else range(1, len(trace.hops) + 1)
        authors = self.prompt == "authors"
        shape = Shape(stage=tuple(AUTHORS_STAGES) if authors else JUDGE_STAGES, hop=hop_spec)
        messages, cut = self._fitted(trace)
        with case_usage() as scope:
            verdict = ask_json(
                self.chat,
                messages,
                shape,
                seed=request_seed(self.seed, key),
                max_tokens=self.max_tokens,
                accounting=self.usage,
            )
        spent = scope.totals(self.chat)
        cost = spent["input_tokens"] + spent["output_tokens"]
        if verdict is None:
            return Diagnosis("none", 0, cost), cut
        stage = AUTHORS_STAGES[verdict["stage"]] if authors else verdict["stage"]
        found = Diagnosis(stage, max(0, verdict["hop"]), cost)
        return found, cut
