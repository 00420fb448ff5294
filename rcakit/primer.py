"""The primer's examples, each small enough that its answer is known in closed form.

One function per section of the primer, each returning a
:class:`rcakit.sections.Section`: the table the page shows, the numbers the
correctness checks read (``data/claims.yaml``, chapter ``primer``) and the
facts the prose quotes.

- the three-step refund run of CAR §2 as a structural causal model
  (:func:`refund_run_section`);
- do(resample) against do(force) on its refund step (:func:`interventions_section`);
- the contrastive effects and the point-of-commitment locus of CAR §4
  (:func:`commitment_section`);
- exact Shapley values of the AND and OR games and runs of CAR §5
  (:func:`shapley_section`);
- GCJR's minimal repair family on a four-event DAG with an AND or an OR join,
  and its replay count :math:`r(1 + m + |P|)` (:func:`four_event_repairs`, :func:`repair_section`);
- the coverage rule of AgenticRAG-FP on a three-hop trace with a false
  premise at hop 3 (:func:`false_premise_trace`, :func:`coverage_section`).

Each random section draws from its own stream of the master seed
(:func:`streams`), so a section computes the same numbers whichever of the
others ran before it.

Used in the chapters: `primer`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pandas as pd
from IPython.display import Markdown

from rcakit import RcakitError, rag, repair, scm, shapley, stats
from rcakit.rag import Trace
from rcakit.rag.diagnosers import coverage, coverage_score
from rcakit.rag.text import split_tokens
from rcakit.sections import Section

FAULT_HOP = 3  # the hop at which the coverage example injects its false premise
RAG_ENTITIES = 300  # entities of the coverage example's retrieval world
FOUR_EVENT_EDGES = (("plan", "lookup"), ("plan", "check"), ("lookup", "answer"), ("check", "answer"))
FOUR_EVENT_FAULTS = ("lookup", "check")  # the two events with an injected error
PLAYERS = (2, 2, 3, 3)  # players of the AND and OR games and of the AND and OR runs


def streams(seed: int) -> np.ndarray:
    """Four independent seeds drawn from the master ``seed``: the run, fresh runs, interventions, contrasts."""
    return np.random.default_rng(seed).integers(0, 2**31, size=4)


def _refund_run(p_bad: float, seed: int) -> scm.SCM:
    """The three-step refund run (CAR §2) with its observed failing run drawn from ``seed``'s first stream."""
    return scm.pivotal_scm(p_bad=p_bad, seed=int(streams(seed)[0]))


def refund_run_section(p_bad: float, k_samples: int, seed: int) -> Section:
    """The refund run's observed actions, and the frequency of bad fresh runs against P(Y = 1) = p (CAR §2)."""
    pivotal = _refund_run(p_bad, seed)
    fresh = pivotal.sample_bad(np.random.default_rng(streams(seed)[1]), scm.Do(), k_samples)
    actions = pd.Series(
        [rec.action for rec in pivotal.observed], index=[s.name for s in pivotal.steps], name="observed action"
    )
    return Section(table=actions.to_frame(), facts={"fresh_p": float(fresh.mean()), "p_bad": p_bad})


def interventions_section(p_bad: float, k_samples: int, seed: int) -> Section:
    """P(bad) after resampling the refund step and after forcing each of its actions, beside p, 0 and 1 (CAR §3).

    The table's ``replayed`` column holds the replayed frequencies, its
    ``closed form`` column the closed forms; the numbers hold the resampled
    frequency's Wilson 95% interval as ``do.resample_ci``.
    """
    interventions = {
        "do(resample 1)": scm.do_resample(1),
        "do(A1 = no_refund)": scm.do_force_action(1, "no_refund"),
        "do(A1 = refund)": scm.do_force_action(1, "refund"),
    }
    pivotal = _refund_run(p_bad, seed)
    rng = np.random.default_rng(streams(seed)[2])
    rates = {name: float(pivotal.sample_bad(rng, do, k_samples).mean()) for name, do in interventions.items()}
    p_do = pd.Series(rates)
    ci = stats.wilson_ci(int(round(rates["do(resample 1)"] * k_samples)), k_samples)
    do = dict(zip(["resample", "force_no_refund", "force_refund"], p_do, strict=True), resample_ci=ci)
    table = pd.DataFrame({"replayed": p_do, "closed form": pd.Series([p_bad, 0.0, 1.0], index=p_do.index)})
    return Section(table=table, numbers={"do": do}, facts={"do": do})


