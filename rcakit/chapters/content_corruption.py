"""The content-corruption chapter (``notebooks/content_corruption.md``): AgenticRAG-FP's content arm (§4, §7.2-7.3).

:func:`run` runs the content arm end to end (``rcakit.chapters._rag.run_arm``)
and returns its ``ArmRun`` (``rcakit.chapters._rag``); the sections the two
RAG chapters share (the protocol table, exact-hop accuracy, the probes'
branches, the LLM methods) come from ``rcakit.chapters._rag`` and are
re-exported here.

The chapter's own sections read an ``ArmRun`` of the content arm and return a
:class:`rcakit.sections.Section` whose numbers go to
``results/content-corruption.json`` and whose facts the prose quotes: the
outcome shares by depth beside Table 4, which strategy gets absorbed, the
oracle split by entity type, query contamination, the bridge-entity slice, how
the authors' span rule and the earlier one compare on the same cases, and one
corruption followed through step by step (the case
``rcakit.rag.outcomes.worked_case`` picks).

:class:`RescoredRun` reads the authors' own released runs
(:mod:`rcakit.rag.authors_runs`), recomputes Table 3, Table 4 and the §7.3
counts from their per-case records (:mod:`rcakit.rag.rescoring`), and holds
one section per table, with every printed cell of the paper beside the
recomputed one.

:func:`outcome_bars_figure` draws the outcome shares (no title: the caption is
the chapter's; outcomes in their colours from ``rcakit.plotting``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown
from matplotlib.figure import Figure

from rcakit import data, prose
from rcakit.chapters._rag import (
    ArmRun,
    Progress,
    accuracy_section,
    branch_accuracy_section,
    branches_section,
    cost_section,
    judge_section,
    label_oracle,
    probe_budget_section,
    protocol_comparison_section,
    published_section,
    run_arm,
    setup_section,
)
from rcakit.claims import published
from rcakit.plotting import colour
from rcakit.progress import track
from rcakit.rag import rescoring as rs
from rcakit.rag.authors_runs import DATA_SET, AuthorsRun, pinned_release, read_runs
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
    worked_case,
)
from rcakit.rag.text import OUTCOMES, token_recall, tokens
from rcakit.sections import Section

__all__ = [
    "ArmRun",
    "CHAPTER",
    "PROSE_DEPTHS",
    "RescoredRun",
    "TABLE3_ROWS",
    "WORKED_ROWS",
    "accuracy_section",
    "branch_accuracy_section",
    "branches_section",
    "bridge_section",
    "bridge_table",
    "contamination_section",
    "cost_section",
    "judge_section",
    "outcome_bars_figure",
    "outcomes_section",
    "probe_budget_section",
    "protocol_comparison_section",
    "published_section",
    "run",
    "setup_section",
    "span_rule_section",
    "strategy_section",
    "type_section",
    "worked_section",
]


def run(
    params: Mapping[str, Any],
    *,
    chapter_id: str | None = None,
    progress: Progress = track,
    replay: bool | None = None,
    judge: bool = True,
) -> ArmRun:
    """The content arm run (or resumed) with the chapter's checked ``params`` (``rcakit.chapters._rag.run_arm``)."""
    return run_arm("content", params, chapter_id=chapter_id, progress=progress, replay=replay, judge=judge)


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


def bridge_table(pooled: dict[str, Any], by_depth: dict[str, Any]) -> pd.DataFrame:
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


CHAPTER = "content-corruption"
TABLE3_ROWS = ("coverage", "llm_judge", "propagation_aware", "suf_regen", "rule_based")
PROSE_DEPTHS = (1, 2, 3)  # the depths the prose quotes (the authors' hop budget)


