"""Tests for rcakit.trajectories.llm_locators, .rcta and the LLM part of .evaluation against an
in-process scripted model (no weights)."""

from __future__ import annotations

import json
import re

import pytest

from rcakit import RcakitError
from rcakit.llm import Accounting, NullProvider, ResponseCache, cached, request_seed
from rcakit.llm.prompts import Budget
from rcakit.trajectories import Label, Prediction, Step, Trajectory, score_cases
from rcakit.trajectories.llm_evaluation import (
    LLM_LOCATORS,
    compare_llm,
    cost_row,
    evaluate_llm,
    llm_subset,
    step_distribution,
)
from rcakit.trajectories.llm_locators import AllAtOnceLocator, BinarySearchLocator, StepByStepLocator
from rcakit.trajectories.rcta import RCTALocator
from support.llm_servers import ScriptedProvider

ROLES = ("Planner", "Executor", "Verifier")


def trajectory(n: int, root: int = 5, content: str = "did a thing", tid: str = "t/1") -> Trajectory:
    """``n`` steps: a task, then a Planner handoff to the Executor every 5th step, Executor work between."""
    steps = [Step(0, "User", "user", "Task: fix the bug.")]
    for i in range(1, n):
        name = "Planner (-> Executor)" if i % 5 == 1 else ("Verifier" if i % 5 == 0 else "Executor")
        steps.append(Step(i, name, "assistant", f"{content} {i}"))
    return Trajectory(tid, "test", "fix the bug", tuple(steps), Label("Executor", root))


def last(messages) -> str:
    return messages[-1]["content"]


def test_binary_search_asks_log2_questions_and_follows_the_answers_to_the_planted_step():
    root = 11

    def respond(messages):
        lo, mid = map(int, re.search(r"First half \(steps (\d+)-(\d+)\)", last(messages)).groups())
        return json.dumps({"half": "first" if lo <= root <= mid else "second"})

    model = ScriptedProvider(respond)
    traj = trajectory(16, root)
    prediction = BinarySearchLocator(model, seed=3).locate(traj)
    assert len(model.calls) == 4  # log2(16)
    assert prediction == Prediction(role=traj.steps[root].speaker, step=root)
    halves = [re.search(r"First half \(steps (\d+)-(\d+)\)", last(c["messages"])).groups() for c in model.calls]
    assert halves == [("0", "7"), ("8", "11"), ("8", "9"), ("10", "10")]
    assert {c["seed"] for c in model.calls} == {request_seed(3, "t/1")}


def test_step_by_step_stops_at_the_first_flagged_step_and_blames_its_speaker():
    model = ScriptedProvider(lambda m: '{"error": "yes"}' if "Current step:\n[7]" in last(m) else '{"error": "no"}')
    prediction = StepByStepLocator(model).locate(trajectory(20))
    assert len(model.calls) == 8  # steps 0..7, then stop
    assert prediction == Prediction(role="Executor", step=7)
    # the log so far holds every earlier step, the current one is shown apart
    assert "[6] Planner (-> Executor)" in last(model.calls[-1]["messages"]).split("Current step:")[0]


def test_step_by_step_without_a_flag_or_past_its_cap_gives_no_prediction():
    never = ScriptedProvider(lambda m: '{"error": "no"}')
    assert StepByStepLocator(never).locate(trajectory(6)) == Prediction()
    assert len(never.calls) == 6
    capped = StepByStepLocator(ScriptedProvider(lambda m: '{"error": "no"}'), max_questions=3)
    assert capped.locate(trajectory(30)) == Prediction()
    assert len(capped.chat.calls) == 3
    assert capped.inputs.counts() == {"truncated": 0, "segmented": 0, "unfinished": 1}


