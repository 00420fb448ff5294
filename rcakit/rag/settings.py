"""The protocol's choices in one place: the authors' (:data:`AUTHORS`) and rcakit's earlier variant (:data:`EARLIER`).

AgenticRAG-FP §6 runs its diagnosers under one experimental protocol, fixed by the
authors' code (``anote-ai/Research-AgenticRAG``): which paragraphs a question
searches, with which retriever and how many per search, the hop budget, the
structural interventions a sweep injects, how far the probes repair, how text is
split, how a content corruption picks its span, and what the LLM judge may answer.
:class:`ProtocolSettings` holds one value for each; every default elsewhere
(``rcakit.rag.protocol.build_lab``, ``rcakit.rag.agent.AgentSettings``,
``rcakit.rag.retrieval.Corpora``, the chapters' protocol table and side-by-side
runs) reads it from here, and a test holds the RAG notebooks' parameters cells to
:data:`AUTHORS`.

The rule reader's reaction to a warning (``heed_warnings``) is not one of the
authors' choices (their reader is a language model): it is the rule reader's
setting, ``rcakit.rag.readers.HEED_WARNINGS``.

A leaf module: it imports nothing of rcakit, so every module of ``rcakit.rag`` can read it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

Arm = Literal["structural", "content"]
Corpus = Literal["question", "global"]  # rcakit.rag.retrieval.CORPUS_KINDS
EmptySearch = Literal["first_two", "nothing"]  # rcakit.rag.retrieval.EMPTY_SEARCH
RetrieverName = Literal["bm25", "dense"]  # rcakit.rag.retrieval.RETRIEVERS
Style = Literal["generic", "targeted"]  # rcakit.rag.interventions.STYLES
InterventionSet = Literal[  # rcakit.rag.interventions.INTERVENTION_SETS: a named set or one kind
    "authors",
    "all",
    "empty_retrieval",
    "irrelevant_documents",
    "query_drift",
    "false_premise",
    "stale_evidence",
    "early_termination",
]
Tokenizer = Literal["authors", "normalised"]  # rcakit.rag.text.TOKENIZERS
JudgeHops = Literal["any", "trace"]  # rcakit.rag.diagnosers.JUDGE_HOPS
JudgePrompt = Literal["authors", "rcakit"]  # rcakit.rag.diagnosers.JUDGE_PROMPTS
SpanRule = Literal["authors", "first_mention"]  # rcakit.rag.interventions.SPAN_RULES

JUDGE_CHOICES = ("judge_hops", "judge_prompt")  # the LLM judge's choices, not the lab's


@dataclass(frozen=True)
class ByArm:
    """A choice whose value differs by arm: the structural sweep's and the content-corruption runs'."""

    structural: RetrieverName
    content: RetrieverName


@dataclass(frozen=True)
class ProtocolSettings:
    """Every choice of the protocol, each named as the chapter parameter that sets it.

    ``corpus``: ``question`` searches each question's own paragraphs, ``global`` one index over the world;
    ``empty_search``: what a search where nothing scores returns (``first_two``: the corpus's first two
    paragraphs; ``nothing``); ``spare_hops``: the hop budget beyond the question's hops, after which the agent
    must answer; ``reformulate``: a second search inside a hop after a failed read; ``interventions``: the
    structural texts' style (``generic`` names no wrong object, ``targeted`` plants one); ``intervention_set``:
    the structural kinds a sweep injects; ``max_probes``: the probes repair hops 1..max_probes (0: every hop);
    ``tokenizer``: how BM25, coverage, the fallback and the grounding test split text; ``top_k``: paragraphs
    per retrieval; ``judge_hops`` and ``judge_prompt``: the hops the LLM judge may name and whose prompt it
    reads; ``span_rule``: how a content corruption picks its span; ``retriever``: ``bm25`` or ``dense``, one
    value for both arms or a :class:`ByArm` (:meth:`retriever_for`).
    """

    corpus: Corpus
    empty_search: EmptySearch
    spare_hops: int
    reformulate: bool
    interventions: Style
    intervention_set: InterventionSet
    max_probes: int
    tokenizer: Tokenizer
    top_k: int
    judge_hops: JudgeHops
    judge_prompt: JudgePrompt
    span_rule: SpanRule
    retriever: RetrieverName | ByArm

    def retriever_for(self, arm: str) -> RetrieverName:
        """The retriever of ``arm`` ("structural" or "content")."""
        if arm not in get_args(Arm):
            raise ValueError(f"arm: expected 'structural' or 'content', got {arm!r}")
        if isinstance(self.retriever, ByArm):
            return getattr(self.retriever, arm)
        return self.retriever

    def as_params(self, arm: str | None = None) -> dict[str, Any]:
        """The choices as chapter parameters (name -> value), in field order. With ``arm``, ``retriever`` is
        that arm's; without one, a retriever that differs by arm is left out (a caller keeps its own)."""
        params = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "retriever"}
        if arm is not None or not isinstance(self.retriever, ByArm):
            params["retriever"] = self.retriever_for(arm) if arm is not None else self.retriever
        return params

    def lab_params(self, arm: str | None = None) -> dict[str, Any]:
        """:meth:`as_params` without the LLM judge's choices: the keywords ``build_lab`` takes."""
        return {k: v for k, v in self.as_params(arm).items() if k not in JUDGE_CHOICES}


AUTHORS = ProtocolSettings(
    # AgenticRAG-FP §6 and the authors' code (anote-ai/Research-AgenticRAG): each question searches its own
    # paragraphs (MuSiQue's 20), a search where nothing scores returns the first two, a budget of the question's
    # hops (3) with one retrieval each, top 5 paragraphs per retrieval, generic intervention texts, their four
    # live kinds (Table 2: empty retrieval, irrelevant documents, false premise, stale evidence), probes over
    # every hop (their content runs; the strict structural runs cap them, rcakit.rag.metrics.PROBE_CAPS),
    # lower().split() over "title: text", a judge that may name any hop with their prompt, and their span rule.
    corpus="question",
    empty_search="first_two",
    spare_hops=0,
    reformulate=False,
    interventions="generic",
    intervention_set="authors",
    max_probes=0,
    tokenizer="authors",
    top_k=5,
    judge_hops="any",
    judge_prompt="authors",
    span_rule="authors",
    # Table 2's structural sweep ranks by the cosine of all-MiniLM-L6-v2 embeddings; the content-corruption runs
    # behind Tables 3-4 by BM25 (the authors' code).
    retriever=ByArm(structural="dense", content="bm25"),
)
"""The authors' protocol (AgenticRAG-FP §6; the authors' code, ``anote-ai/Research-AgenticRAG``): the RAG
chapters' defaults."""

EARLIER = ProtocolSettings(
    corpus="global",
    empty_search="nothing",
    spare_hops=1,
    reformulate=True,
    interventions="targeted",
    intervention_set="all",
    max_probes=0,  # the variant predates the probes' cap: every hop
    tokenizer="normalised",
    top_k=3,
    judge_hops="trace",
    judge_prompt="rcakit",
    span_rule="first_mention",
    retriever="bm25",
)
"""rcakit's earlier, targeted variant of the protocol: one global BM25 index, nothing for an empty search, a
spare hop and a second search after a miss, top 3, the six interventions with planted wrong objects, the answer
normaliser's tokens, a judge kept to the trace's hops with rcakit's prompt, and the first-mention span rule; the
chapters' Explore sections run it beside :data:`AUTHORS`."""