@dataclass(frozen=True)
class RescoredRun:
    """The authors' released runs rescored (AgenticRAG-FP §7.2-7.3), one :class:`~rcakit.sections.Section` per
    part: Table 3 and Table 4 recomputed, the per-run breakdown, the §7.3 counts, the query-contamination
    readings, the pooling orders, and the simulator beside the real runs. Build it with :meth:`read`."""

    table3: Section
    table4: Section
    per_run: Section
    counts: Section
    contamination: Section
    orders: Section
    beside: Section
    bridge: Section

    def parts(self) -> tuple[Section, ...]:
        return (
            self.table3,
            self.table4,
            self.per_run,
            self.counts,
            self.contamination,
            self.orders,
            self.beside,
            self.bridge,
        )

    @classmethod
    def read(cls, value: str, run: ArmRun, *, order: str = "caption", param: str = "authors_runs") -> RescoredRun:
        """Read the runs ``value`` names (a data set name or a path), pool them in ``order`` (``caption`` or
        ``files``, :func:`rcakit.rag.rescoring.pool`) and build every part; ``run`` is this page's simulated
        arm, shown beside the real runs. The numbers are recorded under ``authors_runs`` when the folder holds
        exactly the registry's pinned files (each sha256 checked), else under ``authors_runs_other``, so a claim
        about the paper's data is never checked against other runs. Without the data every part is skipped
        with the fetch hint."""
        path = data.locate(value, param)
        if path is None:
            skipped = Section.skip(data.fetch_hint(DATA_SET, param))
            return cls(*(skipped,) * 8)
        runs = rs.pool(read_runs(path), order)
        key = "authors_runs" if pinned_release(path) else "authors_runs_other"
        frame = rs.cases_frame(runs)
        cells = rs.accuracy(runs, rs.depths(runs))
        return cls(
            table3=_table3_section(runs, cells, key),
            table4=_table4_section(runs, frame, key),
            per_run=_per_run_section(runs),
            counts=_counts_section(frame, key),
            contamination=_authors_contamination_section(frame, key),
            orders=_orders_section(runs, order, key),
            beside=_beside_section(runs, cells, frame, run),
            bridge=_authors_bridge_section(runs, key),
        )


def _authors_cell(c: dict[str, Any] | None) -> str:
    return "—" if c is None else f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def _table3_section(runs: tuple[AuthorsRun, ...], cells: dict[str, Any], key: str) -> Section:
    """Pooled exact-hop accuracy per diagnoser and depth with the authors' bootstrap, each printed cell of
    Table 3 beside it; records the cells, the failed n and how many printed interval ends come out as
    printed, and quotes the failed n (``authors_failed_n_<hop>``) and the ends (``authors_ends_...``)."""
    depths = rs.depths(runs)
    paper = published(CHAPTER, "table3")
    printed = rs.printed_cells(paper)
    failed_n = rs.counts(runs, depths, failed_only=True)
    rows = {}
    for name in [n for n in TABLE3_ROWS if n in cells]:
        for d in map(str, depths):
            rows[(name, "rescored")] = {
                **rows.get((name, "rescored"), {}),
                f"hop {d}": _authors_cell(cells[name].get(d)),
            }
            rows[(name, "paper")] = {
                **rows.get((name, "paper"), {}),
                f"hop {d}": paper.get(name, {}).get(f"hop {d}", ""),
            }
    rows[("failed n", "rescored")] = {f"hop {d}": str(failed_n[d]) for d in map(str, depths)}
    rows[("failed n", "paper")] = {f"hop {d}": paper["failed n"].get(f"hop {d}", "") for d in map(str, depths)}
    ends = rs.ends_matched(cells, printed)
    numbers = {key: {"table3": cells, "failed_n": failed_n, "ends_reproduced": ends, "ends_printed": 2 * len(printed)}}
    facts = {
        "failed_n": prose.by_depth(failed_n, PROSE_DEPTHS, _count),
        "ends_reproduced": ends,
        "ends_printed": 2 * len(printed),
    }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis(["diagnoser", ""])
    return Section(table=table.fillna(""), numbers=numbers, facts=_authors(facts))


