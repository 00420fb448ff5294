"""The primer (``notebooks/primer.md``): its examples, each small enough that its answer is known in closed form.

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
- GCJR's minimal repair family on a four-event DAG with a both-needed or an either-suffices join,
  and its replay count :math:`r(1 + m + |P|)` (:func:`four_event_run`, :func:`repair_section`);
- the coverage rule of AgenticRAG-FP on a three-hop trace with a false
  premise at hop 3 (:func:`false_premise_run`, :func:`coverage_section`).

Each random section draws from its own stream of the master seed
(:func:`seed_streams`), so a section computes the same numbers whichever of the
others ran before it.

The figures (``*_figure``) draw what the sections computed: a run as a causal
graph, the minimal repair family of a small DAG, and estimates beside their
closed forms. In the graphs, nodes are text boxes, so a label always fits its
node and no node is clipped at the edge of the axes; arrows end at the boxes'
borders. The colours come from the book's palette (:mod:`rcakit.plotting`),
and the captions name them by ``rcakit.plotting.COLOUR_NAMES``: a fault is
vermilion, a sound step blue, the outcome grey, a repair set green; closed
forms and bounds are black crosses.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
import pandas as pd
from IPython.display import Markdown
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from rcakit import RcakitError, rag, repair, scm, shapley, stats
from rcakit.plotting import BLUE, GREEN, GREY, ORANGE, TEXT_WIDTH, ci_errorbar, colour
from rcakit.rag import Trace
from rcakit.rag.diagnosers import coverage, coverage_score
from rcakit.rag.text import split_tokens
from rcakit.repair import Case, format_family
from rcakit.sections import Section

FAULT_HOP = 3  # the hop at which the coverage example injects its false premise
RAG_ENTITIES = 300  # entities of the coverage example's retrieval world
FOUR_EVENT_EDGES = (("plan", "lookup"), ("plan", "check"), ("lookup", "answer"), ("check", "answer"))
FOUR_EVENT_FAULTS = ("lookup", "check")  # the two events with an injected error
# The two joins at ``answer``, named by what a repair needs: both inputs clean, or either one. The value is the
# prefix of their results keys (``and_replays``, ``or_exact``), which data/claims.yaml reads.
BOTH, EITHER = "both-needed", "either-suffices"
JOINS = {BOTH: "and", EITHER: "or"}
PLAYERS = (2, 2, 3, 3)  # players of the AND and OR games and of the AND and OR runs


class PrimerStreams(NamedTuple):
    """The primer's seed streams, drawn from its master seed by :func:`rcakit.stats.seed_streams`."""

    run: int  # the observed failing run
    fresh: int  # fresh runs, for the frequency of bad runs
    interventions: int  # do(resample) and do(force) on the refund step
    contrasts: int  # the contrastive effects


def seed_streams(seed: int) -> PrimerStreams:
    """The primer's named seed streams of the master ``seed``."""
    return stats.seed_streams(seed, PrimerStreams)


def _refund_run(p_bad: float, seed: int) -> scm.SCM:
    """The three-step refund run (CAR §2) with its observed failing run drawn from ``seed``'s first stream."""
    return scm.pivotal_scm(p_bad=p_bad, seed=seed_streams(seed).run)


def refund_run_section(p_bad: float, k_samples: int, seed: int) -> Section:
    """The refund run's observed actions, and the frequency of bad fresh runs against P(Y = 1) = p (CAR §2)."""
    pivotal = _refund_run(p_bad, seed)
    fresh = pivotal.sample_bad(np.random.default_rng(seed_streams(seed).fresh), scm.Do(), k_samples)
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
    rng = np.random.default_rng(seed_streams(seed).interventions)
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
    contrast = scm.contrastive_effects(pivotal, k_samples=k_samples, seed=seed_streams(seed).contrasts)
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
    first = seed_streams(seed).run
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
class FourEventRun:
    """The four-event DAG with a both-needed and an either-suffices join (``cases``), GCJR's results on each and
    the oracles it used."""

    cases: dict[str, repair.Case]  # keyed by JOINS: "both-needed", "either-suffices"
    found: dict[str, repair.RepairResult]  # GCJR's result per case
    oracles: dict[str, repair.ReplayOracle]  # the oracle GCJR replayed through, per case (its calls)


