"""Tests of the gcjr-ablations chapter module: its sections, what they record, its tables and figures."""

from __future__ import annotations

import matplotlib
import networkx as nx
import numpy as np
import pytest
from matplotlib.figure import Figure

from rcakit import claims, prose
from rcakit.chapters import gcjr_ablations as chapter
from rcakit.repair import (
    ABLATIONS,
    KIND_LABELS,
    KINDS,
    Case,
    controlled_dag_benchmark,
    cost,
    counted_run,
    evaluate_method,
    exhaustive,
    gcjr,
    hand_built_case,
    random_topological_order,
    replay_reduction,
    scoped,
    shapley_top2,
    summarise,
    sweeps,
)
from rcakit.repair.pilot import pilot_beside_paper, run_pilot

R = 3  # the pilot's shared seeds


def diamond_single() -> Case:
    """A0 -> {B0, C0} -> D0 -> out with one error in B0, as ``tests/unit/repair/test_repair.py`` builds it."""
    g = nx.DiGraph()
    for v in ("A0", "B0", "C0", "D0", "out"):
        g.add_node(v, agent=v[0], intervenable=v != "out", fault=v == "B0", gate="any")
    g.add_edges_from([("A0", "B0"), ("A0", "C0"), ("B0", "D0"), ("C0", "D0"), ("D0", "out")])
    rng = np.random.default_rng(1)
    schedules = tuple(random_topological_order(g, rng) for _ in range(3))
    return Case("hand-single", "single", g, "out", frozenset({frozenset({"B0"})}), schedules, 11)


@pytest.fixture(scope="module")
def bench():
    return controlled_dag_benchmark(cases_per_type=6, seed=3)


def test_candidate_sets_section_quotes_the_worked_example():
    cases = controlled_dag_benchmark(cases_per_type=1, seed=0)
    example = cases[1]
    section = chapter.candidate_sets_section(example, r=3, theta="2/3")
    told = section.facts["example"]
    m, p = cost.gcjr_cost_terms(example)
    assert (told["m"], told["p"], told["admissible"], told["successful_singletons"]) == (m, p, p, 0)
    assert told["gcjr_calls"] == counted_run(example, gcjr, r=3)[1] == 3 * told["gcjr_sets"]
    assert told["exhaustive_calls"] == counted_run(example, exhaustive, r=3)[1]
    assert told["slice_pairs"] == told["same_agent"] + told["comparable"] + p and told["family"] == "{B0, C0}"
    assert "events" not in section.table.columns and len(section.table) == len(example.candidates) + p
    assert told["slice_reading"].data.startswith("Bx0 and Dx1 (drawn as “B log” and “D log”) are log lines")
    assert chapter._slice_reading(diamond_single()).startswith("Every one of them has a path to the sink")
    edges = [("A0", "B0"), ("A0", "C0"), ("B0", "D0"), ("C0", "D0"), ("D0", "out"), ("B0", "Bx0")]
    one = chapter._slice_reading(hand_built_case(edges, faults=["B0"]))
    assert one.startswith("Bx0 (drawn as “Bx log”) is a log line") and one.endswith("leaves it out.")


def test_the_closed_forms_hold_at_q_1_and_q_3(bench):
    """The q-dependent identities take the values ``closed_forms`` gives at q = 1 and q = 3, not those of q = 2."""
    for q in (1, 3):
        frames = sweeps.ablation_runs(bench, None, q=q)
        numbers = chapter._ablation_numbers(frames)
        shapley = summarise(scoped(evaluate_method(bench, shapley_top2, q=q, schedules=(0,))))
        closed = chapter._closed_forms(q)
        assert numbers["singleton_only"]["fem_joint_and"] == closed["singleton_only_fem_joint_and"], q
        assert numbers["no_minimality"]["fem_alt_or"] == closed["no_minimality_fem_alt_or"], q
        assert numbers["no_minimality"]["mv_alt_or"] == closed["no_minimality_mv_alt_or"], q
        assert shapley["macro_fem"] == pytest.approx(closed["shapley_top2_macro_fem"]), q
        assert shapley["mv"] == pytest.approx(closed["shapley_top2_mv"]), q
    assert chapter._closed_forms(1) != chapter._closed_forms(2) == chapter._closed_forms(3)