def test_two_bad_replies_abstain_and_the_invalid_prediction_scores_as_wrong(tmp_path):
    acct = Accounting()
    model = cached(ScriptedProvider(lambda m: "I think step 5"), ResponseCache(tmp_path), acct["all_at_once"])
    traj = trajectory(10, root=5)
    locator = AllAtOnceLocator(model)
    prediction = locator.locate(traj)
    assert prediction == Prediction()
    assert acct["all_at_once"].totals() == {
        "cases": 1,
        "calls": 2,
        "input_tokens": acct["all_at_once"].input_tokens,
        "output_tokens": 8,
        "abstentions": 1,
    }
    retry = model.provider.calls[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I think step 5"} and "not valid JSON" in retry[-1]["content"]
    scores = score_cases([traj], [prediction])
    assert not scores["exact"].iloc[0] and not scores["role_ok"].iloc[0]
    row = cost_row(locator, scores)
    assert (row["exact"], row["calls_per_case"], row["abstentions"], row["invalid"]) == (0.0, 2.0, 1, 1)


def test_all_at_once_validates_role_and_step_and_a_fixed_retry_is_kept():
    replies = iter(['{"role": "Executor", "step": 99}', '{"role": "Executor", "step": 5}'])
    model = ScriptedProvider(lambda m: next(replies))
    prediction = AllAtOnceLocator(model).locate(trajectory(10, root=5))
    assert prediction == Prediction(role="Executor", step=5)
    assert "between 0 and 9" in last(model.calls[1]["messages"])
    schema = model.calls[0]["json_schema"]["properties"]
    assert schema["role"]["enum"] == ["Executor", "Planner", "User", "Verifier"] and schema["step"]["maximum"] == 9


def test_an_over_long_trajectory_is_clipped_with_a_marker_and_reported():
    model = ScriptedProvider(lambda m: '{"role": "Executor", "step": 3}')
    model.context_window = 300
    locator = AllAtOnceLocator(model)
    short, long = trajectory(6, tid="short"), trajectory(40, content="word " * 60, tid="long")
    locator.locate_all([short, long])
    prompts = [c["messages"] for c in model.calls]
    assert "characters cut" not in last(prompts[0]) and "not shown" not in last(prompts[0])
    assert "more characters cut]" in last(prompts[1]) or "not shown" in last(prompts[1])
    assert all(model.count_tokens(p) <= 300 - locator.max_tokens for p in prompts)
    assert locator.inputs.truncated == {"long"} and locator.inputs.counts()["truncated"] == 1


def test_when_clipping_is_not_enough_later_steps_are_left_out_with_a_marker():
    model = ScriptedProvider(lambda m: '{"role": "Executor", "step": 3}')
    model.context_window = 500
    AllAtOnceLocator(model).locate(trajectory(300))
    prompt = last(model.calls[0]["messages"])
    kept = [int(i) for i in re.findall(r"^\[(\d+)\]", prompt, re.M)]
    assert kept == list(range(len(kept))) and 0 < len(kept) < 300  # the head, task first
    assert f"[{300 - len(kept)} items ([{len(kept)}] to [299]) not shown" in prompt


def test_budget_leaves_room_for_reply_and_retry_and_takes_the_smaller_cap():
    model = ScriptedProvider()
    model.context_window = 1000
    assert Budget(model, 32).limit == 1000 - 2 * 32 - 96 and Budget(model, 32, prompt_tokens=200).limit == 200
    assert Budget(ScriptedProvider(), 32).limit is None


def rcta_model(final_step: int, segment_pick=lambda a, b: a):
    def respond(messages):
        text = last(messages)
        seg = re.search(r"Segment \(steps (\d+)-(\d+)\)", text)
        if seg:
            a, b = map(int, seg.groups())
            return json.dumps({"purpose": "executing", "candidate": segment_pick(a, b)})
        return json.dumps({"role": "Planner", "step": final_step})

    return ScriptedProvider(respond)


def test_rcta_summarises_each_segment_traces_candidates_to_handoffs_and_attributes_once():
    steps = [Step(0, "User", "user", "Task: ship it.")]
    steps += [Step(i, "Executor", "assistant", f"working {i}") for i in range(1, 6)]
    steps += [Step(6, "Planner (-> Executor)", "assistant", "Use `v2_api` for the upload.")]
    steps += [Step(i, "Executor", "assistant", f"working {i}") for i in range(7, 12)]
    steps += [Step(12, "Executor", "assistant", "Upload failed: `v2_api` rejected the file.")]
    traj = Trajectory("r/1", "test", "ship it", tuple(steps), Label("Planner", 6))
    model = rcta_model(final_step=6)
    locator = RCTALocator(model, max_segment=5)
    prediction = locator.locate(traj)
    segs = locator.segments(traj)
    assert segs == [(0, 5), (5, 10), (10, 13)]
    assert len(model.calls) == len(segs) + 1 and prediction == Prediction(role="Planner", step=6)
    final = last(model.calls[-1]["messages"])
    # the rule-based candidate 12 is traced to the handoff at 6 that introduced its evidence
    assert "candidate [12] Executor (nearest handoff [6]; evidence first at [6] (instruction)): Upload failed" in final
    assert model.calls[-1]["json_schema"]["properties"]["step"]["enum"] == [0, 5, 6, 10, 12]
    assert locator.inputs.counts() == {"truncated": 0, "segmented": 0, "unfinished": 0}


def test_rcta_final_step_outside_the_candidates_is_retried_then_abstained():
    model = rcta_model(final_step=3)
    locator = RCTALocator(model)
    assert locator.locate(trajectory(12)) == Prediction()
    assert "must be one of the listed steps" in last(model.calls[-1]["messages"])


def test_rcta_splits_a_trajectory_the_window_cannot_hold_and_reports_it():
    model = rcta_model(final_step=1, segment_pick=lambda a, b: a + 1)
    model.context_window = 400
    locator = RCTALocator(model)
    traj = trajectory(60, content="word " * 40)
    locator.locate(traj)
    segs = locator.segments(traj)
    assert len(segs) > 1 and segs[0][0] == 0 and segs[-1][1] == 60
    assert all(a == b for (_, a), (b, _) in zip(segs, segs[1:], strict=False))  # consecutive, covering
    assert all(model.count_tokens(c["messages"]) <= 400 - locator.max_tokens for c in model.calls)
    assert locator.inputs.counts()["segmented"] == 1 and locator.inputs.counts()["truncated"] == 1


def test_seeds_subsets_roles_and_the_none_provider():
    assert request_seed(0, "a") == request_seed(0, "a") != request_seed(0, "b") != request_seed(1, "a")
    assert 0 <= request_seed(10**9, "x") < 2**31
    many = [trajectory(5, tid=f"t/{i}") for i in range(30)]
    picked = llm_subset(many, 4, seed=0)
    assert picked == llm_subset(many, 4, seed=0) and len(picked) == 4
    assert [many.index(t) for t in picked] == sorted(many.index(t) for t in picked)
    assert llm_subset(many, 50, seed=0) == many
    assert trajectory(7).speakers == ("Executor", "Planner", "User", "Verifier")
    with pytest.raises(RcakitError, match="provider"):
        AllAtOnceLocator(NullProvider())


def test_step_distribution_names_a_model_that_always_answers_the_same():
    trajs = [trajectory(10, root=r, tid=f"t/{r}") for r in (2, 5, 8)]
    model = ScriptedProvider(lambda m: '{"role": "Executor", "step": 1}')
    cases = {"all_at_once": score_cases(trajs, AllAtOnceLocator(model).locate_all(trajs))}
    row = step_distribution(cases).loc["all_at_once"]
    assert (row["modal_step"], row["modal_share"], row["distinct_steps"], row["invalid"]) == (1, 1.0, 1, 0)
    assert row["mean_position"] == pytest.approx(1 / 9)


def test_rcta_bounds_its_segment_calls_by_cutting_equal_segments():
    model = rcta_model(final_step=1, segment_pick=lambda a, b: a + 1)
    model.context_window = 400
    locator = RCTALocator(model, max_segments=3)
    traj = trajectory(60, content="word " * 40)
    assert locator.segments(traj) == [(0, 20), (20, 40), (40, 60)]
    locator.locate(traj)
    assert len(model.calls) == 4  # three segment summaries and one attribution
    assert all(model.count_tokens(c["messages"]) <= 400 - locator.max_tokens for c in model.calls)


def universal(messages) -> str:
    """A scripted model that answers every locator's question, always with the first option."""
    text = last(messages)
    if '"half"' in text:
        return '{"half": "first"}'
    if '"error"' in text:
        return '{"error": "yes"}'
    seg = re.search(r"Segment \(steps (\d+)-", text)
    if seg:
        return json.dumps({"purpose": "executing", "candidate": int(seg.group(1))})
    allowed = re.search(r"Steps you may choose: (\d+)", text)
    return json.dumps({"role": "Executor", "step": int(allowed.group(1)) if allowed else 0})


def test_evaluate_llm_charges_each_method_per_set_and_a_warm_rerun_calls_no_model(tmp_path, monkeypatch):

    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path))
    trajs = [trajectory(16, root=r, tid=f"t/{r}") for r in (0, 3)]
    model = ScriptedProvider(universal)
    acct = Accounting()
    cases, rows = evaluate_llm(model, trajs, acct, "toy", seed=1)
    assert sorted(acct) == sorted(f"toy.{name}" for name in LLM_LOCATORS) and list(rows) == list(LLM_LOCATORS)
    calls = len(model.calls)
    assert acct["toy.binary_search"].calls == 2 * 4 and acct["toy.step_by_step"].calls == 2
    assert rows["step_by_step"]["exact"] == 0.5  # "yes" at step 0 hits only the root at 0
    assert sum(acct[k].calls for k in acct) == calls and all(acct[k].cases == 2 for k in acct)
    warm = Accounting()
    again, rows_again = evaluate_llm(model, trajs, warm, "toy", seed=1)
    assert len(model.calls) == calls and all(warm[k].model_calls == 0 for k in warm)
    assert warm.to_dict() == acct.to_dict() and rows_again == rows