def four_event_run(r: int, seed: int) -> FourEventRun:
    """GCJR (GCJR §Methodology) on the four-event DAG: ``plan`` feeds ``lookup`` and ``check``, both feed ``answer``.

    Both middle events carry an injected error. At the both-needed join ``answer``
    needs both inputs clean (it is corrupted when any input is), so a repair needs
    both events; at the either-suffices join (a redundant one) one clean input
    suffices (it is corrupted only when every input is). Each case replays under
    ``r`` shared seeds.
    """
    dag = nx.DiGraph(FOUR_EVENT_EDGES)
    build = {
        "faults": list(FOUR_EVENT_FAULTS),
        "sink": "answer",
        "schedules": list(nx.all_topological_sorts(dag)),
        "seed": seed,
    }
    cases = {
        BOTH: repair.hand_built_case(dag.edges, case_id=BOTH, **build),
        EITHER: repair.hand_built_case(dag.edges, redundant=["answer"], case_id=EITHER, **build),
    }
    oracles = {join: repair.ReplayOracle(case, r=r) for join, case in cases.items()}
    found = {join: repair.gcjr(case, oracles[join]) for join, case in cases.items()}
    return FourEventRun(cases, found, oracles)


def repair_section(repairs: FourEventRun, r: int) -> Section:
    """Per join: the true family, GCJR's family, its replays and :math:`r(1 + m + |P|)` with m = 3 (GCJR §Methodology).

    The both-needed case has one admissible pair; in the either-suffices case the
    pair contains a successful singleton and is pruned, so :math:`|P| = 0`.
    """
    cases, found, oracles = repairs.cases, repairs.found, repairs.oracles
    closed = {BOTH: r * (1 + 3 + 1), EITHER: r * (1 + 3)}
    numbers = {
        f"{JOINS[join]}_{key}": value
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
class FalsePremiseRun:
    """A clean three-hop trace and the same question with a false premise injected at hop :data:`FAULT_HOP`."""

    clean: Trace
    faulty: Trace


def false_premise_run(rag_questions: int, seed: int) -> FalsePremiseRun:
    """A clean trace of a small retrieval world and its false premise at hop 3 (AgenticRAG-FP §3): the first
    eligible question whose answer the premise derails, so that the example shows a failure; the first
    eligible question when the premise derails none (the page then says the answer stayed right)."""
    lab = rag.build_lab(seed, n_entities=RAG_ENTITIES, n_questions=rag_questions)
    eligible = [t for t in lab.clean.values() if rag.eligible(t, FAULT_HOP)]
    if not eligible:
        raise RcakitError(f"primer: no question of {rag_questions} reaches hop {FAULT_HOP}; raise rag_questions")
    examples = [
        FalsePremiseRun(t, rag.inject(lab.agent, t, FAULT_HOP, "false_premise", random.Random(seed))) for t in eligible
    ]
    return next((e for e in examples if not e.faulty.correct), examples[0])


J_COLUMN = r"\(J(a, D_h)\)"  # table headers as math, typeset in the page
BOUND_COLUMN = r"bound \(|a| / |D_h|\)"


def _hop_overlaps(trace: Trace) -> pd.DataFrame:
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


def coverage_section(example: FalsePremiseRun, threshold: float) -> Section:
    """The hop the coverage rule names at ``threshold`` γ, the earliest hop below γ, and J against its bound.

    Shown with four decimals; the facts quote the question, its gold answer,
    the faulty run's answer and the named hop as Markdown.
    """
    clean, faulty = example.clean, example.faulty
    hops = _hop_overlaps(faulty)
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


# --- the figures ----------------------------------------------------------------

SOUND = BLUE  # a step or event without an injected error
FAULT = colour("fault")  # vermilion: the step or events that carry the error
OUTCOME = GREY  # the outcome, or the event where the failure shows
REPAIR = GREEN  # the outline of one minimal repair set
REFERENCE = colour("paper")  # black crosses: a closed form or a bound
BARS = (BLUE, GREEN)  # the columns of a bar chart, in order

_Position = tuple[float, float]


def _draw_graph(
    ax: Axes,
    edges: Iterable[tuple[str, str]],
    pos: Mapping[str, _Position],
    colours: Mapping[str, str],
    *,
    fontsize: float = 10,
) -> dict[str, Text]:
    """Nodes as coloured boxes at ``pos``, arrows between their borders; returns the boxes by node.

    The axes' limits are set from the positions with a margin, and the boxes
    are never clipped, so the whole graph is drawn whatever the figure size.
    """
    boxes = {
        node: ax.text(
            x,
            y,
            node,
            ha="center",
            va="center",
            color="white",
            fontsize=fontsize,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.5", "facecolor": colours[node], "edgecolor": "none"},
        )
        for node, (x, y) in pos.items()
    }
    for tail, head in edges:
        ax.annotate(
            "",
            xy=(0.5, 0.5),
            xycoords=boxes[head],
            xytext=(0.5, 0.5),
            textcoords=boxes[tail],
            arrowprops={
                "arrowstyle": "-|>",
                "color": "black",
                "lw": 1,
                "shrinkA": 2,
                "shrinkB": 2,
                "patchA": boxes[tail].get_bbox_patch(),
                "patchB": boxes[head].get_bbox_patch(),
            },
        )
    xs, ys = zip(*pos.values(), strict=True)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.set_axis_off()
    return boxes


def run_graph_figure(
    edges: Iterable[tuple[str, str]], pos: Mapping[str, _Position], faulty: Iterable[str], outcome: str = "Y"
) -> Figure:
    """A run as a structural causal model (CAR §2): ``faulty`` steps vermilion, ``outcome`` grey, the rest blue."""
    faulty = set(faulty)
    colours = {n: FAULT if n in faulty else OUTCOME if n == outcome else SOUND for n in pos}
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    _draw_graph(ax, edges, pos, colours)
    return fig


def _box_extent(box: Text) -> Bbox:
    """The display extent of a node's box (a patch's extent needs no renderer)."""
    patch = box.get_bbox_patch()
    assert patch is not None  # _draw_graph gives every node a box
    return patch.get_window_extent()


def _outline(ax: Axes, boxes: Iterable[Text]) -> None:
    """A dashed green outline around ``boxes``: one repair set. Call it once the figure is laid out and drawn."""
    extent = Bbox.union([_box_extent(box) for box in boxes])
    (x0, y0), (x1, y1) = ax.transData.inverted().transform(extent.get_points())
    pad = 0.07
    ax.add_patch(
        FancyBboxPatch(
            (x0 - pad, y0 - pad),
            x1 - x0 + 2 * pad,
            y1 - y0 + 2 * pad,
            boxstyle="round,pad=0.03",
            fill=False,
            edgecolor=REPAIR,
            lw=2,
            ls="--",
            zorder=4,
        )
    )


def repair_family_figure(
    cases: Mapping[str, Case],
    families: Mapping[str, Iterable[frozenset[Any]]],
    pos: Mapping[str, _Position],
    rules: Mapping[str, str],
) -> Figure:
    """One panel per case: its DAG with each set of its minimal repair family outlined (GCJR §Methodology).

    Faulty events are vermilion, the failure sink grey, the other events blue.
    Each set of ``families[name]`` gets its own dashed green outline, so a
    jointly necessary pair is one outline around two events and two
    alternative repairs are two outlines. ``rules[name]`` is the title's second
    line: how the sink's inputs corrupt it.
    """
    fig, axes = plt.subplots(1, len(cases), figsize=(min(3.4 * len(cases), TEXT_WIDTH), 3.2), squeeze=False)
    drawn = []
    for ax, (name, case) in zip(axes[0], cases.items(), strict=True):
        graph = case.graph
        colours = {n: FAULT if graph.nodes[n]["fault"] else OUTCOME if n == case.sink else SOUND for n in pos}
        boxes = _draw_graph(ax, sorted(graph.edges), pos, colours)
        ax.set_title(f"{name}: F = {format_family(families[name])}\n{rules[name]}", fontsize=10)
        drawn.append((ax, boxes, families[name]))
    fig.tight_layout()
    fig.canvas.draw()  # places the boxes, whose extents the outlines read
    for ax, boxes, family in drawn:
        for members in family:
            _outline(ax, [boxes[m] for m in sorted(members)])
    return fig


def _centre(patch: Patch) -> float:
    """The x of a bar's centre."""
    assert isinstance(patch, Rectangle)  # a bar chart draws rectangles
    return patch.get_x() + patch.get_width() / 2


def _bars_with_reference(
    bars: pd.DataFrame,
    reference: pd.Series,
    *,
    ylabel: str,
    reference_label: str = "closed form",
    interval: tuple[str, float, float] | None = None,
    line: tuple[float, str] | None = None,
) -> Figure:
    """One bar per row and column of ``bars`` (blue, then green), ``reference`` as black crosses.

    The crosses sit over the first column's bars. ``interval`` is ``(row, lo, hi)``,
    an error bar drawn on that row's first bar; ``line`` is ``(value, label)``, a
    dashed horizontal line (a threshold).
    """
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    bars.plot.bar(ax=ax, rot=0, color=list(BARS[: bars.shape[1]]), legend=False)
    first = {row: _centre(patch) for row, patch in zip(bars.index, ax.patches, strict=False)}
    ax.scatter(
        [first[row] for row in reference.index],
        reference,
        marker="x",
        s=80,
        color=REFERENCE,
        zorder=3,
        label=reference_label,
    )
    if interval is not None:
        row, lo, hi = interval
        value = bars.iloc[:, 0][row]
        yerr = [[max(value - lo, 0.0)], [max(hi - value, 0.0)]]  # an interval computed apart may round past the bar
        ax.errorbar([first[row]], [value], yerr=yerr, color="black", capsize=5, zorder=4)
    if line is not None:
        ax.axhline(line[0], color="black", ls="--", lw=1, label=line[1])
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig


def _effects_figure(table: pd.DataFrame, locus: int | None, closed: pd.Series) -> Figure:
    """Contrastive effects with their intervals beside the closed forms, the locus shaded orange (CAR §4).

    ``table`` and ``locus`` are those of :func:`rcakit.scm.contrastive_effects`.
    """
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    if locus is not None:
        ax.axvspan(locus - 0.4, locus + 0.4, color=ORANGE, alpha=0.2)
    effect = table["effect"]  # a percentile interval may, rarely, miss its own estimate: widen it to hold it
    lo, hi = table["effect_lo"].clip(upper=effect), table["effect_hi"].clip(lower=effect)
    ci_errorbar(
        ax,
        table["name"].tolist(),
        effect.tolist(),
        lo.tolist(),
        hi.tolist(),
        reference=closed.tolist(),
        reference_label="closed form",
        label="replayed",
    )
    ax.set_ylabel("effect on P(bad)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig


# --- the primer's figures, drawn from what its sections computed ---

REFUND_RUN_EDGES = (("lookup", "issue_refund"), ("issue_refund", "final"), ("issue_refund", "Y"), ("lookup", "final"))
REFUND_RUN_POS = {"lookup": (0, 0), "issue_refund": (1, 0.5), "final": (2, 0), "Y": (2, 1)}
FOUR_EVENT_POS = {"plan": (0, 0), "lookup": (1, 0.6), "check": (1, -0.6), "answer": (2, 0)}
JOIN_RULES = {BOTH: "answer corrupted if any input is", EITHER: "answer corrupted only if every input is"}


def refund_run_figure() -> Figure:
    """The three-step refund run (CAR §2): only the refund decision reaches the outcome."""
    return run_graph_figure(REFUND_RUN_EDGES, REFUND_RUN_POS, faulty=["issue_refund"])


def interventions_figure(section: Section) -> Figure:
    """Replayed P(bad) per intervention, with the resampled one's interval, beside the closed forms.

    ``section`` is :func:`interventions_section`'s.
    """
    table = section.table
    assert table is not None, "the interventions section has a table"
    interval = ("do(resample 1)", *section.numbers["do"]["resample_ci"])
    return _bars_with_reference(table[["replayed"]], table["closed form"], ylabel="P(bad)", interval=interval)


def commitment_figure(section: Section) -> Figure:
    """The contrastive effects of :func:`commitment_section` beside their closed forms, locus shaded."""
    table = section.table
    assert table is not None, "the commitment section has a table"
    return _effects_figure(table.reset_index(), section.numbers["contrastive"]["locus"], table["closed_form"])


def shapley_figure(section: Section) -> Figure:
    """φ0 and φ1 of the AND and OR games and runs (:func:`shapley_section`) beside the closed forms."""
    table = section.table
    assert table is not None, "the Shapley section has a table"
    return _bars_with_reference(table[["φ0", "φ1"]], table["closed_form"], ylabel="Shapley value")


def four_event_figure(repairs: FourEventRun) -> Figure:
    """The both-needed and either-suffices cases of :func:`four_event_run`, each with GCJR's family outlined."""
    joins = list(repairs.cases)
    return repair_family_figure(
        {f"{join} join": repairs.cases[join] for join in joins},
        {f"{join} join": repairs.found[join].family for join in joins},
        pos=FOUR_EVENT_POS,
        rules={f"{join} join": JOIN_RULES[join] for join in joins},
    )


def coverage_rule_figure(section: Section) -> Figure:
    """J(a, D_h) per hop (:func:`coverage_section`) as blue dots labelled with their value, the bound
    :math:`|a| / |D_h|` as black crosses and the threshold γ as a dashed line (AgenticRAG-FP §4).

    Dots, not bars: J is often exactly 0 at every hop, and a bar of height 0 would not show.
    """
    table = section.table
    assert table is not None, "the coverage section has a table"
    hops = [f"hop {h}" for h in table.index]
    x = np.arange(len(hops))
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    ax.axhline(section.facts["gamma"], color="black", ls="--", lw=1, label="threshold γ")
    ax.scatter(x, table[BOUND_COLUMN], marker="x", s=80, color=REFERENCE, zorder=3, label="bound $|a| / |D_h|$")
    ax.scatter(x, table[J_COLUMN], s=60, color=BLUE, zorder=4, label="$J(a, D_h)$")
    top = max(float(table[BOUND_COLUMN].max()), float(section.facts["gamma"]), float(table[J_COLUMN].max()))
    for xi, j in zip(x, table[J_COLUMN], strict=True):
        ax.annotate(f"J = {j:.3g}", (xi, j), xytext=(0, -16), textcoords="offset points", ha="center", color=BLUE)
    ax.set_xticks(x, hops)
    ax.set_xlim(-0.5, len(hops) - 0.5)
    ax.set_ylim(-0.25 * top, 1.15 * top)
    ax.set_ylabel("$J(a, D_h)$")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig
