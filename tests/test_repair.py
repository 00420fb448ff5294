"""Tests of rcakit.repair: planted families, pair rules, costs, generator, oracle, metrics."""

from __future__ import annotations

import functools
from math import comb

import networkx as nx
import numpy as np
import pytest

from rcakit import RcakitError
from rcakit.repair import experiments
from rcakit.repair import (
    ABLATIONS, KINDS, Case, RepairResult, ReplayOracle, Structure, centrality, controlled_dag_benchmark, evaluate,
    execution_window, exhaustive, failure_slice, family_scores, gcjr, hide_edges, in_domain, is_schedule,
    minimal_sets, random_matched, random_topological_order, replay, shapley_top2, singleton_replay, summarize,
    true_family,
)

F = frozenset


def fam(*sets):
    return F(F(s) for s in sets)


def diamond(kind: str, extra_edges=()) -> Case:
    """A0 -> {B0, C0} -> D0 -> out, with the faults of ``kind`` planted by hand."""
    g = nx.DiGraph()
    for v in ("A0", "B0", "C0", "D0", "out"):
        g.add_node(v, agent=v[0], intervenable=v != "out", fault=False, gate="any")
    g.add_edges_from([("A0", "B0"), ("A0", "C0"), ("B0", "D0"), ("C0", "D0"), ("D0", "out"), *extra_edges])
    faults, family = {
        "single": (("B0",), fam({"B0"})),
        "joint_and": (("B0", "C0"), fam({"B0", "C0"})),
        "alt_or": (("B0", "C0"), fam({"B0"}, {"C0"})),
        "sequential_joint": (("A0", "B0"), fam({"A0", "B0"})),
    }[kind]
    for f in faults:
        g.nodes[f]["fault"] = True
    if kind == "alt_or":
        g.nodes["D0"]["gate"] = "all"
    rng = np.random.default_rng(1)
    schedules = tuple(random_topological_order(g, rng) for _ in range(3))
    return Case(f"hand-{kind}", kind, g, "out", family, schedules, 11)


@pytest.fixture(scope="module")
def bench():
    return controlled_dag_benchmark(cases_per_type=6, seed=3)


# --- planted families -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["single", "joint_and", "alt_or"])
def test_gcjr_and_exhaustive_recover_planted_family_on_hand_built_dags(kind):
    case = diamond(kind)
    assert true_family(case) == case.family
    assert gcjr(case, ReplayOracle(case)).family == case.family
    assert exhaustive(case, ReplayOracle(case)).family == case.family


def test_sequential_joint_is_out_of_scope_and_missed_by_gcjr_only():
    case = diamond("sequential_joint")
    assert true_family(case) == case.family
    assert not in_domain(case, case.family)
    assert gcjr(case, ReplayOracle(case)).family == F()
    assert exhaustive(case, ReplayOracle(case)).family == case.family


def test_generated_sequential_joint_cases_are_flagged_out_of_scope(bench):
    for case in bench:
        assert in_domain(case, true_family(case)) == (case.kind != "sequential_joint"), case.case_id


# --- pair admission ---------------------------------------------------------------------

def test_pair_admission_rules_each_exclude_a_pair():
    g = nx.DiGraph()
    agents = {"A0": "A", "B0": "B", "B1": "B", "C0": "C", "C1": "C", "E0": "E", "F0": "F", "D0": "D"}
    for v, a in agents.items():
        g.add_node(v, agent=a)
    g.add_edges_from([("A0", "B0"), ("A0", "B1"), ("A0", "C0"), ("B0", "D0"), ("B1", "D0"), ("C0", "D0"),
                      ("C1", "D0"), ("E0", "A0"), ("F0", "C1")])
    g.add_node("lonely", agent="G")
    s = Structure(g)
    assert s.admissible("B0", "C0")            # different agents, incomparable, meet at D0
    assert not s.admissible("B0", "B1")        # same agent
    assert not s.admissible("A0", "C0")        # comparable
    assert not s.admissible("B0", "lonely")    # incomparable, different agents, no shared join
    assert not s.converge("B0", "lonely") and s.converge("C0", "C1")
    assert s.admissible_set(("B0", "C0", "F0")) and not s.admissible_set(("B0", "B1", "C0"))


