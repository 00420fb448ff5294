"""The support-agent testbed: CAR's four-step support agent (CAR Figure 1).

The injected instruction is in the order tool's observation (``single``) or
also in the ticket the first step reads (``double``). Repairing S replaces the
observations of S by their clean counterparts, holds the steps before the
first changed one and the actions of S, and lets every other later step
re-decide; one seed replay is one rollout. The truth is certified with
``CERTIFY_ROLLOUTS`` rollouts per set.

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rcakit import RcakitError
from rcakit.attribution.interface import FailedCase
from rcakit.attribution.oracle import Oracle, ReplayMemo
from rcakit.attribution.testbeds.base import FAULT_TYPES, TestbedCase, certified_family, chain_case
from rcakit.scm.causal_model import SCM, Do, PolicyStep
from rcakit.scm.fidelity import record_failing_run
from rcakit.scm.support_agent import INJECTED_NOTE, TICKET, support_agent_scm

CERTIFY_ROLLOUTS = 2000  # rollouts per set when certifying the support agent's family
SUPPORT_THETA = 2 / 3  # the success share a repair must reach (GCJR's θ)


def _noted_ticket(context: tuple[Any, ...], action: object) -> dict[str, Any]:
    """The ticket as the first step reads it in the double variant: the injected note appended."""
    return {"ticket": TICKET, "customer_note": INJECTED_NOTE}


def support_scm(variant: str) -> SCM:
    """The support agent (``single``: one injected observation; ``double``: also one in the ticket)."""
    scm = support_agent_scm()
    if variant == "double":
        first = scm.steps[0]
        scm.steps = [PolicyStep(first.name, first.policy, _noted_ticket), *scm.steps[1:]]
    elif variant != "single":
        raise RcakitError(f"support_scm: variant {variant!r} is not 'single' or 'double'")
    return scm


def clean_observation(observation: Any) -> Any:
    """The clean counterpart of an observation: the injected note removed (else unchanged)."""
    if isinstance(observation, Mapping) and observation.get("customer_note") == INJECTED_NOTE:
        return {k: v for k, v in observation.items() if k != "customer_note"}
    return observation


def repair_do(scm: SCM, steps: frozenset[Any]) -> Do:
    """The replay of repair set ``steps`` as a do-intervention (see the module docstring)."""
    observed = scm.observed
    changed = [k for k in steps if clean_observation(observed[k].observation) != observed[k].observation]
    if not changed:
        return Do(hold=frozenset(range(scm.n_steps)))
    return Do(
        hold=frozenset(range(min(changed))),
        actions={k: observed[k].action for k in steps},
        observations={k: clean_observation(observed[k].observation) for k in steps},
    )


def _injected_at(variant: str) -> Callable[[tuple[Any, ...]], bool]:
    need = {"single": (1,), "double": (0, 1)}[variant]
    return lambda records: all(clean_observation(records[k].observation) != records[k].observation for k in need)


class CountingSCM:
    """An SCM whose rollouts are charged to an oracle (for contrastive resampling, CAR §4)."""

    def __init__(self, scm: SCM, oracle: Oracle) -> None:
        self._scm, self._oracle = scm, oracle

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scm, name)

    def sample_bad(self, rng: np.random.Generator, do: Do, k: int) -> np.ndarray:
        self._oracle.charge(replays=k)
        return self._scm.sample_bad(rng, do, k)


def support_testbed(seed: int, cases_per_type: int, rollouts: int = 30) -> list[TestbedCase]:
    """``cases_per_type`` recorded failing runs of each variant, certified by replay."""
    out = []
    for variant in FAULT_TYPES["support_agent"]:
        for i in range(cases_per_type):
            scm = support_scm(variant)
            run = record_failing_run(
                scm, int(np.random.default_rng([seed, 4, i]).integers(2**31)), 200, accept=_injected_at(variant)
            )
            if run is None:
                raise RcakitError(f"support_testbed: no failing run with the injection(s) for case {i}")
            out.append(_support_case(scm, variant, i, seed, rollouts))
    return out


def _support_case(scm: SCM, variant: str, i: int, seed: int, rollouts: int) -> TestbedCase:
    players = scm.step_names
    index = {name: k for k, name in enumerate(players)}
    case_id = f"support:{variant}:{i:03d}"
    edges = [*itertools.combinations(players, 2), ("lookup_order", "outcome"), ("decide_refund", "outcome")]
    dag = chain_case(case_id, players, "outcome", edges, seed=seed)

    def share_good(steps: frozenset[Any], rng: np.random.Generator, k: int) -> float:
        do = repair_do(scm, frozenset(index[s] for s in steps))
        return 1.0 - float(scm.sample_bad(rng, do, k).mean())

    certify = np.random.default_rng([seed, 5, i])
    truth = certified_family(players, lambda s: share_good(s, certify, CERTIFY_ROLLOUTS) >= SUPPORT_THETA)

    def oracle(memo: ReplayMemo) -> Oracle:
        def replay_one(s: frozenset[Any], j: int) -> tuple[bool, int]:
            rng = np.random.default_rng([seed, 6, i, dag.mask(s), j])
            return share_good(s, rng, 1) == 1.0, 0

        made = Oracle(dag, replay_one, r=rollouts, memo=memo)
        made.scm = CountingSCM(scm, made)
        return made

    return TestbedCase(FailedCase(case_id, "support_agent", tuple(players), dag), variant, truth, oracle)
