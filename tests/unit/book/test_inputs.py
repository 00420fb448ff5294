"""rcakit.book.inputs: every bad file, plug-in or address a chapter's parameters name is one line naming
the parameter and the file before a kernel starts; rejected records are counted on the terminal; a
corrupt LLM cache row names the cache and how to clear it."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from rcakit import RcakitError, parallel
from rcakit.book import inputs, registry
from rcakit.progress import WARNINGS_ENV
from support import FIXTURES

MUSIQUE = FIXTURES / "musique" / "musique_fixture.jsonl"
LONGRCA = FIXTURES / "longrca_sample.jsonl"
RELEASE = FIXTURES / "longrca-bench"


@pytest.fixture(autouse=True)
def empty_data_home(tmp_path, monkeypatch):
    """No data set is fetched, and warnings go to stderr (no runner collects them)."""
    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "data-home"))
    monkeypatch.delenv(WARNINGS_ENV, raising=False)
    monkeypatch.delenv(parallel.SCHEDULER_ENV, raising=False)


def params_of(chapter_id: str, **overrides) -> dict:
    chapter = registry.get(chapter_id)
    return {**{n: p.default for n, p in chapter.parameters.items()}, **overrides}


def refused(chapter_id: str, **overrides) -> str:
    """The one line ``check_parameters`` raises for these parameters."""
    with pytest.raises(RcakitError) as info:
        inputs.check_parameters(chapter_id, params_of(chapter_id, **overrides))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{chapter_id}: ")
    return message


# --- MuSiQue files (world) ---------------------------------------------------------------------------


def musique_lines() -> list[dict]:
    return [json.loads(line) for line in MUSIQUE.read_text(encoding="utf-8").splitlines()]


def write_musique(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_musique_fixture_and_the_synthetic_world_pass():
    inputs.check_parameters("coverage-collapse", params_of("coverage-collapse", world=str(MUSIQUE)))
    inputs.check_parameters("content-corruption", params_of("content-corruption"))


def test_a_malformed_musique_line_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(musique_lines()[0]) + "\n" + '{"id": "x", "question": \n', encoding="utf-8")
    message = refused("coverage-collapse", world=str(bad))
    assert f"parameter 'world': {bad}, line 2: not a MuSiQue question" in message


def test_a_musique_file_without_a_three_hop_question_is_refused(tmp_path):
    two = write_musique(tmp_path / "two.jsonl", [r for r in musique_lines() if r["id"].startswith("2hop")])
    message = refused("content-corruption", world=str(two))
    assert f"parameter 'world': {two} holds no answerable 3-hop question" in message
    assert "no answerable 4-hop question" in refused("coverage-collapse", world=str(MUSIQUE), hops=4)


@pytest.mark.parametrize(
    "decomposition, why", [(None, "missing field 'question_decomposition'"), ([], "question_decomposition is empty")]
)
def test_a_missing_or_empty_decomposition_names_the_line(tmp_path, decomposition, why):
    records = musique_lines()
    if decomposition is None:
        del records[2]["question_decomposition"]
    else:
        records[2]["question_decomposition"] = decomposition
    path = write_musique(tmp_path / "decomposition.jsonl", records)
    assert f"{path}, line 3: not a MuSiQue question ({why})" in refused("coverage-collapse", world=str(path))


def test_a_reference_to_a_later_hop_names_the_line_and_question(tmp_path):
    records = musique_lines()
    records[0]["question_decomposition"][1]["question"] = "Where was #5 born?"
    path = write_musique(tmp_path / "ref.jsonl", records)
    message = refused("coverage-collapse", world=str(path))
    assert f"{path}, line 1: question '{records[0]['id']}': hop 2 refers to #5, which is not an earlier hop" in message


def test_invalid_utf8_in_musique_names_the_file_and_line_never_a_raw_decode_error(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(MUSIQUE.read_bytes().splitlines()[0] + b"\n" + b'{"id": "caf\xe9"}\n')
    message = refused("coverage-collapse", world=str(path))
    assert message.endswith(f"parameter 'world': {path}, line 2: invalid UTF-8 at byte 11")
    assert "UnicodeDecodeError" not in message


def test_a_paragraph_without_a_title_names_the_line(tmp_path):
    records = musique_lines()
    del records[1]["paragraphs"][3]["title"]
    path = write_musique(tmp_path / "untitled.jsonl", records)
    assert f"{path}, line 2: not a MuSiQue question (paragraph 3 lacks 'title')" in refused(
        "content-corruption", world=str(path)
    )


def test_musique_by_name_must_be_fetched_and_a_fifo_never_blocks(tmp_path):
    assert "the data set 'musique' is not fetched; run 'rcakit data fetch musique'" in refused(
        "coverage-collapse", world="musique"
    )
    fifo = tmp_path / "questions.jsonl"
    os.mkfifo(fifo)
    assert f"{fifo}: not a regular file (a FIFO)" in refused("coverage-collapse", world=str(fifo))
    assert f"{tmp_path / 'nope.jsonl'} does not exist" in refused(
        "coverage-collapse", world=str(tmp_path / "nope.jsonl")
    )


# --- LongRCA files (longrca) -------------------------------------------------------------------------


def longrca_records() -> list[dict]:
    return [json.loads(line) for line in LONGRCA.read_text(encoding="utf-8").splitlines()]


def test_good_longrca_inputs_pass_and_an_unfetched_data_set_is_no_error():
    for value in (str(LONGRCA), str(RELEASE), "none", "longrca-bench"):
        inputs.check_parameters("longrca-strata", params_of("longrca-strata", longrca=value))


def test_a_longrca_file_with_no_usable_record_is_refused(tmp_path):
    records = longrca_records()
    for record in records:
        record["mistake_agent"] = "Nobody"
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    message = refused("longrca-strata", longrca=str(path))
    assert (
        f"parameter 'longrca': {path}: no labelled LongRCA record (0 unlabelled, 3 rejected; the first: "
        f"{path}:1: mistake_agent: 'Nobody' never appears" in message
    )
    unlabelled = tmp_path / "unlabelled.json"
    unlabelled.write_text(
        json.dumps([{k: v for k, v in r.items() if not k.startswith("mistake")} for r in longrca_records()]),
        encoding="utf-8",
    )
    assert "no labelled LongRCA record (3 unlabelled, 0 rejected)" in refused("longrca-strata", longrca=str(unlabelled))


def test_a_trailing_comma_is_named_as_such(tmp_path):
    path = tmp_path / "records.json"
    path.write_text("[\n" + ",\n".join(LONGRCA.read_text(encoding="utf-8").splitlines()) + ",\n]\n", encoding="utf-8")
    message = refused("longrca-strata", longrca=str(path))
    assert f"parameter 'longrca': {path}: no labelled LongRCA record" in message
    assert "invalid JSON at line 5 column 1: a trailing comma" in message
    from rcakit.trajectories import validate_path

    jsonl = tmp_path / "records.jsonl"
    jsonl.write_text(LONGRCA.read_text(encoding="utf-8").replace("}\n", "},\n", 1), encoding="utf-8")
    n_good, errors = validate_path(jsonl)
    assert n_good == 2 and len(errors) == 1
    assert errors[0].startswith(f"{jsonl}:1: invalid JSON at line 1 column ")
    assert errors[0].endswith(": a trailing comma")


def test_duplicate_question_ids_are_a_validation_error_and_counted_once(tmp_path):
    from rcakit.trajectories import read_longrca, release_shape, validate_path

    first = longrca_records()[0]
    path = tmp_path / "dup.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [first, *longrca_records()]), encoding="utf-8")
    n_good, errors = validate_path(path)
    assert n_good == 3
    assert errors == [f"{path}:2: question_ID: '{first['question_ID']}' repeats {path}:1"]
    loaded = read_longrca(path)
    assert len(release_shape(loaded.trajectories)) == 3  # the release statistics count each id once
    assert len({t.id for t in loaded.trajectories}) == 3


# --- Who&When folders (who_and_when_path) -------------------------------------------------------------


def who_log(steps: int = 3) -> dict:
    history = [{"role": "User" if i == 0 else "Planner", "content": f"turn {i}"} for i in range(steps)]
    return {"question": "q", "history": history, "mistake_agent": "Planner", "mistake_step": "1"}


def who_folder(root: Path, subsets=("Hand-Crafted", "Algorithm-Generated"), logs: int = 2) -> Path:
    for subset in subsets:
        (root / subset).mkdir(parents=True)
        for i in range(1, logs + 1):
            (root / subset / f"{i}.json").write_text(json.dumps(who_log()), encoding="utf-8")
    return root


def test_every_shape_the_who_and_when_loader_takes_loads_and_passes(tmp_path):
    from rcakit.trajectories import read_who_and_when

    both = who_folder(tmp_path / "both")
    one = who_folder(tmp_path / "one", subsets=("Hand-Crafted",))
    subset = who_folder(tmp_path / "direct", subsets=("Algorithm-Generated",)) / "Algorithm-Generated"
    for path, sources in [
        (both, {"Hand-Crafted", "Algorithm-Generated"}),
        (one, {"Hand-Crafted"}),
        (subset, {"Algorithm-Generated"}),
    ]:
        loaded = read_who_and_when(path)
        assert loaded.errors == [] and {t.source for t in loaded.trajectories} == sources
        assert len(loaded.trajectories) == 2 * len(sources)
        inputs.check_parameters("longrca-strata", params_of("longrca-strata", who_and_when_path=str(path)))
    inputs.check_parameters("longrca-strata", params_of("longrca-strata"))  # the default, not fetched: no error


def test_an_empty_subset_folder_is_refused(tmp_path):
    root = who_folder(tmp_path / "who")
    for log in (root / "Hand-Crafted").iterdir():
        log.unlink()
    message = refused("longrca-strata", who_and_when_path=str(root))
    assert message.endswith(f"parameter 'who_and_when_path': {root / 'Hand-Crafted'}: folder holds no .json files")
    assert "folder holds no .json files" in refused("longrca-strata", who_and_when_path=str(root / "Hand-Crafted"))


def test_a_folder_with_no_logs_or_no_good_log_is_refused(tmp_path):
    plain = tmp_path / "logs"
    plain.mkdir()
    (plain / "1.json").write_text(json.dumps(who_log()), encoding="utf-8")
    assert f"{plain}: no Who&When subset folder" in refused("longrca-strata", who_and_when_path=str(plain))
    root = who_folder(tmp_path / "who")
    for log in (root / "Algorithm-Generated").iterdir():
        log.write_text("{}", encoding="utf-8")
    message = refused("longrca-strata", who_and_when_path=str(root))
    folder = root / "Algorithm-Generated"
    assert f"{folder}: no Algorithm-Generated log (0 unlabelled, 2 rejected; the first: " in message


# --- rejected records on the terminal ----------------------------------------------------------------


def test_rejected_records_are_counted_on_stderr_one_line_per_file_and_a_summary(tmp_path, capsys):
    from rcakit.trajectories import read_longrca, read_who_and_when, validate_path

    root = who_folder(tmp_path / "who", logs=3)
    (root / "Hand-Crafted" / "2.json").write_text("{}", encoding="utf-8")
    (root / "Algorithm-Generated" / "3.json").write_text("[", encoding="utf-8")
    loaded = read_who_and_when(root)
    assert len(loaded.errors) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"rcakit: warning: {root / 'Hand-Crafted' / '2.json'}: 1 record rejected",
        f"rcakit: warning: {root / 'Algorithm-Generated' / '3.json'}: 1 record rejected",
        f"rcakit: warning: {root}: 2 of 6 records rejected in 2 files; 'rcakit validate {root}' prints why",
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n[]\n" + LONGRCA.read_text(encoding="utf-8"), encoding="utf-8")
    read_longrca(bad)
    assert capsys.readouterr().err.splitlines() == [
        f"rcakit: warning: {bad}: 2 records rejected",
        f"rcakit: warning: {bad}: 2 of 5 records rejected in 1 file; 'rcakit validate {bad}' prints why",
    ]
    read_longrca(LONGRCA)
    validate_path(bad)  # validate prints every error itself
    assert capsys.readouterr().err == ""


def test_inside_a_run_the_warnings_go_to_the_runners_file(tmp_path, monkeypatch, capsys):
    from rcakit.trajectories import read_longrca

    target = tmp_path / "warnings.log"
    monkeypatch.setenv(WARNINGS_ENV, str(target))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n" + LONGRCA.read_text(encoding="utf-8"), encoding="utf-8")
    read_longrca(bad)
    assert capsys.readouterr().err == ""
    assert len(target.read_text().splitlines()) == 2


# --- plug-in methods (methods) -----------------------------------------------------------------------


# --- the Dask scheduler (scheduler) ------------------------------------------------------------------


def test_the_scheduler_is_probed_within_the_preflight_timeout(monkeypatch):
    calls = []

    def probe(address: str, timeout: float) -> None:
        calls.append((address, timeout))
        raise RcakitError(f"scheduler: {address} did not answer a Dask handshake within {timeout:g} s")

    monkeypatch.setattr(parallel, "probe_scheduler", probe, raising=False)
    inputs.check_parameters("coverage-collapse", params_of("coverage-collapse"))  # "" and no environment
    assert calls == []
    message = refused("longrca-strata", scheduler="tcp://127.0.0.1:9")
    assert message == "longrca-strata: scheduler: tcp://127.0.0.1:9 did not answer a Dask handshake within 5 s"
    assert calls == [("tcp://127.0.0.1:9", inputs.PREFLIGHT_SECONDS)] and inputs.PREFLIGHT_SECONDS < 10
    monkeypatch.setenv(parallel.SCHEDULER_ENV, "tcp://127.0.0.1:8")
    assert "tcp://127.0.0.1:8" in refused("content-corruption")
    monkeypatch.setenv(parallel.SCHEDULER_ENV, "udp://x")
    assert f"{parallel.SCHEDULER_ENV}: expected '' or a Dask scheduler address" in refused("content-corruption")


def test_a_real_probe_refuses_a_closed_port_naming_it():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    message = refused("coverage-collapse", scheduler=address)
    assert message.startswith("coverage-collapse: scheduler: ") and address in message


# --- a corrupt LLM cache row -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        "[1, 2]",
        '{"text": "a"}',
        '{"text": 1, "input_tokens": 1, "output_tokens": 1}',
        '{"text": "a", "input_tokens": -1, "output_tokens": 1}',
        '{"text": "a", "input_tokens": 1e40, "output_tokens": 1}',
        '{"text": "a", "input_tokens": 10000000000000000000000000000000000000000, "output_tokens": 1}',
        '{"text": "\\ud800", "input_tokens": 1, "output_tokens": 1}',
    ],
)
def test_a_corrupt_cache_row_is_one_warning_naming_the_cache_and_a_miss_never_fatal(tmp_path, stored, capsys):
    from rcakit.llm import ResponseCache
    from rcakit.llm.base import Reply

    cache = ResponseCache(tmp_path / "cache")
    cache.put("request", Reply("fine", 3, 1))
    assert cache.get("request") == Reply("fine", 3, 1)
    with sqlite3.connect(cache.path) as con:
        con.execute("UPDATE responses SET reply = ?", (stored,))
    capsys.readouterr()
    assert cache.get("request") is None and cache.misses == 1  # the model is asked again
    err = capsys.readouterr().err
    assert err.startswith(f"rcakit: warning: {cache.path}: a corrupt row in the LLM cache (") and err.count("\n") == 1
    cache.put("request", Reply("asked again", 3, 1))  # the bad row is gone, so the new reply is kept
    assert cache.get("request") == Reply("asked again", 3, 1)


def test_a_key_named_twice_in_a_record_is_a_validation_error_not_the_last_value(tmp_path):
    """Issue 29, item 22: a Who&When file with ``mistake_step`` twice kept the last value silently."""
    from rcakit.trajectories import validate_path

    jsonl = tmp_path / "records.jsonl"
    first, *rest = LONGRCA.read_text(encoding="utf-8").splitlines()
    jsonl.write_text("\n".join([first[:-1] + ', "question_ID": "again"}', *rest]) + "\n", encoding="utf-8")
    n_good, errors = validate_path(jsonl)
    assert n_good == len(rest) and len(errors) == 1
    assert errors[0] == f"{jsonl}:1: invalid JSON: the key 'question_ID' appears twice in one object"
