"""Tests for rcakit.trajectories: loaders, validation, generator, locators, metrics, strata and the release checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from rcakit import RcakitError
from rcakit.trajectories import (
    GeneratorConfig,
    HandoffTraceLocator,
    Label,
    Prediction,
    RandomLocator,
    Step,
    TerminalLocator,
    Trajectory,
    bin_of,
    expected_random_accuracy,
    generate_benchmark,
    load_longrca,
    load_who_and_when,
    normalise_role,
    published_strata,
    read_who_and_when,
    score_cases,
    shape_statistics,
    split_handoff,
    stratify,
    summarise,
    validate_path,
)
from rcakit.trajectories.metrics import official_step_hit, source_weighted_mae, who_and_when_official
from rcakit.trajectories.strata import STRATA
from support import FIXTURES, ROOT

FIXTURE = FIXTURES / "longrca_sample.jsonl"
RELEASE = FIXTURES / "longrca-bench"  # invented records in the Hugging Face layout
WHO_AND_WHEN = ROOT / ".." / "shared" / "data" / "who_and_when"
needs_who_and_when = pytest.mark.skipif(
    not WHO_AND_WHEN.is_dir(),
    reason="Who&When data not found at ../shared/data/who_and_when (not shipped with the project)",
)


def records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(RcakitError) as info:
        load_longrca(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- schema


def test_role_normalisation_strips_annotations_nfkc_case_and_space():
    assert normalise_role("Orchestrator (-> WebSurfer)") == "orchestrator"
    assert normalise_role("\uff37eb  Surfer ") == "web surfer"  # fullwidth W, doubled space
    # an annotation on a speaker name names the same agent (Magentic-One logs)
    assert normalise_role("Orchestrator (thought)") == "orchestrator"
    assert normalise_role("Orchestrator (termination condition)") == "orchestrator"
    assert normalise_role("Orchestrator (thought) (-> WebSurfer)") == "orchestrator"
    assert normalise_role("(system)") == "(system)"  # a name that is only an annotation stays a name
    assert Step(0, "Orchestrator (thought)", None, "").speaker == "Orchestrator"
    assert Step(0, "Orchestrator (thought)", None, "").recipient is None
    assert normalise_role(None) == "" and normalise_role("   ") == ""
    assert split_handoff("Planner (->Executor)") == ("Planner", "Executor")
    assert split_handoff("Planner") == ("Planner", None)


# ---------------------------------------------------------------- LongRCA loader


def test_fixture_loads_as_jsonl_json_array_and_folder(tmp_path):
    from_jsonl = load_longrca(FIXTURE)
    from_json = load_longrca(write_json(tmp_path / "all.json", records()))
    folder = tmp_path / "folder"
    folder.mkdir()
    for i, rec in enumerate(records()):
        write_json(folder / f"{i}.json", rec)
    from_folder = load_longrca(folder)
    assert [t.id for t in from_jsonl] == [t.id for t in from_json] == [t.id for t in from_folder]
    assert [t.steps for t in from_jsonl] == [t.steps for t in from_folder]


def test_fixture_fields_labels_sources_and_handoffs():
    swe, travel, web = load_longrca(FIXTURE)
    assert (swe.source, travel.source, web.source) == ("swebench", "travelplanner", "webarena")
    assert swe.label == Label("DiagnostAgent", 1, swe.label.reason) and swe.root_to_end == 4
    assert swe.handoffs[0].sender == "DiagnostAgent" and swe.handoffs[0].recipient == "ActionAgent"
    assert swe.task.startswith("Fix the failing")
    assert travel.label.role == "\uff37ebSurfer" and normalise_role(travel.label.role) in travel.roles
    assert web.label is None  # unlabelled runs load; they cannot be scored
    assert swe.roles == {"user", "diagnostagent", "actionagent", "judgeagent"}


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda r: r.pop("question_ID"), "question_ID: missing field"),
        (lambda r: r["history"][2].pop("content"), "history[2]: content: missing field"),
        (lambda r: r["history"][3].update(step=4), "history[3].step: 4, expected 3"),
        (lambda r: r.update(history=[]), "history: empty history"),
        (lambda r: r.update(mistake_step=6), "mistake_step: 6 is outside the trajectory (0..5)"),
        (lambda r: r.update(mistake_step=-1), "mistake_step: -1 is outside"),
        (lambda r: r.update(mistake_step="two"), "mistake_step: 'two' is not an integer"),
        (lambda r: r.update(mistake_step=1.5), "mistake_step: 1.5 is not an integer"),
        (lambda r: r.update(mistake_agent="Verifier"), "mistake_agent: 'Verifier' never appears"),
        (lambda r: r.update(mistake_agent=" "), "mistake_agent: empty role"),
        (lambda r: r.update(mistake_step="9" * 5000), "mistake_step: '99999"),
        (lambda r: r.pop("mistake_step"), "mistake_step: missing field"),
        (lambda r: r["history"][1].update(name=7), "history[1]: name: expected str, got int"),
    ],
)
def test_malformed_record_names_file_and_field(tmp_path, mutate, expected):
    rec = records()[0]
    mutate(rec)
    path = write_json(tmp_path / "bad.json", rec)
    message = error_of(path)
    assert message.startswith(str(path)) and expected in message


def test_invalid_utf8_and_json_are_reported_per_file_and_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"question_ID": "x\xff"}')
    assert error_of(path) == f"{path}: invalid UTF-8 at byte 18"
    broken = tmp_path / "broken.json"
    broken.write_text('{"question_ID": ', encoding="utf-8")
    assert "invalid JSON" in error_of(broken)
    mixed = tmp_path / "mixed.jsonl"
    lines = FIXTURE.read_bytes().splitlines()
    mixed.write_bytes(lines[0] + b"\n" + b'{"x": "\xc3"}' + b"\n" + lines[1] + b"\n")
    n_good, errors = validate_path(mixed)
    assert n_good == 2 and errors == [f"{mixed}:2: invalid UTF-8 at byte 7"]


def test_validate_counts_good_records_and_keeps_every_error(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    good, bad1, bad2 = records()[0], records()[1], records()[0]
    bad1["history"][4]["step"] = 9
    bad2["mistake_agent"] = "Nobody"
    for name, rec in [("a", good), ("b", bad1), ("c", bad2)]:
        write_json(folder / f"{name}.json", rec)
    n_good, errors = validate_path(folder)
    assert n_good == 1 and len(errors) == 2
    assert errors[0].startswith(str(folder / "b.json")) and "history[4].step" in errors[0]
    assert "(and 1 more)" in error_of(folder)
    with pytest.raises(RcakitError, match="no such file"):
        validate_path(tmp_path / "missing.json")
    with pytest.raises(RcakitError, match="format"):
        validate_path(folder, fmt="csv")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(RcakitError, match="no records"):
        validate_path(tmp_path / "empty.jsonl")


# ---------------------------------------------------------------- Who&When loader


@needs_who_and_when
def test_who_and_when_both_subsets_map_into_the_schema():
    result = read_who_and_when(WHO_AND_WHEN)
    by_source = pd.Series([t.source for t in result.trajectories]).value_counts()
    assert by_source["Algorithm-Generated"] == 126 and by_source["Hand-Crafted"] == 58
    assert result.errors == []
    # log 24 labels "Orchestrator" and records only "Orchestrator (thought)" / "(termination condition)"
    log24 = next(t for t in result.trajectories if t.id == "Hand-Crafted/24")
    assert log24.label.role == "Orchestrator" and "Orchestrator" not in {s.name for s in log24.steps}
    assert normalise_role(log24.label.role) in log24.roles
    hand = next(t for t in result.trajectories if t.id == "Hand-Crafted/1")
    assert hand.label.step == 12 and hand.label.role == "WebSurfer" and hand.steps[0].role is None
    assert hand.handoffs[0] == type(hand.handoffs[0])(3, "Orchestrator", "WebSurfer")
    algo = next(t for t in result.trajectories if t.id == "Algorithm-Generated/1")
    assert algo.steps[0].name == "Excel_Expert" and algo.steps[0].role == "assistant"
    assert all(0 <= t.label.step < len(t) for t in result.trajectories)


@needs_who_and_when
def test_who_and_when_one_subset_and_strict_loading():
    algo = load_who_and_when(WHO_AND_WHEN, subset="Algorithm-Generated")
    assert len(algo) == 126 and {t.source for t in algo} == {"Algorithm-Generated"}
    assert len(load_who_and_when(WHO_AND_WHEN / "Algorithm-Generated")) == 126
    assert len(load_who_and_when(WHO_AND_WHEN, subset="Hand-Crafted")) == 58
    with pytest.raises(RcakitError, match="subset"):
        load_who_and_when(WHO_AND_WHEN, subset="Handcrafted")
    assert validate_path(WHO_AND_WHEN) == (184, [])


# ---------------------------------------------------------------- metrics


def _traj(tid: str, source: str, length: int, role: str, step: int) -> Trajectory:
    names = ["User", "Planner (-> Executor)", "Executor", "Verifier"]
    steps = tuple(Step(i, names[min(i, 3)] if i < 4 else "Executor", None, f"s{i}") for i in range(length))
    return Trajectory(tid, source, "task", steps, Label(role, step))


def test_metrics_on_hand_computed_cases():
    trajs = [
        _traj("a", "A", 20, "Planner", 1),
        _traj("b", "A", 20, "Executor", 10),
        _traj("c", "A", 20, "Executor", 10),
        _traj("d", "B", 30, "Verifier", 3),
        _traj("e", "B", 30, "Executor", 20),
    ]
    preds = [
        Prediction("planner (-> Executor)", 1),  # role right (suffix stripped), exact
        Prediction("Executor", 14),  # role right, |err| 4
        Prediction("Ghost", "abc"),  # role absent from trajectory, step invalid
        Prediction(None, 30),  # no role, step out of range
        Prediction("Planner", 12),  # role wrong, |err| 8
    ]
    cases = score_cases(trajs, preds)
    summary = summarise(cases)
    assert summary["role_acc"] == pytest.approx(2 / 5)
    assert summary["exact"] == pytest.approx(1 / 5)
    assert summary["within5"] == pytest.approx(2 / 5)
    # source A: N=3, valid errors 0 and 4 -> MAE 2; source B: N=2, valid error 8 -> MAE 8
    assert summary["mae"] == pytest.approx((3 * 2 + 2 * 8) / 5)
    assert summary["n"] == 5 and cases["valid"].tolist() == [True, True, False, False, True]


def test_mae_skips_a_source_without_valid_outputs_and_bool_is_not_a_step():
    trajs = [_traj("a", "A", 10, "Planner", 2), _traj("b", "B", 10, "Planner", 2)]
    cases = score_cases(trajs, [Prediction("Planner", 5), Prediction("Planner", True)])
    assert source_weighted_mae(cases) == pytest.approx(3.0)
    assert not cases["valid"].iloc[1]


def test_official_substring_scorer_differs_from_strict():
    assert official_step_hit("12", 1) and official_step_hit(21, 1) and not official_step_hit(None, 1)
    trajs = [_traj("a", "A", 20, "Executor", 1), _traj("b", "A", 20, "Executor", 12)]
    preds = [Prediction("Executor", 12), Prediction("the Executor agent", 12)]
    cases = score_cases(trajs, preds)
    assert cases["exact"].tolist() == [False, True] and cases["exact_official"].tolist() == [True, True]
    assert who_and_when_official(trajs, preds) == {"agent": 1.0, "step": 1.0, "n": 2}
    assert summarise(cases)["role_acc"] == 0.5  # strict role: "the Executor agent" is not a recorded role


# ---------------------------------------------------------------- strata


def test_bin_edges_are_right_closed():
    lengths = bin_of([100, 101, 200, 201, 400, 401], "length")
    assert list(lengths) == ["<=100", "101-200", "101-200", "201-400", "201-400", ">400"]
    distances = bin_of([0, 10, 11, 50, 51, 100, 101], "distance")
    assert list(distances) == ["<=10", "<=10", "11-50", "11-50", "51-100", "51-100", ">100"]
    with pytest.raises(RcakitError, match="by"):
        bin_of([1], "width")


def test_stratify_counts_and_wilson_match_statsmodels():
    cases = pd.DataFrame(
        {
            "length": [50, 90, 150, 150, 150, 500],
            "root_to_end": [0] * 6,
            "exact": [True, False, True, True, False, False],
        }
    )
    table = stratify(cases, "length")
    assert table["n"].tolist() == [2, 3, 0, 1]
    lo, hi = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert table.loc["101-200", "acc"] == pytest.approx(2 / 3)
    assert (table.loc["101-200", "lo"], table.loc["101-200", "hi"]) == pytest.approx((lo, hi))
    assert np.isnan(table.loc["201-400", "acc"])


def test_published_tables_recover_counts_and_catch_typos():
    rcta = published_strata({"RCTA": [30.3, 20.3, 20.2, 31.0]}, [393, 467, 238, 42], STRATA["length"][2])
    assert rcta["k"].tolist() == [119, 95, 48, 13] and rcta["k"].sum() == 275  # 275/1140 = 24.1% (Table 4)
    with pytest.raises(RcakitError, match="whole number"):
        published_strata({"RCTA": [30.35, 20.3, 20.2, 31.0]}, [393, 467, 238, 42], STRATA["length"][2])


# ---------------------------------------------------------------- generator


def test_generator_invariants_and_determinism():
    cfg = GeneratorConfig(n=150)
    bench = generate_benchmark(7, cfg)
    assert [t.steps for t in bench[:5]] == [t.steps for t in generate_benchmark(7, GeneratorConfig(n=5))]
    for t in bench:
        assert 0 <= t.label.step < len(t) and 20 <= len(t) <= 728
        assert normalise_role(t.label.role) in t.roles
        assert [s.index for s in t.steps] == list(range(len(t)))
        root = t.steps[t.label.step]
        if t.meta["kind"] == "handoff":
            assert root.recipient is not None and normalise_role(root.speaker) == normalise_role(t.label.role)
        else:
            assert root.recipient is None and root.name == t.label.role
        assert t.meta.get("decoy_step", -1) < t.label.step


def test_generator_calibration_is_near_the_published_shape():
    stats = shape_statistics(generate_benchmark(0, GeneratorConfig(n=600)))
    assert abs(stats["length_median"] - 145) <= 15 and abs(stats["root_to_end_median"] - 48) <= 12
    assert abs(stats["root_step_median"] - 55) <= 15


def test_generator_rejects_bad_knobs():
    with pytest.raises(RcakitError, match="decoy_rate"):
        GeneratorConfig(decoy_rate=1.5)


# ---------------------------------------------------------------- locators


def test_handoff_trace_finds_a_planted_handoff_root_that_terminal_misses():
    steps = [
        ("User", "Book the cheapest flight."),
        ("Planner (-> Executor)", "Search fares with `sort_key=price_desc` and book the first."),
        ("Executor", "Searching with `sort_key=price_desc`."),
        ("Tool", "Returned 20 flights."),
        ("Executor", "Error: request timed out; retrying."),
        ("Executor", "Retry succeeded."),
        ("Executor", "Booked the first flight."),
        ("Verifier", "Error: booked fare is the most expensive; `sort_key=price_desc` was used."),
        ("Verifier", "Final evaluation: task failed."),
    ]
    rows = tuple(Step(i, n, None, c) for i, (n, c) in enumerate(steps))
    traj = Trajectory("t", "hand", "task", rows, Label("Planner", 1))
    assert HandoffTraceLocator().locate(traj) == Prediction("Planner", 1)
    assert TerminalLocator().locate(traj).step == 8


def test_handoff_trace_beats_terminal_on_clean_planted_handoff_roots():
    clean = GeneratorConfig(n=300, decoy_rate=0.0, distractor_rate=0.0, handoff_share=1.0, signal_clarity=1.0)
    bench = generate_benchmark(3, clean)
    far = [t for t in bench if t.meta["kind"] == "handoff" and t.root_to_end > 10]
    trace = summarise(score_cases(far, HandoffTraceLocator().locate_all(far)))
    terminal = summarise(score_cases(far, TerminalLocator().locate_all(far)))
    assert len(far) > 150 and trace["exact"] > 0.9 and terminal["exact"] == 0.0
    assert trace["role_acc"] > 0.9


def test_random_locator_matches_its_analytic_expectation():
    bench = generate_benchmark(1, GeneratorConfig(n=40))
    expected = expected_random_accuracy(bench, k=5)
    scores = [summarise(score_cases(bench, RandomLocator(s).locate_all(bench))) for s in range(150)]
    assert np.mean([x["within5"] for x in scores]) == pytest.approx(expected["step"], abs=0.01)
    assert np.mean([x["role_acc"] for x in scores]) == pytest.approx(expected["role"], abs=0.015)
    short = _traj("a", "A", 10, "Planner", 0)
    assert expected_random_accuracy([short], k=0)["step"] == pytest.approx(0.1)
    assert expected_random_accuracy([short], k=5)["step"] == pytest.approx(0.6)
    assert expected_random_accuracy([short])["role"] == pytest.approx(1 / 4)
    first = RandomLocator(5).locate(bench[0])
    assert RandomLocator(5).locate_all(bench[::-1])[-1] == first  # independent of list order


# ---------------------------------------------------------------- folder entries that are not good files


def _good_who_and_when_log(steps=3, step="1") -> dict:
    history = [{"role": "User" if i == 0 else "Planner", "content": f"turn {i}"} for i in range(steps)]
    return {"question": "q", "history": history, "mistake_agent": "Planner", "mistake_step": step}


def _loads_within(seconds: float, fn):
    """Run ``fn`` in a worker thread; fail (instead of hanging the suite) if it blocks."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"loading blocked for more than {seconds} s")
    finally:
        pool.shutdown(wait=False)


