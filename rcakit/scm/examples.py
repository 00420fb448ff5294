r"""Validation SCMs with planted ground truth (CAR §5).

- :func:`pivotal_scm`: ``lookup -> issue_refund -> final``, where only the
  refund decision matters; the contrastive locus should be step 1.
- :func:`interaction_scm`: a two-step AND failure with an idle third step;
  its analytic Shapley values are :math:`((1-q^2)/2, (1-q^2)/2, 0)`.
- :func:`or_failure_scm`: the OR counterpart, a teaching contrast to the
  AND game, with values :math:`((1-q)^2/2, (1-q)^2/2, 0)`.

Used in the chapters: ``car-shapley`` and ``primer``.
"""

from __future__ import annotations

import numpy as np

from rcakit.scm.causal_model import SCM, PolicyStep, bernoulli_policy, uniform_policy


def _two_risky_steps(q: float) -> list[PolicyStep]:
    """plan and act each go bad with probability ``q``; report is stochastic but idle."""
    return [
        PolicyStep("plan", bernoulli_policy(q, "bad", "ok")),
        PolicyStep("act", bernoulli_policy(q, "bad", "ok")),
        PolicyStep("report", uniform_policy(["short", "long"])),
    ]


def pivotal_scm(p_bad: float = 0.3, seed: int = 0) -> SCM:
    """lookup -> issue_refund -> final. Step 1 issues the refund with probability
    ``p_bad``; the outcome is bad iff it did. The lookup and the final reply are
    stochastic but causally idle; the observed run is a failing one."""
    steps = [
        PolicyStep("lookup", uniform_policy(["order_found", "order_found_partial"]), lambda ctx, a: {"order": 1234}),
        PolicyStep("issue_refund", bernoulli_policy(p_bad, "refund", "no_refund")),
        PolicyStep("final", lambda ctx, rng: f"{ctx[1].action}_notice_v{int(rng.integers(3))}"),
    ]
    scm = SCM(steps, outcome=lambda trace: float(trace[1].action == "refund"))
    return scm.observe_run(np.random.default_rng(seed))


def interaction_scm(q: float = 0.3, seed: int = 0) -> SCM:
    r"""Steps 0 and 1 each go bad with probability ``q``; the outcome is bad iff both
    are; step 2 is idle.

    Analytic v: :math:`v(\emptyset) = q^2`, :math:`v(\{0\}) = v(\{1\}) = q`,
    :math:`v(\{0, 1\}) = 1` (step 2 changes nothing), so
    :math:`\phi = ((1-q^2)/2, (1-q^2)/2, 0)` and the efficiency sum is
    :math:`1 - q^2`.
    """
    scm = SCM(
        _two_risky_steps(q),
        outcome=lambda t: float(t[0].action == "bad" and t[1].action == "bad"),
        analytic_v=lambda s: q ** (2 - len(s & {0, 1})),
    )
    return scm.observe_run(np.random.default_rng(seed))


def or_failure_scm(q: float = 0.3, seed: int = 0, max_tries: int = 10_000) -> SCM:
    r"""The outcome is bad if EITHER of steps 0, 1 goes bad (each with probability
    ``q``); the observed run has both bad, so both are candidates for blame.

    :math:`v(\emptyset) = 1 - (1-q)^2` and any held bad step gives :math:`v = 1`,
    so :math:`\phi_0 = \phi_1 = (1-q)^2/2` and :math:`\phi_2 = 0`: the credit
    is what is left to explain, split.
    """
    scm = SCM(
        _two_risky_steps(q),
        outcome=lambda t: float(t[0].action == "bad" or t[1].action == "bad"),
        analytic_v=lambda s: 1.0 if s & {0, 1} else 1 - (1 - q) ** 2,
    )
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        scm.observe_run(rng)
        if scm.observed[0].action == scm.observed[1].action == "bad":
            return scm
    raise RuntimeError(f"no run with both steps bad in {max_tries} failing runs")