def commitment_section(p_bad: float, k_samples: int, seed: int) -> Section:
    """Contrastive effects Δ_k of the refund run beside p - 1, p - 1, 0, and the point-of-commitment locus (CAR §4).

    The table is indexed by step name (effect, its interval, the closed form);
    ``locus_text`` names the locus for the prose ("no step" when no interval
    lies below zero).
    """
    pivotal = _refund_run(p_bad, seed)
    contrast = scm.contrastive_effects(pivotal, k_samples=k_samples, seed=int(streams(seed)[3]))
    closed = np.array([p_bad - 1, p_bad - 1, 0.0])
    numbers = {
        "locus": contrast.locus,
        "effects": contrast.table["effect"],
        "closed_effect_1": p_bad - 1,
        "effect_ci_1": [float(contrast.table[column].to_numpy()[1]) for column in ("effect_lo", "effect_hi")],
    }
    locus = contrast.locus
    locus_text = "no step" if locus is None else f"step {locus}, `{pivotal.steps[locus].name}`"
    table = contrast.table.set_index("name").filter(like="effect").assign(closed_form=closed)
    facts = {"locus_text": Markdown(locus_text), "effect": contrast.table["effect"].to_dict()}
    return Section(table=table, numbers={"contrastive": numbers}, facts=facts)


def shapley_section(q: float, seed: int) -> Section:
    """Exact Shapley values of the AND and OR games and runs beside their closed forms (CAR §5).

    Rows are the four games, columns φ0, φ1, φ2 and ``closed_form`` (the value
    of either risky player); shown with four decimals.
    """
    first = int(streams(seed)[0])
    games = pd.Series(
        {
            "AND game": lambda s: float(s == {0, 1}),
            "OR game": lambda s: float(bool(s)),
            "AND run": scm.interaction_scm(q=q, seed=first).analytic_v,
            "OR run": scm.or_failure_scm(q=q, seed=first).analytic_v,
        }
    )
    players = pd.Series(PLAYERS, index=games.index)
    phi = games.combine(players, shapley.shapley_exact).apply(pd.Series).set_axis(["φ0", "φ1", "φ2"], axis=1)
    closed = pd.Series([0.5, 0.5, (1 - q**2) / 2, (1 - q) ** 2 / 2], index=games.index)
    numbers = {
        **{game.lower().replace(" ", "_"): value for game, value in phi["φ0"].items()},
        "and_run_efficiency": phi.loc["AND run"].sum(),
        "and_run_total": 1 - q**2,
        "and_run_closed": closed["AND run"],
        "or_run_closed": closed["OR run"],
    }
    table = phi.assign(closed_form=closed)
    return Section(table=table, numbers={"shapley": numbers}, facts={**numbers, "q": q}, decimals=4)


@dataclass(frozen=True)
class FourEventRepairs:
    """The four-event DAG with an AND and an OR join (``cases``), GCJR's results on each and the oracles it used."""

    cases: dict[str, repair.Case]  # "AND", "OR"
    found: dict[str, repair.RepairResult]  # GCJR's result per case
    oracles: dict[str, repair.ReplayOracle]  # the oracle GCJR replayed through, per case (its calls)


def four_event_repairs(r: int, seed: int) -> FourEventRepairs:
    """GCJR (GCJR §Methodology) on the four-event DAG: ``plan`` feeds ``lookup`` and ``check``, both feed ``answer``.

    Both middle events carry an injected error; the AND case corrupts
    ``answer`` when any input is, the OR case (a redundant join) only when
    every input is. Each case replays under ``r`` shared seeds.
    """
    dag = nx.DiGraph(FOUR_EVENT_EDGES)
    build = {
        "faults": list(FOUR_EVENT_FAULTS),
        "sink": "answer",
        "schedules": list(nx.all_topological_sorts(dag)),
        "seed": seed,
    }
    cases = {
        "AND": repair.hand_built_case(dag.edges, case_id="AND", **build),
        "OR": repair.hand_built_case(dag.edges, redundant=["answer"], case_id="OR", **build),
    }
    oracles = {join: repair.ReplayOracle(case, r=r) for join, case in cases.items()}
    found = {join: repair.gcjr(case, oracles[join]) for join, case in cases.items()}
    return FourEventRepairs(cases, found, oracles)


