"""Agentic RAG fault lab (AgenticRAG-FP): a certified synthetic world, BM25, a resumable agent,
interventions, diagnosers, the strict protocol and its metrics.

Modules: ``settings`` (the protocol's choices: the authors' and the earlier variant's), ``text``
(normalisation, correctness, outcomes), ``world`` (its ``relations`` and ``entities``),
``musique`` (the MuSiQue world), ``retrieval``, ``trace`` (hops and traces), ``readers`` (the rule and LLM
readers and the actions they return), ``agent``, ``interventions``, ``diagnosers``, ``protocol`` (eligibility, cases,
sweeps, case stores), ``metrics`` (exact-hop accuracy, its intervals and shares),
``propagation`` (what a structural fault leaves for each reader), ``outcomes`` (what content corruption
does to the answer), ``llm_methods`` (the LLM reader and judge wired from chapter parameters) and
``authors_runs`` and ``rescoring`` (the authors' released per-case runs, read and rescored) and
``fidelity`` (a recorded trace replayed read by read, and its action-match rate). The chapters' arm runs,
sections and figures are in ``rcakit.chapters._rag``, ``rcakit.chapters.coverage_collapse`` and
``rcakit.chapters.content_corruption``.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rcakit.rag.agent import Agent, AgentSettings
    from rcakit.rag.authors_runs import AuthorsRun, read_runs
    from rcakit.rag.diagnosers import Diagnosis, LLMJudge
    from rcakit.rag.interventions import CONTENT, STRUCTURAL, Corruption, corrupt_content, inject
    from rcakit.rag.metrics import attribution, predictions
    from rcakit.rag.protocol import DIAGNOSERS, Lab, build_lab, eligible, live, protocol_record
    from rcakit.rag.readers import Action, LLMReader, Reader, RuleReader
    from rcakit.rag.retrieval import Corpora
    from rcakit.rag.text import answer_correct, classify_outcome, normalise
    from rcakit.rag.trace import Hop, Trace
    from rcakit.rag.world import World, build_world

# name -> the module that defines it; each is imported on first use, so ``import rcakit.rag`` stays light
# (no pandas, scipy or statsmodels until a name is asked for; benchmarks/bench_import.py)
_EXPORTS = {
    "Agent": "rcakit.rag.agent",
    "AgentSettings": "rcakit.rag.agent",
    "AuthorsRun": "rcakit.rag.authors_runs",
    "read_runs": "rcakit.rag.authors_runs",
    "Diagnosis": "rcakit.rag.diagnosers",
    "LLMJudge": "rcakit.rag.diagnosers",
    "CONTENT": "rcakit.rag.interventions",
    "STRUCTURAL": "rcakit.rag.interventions",
    "Corruption": "rcakit.rag.interventions",
    "corrupt_content": "rcakit.rag.interventions",
    "inject": "rcakit.rag.interventions",
    "attribution": "rcakit.rag.metrics",
    "predictions": "rcakit.rag.metrics",
    "DIAGNOSERS": "rcakit.rag.protocol",
    "Lab": "rcakit.rag.protocol",
    "build_lab": "rcakit.rag.protocol",
    "eligible": "rcakit.rag.protocol",
    "live": "rcakit.rag.protocol",
    "protocol_record": "rcakit.rag.protocol",
    "Action": "rcakit.rag.readers",
    "LLMReader": "rcakit.rag.readers",
    "Reader": "rcakit.rag.readers",
    "RuleReader": "rcakit.rag.readers",
    "Corpora": "rcakit.rag.retrieval",
    "answer_correct": "rcakit.rag.text",
    "classify_outcome": "rcakit.rag.text",
    "normalise": "rcakit.rag.text",
    "Hop": "rcakit.rag.trace",
    "Trace": "rcakit.rag.trace",
    "World": "rcakit.rag.world",
    "build_world": "rcakit.rag.world",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "Action",
    "Agent",
    "AgentSettings",
    "AuthorsRun",
    "CONTENT",
    "Corpora",
    "Corruption",
    "DIAGNOSERS",
    "Diagnosis",
    "Hop",
    "LLMJudge",
    "LLMReader",
    "Lab",
    "Reader",
    "RuleReader",
    "STRUCTURAL",
    "Trace",
    "World",
    "answer_correct",
    "attribution",
    "build_lab",
    "build_world",
    "classify_outcome",
    "corrupt_content",
    "eligible",
    "inject",
    "live",
    "normalise",
    "predictions",
    "protocol_record",
    "read_runs",
]