def test_ablation_tables_show_the_three_breaks(bench):
    frames = sweeps.ablation_runs(bench, sweeps.hidden_edge_sweep(bench, [0.1], draws=1, seed=0))
    table = chapter._ablation_table(frames)
    assert list(table.index) == [*ABLATIONS, "hidden_edges_10"]
    assert (table.loc["gcjr", ["fem_single", "fem_joint_and", "fem_alt_or"]] == 1.0).all()
    assert table.loc["singleton_only", "fem_joint_and"] == 0.0 and table.loc["singleton_only", "fem_alt_or"] == 1.0
    assert table.loc["no_minimality", "fem_alt_or"] == 0.0
    numbers = chapter._ablation_numbers(frames)
    assert "gcjr" not in numbers and numbers["no_minimality"]["mv_alt_or"] == 1.0
    assert numbers["singleton_only"]["fem_joint_and"] == 0.0
    assert numbers["no_pruning"]["mean_replays"] > summarise(scoped(frames["gcjr"]))["mean_replays"]
    beside = chapter._ablation_beside_paper(numbers, claims.published("gcjr-ablations", "ablation"))
    assert beside.loc["no minimality: MV (in scope)", "paper"] == 0.783
    assert beside.loc["singleton-only: Joint-AND FEM", "workbench"] == 0.0


def test_main_table_and_per_type_numbers(bench):
    runs = sweeps.gcjr_and_exhaustive(bench)
    table = chapter._main_table(runs, claims.published("gcjr-ablations", "main"))
    assert list(table.index) == ["GCJR", "exhaustive", "GCJR (paper)", "exhaustive (paper)"]
    ours = summarise(scoped(runs["GCJR"]))["mean_replays"] / summarise(scoped(runs["exhaustive"]))["mean_replays"]
    assert table.loc["GCJR", "reduction"] == pytest.approx(1 - ours) and table.loc["GCJR (paper)", "reduction"] == 0.551
    numbers = chapter._main_numbers(runs)
    assert numbers["n_cases"] == len(bench) and numbers["n_in_scope"] == 3 * 6
    per_type = chapter._per_kind_numbers(chapter._per_kind_comparison(runs))
    control = per_type["sequential_joint"]
    assert control["gcjr_fem"] == 0.0 and control["exhaustive_fem"] == 1.0
    assert control["gcjr_empty"] == 6 and isinstance(control["gcjr_empty"], int)
    assert per_type["joint_and"]["gcjr_mean_replays"] < per_type["joint_and"]["exhaustive_mean_replays"]
    assert [c.case_id for c in sweeps.scoped_cases(bench, runs["GCJR"])] == [
        c.case_id for c in bench if c.kind != "sequential_joint"
    ]


def test_sweep_summaries_keep_their_order_and_say_when_noise_is_missing(bench):
    scoped_bench = [c for c in bench if c.kind != "sequential_joint"]
    summary = chapter._noise_summary(
        sweeps.noise_sweep(scoped_bench, noise_levels=[0.0, 0.2], r_values=[3], theta_values=["2/3"])
    )
    sc = chapter._sc_under_noise(summary, 3, "2/3")
    assert sc["noise"] == sc["largest_noise"] == 0.2 and sc["gcjr"] < 1.0
    assert chapter._sc_under_noise(summary, 5, "2/3") is None  # r = 5 is not in the sweep
    rows = chapter._noise_records(summary)
    assert [row["noise"] for row in rows["stochastic"]] == [0.0, 0.2]
    assert "sc" not in rows["stochastic_exhaustive"][0] and "method" not in rows["stochastic"][0]
    by_draw, curve = chapter._hidden_edge_curve(sweeps.hidden_edge_sweep(bench, [0.3, 0.0], draws=2, seed=0))
    assert list(by_draw["draw"].unique()) == [0, 1]
    curve_rows = chapter._hidden_curve_records(curve)
    assert [row["fraction"] for row in curve_rows] == [0.0, 0.1, 0.3] and curve_rows[0]["fem"] == 1.0