def test_bad_folder_entries_are_reported_one_per_line_and_never_block(tmp_path, monkeypatch):
    import os

    from rcakit.trajectories import reading

    folder = tmp_path / "Hand-Crafted"
    folder.mkdir()
    write_json(folder / "1.json", _good_who_and_when_log())
    write_json(folder / "2.json", _good_who_and_when_log(step="4" * 5000))  # a 5,000-digit step as a string
    (folder / "3.json").write_text('{"question": "q", "mistake_step": ' + "9" * 5000 + "}", encoding="utf-8")
    (folder / "4.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    os.symlink(folder / "missing.json", folder / "5.json")  # dangling
    os.symlink(folder / "6.json", folder / "6.json")  # a loop onto itself
    os.mkfifo(folder / "7.json")  # opening this for reading would block forever
    unreadable = write_json(folder / "8.json", _good_who_and_when_log())
    unreadable.chmod(0)
    real_open = os.open

    def refusing_open(path, flags, *args):  # root reads a mode-000 file, so refuse it as a non-root user's kernel would
        if Path(path) == unreadable:
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(reading.os, "open", refusing_open)
    write_json(folder / "9.json", _good_who_and_when_log())

    result = _loads_within(10, lambda: read_who_and_when(folder))
    assert len(result.trajectories) == 2 and len(result.errors) == 7
    assert all("\n" not in line and len(line) < 300 for line in result.errors)
    by_file = {Path(line.split(":")[0]).name: line for line in result.errors}
    assert "mistake_step: '4444" in by_file["2.json"] and "is outside the trajectory" in by_file["2.json"]
    assert "a number with more than 4300 digits" in by_file["3.json"]
    assert "nested too deeply" in by_file["4.json"]
    assert by_file["5.json"].endswith("dangling symbolic link")
    assert by_file["6.json"].endswith("symbolic link loop")
    assert by_file["7.json"].endswith("not a regular file (a FIFO)")
    assert by_file["8.json"].endswith("cannot read: Permission denied")
    assert result.summary(folder) == f"{folder}: 2 good records, 7 bad"
    n_good, errors = _loads_within(10, lambda: validate_path(folder))
    assert n_good == 2 and errors == result.errors


def test_a_fifo_or_dangling_link_given_directly_is_one_error_not_a_hang(tmp_path):
    import os

    fifo = tmp_path / "runs.jsonl"
    os.mkfifo(fifo)
    assert _loads_within(10, lambda: validate_path(fifo)) == (0, [f"{fifo}: not a regular file (a FIFO)"])
    dangling = tmp_path / "gone.json"
    os.symlink(tmp_path / "nowhere.json", dangling)
    with pytest.raises(RcakitError, match="gone.json: dangling symbolic link$"):
        validate_path(dangling)


def test_missing_data_paths_are_one_line_errors_naming_them(tmp_path, monkeypatch):
    from rcakit import data

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "empty-home"))
    missing = tmp_path / "who_and_wen"
    calls = (
        lambda: validate_path(missing),
        lambda: read_who_and_when(missing),
        lambda: data.locate(str(missing), "who_and_when_path"),
    )
    for call in calls:
        with pytest.raises(RcakitError) as info:
            call()
        assert str(missing) in str(info.value) and "\n" not in str(info.value)
    # only a data set name may be absent: then there is nothing to load, and no error
    assert data.locate("who-and-when", "who_and_when_path") is None
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(RcakitError, match="is not a folder"):
        read_who_and_when(data.locate(str(tmp_path / "file"), "who_and_when_path"))


