"""Tests of rcakit.repair.pilot: the four-agent workflow, its replay oracle and the pilot.

The search code (``gcjr``, ``exhaustive``, ``singleton_replay``) runs on the
workflow oracle unchanged. The ``llm`` policy is tested against the local
fake Ollama server, whose replies are exact arithmetic, so the family is known.
"""

import functools
import json
import re

import networkx as nx
import pytest

from rcakit import RcakitError, claims
from rcakit.llm import MethodUsage, ResponseCache, cached, provider_from_spec, request_seed
from rcakit.repair.baselines import singleton_replay
from rcakit.repair.oracle import SharedSeedOracle
from rcakit.repair.pilot import (
    ScriptedPolicy,
    Task,
    WorkflowOracle,
    apply,
    build_case,
    experiment,
    expression_value,
    hand_pilot_case,
    hand_task,
    make_policy,
    parse_expression,
    pilot_beside_paper,
    pilot_cases,
    run_pilot,
)
from rcakit.repair.pilot.agents import uncharged
from rcakit.repair.search import ABLATIONS, exhaustive, gcjr
from support.llm_servers import FakeOllamaServer

R = 3


def split_task(b: str, c: str) -> Task:
    return Task(f"Compute ({b}) + ({c}).", "split", (b, c), expression_value(b) + expression_value(c))


def dual_task(b: str) -> Task:
    return Task(
        f"Compute {b}. The last digit of the result is {expression_value(b) % 10}.", "dual", (b, b), expression_value(b)
    )


def recorded(kind: str, task: Task, faults: dict, case_id: str = "hand"):
    """A case recorded with the scripted agents."""
    return build_case(kind, task, ScriptedPolicy(), case_id=case_id, seed=0, offsets=faults)


def fam(*sets) -> frozenset:
    return frozenset(frozenset(s) for s in sets)


class Logged(ScriptedPolicy):
    """The scripted policy, logging which events execute."""

    def __init__(self, log=None, charge=uncharged):
        super().__init__(charge=charge)
        self.log = [] if log is None else log

    def bound(self, charge):
        return Logged(self.log, charge)

    def plan(self, task, key):
        self.log.append(key.event)
        return super().plan(task, key)

    def step(self, agent, left, op, right, key):
        self.log.append(key.event)
        return super().step(agent, left, op, right, key)

    def aggregate(self, plan, b, c, key):
        self.log.append(key.event)
        return super().aggregate(plan, b, c, key)


# --- expressions, tasks, graph ------------------------------------------------------------------


def test_expressions_parse_left_to_right_and_reject_malformed_text():
    assert parse_expression("12 * 7 + 5") == (12, (("*", 7), ("+", 5)))
    assert expression_value("12 * 7 + 5 - 3") == 86
    for bad in ("12", "12 * ", "a * 2", None, 7, "1 * 2 + 3 + 4 + 5"):
        assert parse_expression(bad) is None


def test_graph_is_the_run_s_reads():
    w = recorded("single", split_task("3 * 4 + 1", "5 * 6"), {"B1": 2})
    g = w.case.graph
    assert set(g.predecessors("B1")) == {"A0", "B0"} and set(g.predecessors("B0")) == {"A0"}
    assert set(g.predecessors("D0")) == {"A0", "B1", "C0"}
    assert w.case.candidates == ("A0", "B0", "B1", "C0") and w.case.sink == "D0"
    assert all(nx.is_directed_acyclic_graph(g) and len(o) == 5 for o in w.case.schedules)
    assert len(set(w.case.schedules)) == 3
    assert w.clean["D0"] == {"answer": 43} and w.failed["B1"] == {"value": 15} and w.failed["D0"] == {"answer": 45}
    assert w.clean_correct and not w.failed_correct


# --- the family --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cases():
    return pilot_cases(24, seed=0)


def test_gcjr_equals_exhaustive_equals_planted_on_every_scripted_case(cases):
    policy = ScriptedPolicy()
    assert [w.case.kind for w in cases[:3]] == ["single", "joint_and", "alt_or"]
    for w in cases:
        found = gcjr(w.case, WorkflowOracle(w, policy)).family
        assert found == exhaustive(w.case, WorkflowOracle(w, policy)).family == w.case.family, w.case.case_id


def test_planted_families_have_the_three_shapes(cases):
    shapes = {w.case.kind: sorted(map(len, w.case.family)) for w in cases}
    assert shapes == {"single": [1], "joint_and": [2], "alt_or": [1, 1]}


def test_singleton_replay_runs_unchanged_and_misses_the_joint_pair(cases):
    joint = next(w for w in cases if w.case.kind == "joint_and")
    assert singleton_replay(joint.case, WorkflowOracle(joint, ScriptedPolicy())).family == frozenset()