def _glued(section) -> dict:
    from rcakit import prose

    return prose.flatten(section.facts)


def test_main_and_per_type_sections_record_and_quote_the_same_numbers(bench):
    runs = sweeps.gcjr_and_exhaustive(bench)
    paper = claims.published("gcjr-ablations", "main")
    main = chapter.main_section(runs, paper)
    assert set(main.numbers) == {"n_cases", "n_in_scope", "gcjr", "exhaustive", "replay_reduction"}
    assert main.numbers["replay_reduction"] == replay_reduction(runs)
    assert main.facts["reduction"] == 100 * main.numbers["replay_reduction"] and main.facts["n_in_scope"] == 18
    assert main.facts["paper_reduction"] == pytest.approx(55.1) and main.facts["paper_gcjr_replays"] == 25.3
    assert list(main.table.columns)[:2] == ["FEM", "macro FEM"] and main.table.columns[-1] == "replay reduction"
    per_type = chapter.per_type_section(runs)
    assert per_type.numbers["per_type"]["sequential_joint"]["gcjr_empty"] == 6
    assert list(per_type.table.index) == [KIND_LABELS[k] for k in KINDS] and "GCJR ∅" in per_type.table.columns
    assert "mean replays" in main.table.columns and "GCJR mean replays" in per_type.table.columns  # means, said so
    control = chapter.control_section(runs, n=2).table
    assert list(control.index) == [0, 1] and control["case_id"].str.contains("sequential").all()
    assert list(control.columns) == ["case_id", "true family", "GCJR family", "replays"]


def test_benchmark_section_quotes_the_edge_range_and_schedules(bench):
    section = chapter.benchmark_section(bench)
    edges = [np.mean([c.graph.number_of_edges() for c in bench if c.kind == k]) for k in KINDS]
    assert section.facts["edges_lo"] == pytest.approx(min(edges)) and section.facts["edges_hi"] == pytest.approx(
        max(edges)
    )
    assert section.facts["distinct_schedules"] == len(bench) and not section.numbers
    assert list(section.table.index) == [KIND_LABELS[k] for k in KINDS] and section.decimals == 2


def test_ablation_and_baseline_sections(bench):
    sweep = sweeps.hidden_edge_sweep(bench, [0.0], draws=1, seed=0)
    assert sorted(sweep["fraction"].unique()) == [0.0, 0.1]  # the paper's 10% always runs
    frames = sweeps.ablation_runs(bench, sweep)
    ablation = chapter.ablation_section(frames)
    no_min = ablation.numbers["ablation"]["no_minimality"]
    assert ablation.facts == {"mv_alt_or": 1.0, "mv_single": no_min["mv_single"], "mv_in_scope": no_min["mv"]}
    assert "gcjr" not in ablation.numbers["ablation"] and "FEM Joint-AND" in ablation.table.columns
    published = claims.published("gcjr-ablations", "ablation")
    beside = chapter.ablation_paper_section(frames, published)
    assert beside.facts == {"paper_mv": 0.783, "paper_hidden": published["hidden_edges_10_fem"]} and not beside.numbers
    assert beside.table.loc["no minimality: MV (in scope)", "workbench"] == no_min["mv"]
    g = frames["gcjr"]
    baseline_frames = sweeps.baseline_runs(bench, g, seed=0)
    baselines = chapter.baseline_section(baseline_frames, g)
    assert set(baselines.numbers["baselines"]) == set(baseline_frames)  # GCJR is shown, not recorded
    assert "GCJR" in baselines.table.index and list(baselines.table.columns) == list(chapter.METRIC_LABELS.values())
    assert baselines.facts["random_fem"] == baselines.numbers["baselines"]["random_pairs"]["fem"]
    shapley = chapter.shapley_section(baseline_frames, claims.published("gcjr-ablations", "shapley_top2"))
    recorded = baselines.numbers["baselines"]["shapley_top2"]
    assert (
        shapley.facts["shap_rs1"] == recorded["rs1"] and shapley.facts["shap_success1"] == recorded["repair_success1"]
    )
    assert shapley.facts["paper_shap_macro_fem"] == pytest.approx(1 / 3, abs=1e-3)