def test_rcta_drops_its_latest_candidates_when_the_final_question_does_not_fit():
    steps = [Step(0, "User", "user", "Task.")]
    for i in range(1, 40):  # a handoff to alternating roles every 4th step: many short rule segments
        name = f"Planner (-> {('Executor', 'Verifier')[i // 4 % 2]})" if i % 4 == 1 else "Executor"
        steps.append(Step(i, name, "assistant", f"error number {i} failed"))
    traj = Trajectory("many", "test", "t", tuple(steps), Label("Executor", 1))
    seen = []

    def respond(messages):
        text = last(messages)
        seg = re.search(r"Segment \(steps (\d+)-", text)
        if seg:
            return json.dumps({"purpose": "executing", "candidate": int(seg.group(1)) + 1})
        seen.append(re.search(r"Steps you may choose: ([\d, ]+)\.", text).group(1))
        return json.dumps({"role": "Executor", "step": 1})

    model = ScriptedProvider(respond)
    model.context_window = 375
    locator = RCTALocator(model, max_candidates=40, max_segments=2)
    assert locator.locate(traj) == Prediction(role="Executor", step=1)
    shown = [int(x) for x in seen[-1].split(", ")]
    offered = sorted({int(x) for x in seen[0].split(", ")} | set(shown))
    assert len(seen) == 1 and len(shown) >= 2  # only the question that fitted was asked
    full = locator.recall(traj, locator.summarise_segments(traj, 0), [set() for _ in traj.steps])
    assert len(shown) < len(full) and set(full[: len(shown)]) <= set(offered)  # the earliest candidates kept
    assert "many" in locator.inputs.truncated