def test_a_valid_log_without_any_error_word_is_located_by_every_offline_locator(tmp_path):
    from rcakit.trajectories import error_word, offline_locators

    folder = tmp_path / "Algorithm-Generated"
    folder.mkdir()
    log = {
        "question": "Which city?",
        "history": [
            {"name": "Planner", "role": "assistant", "content": "Plan: look it up."},
            {"name": "Searcher", "role": "assistant", "content": "It is Paris."},
            {"name": "Planner", "role": "assistant", "content": "TERMINATE"},
        ],
        "mistake_agent": "Searcher",
        "mistake_step": "1",
    }
    write_json(folder / "1.json", log)
    (traj,) = load_who_and_when(folder)
    assert all(error_word(s) is None for s in traj.steps)
    cases = score_cases([traj] * 4, [loc.locate(traj) for loc in offline_locators(0)])
    assert cases["valid"].all()
    assert TerminalLocator().locate(traj) == Prediction("Planner", 2)


# ---------------------------------------------------------------- the tracing locator's own role rule


def _trajectory(rows: list[tuple[str, str]], label=("Planner", 1)) -> Trajectory:
    return Trajectory("t", "hand", "task", tuple(Step(i, n, None, c) for i, (n, c) in enumerate(rows)), Label(*label))


def test_handoff_trace_role_is_voted_not_read_off_the_chosen_step():
    rows = [
        ("User", "Do the task."),
        ("Planner (-> Executor)", "Start."),
        ("Executor", "Using `y_key`."),  # the executor introduces `y_key` itself: the earliest introduction
        ("Executor", "Error with `y_key`."),
        ("Planner (-> Executor)", "Now use `x_key`."),  # the instruction carries `x_key`
        ("Executor", "Error: `x_key` failed."),
        ("Executor", "Error again: `x_key` mismatch."),
    ]
    prediction = HandoffTraceLocator().locate(_trajectory(rows))
    # the step is the earliest introduction (the executor's step 2); the role is the planner's two votes to one
    assert prediction == Prediction("Planner", 2)
    one_each = rows[:6]
    assert HandoffTraceLocator().locate(_trajectory(one_each)) == Prediction("Executor", 2)  # tie: earliest vote