def test_hand_built_cases_give_the_counted_calls():
    """Single and Joint-AND on A0 -> {B0, C0} -> D0, calls = r · |downstream(S) \\ S| per set."""
    task = split_task("3 * 4", "5 * 6")
    # GCJR: ∅ 0, {A0} 3 (B0, C0, D0), {B0} 1, {C0} 1; the only admitted pair {B0, C0} 1 unless pruned.
    # Exhaustive adds {A0, B0} 2, {A0, C0} 2 and {B0, C0} 1: the graph screens out the pairs with A0.
    for faults, family, gcjr_calls in (({"B0": 2}, fam({"B0"}), R * 5), ({"B0": 2, "C0": 1}, fam({"B0", "C0"}), R * 6)):
        w = recorded("hand", task, faults)
        g, e = WorkflowOracle(w, ScriptedPolicy()), WorkflowOracle(w, ScriptedPolicy())
        assert gcjr(w.case, g).family == exhaustive(w.case, e).family == family
        assert (g.calls, e.calls) == (gcjr_calls, R * 10)
        assert g.calls < e.calls


def test_alternative_or_needs_both_results_wrong():
    task = dual_task("7 * 8 + 3")
    w = recorded("alt_or", task, {"B1": 4, "C1": 5})
    assert not w.failed_correct and w.failed["D0"] == {"answer": 63}  # neither ends in 9: D answers B's
    oracle = WorkflowOracle(w, ScriptedPolicy())
    assert oracle.h({"B1"}) and oracle.h({"C1"}) and not oracle.h({"B0", "C0"}) and not oracle.h({"A0"})
    one = recorded("alt_or", task, {"B1": 4}, case_id="one")
    assert one.failed_correct  # D repairs a single wrong result: no failure to localise


# --- replay touches only downstream agents; the counter ------------------------------------------


def test_replay_reexecutes_only_downstream_agents():
    w = recorded("single", split_task("3 * 4 + 1", "5 * 6 - 2"), {"B1": 2})
    log = []
    oracle = WorkflowOracle(w, Logged(log))
    assert oracle.replay({"B1"}).success and log == ["D0"] * R
    log.clear()
    assert not oracle.replay({"B0"}).success  # B1's own error comes back when it re-executes
    assert log == ["B1", "D0"] * R
    log.clear()
    assert oracle.replay({"C0"}).mean == 0 and log == ["C1", "D0"] * R
    log.clear()
    oracle.replay({"A0"})
    assert sorted(log) == sorted(["B0", "B1", "C0", "C1", "D0"] * R) and "A0" not in log
    log.clear()
    assert oracle.replay(()).successes == 0 and log == []
    assert oracle.calls == R * (1 + 2 + 2 + 5)


def test_the_call_counter_is_the_oracle_s_own_and_read_only():
    w = recorded("single", split_task("3 * 4", "5 * 6"), {"C0": 1})
    first, second = WorkflowOracle(w, ScriptedPolicy(), r=4), WorkflowOracle(w, ScriptedPolicy(), r=4)
    assert first.calls == 0  # recording the clean and failed runs is not charged
    first.replay({"A0"})
    assert (first.calls, second.calls) == (12, 0)
    with pytest.raises(AttributeError):
        first.calls = 0
    with pytest.raises(RcakitError, match="replays = -1"):
        first.charge(-1)  # the hook only adds
    assert isinstance(first, SharedSeedOracle) and first.calls == 12
    with pytest.raises(RcakitError, match="not an intervenable candidate"):
        first.replay({"D0"})


def test_theta_is_applied_to_the_shared_seeds():
    w = recorded("single", split_task("3 * 4", "5 * 6"), {"C0": 1})
    oracle = WorkflowOracle(w, ScriptedPolicy(), r=3, theta="2/3")
    assert [bool(oracle.passes(k)) for k in range(4)] == [False, False, True, True]


# --- the pilot ---------------------------------------------------------------------------------


def test_run_pilot_scores_and_saving(cases):
    out = run_pilot(cases)
    assert out["n_cases"] == 24 and out["planted_recovered"] == 24
    assert out["gcjr"]["fem"] == out["gcjr"]["rs1"] == out["exhaustive"]["fem"] == 1.0
    assert out["gcjr"]["mv"] == 0.0
    assert 0 < out["gcjr"]["mean_calls"] < out["exhaustive"]["mean_calls"]
    assert out["saving"] == pytest.approx(1 - out["gcjr"]["mean_calls"] / out["exhaustive"]["mean_calls"])
    assert (out["clean_failures"], out["failed_runs_passing"], out["seed_disagreements"]) == (0, 0, 0)
    assert run_pilot(n_cases=24, seed=0) == out  # deterministic, cases rebuilt from the seed


