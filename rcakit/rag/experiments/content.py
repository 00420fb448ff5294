"""The content arm's own sections (AgenticRAG-FP §4, §7.2-7.3): the content-corruption chapter beyond Table 3.

Each function reads an :class:`~rcakit.rag.experiments.arm.ArmRun` of the
content arm and returns a :class:`rcakit.sections.Section` whose numbers go to
``results/content-corruption.json`` and whose facts the prose quotes: the
outcome shares by depth beside Table 4, which strategy gets absorbed, the
oracle split by entity type, query contamination, the bridge-entity slice,
how the authors' span rule and the earlier one compare on the same cases, and
one corruption followed through step by step.

Used in the chapters: `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from IPython.display import Markdown

from rcakit import prose
from rcakit.claims import published
from rcakit.rag.experiments.accuracy import label_oracle
from rcakit.rag.experiments.arm import ArmRun
from rcakit.rag.interventions import SPAN_RULES, bridge_spans, candidate_spans, choose_span
from rcakit.rag.metrics import gap, interval_of
from rcakit.rag.outcomes import (
    absorption,
    bridge_slice,
    outcome_counts,
    outcome_record,
    outcome_shares,
    outcomes_by_type,
    query_contamination,
    slice_depth_share,
)
from rcakit.rag.protocol import failed, live
from rcakit.rag.text import OUTCOMES, token_recall, tokens
from rcakit.sections import Section


def outcomes_section(run: ArmRun, paper: Mapping[str, Mapping[str, float]] | None = None) -> Section:
    """Absorbed / resisted / derailed shares and n by corrupted hop, beside the paper's Table 4 (``paper``;
    ``data/claims.yaml`` by default); records the shares and counts, quotes ``<outcome>_<hop>``."""
    paper = published("content-corruption", "table4") if paper is None else paper
    shares = outcome_shares(run.cases)
    side = pd.concat({"here": shares.rename(index="hop {}".format), "paper": pd.DataFrame(paper).T}, axis=1)
    table = side.swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    numbers = {"outcomes": outcome_record(shares), "outcome_counts": outcome_counts(run.cases, "depth")}
    facts = {o: shares[o].to_dict() for o in OUTCOMES}
    return Section(table=table, numbers=numbers, facts=facts, decimals=2)


def strategy_section(run: ArmRun) -> Section:
    """Outcome counts per corruption strategy; records them and what the absorbed cases were, and quotes
    ``absorbed_n``, ``absorbed_answer_fact_n``, ``salient_entity_absorbed_k`` of ``..._n`` and
    ``salient_text`` (Markdown: that count in words, or that no salient-entity corruption was drawn) (§7.3)."""
    counts = outcome_counts(run.cases, "strategy")
    absorbed = absorption(run.cases)
    numbers = {
        "strategy_counts": counts,
        "absorbed_answer_fact_share": absorbed["absorbed_answer_fact_share"],
        "salient_entity_absorbed": absorbed["salient_entity_absorbed"],
    }
    salient = absorbed["salient_entity_absorbed"]
    said = (
        f"{salient['k']} of {salient['n']} salient-entity corruptions were absorbed"
        if salient["n"]
        else "no salient-entity corruption was drawn in this run, so its absorbed share is not measured"
    )
    return Section(table=pd.DataFrame(counts).T, numbers=numbers, facts={**absorbed, "salient_text": Markdown(said)})


def type_section(run: ArmRun) -> Section:
    """Outcome shares and n per (strategy, whether the replacement has the original's entity type): an
    oracle split, read with the world's entity types."""
    table = outcomes_by_type(run.cases).rename_axis(index=["strategy", "same type (oracle)"])
    return Section(table=table, decimals=2)


def contamination_section(run: ArmRun) -> Section:
    """Cases with a later query, and those whose later query recalls the replacement span (§7.3); quoted as
    ``contaminated_k``, ``contaminated_n`` and ``contaminated_share``."""
    contamination = query_contamination(run.cases)
    quoted = {k: contamination[k] for k in ("k", "n", "share")}  # the interval is the claim's rule, in its table
    table = pd.DataFrame(
        {"cases with a later query": [quoted["n"]], "contaminated": [quoted["k"]], "share": [quoted["share"]]}
    )
    return Section(table=table, numbers={"query_contamination": contamination}, facts={"contaminated": quoted})


def bridge_table(pooled: dict, by_depth: dict) -> pd.DataFrame:
    """Each diagnoser's exact-hop accuracy on the bridge-entity slice, pooled then per depth, and the
    slice's failed cases (``failed n``).
    """
    columns = {"pooled": pooled, **by_depth}
    frame = pd.DataFrame({k: {m: c["point"] for m, c in v.items() if m != "n"} for k, v in columns.items()})
    frame.loc["failed n"] = [v["n"] for v in columns.values()]
    return frame


def bridge_section(run: ArmRun) -> Section:
    """Each diagnoser's exact-hop accuracy on the failed bridge-entity corruptions, pooled over depths then
    per depth (§7.2), beside the share of the slice corrupted at hop 1 (which a constant hop-1 predictor
    scores); quotes ``bridge_n``, ``bridge_suf_regen``, ``bridge_propagation_aware`` and ``bridge_hop1`` (text, two
    decimals, :data:`rcakit.prose.NO_CASE` for a slice with no failed case)."""
    pooled, by_depth = bridge_slice(run.cases)
    hop1 = slice_depth_share(run.cases, "bridge_entity", 1)
    suf_regen = pooled.get("suf_regen", {}).get("point")
    numbers = {
        "bridge_slice": pooled,
        "bridge_slice_ci": interval_of(dict(pooled)),
        "bridge_slice_hop1_share": hop1,
        "bridge_slice_suf_regen_gap": gap(suf_regen, hop1),
    }
    facts: dict[str, Any] = {
        "bridge_n": pooled["n"],
        "bridge_suf_regen": prose.number(suf_regen),  # text: a slice with no failed case reads NO_CASE
        "bridge_propagation_aware": prose.number(pooled.get("propagation_aware", {}).get("point")),
        "bridge_hop1": prose.number(hop1),
    }
    return Section(table=label_oracle(bridge_table(pooled, by_depth)), numbers=numbers, facts=facts)


def span_rule_section(run: ArmRun) -> Section:
    """Both span rules (:data:`rcakit.rag.interventions.SPAN_RULES`) on every content case of the run, from
    its clean trace: how often they pick the same strategy and the same span (§4; the authors' rule is in
    their code, ``anote-ai/Research-AgenticRAG``). Quotes ``span_cases``, ``span_same_strategy`` and
    ``span_same_span``."""
    lab = run.lab
    other = next(r for r in SPAN_RULES if r != lab.span_rule)
    picks = [
        (
            choose_span(lab.agent, lab.clean[qid], int(depth), lab.span_rule),
            choose_span(lab.agent, lab.clean[qid], int(depth), other),
        )
        for qid, depth in zip(run.cases["qid"], run.cases["depth"], strict=True)
    ]

    def strategy(pick: tuple[str, str] | None) -> str:
        return pick[0] if pick else "no span"

    frame = pd.DataFrame(
        {f"{lab.span_rule} (this run)": [strategy(a) for a, _ in picks], other: [strategy(b) for _, b in picks]}
    )
    table = pd.crosstab(frame.iloc[:, 0], frame.iloc[:, 1])
    facts = {
        "span_cases": len(picks),
        "span_same_strategy": sum(strategy(a) == strategy(b) for a, b in picks),
        "span_same_span": sum(a is not None and a == b for a, b in picks),
    }
    return Section(table=table, numbers={"span_rules": {**facts, "other_rule": other}}, facts=facts)


def worked_case(cases: pd.DataFrame) -> pd.Series | None:
    """The case the chapter follows by hand: the first failed bridge-entity corruption, else the first failed
    case, else the first injected one; ``None`` when no corruption certified."""
    ran, wrong = live(cases), failed(cases)
    if not len(ran):
        return None
    bridge = wrong[wrong["strategy"] == "bridge_entity"]
    return next(pool.iloc[0] for pool in (bridge, wrong, ran) if len(pool))


def _rule_text(strategy: str, span: str, hop: int, n_candidates: int, n_bridges: int, rule: str) -> str:
    """How the span rule reached ``span`` at ``hop``, as one sentence of prose (§4)."""
    if rule != "authors":
        return f"rcakit's alternative rule (span_rule = {rule}) picked “{span}”."
    if strategy == "answer_fact":
        return f"Hop {hop}'s documents name the gold answer, so the rule stops at its first step: “{span}” is the span."
    head = f"Hop {hop}'s documents do not name the gold answer; of the {n_candidates} candidate spans in them"
    if strategy == "bridge_entity":
        verb = "is" if n_bridges == 1 else "are"
        return (
            f"{head}, {n_bridges} {verb} recalled in full by a later query and not by the question, and the most"
            f" salient of those, “{span}”, is the span."
        )
    return f"{head}, none is recalled by a later query, so the most salient of them all, “{span}”, is the span."


def _recall_parts(name: str, reference: str, answer: str) -> dict[str, int]:
    """The numerator and denominator of :func:`~rcakit.rag.text.token_recall` of ``reference`` in ``answer``:
    ``<name>_shared`` and ``<name>_tokens``."""
    ref = set(tokens(reference))
    return {f"{name}_shared": len(ref & set(tokens(answer))), f"{name}_tokens": len(ref)}


WORKED_ROWS = {  # the worked case's table: fact -> row label
    "question": "question",
    "gold": r"gold answer \(a\)",
    "depth": "corrupted hop",
    "strategy": "strategy",
    "span": r"span \(s\)",
    "replacement": r"replacement \(s'\)",
    "answer": r"answer after resumption \(\hat a\)",
    "recall_gold": r"\(R(a, \hat a)\)",
    "recall_span": r"\(R(s', \hat a)\)",
    "outcome": "outcome",
}


def worked_section(run: ArmRun) -> Section:
    """One injected case (:func:`worked_case`) followed through: the span the rule picks from the clean trace,
    its replacement, the clean and the corrupted answer, the two recalls of the outcome rule and the outcome
    (§4, §7.3). Quotes ``worked_<field>`` (``worked_rule``: Markdown) and records nothing."""
    case = worked_case(run.cases)
    if case is None:
        return Section.skip("no corruption could be certified at these parameters")
    depth, clean = int(case["depth"]), run.lab.clean[case["qid"]]
    candidates = candidate_spans(run.lab.agent, clean.hops[depth - 1].docs)
    bridges = bridge_spans(candidates, clean, depth)
    answer = case["answer"] if isinstance(case["answer"], str) else ""
    rule = _rule_text(case["strategy"], case["original"], depth, len(candidates), len(bridges), run.lab.span_rule)
    facts: dict[str, Any] = {
        "qid": case["qid"],
        "depth": depth,
        "next": depth + 1,
        "question": clean.question.text,
        "gold": clean.gold,
        "clean_answer": clean.answer,
        "candidates": len(candidates),
        "bridges": len(bridges),
        "strategy": str(case["strategy"]).replace("_", " "),
        "span": case["original"],
        "replacement": case["replacement"],
        "answer": f"“{answer}”" if answer else "empty (the agent gave no answer)",
        "recall_gold": token_recall(clean.gold, answer),
        "recall_span": token_recall(case["replacement"], answer),
        **_recall_parts("gold", clean.gold, answer),
        **_recall_parts("span", case["replacement"], answer),
        "outcome": case["outcome"],
    }
    table = pd.Series({label: facts[key] for key, label in WORKED_ROWS.items()}, name=f"case {case['qid']}")
    return Section(table=table.to_frame(), decimals=2, facts={"worked": {**facts, "rule": Markdown(rule)}})
