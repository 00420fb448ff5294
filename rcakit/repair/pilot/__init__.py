"""The four-agent DualSolve-style pilot of GCJR §Experiments, rebuilt as a replayable workflow.

Planner A splits an arithmetic task into two sub-problems, Solvers B and C
each work one out step by step, and Aggregator D turns their results into the
final answer; a rule checks it. The paper does not describe its pilot's
workflow; the mechanics here are choices, one concept per module:

- ``tasks``: the arithmetic tasks (split and dual forms) and their expressions;
- ``agents``: the scripted and LLM policies that play the four agents, and
  the hook each execution is charged to;
- ``run``: the execution DAG, running and replaying it, the planted cases,
  and :class:`WorkflowOracle`, the replay oracle GCJR and exhaustive search
  run on unchanged;
- ``experiment``: the pilot, GCJR and exhaustive search on every case, and
  its table beside the paper's.

Used in the chapters: `gcjr-ablations`.
"""

from rcakit.repair.pilot.agents import POLICIES, AgentPolicy, Key, LLMPolicy, ScriptedPolicy, make_policy
from rcakit.repair.pilot.experiment import PILOT_ROWS, evaluate_pilot, pilot_beside_paper, run_pilot
from rcakit.repair.pilot.run import (
    PLANNER,
    SINK,
    WorkflowCase,
    WorkflowOracle,
    build_case,
    hand_pilot_case,
    pilot_cases,
    workflow_graph,
)
from rcakit.repair.pilot.tasks import Task, apply, expression_value, hand_task, make_task, parse_expression

__all__ = [
    "PILOT_ROWS",
    "PLANNER",
    "POLICIES",
    "SINK",
    "Key",
    "LLMPolicy",
    "AgentPolicy",
    "ScriptedPolicy",
    "Task",
    "WorkflowCase",
    "WorkflowOracle",
    "apply",
    "build_case",
    "evaluate_pilot",
    "expression_value",
    "hand_pilot_case",
    "hand_task",
    "make_policy",
    "make_task",
    "parse_expression",
    "pilot_beside_paper",
    "pilot_cases",
    "run_pilot",
    "workflow_graph",
]