def repair_section(repairs: FourEventRepairs, r: int) -> Section:
    """Per join: the true family, GCJR's family, its replays and :math:`r(1 + m + |P|)` with m = 3 (GCJR §Methodology).

    The AND case has one admissible pair; in the OR case the pair contains a
    successful singleton and is pruned, so :math:`|P| = 0`.
    """
    cases, found, oracles = repairs.cases, repairs.found, repairs.oracles
    closed = {"AND": r * (1 + 3 + 1), "OR": r * (1 + 3)}
    numbers = {
        f"{join.lower()}_{key}": value
        for join in cases
        for key, value in [
            ("exact", int(found[join].family == cases[join].family)),
            ("replays", oracles[join].calls),
            ("replays_closed", closed[join]),
        ]
    }
    table = pd.DataFrame(
        {
            "F (noiseless replay)": {join: repair.format_family(case.family) for join, case in cases.items()},
            "GCJR family": {join: repair.format_family(result.family) for join, result in found.items()},
            "GCJR replays": {join: oracle.calls for join, oracle in oracles.items()},
            "r(1 + m + |P|)": closed,
        }
    )
    return Section(table=table, numbers={"repair": numbers}, facts={**numbers, "r_value": r})


@dataclass(frozen=True)
class FalsePremiseTrace:
    """A clean three-hop trace and the same question with a false premise injected at hop :data:`FAULT_HOP`."""

    clean: Trace
    faulty: Trace


def false_premise_trace(rag_questions: int, seed: int) -> FalsePremiseTrace:
    """A clean trace of a small retrieval world and its false premise at hop 3 (AgenticRAG-FP §3): the first
    eligible question whose answer the premise derails, so that the example shows a failure; the first
    eligible question when the premise derails none (the page then says the answer stayed right)."""
    lab = rag.build_lab(seed, n_entities=RAG_ENTITIES, n_questions=rag_questions)
    eligible = [t for t in lab.clean.values() if rag.eligible(t, FAULT_HOP)]
    if not eligible:
        raise RcakitError(f"primer: no question of {rag_questions} reaches hop {FAULT_HOP}; raise rag_questions")
    examples = [
        FalsePremiseTrace(t, rag.inject(lab.agent, t, FAULT_HOP, "false_premise", random.Random(seed)))
        for t in eligible
    ]
    return next((e for e in examples if not e.faulty.correct), examples[0])


J_COLUMN = r"\(J(a, D_h)\)"  # table headers as math, typeset in the page
BOUND_COLUMN = r"bound \(|a| / |D_h|\)"


def hop_overlaps(trace: Trace) -> pd.DataFrame:
    """Per hop: the bridge entity read, :math:`J(a, D_h)` and the bound :math:`|a| / |D_h|`.

    AgenticRAG-FP §4 (the coverage diagnoser's overlap).
    """
    texts = {h.index: " ".join(f"{d.title}: {d.text}" for d in h.docs) for h in trace.hops}
    answer_size = len(set(split_tokens(trace.gold)))
    return pd.DataFrame(
        {
            "bridge entity read": [h.entity for h in trace.hops],
            J_COLUMN: [coverage_score(trace.gold, h.docs) for h in trace.hops],
            BOUND_COLUMN: [answer_size / max(len(set(split_tokens(doc))), 1) for doc in texts.values()],
        },
        index=pd.Index(list(texts), name="hop"),
    )


def coverage_section(example: FalsePremiseTrace, threshold: float) -> Section:
    """The hop the coverage rule names at ``threshold`` γ, the earliest hop below γ, and J against its bound.

    Shown with four decimals; the facts quote the question, its gold answer,
    the faulty run's answer and the named hop as Markdown.
    """
    clean, faulty = example.clean, example.faulty
    hops = hop_overlaps(faulty)
    named = coverage(faulty, threshold=threshold).hop
    below = hops.index[hops[J_COLUMN] < threshold]
    numbers = {
        "coverage_hop": named,
        "earliest_below": below.min() if len(below) else 0,
        "fault_hop": FAULT_HOP,
        "bound_slack": (hops[J_COLUMN] - hops[BOUND_COLUMN]).max(),
    }
    facts = {
        "question": Markdown(clean.question.text),
        "gold": Markdown(clean.gold),
        "gamma": threshold,
        "named_text": Markdown(f"hop {named}" if named else "no hop"),
        "faulty_answer": Markdown(faulty.answer or "nothing"),
        "outcome_text": Markdown(
            f"the agent still answers {faulty.answer}: the premise derailed no question of this world"
            if faulty.correct
            else (f"the agent answers {faulty.answer} instead" if faulty.answer else "the agent gives no answer")
        ),
    }
    return Section(table=hops, numbers={"rag": numbers}, facts=facts, decimals=4)
