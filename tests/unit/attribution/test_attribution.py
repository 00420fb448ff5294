"""rcakit.attribution: the interface, the adapters against the methods they wrap, the testbeds' truth, the scoring."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from rcakit import RcakitError, repair
from rcakit.attribution import (
    BUILT_IN,
    Attribution,
    ReplayMemo,
    check_methods,
    compare_methods,
    correct,
    load_methods,
    run_method,
    score_methods,
    summary,
)
from rcakit.attribution import adapters as ad
from rcakit.attribution import testbeds as tb
from rcakit.rag import diagnosers as dg
from rcakit.scm.contrastive import contrastive_effects
from rcakit.shapley import shapley_exact

TOY = """
from rcakit.attribution import Attribution

def first_singleton(case, oracle, budget=None):
    for player in case.players:
        if oracle.h([player]):
            return Attribution("point", player)
    return Attribution("point", None)
"""


@pytest.fixture(scope="module")
def beds():
    return {
        "rag_hops": tb.rag_testbed(0, 3),
        "controlled_dag": tb.dag_testbed(0, 2),
        "support_agent": tb.support_testbed(0, 2),
    }


def test_toy_method_by_import_path_is_scored_on_all_three_testbeds(beds, tmp_path, monkeypatch):
    (tmp_path / "toy_attribution_method.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    methods = load_methods("toy_attribution_method:first_singleton")
    table = summary(score_methods(beds, methods))
    assert set(table["testbed"]) == set(tb.TESTBEDS)
    assert set(table["method"]) == {"first_singleton"}
    single = table["fault_type"] == "single"
    assert (table.loc[single, "accuracy"] == 1).all()  # the first successful singleton is the fault
    assert (table.loc[~single, "accuracy"] == 0).all()  # a point cannot express two repairs
    assert (table["mean_cost"] > 0).all()


def test_truth_is_certified_per_type(beds):
    rag = {c.fault_type for c in beds["rag_hops"]}
    assert rag == {"single", "double_joint", "double_either"}
    for c in beds["rag_hops"]:
        sizes = sorted(len(s) for s in c.truth)
        assert sizes == {"single": [1], "double_joint": [2], "double_either": [1, 1]}[c.fault_type]
    truth = {c.fault_type: c.truth for c in beds["support_agent"]}
    assert truth["single"] == frozenset([frozenset(["lookup_order"])])
    assert truth["double"] == frozenset([frozenset(["read_ticket", "lookup_order"])])
    for c in beds["controlled_dag"]:
        assert not any(c.case.dag.graph.nodes[v]["fault"] for v in c.case.dag.graph)  # no fault marks leak
        assert c.case.dag.family == frozenset()


@pytest.mark.parametrize(
    "name, wrapped",
    [
        ("gcjr", repair.gcjr),
        ("exhaustive", repair.exhaustive),
        ("singleton_replay", repair.singleton_replay),
        ("shapley_top2", repair.shapley_top2),
    ],
)
def test_family_adapters_match_the_repair_methods_and_their_replay_count(beds, name, wrapped):
    planted = {case.case_id: case for case in repair.controlled_dag_benchmark(2, 0)}
    for c in beds["controlled_dag"]:
        true_case = planted[c.case.case_id]
        oracle = repair.ReplayOracle(true_case, r=3)
        expected = wrapped(true_case, oracle)
        got = run_method(BUILT_IN[name], c, ReplayMemo())
        assert got.answer == expected.family and got.kind == "family"
        assert got.cost.replays == oracle.calls


def test_centrality_adapter_matches_baseline_without_replay(beds):
    for c in beds["controlled_dag"]:
        expected = repair.centrality(c.case.dag, repair.ReplayOracle(c.case.dag))
        got = run_method(BUILT_IN["centrality"], c, ReplayMemo())
        assert frozenset([frozenset([got.answer])]) == expected.family and got.cost.replays == 0


def test_rag_readers_and_probes_match_the_diagnosers_with_counted_replays(beds):
    for c in beds["rag_hops"]:
        trace = c.case.trace
        found = run_method(BUILT_IN["coverage"], c, ReplayMemo())
        assert found.answer == ad._hop_player(c.case, dg.coverage(trace).hop)
        assert run_method(BUILT_IN["rule_based"], c, ReplayMemo()).answer == ad._hop_player(
            c.case, dg.rule_based(trace).hop
        )
        agent = c.oracle(ReplayMemo()).agent._agent
        for name, diagnoser in (("propagation_aware", dg.propagation_aware), ("suf_regen", dg.suf_regen)):
            expected = diagnoser(agent, trace)
            got = run_method(BUILT_IN[name], c, ReplayMemo())
            assert got.answer == ad._hop_player(c.case, expected.hop)
            assert got.cost.words == expected.cost
            flips = expected.branch == "flip"
            assert got.cost.replays == (expected.hop if flips else len(trace.hops) + 1)


def test_contrastive_adapter_is_cars_locus_with_its_rollouts(beds):
    c = beds["support_agent"][0]
    oracle = c.oracle(ReplayMemo())
    expected = contrastive_effects(oracle.scm._scm, 40, 3, n_boot=300)
    got = ad.contrastive(c.case, oracle, k_samples=40, seed=3)
    assert got.answer == (None if expected.locus is None else c.case.players[expected.locus])
    assert oracle.calls == 40 * (len(c.case.players) + 1)


def test_shapley_adapters_match_the_estimators_and_charge_the_oracle(beds):
    c = beds["controlled_dag"][0]
    oracle = c.oracle(ReplayMemo())
    got = ad.shapley_exact_ranking(c.case, oracle)
    n = len(c.case.players)
    assert oracle.calls == 3 * 2**n
    table = repair.ReplayOracle(repair.controlled_dag_benchmark(2, 0)[0], 3).replay_every_subset().astype(float)
    phi = shapley_exact(lambda s: table[sum(1 << i for i in s)], n)
    assert phi[c.case.dag.index[got.answer[0]]] == phi.max()
    mc = c.oracle(ReplayMemo())
    ad.shapley_monte_carlo(c.case, mc, budget=5 * 2 * (n + 1) * 3)
    assert mc.calls == 5 * 2 * (n + 1) * 3  # five whole antithetic permutations, r seeds per evaluation
    tiny = c.oracle(ReplayMemo())
    assert ad.shapley_monte_carlo(c.case, tiny, budget=1).answer == tuple(c.case.players) and tiny.calls == 0


def test_the_default_by_rollouts_spends_whole_pairs_and_ranks_as_exact_shapley_on_a_deterministic_case(beds):
    c = beds["controlled_dag"][0]
    n = len(c.case.players)
    exact = ad.shapley_exact_ranking(c.case, c.oracle(ReplayMemo())).answer
    oracle = c.oracle(ReplayMemo())
    got = ad.shapley_by_rollouts(c.case, oracle, budget=10 * 2 * n + 3)
    assert oracle.calls == 10 * 2 * n  # ten pairs of 2n coalitions (v(N) rolled out), one seed replay each
    truth = set().union(*c.truth)
    assert set(got.answer[: len(truth)]) == set(exact[: len(truth)]) == truth
    tiny = c.oracle(ReplayMemo())
    assert ad.shapley_by_rollouts(c.case, tiny, budget=2 * n - 1).answer == tuple(c.case.players)
    assert tiny.calls == 0


def test_an_oracle_rollout_is_one_charged_replay_under_any_seed(beds):
    c = beds["support_agent"][0]
    oracle = c.oracle(ReplayMemo())
    everything = frozenset(c.case.players)
    outcomes = [oracle.rollout(everything, j) for j in (0, 40, 40)]
    assert oracle.calls == 3 and oracle.memo_hits == 1 and outcomes[1] == outcomes[2]


def test_memo_hits_are_charged_but_counted_apart(beds):
    c, memo = beds["support_agent"][0], ReplayMemo()
    first = run_method(BUILT_IN["gcjr"], c, memo)
    second = run_method(BUILT_IN["gcjr"], c, memo)
    assert first.answer == second.answer and first.cost.replays == second.cost.replays > 0
    assert first.cost.memo_hits == 0 and second.cost.memo_hits == second.cost.replays
    assert memo.computed == first.cost.replays


def test_scoring_rules():
    a, b = frozenset(["a"]), frozenset(["b"])
    either, joint = frozenset([a, b]), frozenset([a | b])
    assert correct(Attribution("point", "a"), frozenset([a]))
    assert not correct(Attribution("point", "a"), either)
    assert correct(Attribution("family", either), either) and not correct(Attribution("family", joint), either)
    assert correct(Attribution("ranking", ("b", "a", "c")), joint)
    assert correct(Attribution("ranking", ("b", "a", "c")), either)  # a ranking is scored on the players alone
    assert not correct(Attribution("ranking", ("a", "c", "b")), joint)


def test_user_errors(beds):
    with pytest.raises(RcakitError, match="import path"):
        load_methods("no_such_method")
    with pytest.raises(RcakitError, match="cannot import"):
        load_methods("rcakit.attribution:no_such_callable")
    with pytest.raises(RcakitError, match="kind"):
        Attribution("score", 1)
    with pytest.raises(RcakitError, match="not an Attribution"):
        run_method(lambda case, oracle, budget=None: "hop1", beds["rag_hops"][0], ReplayMemo())
    with pytest.raises(RcakitError, match="not an intervenable"):
        beds["rag_hops"][0].oracle(ReplayMemo()).h(["hop9"])


def test_not_applicable_methods_are_skipped(beds):
    scores = score_methods(beds, {"coverage": BUILT_IN["coverage"], "contrastive": BUILT_IN["contrastive"]})
    assert set(scores.loc[scores["method"] == "coverage", "testbed"]) == {"rag_hops"}
    assert set(scores.loc[scores["method"] == "contrastive", "testbed"]) == {"support_agent"}
    assert np.isfinite(scores["replays"]).all()


# --- a user's methods: checked before the run, stopped by the time limit, named in errors ---------

PLUGINS = """
import time