def test_handoff_trace_without_candidates_blames_the_directing_role():
    rows = [
        ("User", "task"),
        ("Lead (-> Coder)", "write it"),
        ("Coder", "done"),
        ("Lead (-> Tester)", "test it"),
        ("Tester", "looks good"),
    ]
    assert HandoffTraceLocator().locate(_trajectory(rows)) == Prediction("Lead", 4)


# ---------------------------------------------------------------- official denominator


def test_official_columns_divide_by_the_official_count():
    from rcakit.trajectories.evaluation import overall_table

    trajs = [_traj("a", "A", 20, "Executor", 1), _traj("b", "A", 20, "Executor", 12)]
    cases = {"x": score_cases(trajs, [Prediction("Executor", 12), Prediction("Planner", 3)])}
    row = overall_table(cases, official=True, official_n=4).loc["x"]
    assert row["exact_official"] == pytest.approx(1 / 4) and row["agent_official"] == pytest.approx(1 / 4)
    assert row["n"] == 2 and row["n_official"] == 4
    assert overall_table(cases, official=True).loc["x", "exact_official"] == pytest.approx(1 / 2)
    with pytest.raises(RcakitError, match="official_n"):
        overall_table(cases, official=True, official_n=1)


# ------------------------------------------------------------ asserted and identity claims fail when the code breaks