def test_slips_show_up_apart_and_deterministically():
    noisy = run_pilot(n_cases=12, seed=1, slip=0.1)
    assert noisy == run_pilot(n_cases=12, seed=1, slip=0.1)
    assert noisy["seed_disagreements"] + noisy["clean_failures"] > 0
    assert noisy["n_cases"] == 12  # nothing dropped


def test_prefix_stable_and_errors():
    assert [w.task for w in pilot_cases(3, seed=2)] == [w.task for w in pilot_cases(6, seed=2)[:3]]
    with pytest.raises(RcakitError, match="n_cases"):
        pilot_cases(0)
    with pytest.raises(RcakitError, match="policy"):
        make_policy("oracle")
    with pytest.raises(RcakitError, match="provider"):
        make_policy("llm", provider="none")
    with pytest.raises(RcakitError, match="slip"):
        ScriptedPolicy(slip=1.0)
    with pytest.raises(RcakitError, match="r = 0"):
        WorkflowOracle(pilot_cases(1)[0], ScriptedPolicy(), r=0)


# --- the llm policy against the fake Ollama server ------------------------------------------------


def exact_agents(messages) -> str:
    """A deterministic 'model': each agent's reply, computed from its prompt."""
    prompt = messages[-1]["content"]
    if m := re.search(r"Task: Compute \((.+?)\) \+ \((.+?)\)\.", prompt):
        return json.dumps({"b": m[1], "c": m[2], "combine": "sum", "check": -1})
    if m := re.search(r"Task: Compute (.+?)\. The last digit of the result is (\d)\.", prompt):
        return json.dumps({"b": m[1], "c": m[1], "combine": "pick", "check": int(m[2])})
    if m := re.search(r"Compute (-?\d+) ([*+-]) (\d+)\.", prompt):
        return json.dumps({"value": apply(m[2], int(m[1]), int(m[3]))})
    if m := re.search(r"B = (-?\d+), C = (-?\d+)", prompt):
        b, c = int(m[1]), int(m[2])
        if "Add" in prompt:
            return json.dumps({"answer": b + c})
        d = int(re.search(r"end in the digit (\d)", prompt)[1])
        return json.dumps({"answer": c if b % 10 != d and c % 10 == d else b})
    return "?"


def test_llm_policy_on_the_fake_server_recovers_the_known_family_and_reruns_from_cache(tmp_path):
    with FakeOllamaServer(exact_agents) as server:
        provider = provider_from_spec("ollama:fake", host=server.url, timeout=10)
        chat = cached(provider, cache=ResponseCache(tmp_path), accounting=MethodUsage())
        llm = make_policy("llm", chat, seed=5)
        cases = pilot_cases(3, seed=0, policy=llm)
        scripted = pilot_cases(3, seed=0)
        assert [w.clean for w in cases] == [w.clean for w in scripted]
        assert [w.failed for w in cases] == [w.failed for w in scripted]
        out = run_pilot(cases, policy=llm)
        assert out == run_pilot(scripted)  # same families, same calls as the scripted agents
        sent = len(server.requests)
        assert sent > 0
        body = server.requests[0]
        assert body["options"]["seed"] == request_seed(5, "single-000/A0/record")
        assert run_pilot(pilot_cases(3, seed=0, policy=llm), policy=llm) == out
        assert len(server.requests) == sent  # the rerun is served by the cache


def test_llm_planner_failure_is_a_clean_run_failure_counted_apart(tmp_path):
    def bad_planner(messages):
        return "no plan" if "Task:" in messages[-1]["content"] else exact_agents(messages)

    with FakeOllamaServer(bad_planner) as server:
        provider = provider_from_spec("ollama:fake", host=server.url, timeout=10)
        llm = make_policy("llm", cached(provider, cache=ResponseCache(tmp_path), accounting=MethodUsage()))
        cases = pilot_cases(2, seed=0, policy=llm)
        assert all(w.clean["A0"] is None and not w.clean_correct for w in cases)
        out = run_pilot(cases, policy=llm)
        assert out["clean_failures"] == 2 and out["n_cases"] == 2
        # the clean plan is unusable, so no replay reaches a solver: no call, no repair, FEM only trivially 1
        assert out["gcjr"]["mean_calls"] == out["exhaustive"]["mean_calls"] == 0
        assert out["planted_recovered"] == 0 and out["gcjr"]["fem"] == 1.0
        assert out["gcjr"]["fem_regular"] != out["gcjr"]["fem_regular"]  # NaN: no regular case left
        assert len(server.requests) == 2 * 2  # the planner's chat and its one retry, per recorded case


# --- the chapter's pilot section: hand-built cases, the table, the claims ------------------------