from rcakit.attribution import Attribution


def sleepy(case, oracle, budget=None):
    open(__file__ + ".called", "w").close()
    time.sleep(60)
    return Attribution("point", None)


def broken(case, oracle, budget=None):
    raise ValueError(f"no verdict for {len(case.players)} players")


def two_args(case, oracle):
    return Attribution("point", None)


def replays_hop9(case, oracle, budget=None):
    return Attribution("point", "hop9" if oracle.h(["hop9"]) else None)


not_a_function = 3
"""


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """The module ``user_plugins_<n>`` (a fresh name per test) holding :data:`PLUGINS`; returns its name."""
    name = f"user_plugins_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.fixture(scope="module")
def one_rag_case():
    return {"rag_hops": tb.rag_testbed(0, 1)[:1]}


@pytest.mark.slow
def test_a_sleeping_method_is_stopped_by_the_time_limit_naming_method_and_case(plugins, one_rag_case):
    [case] = one_rag_case["rag_hops"]
    with pytest.raises(RcakitError) as info:  # the 60 s nap is ended by the deadline, which the line names
        score_methods(one_rag_case, load_methods(f"{plugins}:sleepy"), method_timeout=1.5)
    assert str(info.value) == (
        f"method 'sleepy' on rag_hops case {case.case.case_id!r}: stopped after 1.5 s "
        "(method_timeout); raise method_timeout or make the method faster"
    )


def test_an_error_in_a_users_method_names_the_method_and_the_case(plugins, one_rag_case):
    [case] = one_rag_case["rag_hops"]
    with pytest.raises(RcakitError) as info:
        score_methods(one_rag_case, load_methods(f"coverage,{plugins}:broken"))
    assert str(info.value) == (
        f"method 'broken' on rag_hops case {case.case.case_id!r} failed: "
        f"ValueError: no verdict for {len(case.case.players)} players"
    )
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(RcakitError, match=r"^method 'replays_hop9' on rag_hops case .* failed: .*not an intervenable"):
        score_methods(one_rag_case, load_methods(f"{plugins}:replays_hop9"))


def test_built_in_methods_run_outside_the_limit_and_a_users_method_gives_the_same_answers(beds, tmp_path, monkeypatch):
    (tmp_path / "toy_limited_method.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    small = {bed: cases[:2] for bed, cases in beds.items()}
    built_in = {k: BUILT_IN[k] for k in ("coverage", "gcjr", "shapley_top2", "centrality")}
    # a 1 ms limit would stop every one of them if they ran under it
    assert score_methods(small, built_in, method_timeout=1e-3).equals(score_methods(small, built_in))
    assert all(ad.is_built_in(m) for m in load_methods("builtin").values())
    [toy] = load_methods("toy_limited_method:first_singleton").values()
    assert not ad.is_built_in(toy)
    from toy_limited_method import first_singleton as direct

    for cases in small.values():
        for c in cases:
            limited, oracle = run_method(toy, c, ReplayMemo()), c.oracle(ReplayMemo())
            got = direct(c.case, oracle)
            assert (limited.kind, limited.answer, limited.cost) == (got.kind, got.answer, oracle.cost())


def test_check_methods_imports_and_checks_every_path_without_running_it(plugins, tmp_path):
    check_methods(f"builtin,{plugins}:sleepy,{plugins}:broken, gcjr,")  # nothing runs: no sleep, no error
    assert not list(tmp_path.glob("*.called"))  # sleepy was never called
    for spec, message in [
        (f"{plugins}:two_args", f"methods: '{plugins}:two_args' cannot be called as method(case, oracle, budget)"),
        (f"{plugins}:not_a_function", f"methods: '{plugins}:not_a_function' is not callable"),
        (f"{plugins}:missing", f"methods: cannot import '{plugins}:missing': AttributeError: module "),
        ("no_such_module_xyz:f", "methods: cannot import 'no_such_module_xyz:f': ModuleNotFoundError: No module "),
        ("gcjr,nope", "methods: 'nope' is neither a built-in method"),
        (" , ", "methods: the list is empty"),
    ]:
        with pytest.raises(RcakitError) as info:
            check_methods(spec)
        assert str(info.value).startswith(message) and "\n" not in str(info.value), str(info.value)


def test_a_module_that_fails_on_import_and_a_name_twice_are_one_line(tmp_path, monkeypatch, plugins):
    (tmp_path / "user_plugins_broken_import.py").write_text("x = 1 / 0\n")
    (tmp_path / "user_plugins_same_name.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        RcakitError,
        match="^methods: importing 'user_plugins_broken_import:f' failed: ZeroDivisionError: division by zero$",
    ):
        check_methods("user_plugins_broken_import:f")
    with pytest.raises(RcakitError, match="^methods: two methods are named 'sleepy'; rename one of the callables$"):
        check_methods(f"{plugins}:sleepy,user_plugins_same_name:sleepy")
    assert list(load_methods("gcjr,builtin,gcjr")) == ["gcjr", *(m for m in BUILT_IN if m != "gcjr")]  # kept once


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), "60", True])
def test_a_bad_method_timeout_is_one_line(beds, value):
    with pytest.raises(RcakitError, match="^method_timeout: expected a number of seconds > 0"):
        score_methods(beds, {"coverage": BUILT_IN["coverage"]}, method_timeout=value)


def test_build_testbeds_takes_its_parameters_by_keyword():
    import inspect

    kinds = {p.kind for p in inspect.signature(tb.build_testbeds).parameters.values()}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}
    with pytest.raises(TypeError):
        tb.build_testbeds(0, 3, 2, 3)  # type: ignore[misc]


def test_compare_methods_summarises_its_scores_through_one_memo(beds):
    compared = compare_methods(beds, {name: BUILT_IN[name] for name in ("coverage", "singleton_replay", "gcjr")})
    scores = compared.scores
    assert compared.summary.equals(summary(scores))
    assert set(scores["method"]) == {"coverage", "singleton_replay", "gcjr"}
    assert 0 < compared.memo.computed < scores["replays"].sum()  # gcjr replays what singleton replay memoised
    assert compared.memo.computed + scores["memo_hits"].sum() == scores["replays"].sum()


def test_a_users_method_prints_nothing_into_the_chapter_and_other_threads_still_print(beds, capfd):
    """Issue 29, item 19: a method that printed 1 MiB per case made a 52.7 MB notebook."""
    import threading

    from rcakit.attribution.muting import muted

    def chatty(case, oracle, budget=None):
        print("m" * (1 << 20))
        print("e" * 100, file=__import__("sys").stderr)
        return Attribution("point", None)

    case = beds["rag_hops"][0]
    assert run_method(chatty, case, ReplayMemo()).answer is None
    out, err = capfd.readouterr()
    assert "m" * 100 not in out and "e" * 100 not in err

    def other() -> None:
        print("from another thread")

    with muted():
        print("muted")
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    print("after")
    heard = capfd.readouterr().out.split()
    assert heard == ["from", "another", "thread", "after"]