def _bins_numbers() -> dict:
    from rcakit import claims
    from rcakit.trajectories import strata

    totals = {}
    for name, by in (("table7", "length"), ("table8", "distance")):
        table = claims.published("longrca-strata", name)
        long = strata.published_strata(table["accuracy"], table["counts"], STRATA[by][2])
        totals[by] = strata.published_total(long).to_dict()
    return {"published": {"bins_total": totals}}


def _verdicts(numbers: dict, prefix: str) -> list[str]:
    from rcakit import claims
    from rcakit.book import registry

    table = claims.compare("longrca-strata", numbers, registry.get("longrca-strata").defaults)
    return table[table["claim"].str.startswith(prefix)]["verdict"].tolist()


def test_bins_adding_back_to_table4_fail_when_the_count_recovery_breaks(monkeypatch):
    from rcakit.trajectories import strata

    assert _verdicts(_bins_numbers(), "RCTA exact root accuracy") == ["agrees", "agrees"]
    assert _verdicts(_bins_numbers(), "ECHO exact root accuracy") == ["agrees"]
    monkeypatch.setattr(strata, "successes_from_percent", lambda acc, n: int(acc * n / 100))  # floor, not round
    assert _verdicts(_bins_numbers(), "RCTA exact root accuracy") == ["differs", "differs"]
    monkeypatch.setattr(strata, "published_total", lambda long: long.groupby("method", sort=False)["k"].sum() / 1000)
    assert "differs" in _verdicts(_bins_numbers(), "ECHO exact root accuracy")