def test_hidden_edge_section_quotes_the_papers_fraction(bench):
    sweep = sweeps.hidden_edge_sweep(bench, [0.3], draws=2, seed=0)
    section = chapter.hidden_edge_section(sweep)
    curve = {row["fraction"]: row for row in section.numbers["hidden_curve"]}
    assert list(curve) == [0.1, 0.3] and section.facts["hidden_fem_10"] == curve[0.1]["fem"]
    per_draw = chapter._hidden_edge_draws(sweep)
    assert curve[0.3]["fem"] == pytest.approx(per_draw[per_draw["fraction"] == 0.3]["fem"].mean())


def test_noise_sections_record_sc_only_where_measured_and_say_why_not(bench):
    scoped_bench = [c for c in bench if c.kind != "sequential_joint"]
    sweep = sweeps.noise_sweep(scoped_bench, noise_levels=[0.0, 0.1, 0.2], r_values=[3], theta_values=["2/3"])
    summary = chapter._noise_summary(sweep)
    noise = chapter.noise_section(sweep)
    assert set(noise.numbers) == {"stochastic", "stochastic_exhaustive"} and noise.table.shape == (1, 6)
    largest = chapter.largest_noise_section(sweep).table
    assert largest.shape == (1, 6) and "mean replays" in largest.columns.get_level_values(0)  # a mean, said so
    measured = chapter.sc_section(sweep, r=3, theta="2/3")
    sc = measured.numbers["sc_under_noise"]
    assert sc == chapter._sc_under_noise(summary, 3, "2/3") and sc["noise"] == 0.1 and sc["largest_noise"] == 0.2
    reading = measured.facts["sc_reading"].data
    assert f"{sc['gcjr']:.3f}" in reading and f"{sc['gcjr_largest_noise']:.3f} at 0.20" in reading
    missing = chapter.sc_section(sweep, r=5, theta="2/3")  # r = 5 is not in the sweep
    assert missing.numbers == {} and missing.table.equals(measured.table)
    assert "not measured" in missing.facts["sc_reading"].data and "nan" not in missing.facts["sc_reading"].data
    one_level = {"noise": 0.2, "gcjr": 0.5, "largest_noise": 0.2, "gcjr_largest_noise": 0.5}
    assert chapter._sc_reading(one_level, 3, "2/3").endswith("0.500 of the cases at flip probability 0.20.")
    unmeasured = claims.compare("gcjr-ablations", missing.numbers, {}).set_index("section")["verdict"]
    assert unmeasured["Beyond the paper: stochastic replay"] == "not measured"  # a row that says so, not a crash


def test_cost_and_closed_form_sections(bench):
    runs = sweeps.gcjr_and_exhaustive(bench)
    section = chapter.cost_section(bench, runs, claims.published("gcjr-ablations", "setting"), r=3)
    assert section.numbers["cost"]["gcjr_formula_match"] == section.numbers["cost"]["exhaustive_formula_match"] == 1.0
    assert section.facts["paper_floor"] == cost.exhaustive_cost(6, r=3) == 66 and section.decimals == 2
    assert _glued(section)["cost_smallest_n"] == section.numbers["cost"]["smallest_n"]
    assert chapter.closed_forms_section(1).numbers == {"closed": chapter._closed_forms(1)}


