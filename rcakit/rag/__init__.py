"""Agentic RAG fault lab (AgenticRAG-FP): a certified synthetic world, BM25, a resumable agent,
interventions, diagnosers and the strict protocol.

Modules: ``text`` (normalisation, correctness, outcomes), ``world``, ``retrieval``,
``agent``, ``interventions``, ``diagnosers``, ``protocol``, and ``models`` (the LLM reader
and judge wired from chapter parameters).
"""

from rcakit.rag.agent import Agent, Hop, LLMReader, Reader, RuleReader, Trace
from rcakit.rag.diagnosers import Diagnosis, LLMJudge
from rcakit.rag.interventions import CONTENT, STRUCTURAL, Corruption, corrupt_content, inject
from rcakit.rag.protocol import DIAGNOSERS, Lab, build_lab, eligible
from rcakit.rag.text import answer_correct, classify_outcome, normalize
from rcakit.rag.world import World, build_world

__all__ = [
    "Agent", "Hop", "LLMReader", "Reader", "RuleReader", "Trace", "Diagnosis", "LLMJudge", "CONTENT", "STRUCTURAL",
    "Corruption", "corrupt_content", "inject", "DIAGNOSERS", "Lab", "build_lab", "eligible",
    "answer_correct", "classify_outcome", "normalize", "World", "build_world",
]