@needs_who_and_when
def test_every_log_scored_claims_fail_when_annotations_name_other_agents(monkeypatch):
    from rcakit.trajectories import evaluation, offline_locators, parsing, schema

    def numbers() -> dict:
        result = read_who_and_when(WHO_AND_WHEN)
        out = {}
        for subset in ("Hand-Crafted", "Algorithm-Generated"):
            ts = [t for t in result.trajectories if t.source == subset]
            out[subset] = evaluation.results_block(evaluation.evaluate(offline_locators(0), ts), strata=False)
        return {"who_and_when": out}

    assert _verdicts(numbers(), "Who&When") == ["holds", "holds"]

    def handoff_only(text):  # the LongRCA rule alone: strip only a trailing (-> X)
        return " ".join(schema.split_handoff(text)[0].casefold().split()) if isinstance(text, str) else ""

    monkeypatch.setattr(parsing, "normalise_role", handoff_only)
    assert _verdicts(numbers(), "Who&When") == ["fails", "holds"]  # log 24 is rejected: 57, not 58


# ---------------------------------------------------------------- shared definitions and the chapter's loops


def test_speakers_are_one_first_spelling_per_normalised_role_sorted_and_never_empty():
    names = ("user", "Planner (-> Executor)", "planner (thought)", "Executor", "")
    steps = tuple(Step(i, name, None, "") for i, name in enumerate(names))
    traj = Trajectory("t", "s", "task", steps, Label("Planner", 1))
    assert traj.speakers == ("Executor", "Planner", "user")
    assert {normalise_role(s) for s in traj.speakers} == traj.roles