def test_hand_pilot_cases_take_the_kind_of_their_faults():
    assert hand_pilot_case({"B0": 2, "C0": 1}, "3 * 4", "5 * 6").case.family == fam({"B0", "C0"})
    assert hand_pilot_case({"C0": 1}, "3 * 4", "5 * 6").case.kind == "single"
    dual = hand_pilot_case({"B1": 4, "C1": 5}, "7 * 8 + 3")
    assert dual.task == dual_task("7 * 8 + 3") and dual.case.family == fam({"B1"}, {"C1"})
    assert hand_task("3 * 4", "5 * 6") == split_task("3 * 4", "5 * 6")


def test_the_graph_screens_out_pairs_on_hand_built_cases():
    """Joint-AND: the pairs with the planner are never replayed; Alternative-OR: both pairs are pruned."""
    joint = run_pilot([hand_pilot_case({"B0": 2, "C0": 1}, "3 * 4", "5 * 6")])
    assert (joint["gcjr"]["mean_calls"], joint["exhaustive"]["mean_calls"]) == (R * 6, R * 10)
    assert joint["saving"] == pytest.approx(0.4)
    # dual task 7 * 8 + 3: candidates A0, B0, B1, C0, C1; singletons cost A0 5, B0 2, B1 1, C0 2, C1 1 per seed.
    # B1 and C1 succeed alone, so of the four admitted B-C pairs only {B0, C0} survives pruning (B1, C1, D0: 3);
    # pairs with A0 or within one solver are never admitted. GCJR pays 11 + 3 per seed, exhaustive search 37.
    alt = run_pilot([hand_pilot_case({"B1": 4, "C1": 5}, "7 * 8 + 3")])
    assert (alt["gcjr"]["mean_calls"], alt["exhaustive"]["mean_calls"]) == (R * 14, R * 37)
    assert alt["gcjr"]["fem"] == alt["exhaustive"]["fem"] == 1.0


def test_pilot_table_sits_beside_the_paper_and_keeps_the_counts_apart(cases):
    paper = claims.published("gcjr-ablations", "pilot")
    assert (paper["gcjr"]["mean_calls"], paper["exhaustive"]["mean_calls"]) == (10.0, 21.0)
    assert round(1 - 10.0 / 21.0, 3) == paper["saving"]  # the paper's 52.4% is its own 1 - 10.0 / 21.0
    numbers = run_pilot(cases[:6])
    table = pilot_beside_paper(numbers, paper)
    assert table.loc["FEM, GCJR against exhaustive search"].tolist() == [1.0, 1.0]
    assert table.loc["mean model calls, exhaustive search", "paper"] == 21.0
    assert table.loc["saving, 1 - GCJR/exhaustive", "workbench"] == numbers["saving"]
    apart = table[table.index.str.startswith("shown apart")]
    assert len(apart) == 3 and apart["paper"].isna().all() and (apart["workbench"] == 0).all()


def test_pilot_claims_agree_for_scripted_agents_and_fail_on_a_broken_search(cases, monkeypatch):
    pilot_rows = lambda table: table[table["claim"].str.startswith("Pilot")].set_index("claim")  # noqa: E731
    good = pilot_rows(claims.compare("gcjr-ablations", {"pilot": run_pilot(cases[:6])}, {"pilot_policy": "scripted"}))
    asserted = good[good["holds"]]
    assert len(asserted) == 3 and (asserted["verdict"] == "holds").all()  # identities: checks, not agreements
    assert set(good.loc[~good["holds"], "kind"]) == {"not comparable"}
    with_llm = pilot_rows(claims.compare("gcjr-ablations", {"pilot": run_pilot(cases[:6])}, {"pilot_policy": "llm"}))
    assert (with_llm.loc[asserted.index, "verdict"] == "other parameters").all()
    # singleton-only GCJR misses the Joint-AND pair (FEM, RS@1); without minimality it returns the OR pair (MV)
    for config, broken_keys in ((ABLATIONS["singleton_only"], ("fem", "rs1")), (ABLATIONS["no_minimality"], ("mv",))):
        monkeypatch.setattr(experiment, "gcjr", functools.partial(gcjr, config=config))
        bad = run_pilot(cases[:6])
        table = claims.compare("gcjr-ablations", {"pilot": bad}, {"pilot_policy": "scripted"}).set_index("claim")
        for key in broken_keys:
            assert table.loc[claim_measuring(f"pilot.gcjr.{key}"), "verdict"] == "fails", (config, key)


def claim_measuring(key: str) -> str:
    (text,) = [c["claim"] for c in claims.chapter_claims("gcjr-ablations")["claims"] if c["measured"] == key]
    return text


def test_make_policy_passes_the_timeout_to_the_provider():
    policy = make_policy("llm", "ollama:qwen2.5:0.5b", timeout=7.5)
    assert policy.provider.provider.timeout == 7.5  # the Ollama provider behind the response cache