def _table4_section(runs: tuple[AuthorsRun, ...], frame: pd.DataFrame, key: str) -> Section:
    """rcakit's outcome rule applied to every injected case: shares per depth with Wilson intervals beside
    Table 4, the n, and the cases whose outcome differs from the label the authors stored (recorded, and
    quoted as ``authors_label_differences`` of ``authors_injected_total``)."""
    shares, intervals = _shares(frame), rs.outcome_intervals(frame)
    injected = rs.counts(runs, rs.depths(runs), failed_only=False)
    paper = published(CHAPTER, "table4")
    rows = {}
    for d, by_outcome in shares.items():
        row = {o: f"{by_outcome[o]:.2f} [{intervals[d][o][0]:.2f}, {intervals[d][o][1]:.2f}]" for o in OUTCOMES}
        rows[(f"hop {d}", "rescored")] = {**row, "n": str(injected[d])}
        printed = paper.get(f"hop {d}", {})
        rows[(f"hop {d}", "paper")] = {o: f"{printed[o]:.2f}" if o in printed else "" for o in (*OUTCOMES, "n")}
        rows[(f"hop {d}", "paper")]["n"] = str(printed.get("n", ""))
    differences = rs.label_differences(frame)
    numbers = {
        key: {"table4": shares, "table4_ci": intervals, "injected_n": injected, "label_differences": differences}
    }
    facts = {
        "label_differences": differences,
        "injected_total": len(frame),
        "injected_n": prose.by_depth(injected, PROSE_DEPTHS, _count),
    }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis(["depth", ""])
    return Section(table=table, numbers=numbers, facts=_authors(facts))


def _per_run_section(runs: tuple[AuthorsRun, ...]) -> Section:
    """Per run (agent / data set, with its judge) and depth: injected and failed cases, the absorbed share
    and each diagnoser's exact-hop accuracy, so the pooled cells can be read against their parts; quotes
    the runs' hop-1 absorbed shares in pooling order (``authors_hop1_absorbed``)."""
    rows, hop1 = {}, []
    for run in runs:
        frame, cells = rs.cases_frame([run]), rs.accuracy([run], rs.depths(runs))
        shares = _shares(frame)
        hop1.append(shares.get("1", {}).get("absorbed"))
        for d in rs.depths(runs):
            row: dict[str, Any] = {
                "injected n": int((frame["depth"] == d).sum()),
                "failed n": len(run.failed(d)),
                "absorbed": shares.get(str(d), {}).get("absorbed"),
            }
            row.update({name: cells.get(name, {}).get(str(d), {}).get("point") for name in TABLE3_ROWS[:4]})
            rows[(f"{run.label} (judge {run.judge})", f"hop {d}")] = row
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis(["agent / data set", "depth"])
    facts = {"hop1_absorbed": " / ".join(prose.number(v) for v in hop1)}
    return Section(table=table, facts=_authors(facts), decimals={"absorbed": 2, **dict.fromkeys(TABLE3_ROWS, 2)})


def _counts_section(frame: pd.DataFrame, key: str) -> Section:
    """The §7.3 counts recomputed from rcakit's outcomes: absorbed cases that are answer-fact corruptions
    (the paper: 20 of 22) and absorbed salient-entity corruptions (0 of 40); recorded and quoted."""
    got = absorption(frame)
    salient = got["salient_entity_absorbed"]
    table = pd.DataFrame(
        {
            "rescored": [
                f"{got['absorbed_answer_fact_n']} of {got['absorbed_n']}",
                f"{salient['k']} of {salient['n']}",
            ],
            "paper": ["20 of 22", "0 of 40"],
        },
        index=["absorbed cases that are answer-fact corruptions", "salient-entity corruptions absorbed"],
    )
    return Section(table=table, numbers={key: {"absorbed": got}}, facts=_authors({"absorbed": got}))