def test_official_step_and_agent_checks_are_one_substring_rule():
    from rcakit.trajectories import official_agent_hit, official_hit

    assert official_step_hit is official_hit and official_agent_hit is official_hit
    assert official_agent_hit("WebSurfer 2", "WebSurfer") and not official_agent_hit("Web", "WebSurfer")
    assert official_step_hit(21, 1) and not official_step_hit(20, 1) and not official_agent_hit(None, "x")


def test_generator_and_locators_read_the_same_signals():
    from rcakit.trajectories import locators, signals, synthetic

    assert synthetic.ERROR_SIGNAL is signals.ERROR_SIGNAL is locators.ERROR_SIGNAL
    traj = _trajectory([("User", "Use `a_1`."), ("Executor", "Error: `a_1` and `b` failed"), ("Executor", "`x`")])
    assert signals.evidence_tokens(traj) == [{"a_1"}, {"a_1"}, set()]  # `b` and `x`: shorter than two characters


def test_knob_sweep_changes_one_knob_per_row_on_the_same_draw():
    from rcakit.trajectories import evaluation, offline_locators

    base = GeneratorConfig(n=1140, decoy_rate=0.5)
    sweep = evaluation.knob_sweep(offline_locators(0), base, 40, 7, knobs=[("decoy_rate", 0.0), ("length_scale", 0.3)])
    assert list(sweep.index) == ["chapter values", "decoy_rate = 0", "length_scale = 0.3"]
    direct = evaluation.evaluate(offline_locators(0), generate_benchmark(7, GeneratorConfig(n=40, decoy_rate=0.0)))
    assert sweep.loc["decoy_rate = 0"].to_dict() == evaluation.overall_table(direct)["exact"].to_dict()
    chapter = evaluation.evaluate(offline_locators(0), generate_benchmark(7, GeneratorConfig(n=40, decoy_rate=0.5)))
    assert sweep.loc["chapter values"].to_dict() == evaluation.overall_table(chapter)["exact"].to_dict()
    with pytest.raises(RcakitError, match="'n' is not a generator knob"):
        evaluation.knob_sweep(offline_locators(0), base, 10, 0, knobs=[("n", 5)])


def test_real_log_scoring_merges_the_analytic_random_baseline_and_the_margins():
    from rcakit.trajectories import evaluation, offline_locators

    trajs = [_traj("a", "A", 4, "Executor", 2), _traj("b", "A", 10, "Executor", 9)]
    scored = evaluation.score_real_logs(offline_locators(0), trajs, official_n=3)
    random = scored.numbers["random"]
    assert random["expected_exact"] == pytest.approx((1 / 4 + 1 / 10) / 2) and random["n_official"] == 3
    assert random["expected_within5"] == pytest.approx((4 / 4 + 6 / 10) / 2)
    assert random["expected_role"] == pytest.approx(1 / 4)  # User, Planner, Executor, Verifier
    assert scored.numbers["terminal"]["exact_official"] == pytest.approx(1 / 3)  # "9" in "9"; "3" lacks "2"
    assert set(scored.numbers) >= {"handoff_trace_gain", "handoff_trace_role_gap"}
    # the tracer's role - step gap beyond the one a uniform pick gets from the label space alone
    uniform = random["expected_role"] - random["expected_exact"]
    assert scored.numbers["handoff_trace_role_gap_over_random"] == pytest.approx(
        scored.numbers["handoff_trace_role_gap"] - uniform
    )


def test_load_report_names_every_rejected_record(tmp_path):
    from rcakit.trajectories import LoadResult

    result = LoadResult([_traj("a", "A", 4, "Executor", 2)], [f"{tmp_path}/x.json: history: missing"])
    text = result.report(str(tmp_path), shown_as="data")
    assert text.splitlines() == ["data: 1 good records, 1 bad", "rejected: data/x.json: history: missing"]
    assert result.by_source(["A", "B"]) == {"A": result.trajectories, "B": []}


# ---------------------------------------------------------------- the LongRCA Bench release layout