def test_no_admission_ablation_replays_more_pairs_than_gcjr():
    case = diamond("joint_and")
    full = gcjr(case, ReplayOracle(case))
    loose = gcjr(case, ReplayOracle(case), ABLATIONS["no_admission"])
    assert full.p == 1 and loose.p == comb(4, 2)
    assert loose.family == full.family


# --- minimality -------------------------------------------------------------------------

def test_minimal_sets_keeps_only_the_antichain():
    sets = [F("a"), F("ab"), F("bc"), F("c"), F("d")]
    assert minimal_sets(sets) == fam("a", "c", "d")
    assert minimal_sets([]) == F()


def test_no_minimality_returns_the_superset_on_alternative_or():
    case = diamond("alt_or")
    out = gcjr(case, ReplayOracle(case), ABLATIONS["no_minimality"])
    assert out.family == fam({"B0"}, {"C0"}, {"B0", "C0"})
    scores = family_scores(case, out, case.family)
    assert scores["fem"] == 0.0 and scores["mv"] == 1.0
    # pruning alone keeps the family minimal, at the price of one more replayed pair
    assert gcjr(case, ReplayOracle(case), ABLATIONS["no_pruning"]).family == case.family


def test_singleton_only_cannot_express_a_joint_repair():
    case = diamond("joint_and")
    out = gcjr(case, ReplayOracle(case), ABLATIONS["singleton_only"])
    assert out.family == F() and out.p == 0


# --- cost -------------------------------------------------------------------------------

@pytest.mark.parametrize("r", [1, 3, 5])
def test_call_counts_equal_the_cost_formulas(bench, r):
    for case in bench:
        n = len(case.candidates)
        m = len([v for v in failure_slice(case.graph, case.sink) if v in case.index])
        g = gcjr(case, ReplayOracle(case, r=r))
        assert g.m == m and g.calls == r * (1 + g.m + g.p), case.case_id
        assert exhaustive(case, ReplayOracle(case, r=r)).calls == r * (1 + n + comb(n, 2))


def test_pruned_pairs_are_not_replayed():
    case = diamond("alt_or")  # B0 and C0 each succeed, so their pair is pruned
    out = gcjr(case, ReplayOracle(case, r=3))
    assert out.p == 0 and out.calls == 3 * (1 + 4)


# --- hidden edges -----------------------------------------------------------------------

def test_hidden_edge_that_cuts_a_repair_path_makes_gcjr_miss_it():
    case = diamond("single")
    view = case.graph.copy()
    view.remove_edge("B0", "D0")
    oracle = ReplayOracle(case)
    assert oracle.h({"B0"})                     # the true graph still carries the repair
    assert gcjr(case, oracle, graph=view).family == F()
    assert not in_domain(case, case.family, graph=view)


def test_hidden_edges_are_counted_and_nested():
    g = diamond("single").graph
    small = hide_edges(g, 0.2, np.random.default_rng(5))
    large = hide_edges(g, 0.6, np.random.default_rng(5))
    assert g.number_of_edges() - small.number_of_edges() == 1
    assert g.number_of_edges() - large.number_of_edges() == 3
    assert set(large.edges) <= set(small.edges)
    with pytest.raises(RcakitError, match="fraction"):
        hide_edges(g, 1.5, np.random.default_rng(0))


# --- generator --------------------------------------------------------------------------