def _authors_contamination_section(frame: pd.DataFrame, key: str) -> Section:
    """The stored query-contamination flags under every denominator the files allow, against the paper's
    3 of 129; records the share over every injected case and the readings, quotes each reading's counts."""
    readings = rs.contamination_readings(frame)
    found = (3, 129) in readings.values()
    flagged, cases = readings["every injected case"]
    numbers = {key: {"contamination_share": flagged / cases, "contamination_readings": readings}}
    table = pd.DataFrame(readings, index=["flagged", "cases"]).T.rename_axis("reading")
    table["share"] = table["flagged"] / table["cases"]
    agents = [name for name in readings if name.endswith(" runs")]
    facts = {
        "contamination": {
            **{name: _of(readings, label) for name, label in _READINGS.items()},
            "by_agent": " and ".join(f"{_of(readings, a)} in {a}" for a in agents),
            "found": "one of them gives" if found else "none of them gives",
        }
    }
    return Section(table=table, numbers=numbers, facts=_authors(facts), decimals={"share": 3})


BRIDGE = "bridge_entity"  # the corruption strategy of the paper's bridge-entity slice (§7.2)


def _authors_bridge_section(runs: tuple[AuthorsRun, ...], key: str) -> Section:
    """The bridge-entity slice of §7.2 from the authors' own runs: the failed bridge-entity corruptions counted
    by corrupted hop, and each diagnoser's exact-hop accuracy on them, pooled over depths (hits of n);
    recorded under ``bridge_slice`` and quoted (``authors_bridge_*``)."""
    failed = [(run, c) for run in runs for c in run.cases if c.failed and c.strategy == BRIDGE]
    by_hop = {str(d): sum(c.depth == d for _, c in failed) for d in rs.depths(runs)}
    names = [n for n in TABLE3_ROWS[:4] if all(n in r.diagnosers for r in runs)]
    hits = {name: sum(c.hit(name, run.criterion) for run, c in failed) for name in names}
    n = len(failed)
    accuracy = {name: (k / n if n else None) for name, k in hits.items()}
    rows = {name: {"hits": hits[name], "failed cases": n, "accuracy": accuracy[name]} for name in names}
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("diagnoser")
    numbers = {key: {"bridge_slice": {"n": n, "n_by_hop": by_hop, "accuracy": accuracy, "hits": hits}}}
    facts = {
        "bridge_n": n,
        "bridge_by_hop": " / ".join(str(by_hop[d]) for d in sorted(by_hop, key=int)),
        "bridge_hop1": by_hop.get("1", 0),
        **{f"bridge_{name}": f"{hits[name]} of {n}" for name in names},
    }
    return Section(table=table, numbers=numbers, facts=_authors(facts), decimals={"accuracy": 2})


def _orders_section(runs: tuple[AuthorsRun, ...], order: str, key: str) -> Section:
    """How many of the printed interval ends each order of pooling the runs reproduces (every order is
    tried); records and quotes how many orders reproduce all of them, and where this page's order and the
    file-name order stand."""
    printed = rs.printed_cells(published(CHAPTER, "table3"))
    scan = rs.order_scan(runs, printed)
    best = int((scan["ends reproduced"] == 2 * len(printed)).sum())
    files = rs.ends_matched(rs.accuracy(rs.pool(sorted(runs, key=lambda r: r.file), "files"), [1, 2]), printed)
    summary = scan["ends reproduced"].value_counts().sort_index(ascending=False).rename("orders").to_frame()
    summary.index.name = f"printed ends reproduced (of {2 * len(printed)})"
    numbers = {key: {"orders_reproducing_all": best, "orders_tried": len(scan), "files_order_ends": files}}
    facts = {
        "orders_all": best,
        "orders_tried": len(scan),
        "files_order_ends": files,
        "order": "the order of Table 3's caption" if order == "caption" else "file-name order",
    }
    return Section(table=summary, numbers=numbers, facts=_authors(facts))


