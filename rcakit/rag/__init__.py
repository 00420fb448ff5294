"""Agentic RAG fault lab (AgenticRAG-FP): a certified synthetic world, BM25, a resumable agent,
interventions, diagnosers, the strict protocol and its metrics.

Modules: ``text`` (normalisation, correctness, outcomes), ``world`` (its ``relations`` and ``entities``),
``musique`` (the MuSiQue world), ``retrieval``, ``trace`` (hops and traces), ``readers`` (the rule and LLM
readers and the actions they return), ``agent``, ``interventions``, ``diagnosers``, ``protocol`` (eligibility, cases,
sweeps, case stores), ``metrics`` (exact-hop accuracy, its intervals and shares),
``propagation`` (what a structural fault leaves for each reader), ``outcomes`` (what content corruption
does to the answer), ``llm_methods`` (the LLM reader and judge wired from chapter parameters) and
``authors_runs`` and ``rescoring`` (the authors' released per-case runs, read and rescored) and
``experiments`` (one arm run end to end, and every chapter section as a ``rcakit.sections.Section``).

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from rcakit.rag.agent import Agent, AgentSettings
from rcakit.rag.authors_runs import AuthorsRun, read_runs
from rcakit.rag.diagnosers import Diagnosis, LLMJudge
from rcakit.rag.experiments import ArmRun, run_arm
from rcakit.rag.interventions import CONTENT, STRUCTURAL, Corruption, corrupt_content, inject
from rcakit.rag.metrics import attribution, predictions
from rcakit.rag.protocol import DIAGNOSERS, Lab, build_lab, eligible, live, protocol_record
from rcakit.rag.readers import Action, LLMReader, Reader, RuleReader
from rcakit.rag.retrieval import Corpora
from rcakit.rag.text import answer_correct, classify_outcome, normalise
from rcakit.rag.trace import Hop, Trace
from rcakit.rag.world import World, build_world

__all__ = [
    "Action",
    "Agent",
    "AgentSettings",
    "ArmRun",
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
    "run_arm",
]
