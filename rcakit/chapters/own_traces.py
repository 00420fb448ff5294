"""The sections and figure of ``notebooks/own_traces.md``: the book's locators on agent traces.

By default the traces are rcakit's own: synthetic multi-agent runs with planted
root causes (:mod:`rcakit.trajectories.synthetic`) recorded through the
OpenTelemetry SDK with OpenInference attributes and written as OTLP JSON
(:mod:`rcakit.trajectories.instrumented`), then read back by the trace reader
(:mod:`rcakit.trajectories.traces`). With ``traces`` set, a user's OTLP, Phoenix
or TRAIL export is read instead. Labelled traces are scored as LongRCA scores
(§4.2, §6.3: exact step and role accuracy, strata by length and root-to-end
distance with Wilson intervals); unlabelled ones get each locator's answer and
how often the locators agree.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from rcakit.sections import Section
from rcakit.trajectories.evaluation import evaluate, overall_table, strata_long, strata_numbers
from rcakit.trajectories.instrumented import write_traces
from rcakit.trajectories.locators import offline_locators
from rcakit.trajectories.parsing import LoadResult
from rcakit.trajectories.schema import Trajectory
from rcakit.trajectories.synthetic import GeneratorConfig, generate_benchmark
from rcakit.trajectories.traces import read_traces

LOCATOR_NAMES = {
    "random": "random",
    "terminal": "last step",
    "first_error_signal": "first error signal",
    "handoff_trace": "handoff trace",
}


def _same(a: Trajectory, b: Trajectory) -> bool:
    """Equal id, source, task, steps (index, name, role, content) and label."""
    return (a.id, a.source, a.task, a.steps, a.label) == (b.id, b.source, b.task, b.steps, b.label)


def own_traces_run(seed: int, n_traces: int) -> tuple[list[Trajectory], LoadResult, int]:
    """rcakit's simulated runs, their OTLP JSON recording read back, and the recording's size in bytes."""
    written = generate_benchmark(seed, GeneratorConfig(n=n_traces))
    with tempfile.TemporaryDirectory() as folder:
        path = write_traces(written, Path(folder) / "traces.jsonl", seed)
        size = path.stat().st_size
        read = read_traces(path, announce=False)
    return written, read, size


def user_traces_run(traces: str, trace_format: str, labels: str) -> LoadResult:
    """A user's traces (a path taken from the project root when relative), with TRAIL labels if given."""
    from rcakit.paths import resolve

    return read_traces(resolve(traces), trace_format, resolve(labels) if labels else None, announce=False)


def round_trip_section(written: Sequence[Trajectory], read: LoadResult, size: int) -> Section:
    """The round trip as an identity: every trajectory written as spans reads back equal (id, steps, label)."""
    by_id = {t.id: t for t in read.trajectories}
    same = sum(_same(t, by_id[t.id]) for t in written if t.id in by_id)
    n_steps = sum(len(t) for t in written)
    first = read.trajectories[0] if read.trajectories else written[0]
    rows = [
        {"step": s.index, "agent": s.name, "role": s.role or "—", "content": _clip(s.content)} for s in first.steps[:6]
    ]
    numbers = {"round_trip": {"identical": same / len(written), "n": len(written), "errors": len(read.errors)}}
    facts = {
        "n": len(written),
        "steps": n_steps,
        "spans": 1 + 2 * n_steps,
        "identical": same,
        "kib": round(size / 1024),
        "errors": len(read.errors),
    }
    return Section(table=pd.DataFrame(rows).set_index("step"), numbers=numbers, facts=facts)


def _clip(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def accuracy_section(trajectories: Sequence[Trajectory], seed: int) -> Section:
    """The offline locators' exact-step and role accuracy on the labelled traces, with Wilson intervals."""
    labelled = [t for t in trajectories if t.label is not None]
    if not labelled:
        return Section.skip("no trace carries a label, so there is nothing to score against")
    cases = evaluate(offline_locators(seed), labelled)
    table = overall_table(cases)[["role_acc", "exact", "within5", "n"]].rename(index=LOCATOR_NAMES)
    table.columns = ["role accuracy", "exact step", "step within ±5", "traces"]
    best = table["exact step"].idxmax()
    facts = {"labelled": len(labelled), "best": best, "best_exact": f"{table['exact step'].max():.2f}"}
    return Section(table=table, numbers={"accuracy": strata_numbers(cases)}, facts=facts)


def agreement_section(trajectories: Sequence[Trajectory], seed: int) -> Section:
    """Each locator's step on every trace, and the share of traces on which each pair names the same step."""
    if not trajectories:
        return Section.skip("no trace could be read")
    locators = [loc for loc in offline_locators(seed) if loc.name != "random"]
    steps = {LOCATOR_NAMES[loc.name]: [loc.locate(t).step for t in trajectories] for loc in locators}
    names = list(steps)
    table = pd.DataFrame(index=names, columns=names, dtype=float)
    for a, b in itertools.product(names, names):
        table.loc[a, b] = sum(x == y for x, y in zip(steps[a], steps[b], strict=True)) / len(trajectories)
    unanimous = sum(len({steps[n][i] for n in names}) == 1 for i in range(len(trajectories)))
    facts = {"traces": len(trajectories), "unanimous": unanimous, "disputed": len(trajectories) - unanimous}
    numbers = {"agreement": {"unanimous": unanimous / len(trajectories), "n": len(trajectories)}}
    return Section(table=table.rename_axis(index="locator", columns="agrees with"), numbers=numbers, facts=facts)


def strata_figure(trajectories: Sequence[Trajectory], seed: int) -> Any:
    """Exact-step accuracy by root-to-end distance bin, with 95% Wilson intervals (LongRCA §6.3, Figure 6)."""
    labelled = [t for t in trajectories if t.label is not None]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    if labelled:
        long = strata_long(evaluate(offline_locators(seed), labelled), "distance").dropna(subset=["acc"])
        for i, (name, group) in enumerate(long.groupby("method", sort=False)):
            x = [list(long["bin"].cat.categories).index(b) + 0.18 * (i - 1.5) for b in group["bin"]]
            err = [(group["acc"] - group["lo"]).clip(lower=0), (group["hi"] - group["acc"]).clip(lower=0)]
            ax.errorbar(x, group["acc"], yerr=err, fmt="o", capsize=3, label=LOCATOR_NAMES[str(name)])
        ax.set_xticks(range(len(long["bin"].cat.categories)), list(long["bin"].cat.categories))
        ax.legend(fontsize=8, ncols=2)
    ax.set_xlabel("recorded steps after the root cause")
    ax.set_ylabel("exact-step accuracy")
    ax.set_ylim(-0.05, 1.05)
    return fig