def test_release_layout_loads_from_the_root_the_records_folder_and_the_registry(tmp_path, monkeypatch):
    import hashlib
    import shutil

    from rcakit import data
    from rcakit.trajectories import paper_source, read_longrca, release_folder

    assert release_folder(RELEASE) == RELEASE / "data" / "full"
    assert release_folder(RELEASE / "data" / "full") == RELEASE / "data" / "full"
    loaded = read_longrca(release_folder(RELEASE))
    assert loaded.errors == [] and len(loaded.trajectories) == 7
    assert [len(t) for t in loaded.trajectories] == [12, 60, 130, 150, 240, 410, 90]
    assert [paper_source(t) for t in loaded.trajectories] == [
        "SWE-bench Pro",
        "Terminal Bench 2",
        "TravelPlanner",
        "TravelPlanner",
        "VitaBench",
        "WebArena Verified",
        "WebArena Verified",
    ]
    assert all(t.label.role in {"DiagnostAgent", "Orchestrator", "Planner"} for t in loaded.trajectories)
    # a fetched copy: the registry's root is the layout the fixture has, found through its lock file
    home = tmp_path / "home"
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(home))
    ds = data.get("longrca-bench")
    assert data.locate("longrca-bench", "longrca") is None
    shutil.copytree(RELEASE, home / ds.name)
    files = sorted(p.relative_to(home / ds.name).as_posix() for p in (home / ds.name).rglob("*") if p.is_file())
    digests = {
        f: {
            "sha256": hashlib.sha256((home / ds.name / f).read_bytes()).hexdigest(),
            "size": (home / ds.name / f).stat().st_size,
        }
        for f in files
    }
    lock = {"name": ds.name, "revision": ds.revision, "listing": files, "files": digests}
    data.lock_path(ds).write_text(json.dumps(lock), encoding="utf-8")
    located = data.locate("longrca-bench", "longrca")
    assert located == home / ds.name / "data" / "full"
    assert [t.id for t in read_longrca(release_folder(located)).trajectories] == [t.id for t in loaded.trajectories]


def paper_description() -> dict:
    from rcakit import claims

    return claims.published("longrca-strata", "release")


def paper_shaped_frame() -> pd.DataFrame:
    """1,140 rows with exactly the counts, steps, lengths, distances and bin sizes the paper gives."""
    paper = paper_description()
    sources = [s for s, n in paper["sources"].items() for _ in range(n)]
    first = np.full(393, 50)
    lengths = np.concatenate([first, np.full(467, 145), np.full(238, 300), np.full(41, 500), [728]])
    deficit = int(lengths.sum()) - paper["total_steps"]
    first[: deficit // 5] -= 5
    first[0] -= deficit % 5
    lengths = np.concatenate([first, lengths[393:]])
    distance = np.concatenate([np.full(256, 5), np.full(325, 48), np.full(235, 70), np.full(323, 183), [605]])
    return pd.DataFrame({"source": sources, "length": lengths, "root_to_end": distance})


def test_release_checks_match_a_release_shaped_as_the_paper_says_and_report_every_difference():
    from rcakit.trajectories import release_checks, release_shape
    from rcakit.trajectories.release import differences

    paper = paper_description()
    assert sum(paper["sources"].values()) == paper["trajectories"] == 1140
    assert sum(paper["length_bins"]) == sum(paper["distance_bins"]) == 1140
    exact = release_checks(paper_shaped_frame(), paper)
    assert exact.loc["total steps", "release"] == 178137 and exact.loc["median length", "release"] == 145
    assert exact.loc["mean length", "release"] == pytest.approx(178137 / 1140)
    assert differences(exact) == [] and exact["difference"].abs().max() < 0.05
    # one trajectory moved to a source the paper does not list, one step fewer
    shifted = paper_shaped_frame()
    shifted.loc[0, "source"], shifted.loc[1, "length"] = "mystery", shifted.loc[1, "length"] - 1
    changed = release_checks(shifted, paper)
    assert differences(changed) == ["trajectories from SWE-bench Pro", "trajectories from mystery", "total steps"]
    assert changed.loc["trajectories from mystery", "release"] == 1
    assert np.isnan(changed.loc["trajectories from mystery", "paper"])
    assert changed.loc["total steps", "difference"] == -1
    # the invented fixture differs everywhere, and the table says by how much
    checks = release_checks(release_shape(load_longrca(RELEASE / "data" / "full")), paper)
    assert checks["matches"].sum() == 0 and len(checks) == 21
    assert checks.loc["trajectories", "release"] == 7 and checks.loc["total steps", "release"] == 1092
    assert (checks.loc["maximum length", "release"], checks.loc["median length", "release"]) == (410, 130)
    assert checks.loc["trajectories from TravelPlanner", "release"] == 2
    assert checks.loc["length bin >400", "release"] == 1 and checks.loc["root-to-end bin >100", "release"] == 2
    assert checks.loc["maximum root-to-end", "release"] == 309


def test_preflight_accepts_a_data_set_name_fetched_or_not_and_refuses_a_missing_path(tmp_path, monkeypatch):
    from rcakit.book import runner

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "empty-home"))
    monkeypatch.setenv("RCAKIT_BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    for value in ("longrca-bench", str(RELEASE)):
        runner.preflight("longrca-strata", runner.run_parameters("longrca-strata", {"longrca": value}, quick=True))
    params = runner.run_parameters("longrca-strata", {"longrca": str(tmp_path / "nowhere")}, quick=True)
    with pytest.raises(RcakitError, match=r"^longrca-strata: parameter 'longrca': .*/nowhere does not exist$"):
        runner.preflight("longrca-strata", params)
