"""Adapters: the existing attribution methods behind one signature, ``method(case, oracle, budget=None)``.

Each adapter calls the method it wraps and only translates its answer into an
:class:`~rcakit.attribution.interface.Attribution`; the cost is what the oracle
counted while the method ran. Families of methods:

- post-hoc readers (no replay): AgenticRAG-FP's ``coverage`` and
  ``rule_based`` diagnosers (§5), GCJR's ``centrality`` baseline, and the
  LLM judge when a provider is given (:func:`llm_judge`);
- single-intervention probes: Propagation-Aware and Suf-Regen (§5) re-running
  the agent, and GCJR's singleton replay;
- CAR's contrastive resampling with its point-of-commitment locus (CAR §4);
- Shapley values of the repair game v(S) = mean replay success of repairing S,
  exact (2^n replayed sets), Monte-Carlo under a replay budget (CAR §4,
  Castro et al.) and rcakit's default by rollouts (common random numbers in
  antithetic pairs, the refinement CAR §7 leaves open), all rankings, and GCJR's Shapley top-2 baseline (a family);
- GCJR and exhaustive search (GCJR §Methodology), both families.

A user's own method plugs in the same way, as a Python object or by import
path (:func:`load_methods`). A ten-line example, a method that replays each
player alone and blames the first one whose repair restores success::

    from rcakit.attribution import Attribution

    def first_singleton(case, oracle, budget=None):
        for player in case.players:
            if budget is not None and oracle.calls + oracle.r > budget:
                break
            if oracle.h([player]):
                return Attribution("point", player)
        return Attribution("point", None)

Run it in the chapter with ``rcakit run attribution-families -p methods
"mypackage.mymodule:first_singleton"``. :func:`check_methods` imports every
path and checks that it can be called as ``method(case, oracle, budget)``
before a kernel starts, in a child process (``rcakit.attribution.sandbox``);
a user's method then runs on each case under a time limit, with what it
prints discarded, and its errors name it and the case
(``rcakit.attribution.scoring.run_method``).

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rcakit import RcakitError
from rcakit.attribution.interface import Attribution, FailedCase, Method, NotApplicable
from rcakit.attribution.oracle import Oracle
from rcakit.rag import diagnosers
from rcakit.repair import baselines
from rcakit.repair import search as repair_search
from rcakit.scm.contrastive import contrastive_effects
from rcakit.shapley import coalition_of, shapley_exact, shapley_permutation, shapley_rollouts

if TYPE_CHECKING:
    from rcakit.rag import Agent, Diagnosis, Trace

Diagnoser = Callable[["Agent", "Trace"], "Diagnosis"]  # a single-intervention probe on the counting agent


def _hop_player(case: FailedCase, hop: int) -> object:
    """The player a diagnoser's hop names (hop 0 or a hop past the players: no answer)."""
    return case.players[hop - 1] if 1 <= hop <= len(case.players) else None


def _need_trace(case: FailedCase) -> Trace:
    if case.trace is None:
        raise NotApplicable(f"{case.testbed}: the method reads a RAG trace, which this testbed has not")
    return case.trace


def coverage(case: FailedCase, oracle: Oracle, budget: int | None = None, threshold: float = 0.05) -> Attribution:
    """AgenticRAG-FP's coverage diagnoser (a post-hoc reader)."""
    return Attribution("point", _hop_player(case, diagnosers.coverage(_need_trace(case), threshold).hop))