def test_generator_invariants(bench):
    kinds = [c.kind for c in bench]
    assert {k: kinds.count(k) for k in set(kinds)} == {k: 6 for k in KINDS}
    for case in bench:
        assert 6 <= len(case.candidates) <= 14
        assert len(case.schedules) == 3 and all(is_schedule(case.graph, s) for s in case.schedules)
        assert nx.is_directed_acyclic_graph(case.graph)
        assert true_family(case) == case.family
        assert case.graph.out_degree(case.sink) == 0 and not case.graph.nodes[case.sink]["intervenable"]


def test_generator_is_deterministic_and_prefix_stable():
    a = controlled_dag_benchmark(cases_per_type=2, seed=9)
    b = controlled_dag_benchmark(cases_per_type=3, seed=9)
    prefix = [c for c in b if int(c.case_id[-3:]) < 2]
    for x, y in zip(a, prefix):
        assert x.case_id == y.case_id and x.schedules == y.schedules and x.family == y.family
        assert sorted(x.graph.edges) == sorted(y.graph.edges)
    other = controlled_dag_benchmark(cases_per_type=2, seed=10)
    assert any(sorted(x.graph.edges) != sorted(y.graph.edges) for x, y in zip(a, other))
    with pytest.raises(RcakitError, match="cases_per_type"):
        controlled_dag_benchmark(cases_per_type=0)


def test_is_schedule_rejects_an_order_that_breaks_an_edge():
    g = diamond("single").graph
    assert not is_schedule(g, ("B0", "A0", "C0", "D0", "out"))
    assert not is_schedule(g, ("A0", "B0", "C0", "D0"))


# --- oracle -----------------------------------------------------------------------------

def test_oracle_threshold_noise_and_counting():
    case = diamond("single")
    clean = ReplayOracle(case, r=3, theta=0.66)
    assert clean.h({"B0"}) and not clean.h({"C0"}) and not clean.h(())
    assert clean.calls == 9
    noisy = ReplayOracle(case, r=9, noise=0.3)
    per_seed = [replay(case, {"B0"}, j, noise=0.3) for j in range(9)]
    assert noisy.mean_success({"B0"}) == pytest.approx(np.mean(per_seed))
    assert 0 < sum(per_seed) < 9  # the noise flips some seeds and not others
    # the first seeds' outcomes do not depend on r (common random numbers)
    assert ReplayOracle(case, r=3, noise=0.3).mean_success({"B0"}) == pytest.approx(np.mean(per_seed[:3]))


@pytest.mark.parametrize("kwargs, field", [({"r": 0}, "r"), ({"theta": 0.0}, "theta"), ({"noise": 1.0}, "noise"),
                                           ({"schedule": 3}, "schedule")])
def test_oracle_rejects_bad_settings(kwargs, field):
    with pytest.raises(RcakitError, match=field):
        ReplayOracle(diamond("single"), **kwargs)


def test_replaying_a_non_candidate_is_an_error():
    case = diamond("single")
    with pytest.raises(RcakitError, match="'out' is not an intervenable candidate"):
        ReplayOracle(case).h({"out"})


# --- baselines and metrics --------------------------------------------------------------

def test_shapley_top2_returns_the_pair_even_when_each_event_suffices():
    for kind, fem in (("alt_or", 0.0), ("joint_and", 1.0), ("single", 0.0)):
        case = diamond(kind)
        oracle = ReplayOracle(case, r=3)
        out = shapley_top2(case, oracle)
        assert len(out.ranking[0]) == 2 and oracle.calls == 3 * 2**4
        scores = family_scores(case, out, case.family)
        assert scores["fem"] == fem and scores["repair_success1"] == 1.0
        assert scores["mv"] == 1.0 - fem


def test_singleton_window_centrality_and_random_baselines():
    case = diamond("joint_and")
    assert singleton_replay(case, ReplayOracle(case)).family == F()
    window = execution_window(case, ReplayOracle(case), w=1)
    assert window.m == 1 and window.p == 0
    assert execution_window(case, ReplayOracle(case), w=4).family == case.family
    assert centrality(case, ReplayOracle(case)).calls == 0
    oracle = ReplayOracle(case, r=3)
    rand = random_matched(case, oracle, budget=12, rng=np.random.default_rng(0))
    assert rand.calls == 12 and rand.p + rand.m >= 3