def _beside_section(runs: tuple[AuthorsRun, ...], cells: dict[str, Any], frame: pd.DataFrame, run: ArmRun) -> Section:
    """The real runs beside this page's simulated world, per depth: the outcome shares (Table 4) and each
    probe's and coverage's exact-hop accuracy (Table 3); nothing recorded (both sides are recorded elsewhere)."""
    real, simulated = _shares(frame), outcome_shares(run.cases)
    rows = {}
    for o in OUTCOMES:
        for d in map(str, rs.depths(runs)):
            rows[(o, f"hop {d}")] = {"authors' runs": real.get(d, {}).get(o), "this page's world": _at(simulated, o, d)}
    for name in ("coverage", "propagation_aware", "suf_regen"):
        for d in map(str, rs.depths(runs)):
            here = run.result["accuracy"].get(name, {}).get(d)
            rows[(name, f"hop {d}")] = {
                "authors' runs": cells.get(name, {}).get(d, {}).get("point"),
                "this page's world": None if here is None else here["point"],
            }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis(["measure", "depth"])
    table["gap"] = table["this page's world"] - table["authors' runs"]
    return Section(table=table, facts=_authors({"largest_gap": _largest_gap(table)}), decimals=2)


def _largest_gap(table: pd.DataFrame) -> str:
    """The row with the largest absolute gap, as prose (``propagation_aware at hop 1 (0.20 here, 0.89 in the
    authors' runs)``), or a sentence saying no row has both sides."""
    rows = [r for r in table.reset_index().to_dict("records") if pd.notna(r["gap"])]
    if not rows:
        return "not defined (no depth has a value on both sides)"
    row = max(rows, key=lambda r: abs(r["gap"]))  # the first of equal gaps, in the table's order
    here, real = row["this page's world"], row["authors' runs"]
    return f"{row['measure']} at {row['depth']} ({here:.2f} here, {real:.2f} in the authors' runs)"


def _shares(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """``{depth: {outcome: share, n}}`` of the rescored outcomes (the simulated arm's own functions)."""
    return outcome_record(outcome_shares(frame))


def _at(shares: pd.DataFrame, outcome: str, depth: str) -> float | None:
    row = shares.to_dict("index").get(int(depth))
    return None if row is None else float(row[outcome])


_READINGS = {  # the prose's names of the readings every release has
    "all": "every injected case",
    "resisted": "the resisted cases",
    "later_query": "the cases with a later query",
    "failed": "the failed cases",
}


def _count(value: float | None) -> str:
    return prose.NO_CASE if value is None else str(int(value))


def _of(readings: dict[str, tuple[int, int]], label: str) -> str:
    flagged, cases = readings[label]
    return f"{flagged} of {cases}"


def _authors(facts: dict[str, Any]) -> dict[str, Any]:
    return {"authors": facts}


def outcome_bars_figure(cases: pd.DataFrame, paper: Mapping[str, Mapping[str, float]] | None = None) -> Figure:
    """Absorbed / resisted / derailed shares of the injected content ``cases`` by corrupted hop, stacked;
    with ``paper`` (Table 4: ``{"hop d": {outcome: share}}``) each hop shows the paper's bar beside the
    workbench's."""
    shares = outcome_shares(cases)
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    bars: list[tuple[str, Mapping[str, Any] | pd.Series]] = []
    for d, row in shares.iterrows():
        if paper and f"hop {d}" in paper:
            bars.append((f"hop {d}\npaper", paper[f"hop {d}"]))
        bars.append((f"hop {d}\nhere" if paper else f"hop {d}", row))
    frame = pd.DataFrame(
        [{o: float(values[o]) for o in OUTCOMES} for _, values in bars], index=[label for label, _ in bars]
    )
    frame.plot.bar(stacked=True, ax=ax, rot=0, width=0.7, color=[colour(o) for o in OUTCOMES])
    ax.set_xlabel("corrupted hop")
    ax.set_ylabel("share of injected cases")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
    fig.tight_layout()
    return fig