def rule_based(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """AgenticRAG-FP's rule-based diagnoser (a post-hoc reader)."""
    return Attribution("point", _hop_player(case, diagnosers.rule_based(_need_trace(case)).hop))


def _probe(diagnoser: Diagnoser, case: FailedCase, oracle: Oracle) -> Attribution:
    trace = _need_trace(case)
    found = diagnoser(oracle.agent, trace)
    oracle.charge(words=found.cost)
    return Attribution("point", _hop_player(case, found.hop))


def propagation_aware(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """Propagation-Aware (frozen-hop repair), on the oracle's counting agent."""
    return _probe(diagnosers.propagation_aware, case, oracle)


def suf_regen(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """Suf-Regen (repair hop h, regenerate the suffix), on the oracle's counting agent."""
    return _probe(diagnosers.suf_regen, case, oracle)


def llm_judge(judge: Callable[[Trace, str], Diagnosis]) -> Method:
    """The LLM judge (an ``rcakit.rag.LLMJudge`` over a provider) as a method (a post-hoc reader: no replay).

    Its model tokens are not a replay's words, so the oracle does not count them: the judge's chat records
    them (``LLMJudge.usage``, ``rcakit.llm.accounting``, the one token ledger).
    """

    def method(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
        found = judge(_need_trace(case), case.case_id)
        return Attribution("point", _hop_player(case, found.hop))

    return method


def centrality(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """GCJR's centrality baseline: the most between-central slice player, no replay."""
    result = baselines.centrality(case.dag, oracle)
    return Attribution("point", next(iter(result.ranking[0])) if result.ranking else None)


def singleton_replay(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """GCJR's singleton baseline: every player replayed alone; the successes are the family."""
    return Attribution("family", baselines.singleton_replay(case.dag, oracle).family)


def gcjr(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """Graph-Constrained Joint Replay on the case's dependency graph."""
    return Attribution("family", repair_search.gcjr(case.dag, oracle).family)


def exhaustive(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """Exhaustive search over every set of size <= 2, then the minimality filter."""
    return Attribution("family", repair_search.exhaustive(case.dag, oracle).family)


def shapley_top2(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """GCJR's Shapley baseline: the two highest exact Shapley values, returned as one joint set."""
    return Attribution("family", baselines.shapley_top2(case.dag, oracle).family)


def _ranking(case: FailedCase, phi: np.ndarray) -> tuple[Any, ...]:
    """Players by value, highest first; ties to the earlier player."""
    order = list(case.dag.candidates)
    return tuple(sorted(order, key=lambda v: (-phi[order.index(v)], order.index(v))))


def shapley_exact_ranking(case: FailedCase, oracle: Oracle, budget: int | None = None) -> Attribution:
    """Exact Shapley values of h_θ over every replayed subset, as a ranking."""
    table = oracle.replay_every_subset().astype(float)
    phi = shapley_exact(lambda c: table[sum(1 << i for i in c)], len(case.dag.candidates))
    return Attribution("ranking", _ranking(case, phi))


def shapley_monte_carlo(
    case: FailedCase, oracle: Oracle, budget: int | None = None, *, permutations: int = 4, seed: int = 0
) -> Attribution:
    """Antithetic permutation Shapley of the mean replay success under a budget of seed replays (CAR §4).

    Without a ``budget`` the method pays for ``permutations`` antithetic
    permutations, 2(n + 1) evaluations of r seeds each. Only whole
    permutations enter the estimate (the budget breaker of ``rcakit.shapley``);
    a budget too small for one gives the players in their logged order.
    """
    players = case.dag.candidates
    n = len(players)
    if budget is None:
        budget = permutations * 2 * (n + 1) * oracle.r
    if budget < 2 * (n + 1) * oracle.r:
        return Attribution("ranking", tuple(players))
    value = functools.partial(_coalition_value, oracle, players)
    estimate = shapley_permutation(
        value, n, n_permutations=10**6, seed=seed, budget=budget, cost_per_evaluation=oracle.r
    )
    return Attribution("ranking", _ranking(case, estimate.values))


def _coalition_value(oracle: Oracle, players: tuple[Any, ...], coalition: frozenset[Any]) -> float:
    return oracle.value(players[i] for i in coalition)


def shapley_by_rollouts(
    case: FailedCase, oracle: Oracle, budget: int | None = None, *, permutations: int = 4, seed: int = 0
) -> Attribution:
    """rcakit's default Shapley estimator by rollouts (``rcakit.shapley.shapley_rollouts``), as a ranking.

    Antithetic pairs of walks whose coalitions share their seed replays: rollout j of the p-th row drawn
    replays every coalition of the row under seed p·k + j (common random numbers where the testbed's seeds
    are shared across sets, independent rows always, across the estimator's calls too), one rollout per
    visit, and :math:`v(N)` rolled out (the repair game does not know it); the default checks that the
    draw is coupled and otherwise uses Leverage SHAP on the same seeded replays. Without a ``budget`` it
    spends what :func:`shapley_monte_carlo` spends, so the two compare at equal cost; a budget below one
    pair (2n seed replays) gives the players in their logged order.
    """
    players = case.dag.candidates
    n = len(players)
    if budget is None:
        budget = permutations * 2 * (n + 1) * oracle.r
    if budget < 2 * n:
        return Attribution("ranking", tuple(players))

    drawn = [0]  # rows drawn so far: every row of every call gets seeds of its own

    def paired(masks: np.ndarray, k: int) -> np.ndarray:
        out = np.zeros(masks.shape, dtype=np.int64)
        for p, row in enumerate(masks, start=drawn[0]):
            for column, mask in enumerate(row):
                coalition = frozenset(players[i] for i in coalition_of(int(mask), n))
                out[p - drawn[0], column] = sum(oracle.rollout(coalition, p * k + j) for j in range(k))
        drawn[0] += len(masks)
        return out

    estimate = shapley_rollouts(n, budget, paired=paired, seed=seed)
    return Attribution("ranking", _ranking(case, estimate.values))


def contrastive(
    case: FailedCase,
    oracle: Oracle,
    budget: int | None = None,
    *,
    k_samples: int = 60,
    n_boot: int = 300,
    seed: int = 0,
) -> Attribution:
    """CAR's contrastive resampling; the answer is the point-of-commitment locus (CAR §4)."""
    if oracle.scm is None:
        raise NotApplicable(f"{case.testbed}: contrastive resampling needs a stochastic policy (an SCM)")
    found = contrastive_effects(oracle.scm, k_samples, seed, n_boot=n_boot)
    return Attribution("point", None if found.locus is None else case.players[found.locus])


BUILT_IN: dict[str, Method] = {
    "coverage": coverage,
    "rule_based": rule_based,
    "centrality": centrality,
    "propagation_aware": propagation_aware,
    "suf_regen": suf_regen,
    "singleton_replay": singleton_replay,
    "contrastive": contrastive,
    "shapley_exact": shapley_exact_ranking,
    "shapley_mc": shapley_monte_carlo,
    "shapley_rollouts": shapley_by_rollouts,
    "shapley_top2": shapley_top2,
    "gcjr": gcjr,
    "exhaustive": exhaustive,
}
FAMILY_OF = {
    "coverage": "post-hoc reader",
    "rule_based": "post-hoc reader",
    "centrality": "post-hoc reader",
    "propagation_aware": "single-intervention probe",
    "suf_regen": "single-intervention probe",
    "singleton_replay": "single-intervention probe",
    "contrastive": "contrastive resampling",
    "shapley_exact": "Shapley",
    "shapley_mc": "Shapley",
    "shapley_rollouts": "Shapley",
    "shapley_top2": "Shapley",
    "gcjr": "repair-family search",
    "exhaustive": "repair-family search",
}
METHOD_NAMES = {  # a reader's name for each built-in method, for tables and figures (a user's keeps its id)
    "coverage": "coverage",
    "rule_based": "rule-based",
    "centrality": "centrality",
    "propagation_aware": "Propagation-Aware",
    "suf_regen": "Suf-Regen",
    "singleton_replay": "singleton replay",
    "contrastive": "contrastive resampling",
    "shapley_exact": "Shapley (exact)",
    "shapley_mc": "Shapley (MC)",
    "shapley_rollouts": "Shapley (rollouts)",
    "shapley_top2": "Shapley top-2",
    "gcjr": "GCJR",
    "exhaustive": "exhaustive search",
}


def load_method(spec: str) -> Method:
    """A built-in method by name, or a user's by import path ``package.module:callable``.

    The module is imported and the callable checked: it must accept
    ``(case, oracle, budget)``. Nothing is run; every problem is one line.
    """
    from rcakit.attribution.muting import muted
    from rcakit.parallel import one_line

    spec = spec.strip()
    if spec in BUILT_IN:
        return BUILT_IN[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise RcakitError(
            f"methods: {spec!r} is neither a built-in method ({', '.join(BUILT_IN)}) "
            "nor an import path 'package.module:callable'"
        )
    try:
        with muted():  # what the module prints as it is imported is not the chapter's output
            target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise RcakitError(f"methods: cannot import {spec!r}: {one_line(err)}") from None
    except SystemExit as err:
        raise RcakitError(f"methods: importing {spec!r} called sys.exit({err.code!r})") from None
    except Exception as err:  # whatever the user's module raises as it is imported
        raise RcakitError(f"methods: importing {spec!r} failed: {one_line(err)}") from None
    if not callable(target):
        raise RcakitError(f"methods: {spec!r} is not callable")
    try:
        inspect.signature(target).bind(None, None, None)
    except TypeError:
        raise RcakitError(f"methods: {spec!r} cannot be called as method(case, oracle, budget)") from None
    except ValueError:  # a callable without a signature (a C function): nothing more to check
        pass
    # an imported callable is typed by nothing: its arity is checked above, its answer by run_method
    return cast(Method, target)


def check_methods(specs: str) -> None:
    """Preflight of a chapter's ``methods`` parameter: every name and import path as :func:`load_methods`
    reads it (imported and checked, never run); a one-line error for the first that is wrong."""
    load_methods(specs)


def is_built_in(method: Method) -> bool:
    """Whether ``method`` (or the function a ``functools.partial`` wraps) is rcakit's own code."""
    base = method.func if isinstance(method, functools.partial) else method
    return (getattr(base, "__module__", None) or "").startswith("rcakit.")


def method_specs(specs: str) -> list[str]:
    """The names and import paths of ``"builtin,name,package.module:callable,..."``, in order and each once,
    ``builtin`` standing for every built-in method."""
    given = [s.strip() for s in specs.split(",") if s.strip()]
    return list(dict.fromkeys(n for s in given for n in (BUILT_IN if s == "builtin" else [s])))


def load_methods(
    specs: str, shapley_permutations: int = 4, contrastive_samples: int = 60, seed: int = 0
) -> dict[str, Method]:
    """``"builtin,name,package.module:callable,..."`` -> ``{name: method}``.

    ``builtin`` stands for every built-in method; an import path is named by
    its callable. The Monte-Carlo Shapley permutations, the contrastive
    rollouts per step and the seed of both are set here.
    """
    names = method_specs(specs)
    if not names:
        raise RcakitError("methods: the list is empty")
    options = {
        "shapley_mc": {"permutations": shapley_permutations, "seed": seed},
        "shapley_rollouts": {"permutations": shapley_permutations, "seed": seed},
        "contrastive": {"k_samples": contrastive_samples, "seed": seed},
    }
    out = {}
    for spec in names:
        method = load_method(spec)
        if spec in options:
            method = functools.wraps(method)(functools.partial(method, **options[spec]))
        name = spec.partition(":")[2] or spec
        if name in out:
            raise RcakitError(f"methods: two methods are named {name!r}; rename one of the callables")
        out[name] = method
    return out
