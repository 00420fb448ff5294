"""The content-corruption chapter's section on the authors' own runs (AgenticRAG-FP §7.2-7.3), rescored.

:func:`authors_runs` reads the runs a data set name or a path names
(:mod:`rcakit.rag.authors_runs`), recomputes Table 3, Table 4 and the §7.3
counts from their per-case records (:mod:`rcakit.rag.rescoring`), and returns
one :class:`rcakit.sections.Section` per table, with every printed cell of the
paper beside the recomputed one. The numbers are recorded under
``authors_runs`` when the folder holds exactly the registry's pinned files
(each sha256 checked), else under ``authors_runs_other``, so a claim about the
paper's data is never checked against other runs. Without the data every part
is skipped with the fetch hint.

Used in the chapters: `content-corruption`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from rcakit import data, prose
from rcakit.claims import published
from rcakit.rag import rescoring as rs
from rcakit.rag.authors_runs import DATA_SET, AuthorsRun, pinned_release, read_runs
from rcakit.rag.experiments.arm import ArmRun
from rcakit.rag.outcomes import absorption, outcome_record, outcome_shares
from rcakit.rag.text import OUTCOMES
from rcakit.sections import Section

CHAPTER = "content-corruption"
TABLE3_ROWS = ("coverage", "llm_judge", "propagation_aware", "suf_regen", "rule_based")
PROSE_DEPTHS = (1, 2, 3)  # the depths the prose quotes (the authors' hop budget)


@dataclass(frozen=True)
class AuthorsRuns:
    """The section's parts: Table 3 and Table 4 recomputed, the per-run breakdown, the §7.3 counts, the
    query-contamination readings, the pooling orders, and the simulator beside the real runs."""

    table3: Section
    table4: Section
    per_run: Section
    counts: Section
    contamination: Section
    orders: Section
    beside: Section

    def parts(self) -> tuple[Section, ...]:
        return (self.table3, self.table4, self.per_run, self.counts, self.contamination, self.orders, self.beside)


def authors_runs(value: str, run: ArmRun, *, order: str = "caption", param: str = "authors_runs") -> AuthorsRuns:
    """Read the runs ``value`` names (a data set name or a path), pool them in ``order`` (``caption`` or
    ``files``, :func:`rcakit.rag.rescoring.pool`) and build every part; ``run`` is this page's simulated arm,
    shown beside the real runs."""
    path = data.locate(value, param)
    if path is None:
        skipped = Section.skip(data.fetch_hint(DATA_SET, param))
        return AuthorsRuns(*(skipped,) * 7)
    runs = rs.pool(read_runs(path), order)
    key = "authors_runs" if pinned_release(path) else "authors_runs_other"
    frame = rs.cases_frame(runs)
    cells = rs.accuracy(runs, rs.depths(runs))
    return AuthorsRuns(
        table3=table3_section(runs, cells, key),
        table4=table4_section(runs, frame, key),
        per_run=per_run_section(runs),
        counts=counts_section(frame, key),
        contamination=contamination_section(frame, key),
        orders=orders_section(runs, order, key),
        beside=beside_section(runs, cells, frame, run),
    )


def _cell(c: dict | None) -> str:
    return "—" if c is None else f"{c['point']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def table3_section(runs: tuple[AuthorsRun, ...], cells: dict, key: str) -> Section:
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
            rows[(name, "rescored")] = {**rows.get((name, "rescored"), {}), f"hop {d}": _cell(cells[name].get(d))}
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


def table4_section(runs: tuple[AuthorsRun, ...], frame: pd.DataFrame, key: str) -> Section:
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


def per_run_section(runs: tuple[AuthorsRun, ...]) -> Section:
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


def counts_section(frame: pd.DataFrame, key: str) -> Section:
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


def contamination_section(frame: pd.DataFrame, key: str) -> Section:
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


def orders_section(runs: tuple[AuthorsRun, ...], order: str, key: str) -> Section:
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


def beside_section(runs: tuple[AuthorsRun, ...], cells: dict, frame: pd.DataFrame, run: ArmRun) -> Section:
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


__all__ = [
    "AuthorsRuns",
    "authors_runs",
]