def test_the_sections_collect_every_key_the_claims_read(bench):
    """Every claim of the chapter is measured from the collected sections at the paper's setting."""
    from rcakit import sections

    runs = sweeps.gcjr_and_exhaustive(bench)
    sweep = sweeps.hidden_edge_sweep(bench, [0.0], draws=1, seed=0)
    frames = sweeps.ablation_runs(bench, sweep, reference=runs["GCJR"])
    scoped_bench = sweeps.scoped_cases(bench, runs["GCJR"])
    noisy = sweeps.noise_sweep(scoped_bench, noise_levels=[0.0, 0.1], r_values=[3], theta_values=["2/3"])
    parts = [
        chapter.main_section(runs, claims.published("gcjr-ablations", "main")),
        chapter.per_type_section(runs),
        chapter.ablation_section(frames),
        chapter.baseline_section(sweeps.baseline_runs(bench, runs["GCJR"], seed=0), runs["GCJR"]),
        chapter.hidden_edge_section(sweep),
        chapter.noise_section(noisy),
        chapter.sc_section(noisy, r=3, theta="2/3"),
        chapter.cost_section(bench, runs, claims.published("gcjr-ablations", "setting"), r=3),
        chapter.pilot_section(claims.published("gcjr-ablations", "pilot"), n_cases=3),
        chapter.closed_forms_section(2),
    ]
    numbers = sections.collect(*parts)
    comparison = claims.compare("gcjr-ablations", numbers, {"q": 2, "pilot_policy": "scripted", "r": 3})
    assert not (comparison["verdict"] == "not measured").any(), comparison[comparison["verdict"] == "not measured"]
    with pytest.raises(ValueError, match="two sections"):
        sections.collect(parts[0], chapter.main_section(runs, claims.published("gcjr-ablations", "main")))


def test_pilot_section_records_quotes_and_shows_one_run():
    paper = claims.published("gcjr-ablations", "pilot")
    section = chapter.pilot_section(paper, n_cases=6, seed=1)
    numbers = run_pilot(n_cases=6, seed=1)
    assert section.numbers == {"pilot": numbers} and section.skipped is None
    assert section.table.equals(pilot_beside_paper(numbers, paper))
    facts = prose.flatten(section.facts)
    assert facts["pilot_saving"] == numbers["saving"] and facts["paper_pilot_saving"] == paper["saving"]
    assert facts["pilot_n_cases"] == 6 and facts["paper_pilot_gcjr_mean_calls"] == 10.0
    one_seed = chapter.pilot_section(paper, n_cases=6, seed=1, r=1)  # r reaches the oracle: a third of the calls
    assert one_seed.numbers["pilot"]["gcjr"]["mean_calls"] * R == numbers["gcjr"]["mean_calls"]


def test_a_pilot_with_every_case_set_apart_quotes_no_value_a_format_spec_would_fail_on():
    """An LLM pilot can set every case apart (its clean runs pass): the means are NaN, recorded as null, and
    a glued null under a format spec breaks every later build; the quoted text says there was no case."""
    nan = float("nan")
    numbers = {"gcjr": {"fem": nan, "mean_calls": nan}, "exhaustive": {"mean_calls": nan}, "saving": nan}
    assert set(chapter._pilot_text(numbers).values()) == {prose.NO_CASE}
    numbers = {"gcjr": {"fem": 1.0, "mean_calls": 10.0}, "exhaustive": {"mean_calls": 21.0}, "saving": 0.5238}
    assert chapter._pilot_text(numbers) == {
        "gcjr_fem": "1.000",
        "gcjr_mean_calls": "10.0",
        "exhaustive_mean_calls": "21.0",
        "saving": "0.524",
    }


def test_the_figures_are_matplotlib_figures(bench):
    matplotlib.use("Agg")
    hidden = sweeps.hidden_edge_sweep(bench, [0.0, 0.3], draws=2, seed=0)
    noisy = sweeps.noise_sweep(bench[6:12], noise_levels=[0.0, 0.2], r_values=[1, 3], theta_values=["1/2", "2/3"])
    figures = [chapter.dag_figure(bench[0]), chapter.hidden_edge_figure(hidden, 0.55), chapter.noise_figure(noisy)]
    assert all(isinstance(fig, Figure) for fig in figures)
    assert [len(fig.axes) for fig in figures[1:]] == [1, 2]  # one panel per θ