def test_compare_llm_puts_the_offline_locators_beside_and_keeps_every_set(tmp_path, monkeypatch):
    from rcakit.trajectories import HandoffTraceLocator, TerminalLocator

    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path))
    sets = {"a": [trajectory(16, root=r, tid=f"a/{r}") for r in (0, 3, 5)], "b": [trajectory(12, tid="b/1")]}
    offline = [TerminalLocator(), HandoffTraceLocator()]
    run = compare_llm(ScriptedProvider(universal), sets, offline, Accounting(), max_cases=2, seed=1)
    assert list(run.cases) == ["a", "b"] and all(len(frame) == 2 for frame in run.cases["a"].values())
    assert list(run.table.loc["a"].index) == ["terminal", "handoff_trace", *LLM_LOCATORS]
    assert run.numbers["b"]["step_by_step"]["predicted_steps"]["modal_step"] == 0  # "yes" at the first question
    assert list(run.numbers) == ["a", "b"] and list(run.spread.index.get_level_values(0).unique()) == ["a", "b"]
    assert run.spread.loc["b"].loc["step_by_step"].to_dict() == run.numbers["b"]["step_by_step"]["predicted_steps"]
    with pytest.raises(TypeError):
        compare_llm(ScriptedProvider(universal), sets, offline, Accounting(), 2)  # max_cases is keyword-only


def test_cost_table_is_one_spelling_and_one_rounding_for_every_chapter():
    from rcakit.llm.accounting import PER_CASE, cost_table

    totals = {
        "judge": {"cases": 3, "calls": 7, "input_tokens": 100, "output_tokens": 11, "abstentions": 1},
        "idle": {"cases": 0, "calls": 0, "input_tokens": 0, "output_tokens": 0, "abstentions": 0},
    }
    table = cost_table(totals)
    assert list(table.columns[-len(PER_CASE) :]) == list(PER_CASE) and "seconds_per_case" not in table
    assert table.loc["judge", "calls_per_case"] == 2.333 and table.loc["judge", "tokens_per_case"] == 37.0
    judge = table.loc["judge"]
    assert judge["input_tokens_per_case"] == 33.333 and judge["output_tokens_per_case"] == 3.667
    assert table.loc["idle", PER_CASE].isna().all() and table.loc["idle", "calls"] == 0
    timed = cost_table({"judge": {**totals["judge"], "model_calls": 2, "cache_hits": 5, "model_seconds": 1.0}})
    assert timed.loc["judge", "seconds_per_case"] == 0.333
    acct = Accounting()
    acct["judge"].add_case()
    assert acct.table().equals(cost_table(acct.to_dict()))