def test_family_scores_on_known_families():
    case = diamond("alt_or")
    pred = RepairResult(fam({"B0"}, {"A0"}), (F({"A0"}), F({"B0"})), 0)
    s = family_scores(case, pred, case.family)
    assert s["fem"] == 0 and s["aj"] == pytest.approx(1 / 3) and s["recall"] == 0.5
    assert s["rs1"] == 0 and s["mv"] == 0
    empty = family_scores(case, RepairResult(F(), (), 0), F())
    assert empty["fem"] == 1 and empty["aj"] == 1 and empty["rs1"] == 0


def test_evaluate_and_summarize_on_the_benchmark(bench):
    frame = evaluate(bench, gcjr)
    ins = frame[frame["in_scope"]]
    s = summarize(ins)
    assert s["fem"] == 1.0 and s["macro_fem"] == 1.0 and s["sc"] == 1.0 and s["mv"] == 0.0
    assert (frame[~frame["in_scope"]]["family"] == "∅").all()
    ex = evaluate(bench, exhaustive, schedules=(0,))
    assert ex["fem"].mean() == 1.0 and ex["replays"].mean() > frame["replays"].mean()
    again = evaluate(bench, gcjr)
    assert again.equals(frame)


def test_ablation_directions_on_the_benchmark(bench):
    def fem(name, kind):
        frame = evaluate(bench, functools.partial(gcjr, config=ABLATIONS[name]), schedules=(0,))
        return frame[frame["kind"] == kind]["fem"].mean()

    assert fem("singleton_only", "joint_and") == 0.0
    assert fem("no_minimality", "alt_or") == 0.0
    assert fem("no_slicing", "alt_or") == 1.0


# --- sweeps -----------------------------------------------------------------------------

def test_hidden_edge_sweep_is_nested_so_recall_never_rises(bench):
    sweep = experiments.hidden_edge_sweep(bench, [0.0, 0.1, 0.3], draws=2, seed=0)
    scoped = sweep[sweep["in_scope"]]
    assert scoped[scoped["fraction"] == 0.0]["fem"].eq(1.0).all()
    wide = scoped.pivot_table(index=["case_id", "draw"], columns="fraction", values="recall")
    assert (wide[0.1] <= wide[0.0]).all() and (wide[0.3] <= wide[0.1]).all()
    assert wide[0.3].mean() < 1.0
    with pytest.raises(RcakitError, match="hidden_fractions"):
        experiments.hidden_edge_sweep(bench, [], draws=1, seed=0)


def test_noise_sweep_is_exact_without_noise_and_cost_scales_with_r(bench):
    scoped = [c for c in bench if c.kind != "sequential_joint"]
    sweep = experiments.noise_sweep(scoped, [0.0, 0.2], [1, 3], [0.66])
    clean = sweep[sweep["noise"] == 0.0]
    assert clean["fem"].eq(1.0).all() and clean["agree"].all()
    calls = clean.groupby(["method", "r"])["replays"].sum()
    assert calls["GCJR", 3] == 3 * calls["GCJR", 1] and calls["exhaustive", 3] == 3 * calls["exhaustive", 1]
    assert sweep[sweep["noise"] == 0.2]["fem"].mean() < 1.0


def test_cost_check_matches_counted_calls(bench):
    g = evaluate(bench, gcjr, r=5, schedules=(0,))
    e = evaluate(bench, exhaustive, r=5, schedules=(0,))
    cost = experiments.cost_check(g, e, r=5)
    assert (cost["gcjr_counted"] == cost["gcjr_formula"]).all()
    assert (cost["exhaustive_counted"] == cost["exhaustive_formula"]).all()
