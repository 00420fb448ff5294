"""The AgenticRAG-FP authors' released runs: the reader, the rescoring and the chapter section.

The format tests build small run files in a temporary folder, so they run
anywhere. The recomputation tests read the authors' four files from
``../shared/data/agenticrag_fp_runs`` (byte-identical to the pinned commit) when
that copy sits beside the clone, directly and served on 127.0.0.1 through the
registry; they are skipped without it.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rcakit import RcakitError, data, stats
from rcakit.claims import published
from rcakit.paths import project_root
from rcakit.rag import rescoring as rs
from rcakit.rag import text
from rcakit.rag.authors_runs import DATA_SET, parse_run, pinned_release, read_runs
from support.shared_data import serve

RUNS = project_root().parent / "shared" / "data" / "agenticrag_fp_runs"
needs_runs = pytest.mark.skipif(not RUNS.is_dir(), reason=f"no copy of the authors' runs at {RUNS}")
DIAGNOSERS = ["rule_based", "doctor_rag", "llm_judge", "propagation_aware", "suffix_regen"]


def meta(qid: str, depth: int, final: str, gold: str = "Port Karith", span: str = "New Ostion", **more) -> dict:
    """The metadata of one injected case, as the authors' files hold it."""
    fields = {
        "sample_id": qid,
        "question": f"question {qid}?",
        "reference_answer": gold,
        "final_answer": final,
        "original_span": gold,
        "corrupted_span": span,
        "strategy": "answer_fact",
        "absorption": text.classify_outcome(final, gold, span),
        "query_contaminated": False,
        "iterations_used": depth,
        "hop": depth,
    }
    return fields | more


def run_file(agent: str = "gpt-4o-mini", dataset: str = "hotpotqa", predicted: tuple[int, ...] = (1, 2)) -> dict:
    """A run with two failed cases at hop 1 (every diagnoser predicting ``predicted``) and one recovered."""
    failed = [meta(f"{agent}-{i}", 1, "New Ostion") for i in range(len(predicted))]
    return {
        "dataset": dataset,
        "provider": f"openai:{agent}",
        "judge": "claude:claude-haiku-4-5",
        "retriever": "bm25",
        "criterion": "hop",
        "diagnosers": DIAGNOSERS,
        "raw_by_depth": {
            "1": {
                "truth": [["retrieval", 1]] * len(predicted),
                "predictions": {d: [["retrieval", h, 10] for h in predicted] for d in DIAGNOSERS},
                "metadata": failed,
                "recovered_metadata": [meta(f"{agent}-r", 1, "Port Karith")],
            }
        },
    }


def write(folder: Path, name: str, record: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


# ---------------------------------------------------------------- the format


def test_a_run_file_reads_into_typed_cases_with_rcakit_diagnoser_names(tmp_path):
    (run,) = read_runs(write(tmp_path, "a.json", run_file(predicted=(1, 2))))
    assert (run.agent, run.judge, run.dataset, run.criterion) == ("gpt-4o-mini", "claude-haiku-4-5", "hotpotqa", "hop")
    assert run.diagnosers == ("rule_based", "coverage", "llm_judge", "propagation_aware", "suf_regen")
    assert [c.failed for c in run.cases] == [True, True, False]
    assert [c.hit("coverage") for c in run.failed()] == [True, False]
    assert run.cases[2].truth is None and run.cases[2].predictions == {}
    with pytest.raises(ValueError, match="failed case"):
        run.cases[2].hit("coverage")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda r: r.pop("criterion"), r"a\.json: missing field 'criterion'"),
        (lambda r: r.update(criterion="stage-ish"), r"criterion: 'stage-ish' is not one of hop, stage, both"),
        (lambda r: r.update(diagnosers=["oracle"]), r"diagnosers: 'oracle' is not one of"),
        (lambda r: r["raw_by_depth"].update({"x": {}}), r"raw_by_depth\['x'\]: a depth is a whole number from 1"),
        (
            lambda r: r["raw_by_depth"]["1"]["truth"].__setitem__(1, ["retrieval", -1]),
            r"raw_by_depth\['1'\]\.truth\[1\]: expected \[stage, hop\], got \['retrieval', -1\]",
        ),
        (
            lambda r: r["raw_by_depth"]["1"]["metadata"].pop(),
            r"raw_by_depth\['1'\]: 2 truths but 1 failed cases' metadata",
        ),
        (
            lambda r: r["raw_by_depth"]["1"]["predictions"]["llm_judge"].pop(),
            r"predictions\.llm_judge: expected a list of 2 \[stage, hop, cost\]",
        ),
        (
            lambda r: r["raw_by_depth"]["1"]["predictions"]["doctor_rag"].__setitem__(0, ["retrieval", 1, "many"]),
            r"predictions\.doctor_rag\[0\]: expected \[stage, hop, cost\]",
        ),
        (
            lambda r: r["raw_by_depth"]["1"]["recovered_metadata"][0].update(query_contaminated="no"),
            r"recovered_metadata\[0\]: query_contaminated: expected bool, got 'no'",
        ),
        (
            lambda r: r["raw_by_depth"]["1"]["metadata"][0].pop("final_answer"),
            r"metadata\[0\]: missing field 'final_answer'",
        ),
    ],
)
def test_a_file_not_in_the_format_is_one_line_naming_the_file_and_the_field(tmp_path, damage, message):
    record = run_file()
    damage(record)
    with pytest.raises(RcakitError, match=message) as err:
        read_runs(write(tmp_path, "a.json", record))
    assert "\n" not in str(err.value) and str(tmp_path / "a.json") in str(err.value)


def test_a_folder_without_run_files_or_with_bad_json_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RcakitError, match="holds no .json files"):
        read_runs(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.json").write_bytes(b'{"dataset": "x",}')
    with pytest.raises(RcakitError, match="invalid JSON at line 1 .*a trailing comma"):
        read_runs(tmp_path / "bad")
    with pytest.raises(RcakitError, match="expected an object"):
        parse_run(["not", "a", "run"], "list.json")


# ---------------------------------------------------------------- the rescoring


def test_the_accuracy_bootstrap_draws_as_the_authors_do():
    """Python's random.Random(42), one index per draw, sorted, read at positions 25 and 975: an
    independent re-derivation of the resamples (numpy's generator gives other ends)."""
    hits = [True] * 26 + [False] * 18
    rng, n = random.Random(42), len(hits)
    draws = sorted(sum(hits[int(rng.random() * n)] for _ in range(n)) / n for _ in range(1000))
    assert stats.bootstrap_accuracy_ci(hits) == (26 / 44, draws[25], draws[975])
    assert stats.bootstrap_accuracy_ci(hits, seed=7) != stats.bootstrap_accuracy_ci(hits)


def test_pooling_order_follows_the_caption_and_changes_only_the_interval_ends(tmp_path):
    files = {
        "z.json": run_file("gpt-4o-mini", "hotpotqa", (1, 1, 2)),
        "a.json": run_file("claude-haiku-4-5", "musique", (2, 2, 1, 1)),
        "m.json": run_file("gpt-4o-mini", "musique", (1, 2)),
    }
    for name, record in files.items():
        write(tmp_path, name, record)
    runs = read_runs(tmp_path)
    assert [r.file for r in runs] == ["a.json", "m.json", "z.json"]
    caption = rs.pool(runs, "caption")
    assert [r.label for r in caption] == [
        "gpt-4o-mini / hotpotqa",
        "gpt-4o-mini / musique",
        "claude-haiku-4-5 / musique",
    ]
    assert rs.pool(runs, "files") == runs
    one, other = rs.accuracy(caption, [1])["coverage"]["1"], rs.accuracy(runs, [1])["coverage"]["1"]
    assert one["point"] == other["point"] == 5 / 9
    assert rs.hits(caption, "coverage", 1) == [True, True, False, True, False, False, False, True, True]
    with pytest.raises(ValueError, match="order"):
        rs.pool(runs, "random")


def test_printed_cells_and_the_ends_they_match():
    printed = rs.printed_cells({"llm_judge": {"hop 1": "0.59 [0.43, 0.73]", "hop 3": "0.33"}})
    assert printed == {("llm_judge", "1"): ("0.59", "0.43", "0.73")}
    assert rs.ends_matched({"llm_judge": {"1": {"point": 0.59, "lo": 0.4318, "hi": 0.7449}}}, printed) == 1
    assert rs.ends_matched({}, printed) == 0


@needs_runs
def test_the_authors_runs_give_the_papers_denominators_points_and_every_printed_interval_end():
    runs = rs.pool(read_runs(RUNS))
    assert rs.counts(runs, [1, 2, 3], failed_only=True) == {"1": 44, "2": 18, "3": 3}
    assert rs.counts(runs, [1, 2, 3], failed_only=False) == {"1": 106, "2": 68, "3": 20}
    cells = rs.accuracy(runs, [1, 2, 3])
    for name, by_hop in published("content-corruption", "table3").items():
        for hop, printed in by_hop.items():
            if name != "failed n":
                assert f"{cells[name][hop.removeprefix('hop ')]['point']:.2f}" == printed.split(" ")[0], (name, hop)
    printed = rs.printed_cells(published("content-corruption", "table3"))
    assert rs.ends_matched(cells, printed) == 16
    assert rs.ends_matched(rs.accuracy(read_runs(RUNS), [1, 2]), printed) == 14  # file-name order: other ends
    scan = rs.order_scan(runs, printed)
    assert len(scan) == 24 and (scan["ends reproduced"] == 16).sum() == 4
    assert scan["order"].iloc[0] == " → ".join(r.label for r in runs)  # the caption's order is among them


@needs_runs
def test_rcakits_outcome_rule_gives_every_stored_label_and_a_broken_rule_does_not(monkeypatch):
    frame = rs.cases_frame(read_runs(RUNS))
    assert len(frame) == 194 and rs.label_differences(frame) == 0
    monkeypatch.setattr(text, "RECALL_THRESHOLD", 0.5)  # a looser correctness test than the authors'
    broken = rs.cases_frame(read_runs(RUNS))
    assert rs.label_differences(broken) > 0


@needs_runs
def test_no_stored_field_gives_the_papers_3_of_129():
    readings = rs.contamination_readings(rs.cases_frame(read_runs(RUNS)))
    assert readings["every injected case"] == (12, 194) and readings["the gpt-4o-mini runs"] == (3, 74)
    assert readings["the resisted cases"] == (6, 129) and (3, 129) not in readings.values()


@needs_runs
def test_the_registry_pins_the_shared_copy_and_fetches_it_from_a_mirror(tmp_path, monkeypatch):
    ds = data.get(DATA_SET)
    assert ds.licence == "none declared" and ds.revision == "88040b91522fcccedd1ff25bc1fbc70c7ea1cd54"
    assert ds.base_url.startswith("https://raw.githubusercontent.com/anote-ai/Research-AgenticRAG/" + ds.revision)
    assert pinned_release(RUNS)

    def tree(path: str) -> bytes | None:
        local = RUNS / path.removeprefix("results/")
        return local.read_bytes() if path.startswith("results/") and local.is_file() else None

    monkeypatch.setenv("RCAKIT_DATA_DIR", str(tmp_path / "home"))
    with serve(tree) as url:
        monkeypatch.setenv("RCAKIT_DATA_URL", url)
        root = data.fetch(DATA_SET)
    assert root == tmp_path / "home" / DATA_SET / "results"
    assert data.locate(DATA_SET, "authors_runs") == root and pinned_release(root)
    copy_ = tmp_path / "copy"
    shutil.copytree(root, copy_)
    damaged = sorted(copy_.glob("*.json"))[0]
    record = json.loads(damaged.read_text(encoding="utf-8"))
    record["dataset"] = "hotpotqa "  # still a valid run, no longer the pinned bytes
    damaged.write_text(json.dumps(record), encoding="utf-8")
    assert len(read_runs(copy_)) == 4 and not pinned_release(copy_)


@needs_runs
def test_the_section_records_the_pinned_release_under_its_own_key_and_another_folder_apart(tmp_path):
    from rcakit.chapters.content_corruption import RescoredRun
    from rcakit.sections import collect

    class Arm:  # the simulated arm's two attributes the beside table reads
        cases = pd.DataFrame(
            {"depth": [1, 1, 3], "outcome": ["resisted", "derailed", "absorbed"], "skipped": [False] * 3}
        )
        result = {"accuracy": {"coverage": {"1": {"point": 1.0}}, "propagation_aware": {}, "suf_regen": {}}}

    numbers = collect(*RescoredRun.read(str(RUNS), Arm()).parts())
    assert set(numbers) == {"authors_runs"}
    assert numbers["authors_runs"]["ends_reproduced"] == 16 and numbers["authors_runs"]["label_differences"] == 0
    # §7.2's bridge-entity slice, recounted: 11 failed cases, all at hop 1; Suf-Regen 11, Propagation-Aware 8
    bridge = numbers["authors_runs"]["bridge_slice"]
    assert (bridge["n"], bridge["n_by_hop"]) == (11, {"1": 11, "2": 0, "3": 0})
    assert bridge["hits"]["suf_regen"] == 11 and bridge["hits"]["propagation_aware"] == 8
    assert bridge["hits"]["coverage"] == 11  # coverage names hop 1: the slice is a hop-1 slice
    two = tmp_path / "two"
    two.mkdir()
    for path in sorted(RUNS.glob("*.json"))[:2]:
        shutil.copy(path, two / path.name)
    parts = RescoredRun.read(str(two), Arm())
    assert set(collect(*parts.parts())) == {"authors_runs_other"}
    facts = parts.table3.facts["authors"]["failed_n"]
    assert facts["3"] == "— (no such case)" or facts["3"].isdigit()
    missing = RescoredRun.read(DATA_SET, Arm()) if not data.is_fetched(DATA_SET) else None
    if missing is not None:
        assert all(p.skipped and "rcakit data fetch agenticrag-fp-runs" in p.skipped for p in missing.parts())


def test_a_run_copied_with_every_case_recovered_still_builds_every_part(tmp_path):
    """A valid folder whose runs have no failed case: tables, no crash, prose facts present."""
    from rcakit.chapters.content_corruption import RescoredRun

    record = copy.deepcopy(run_file())
    entry = record["raw_by_depth"]["1"]
    entry["recovered_metadata"] += entry["metadata"]
    entry["metadata"], entry["truth"] = [], []
    entry["predictions"] = {d: [] for d in DIAGNOSERS}
    write(tmp_path / "runs", "a.json", record)

    class Arm:
        cases = pd.DataFrame({"depth": [1], "outcome": ["resisted"], "skipped": [False]})
        result = {"accuracy": {}}

    parts = RescoredRun.read(str(tmp_path / "runs"), Arm())
    assert parts.table3.facts["authors"]["failed_n"] == {"1": "0", "2": "— (no such case)", "3": "— (no such case)"}
    assert parts.beside.facts["authors"]["largest_gap"].startswith("resisted at hop 1")
    for part in parts.parts():
        part.show()


@needs_runs
@pytest.mark.chapters
def test_content_corruption_on_the_authors_runs_builds_its_page_and_records_every_published_cell(tmp_path):
    """The chapter at quick with ``-p authors_runs`` on the shared copy: exit 0, no glue a strict build would
    refuse, and every published claim of the section measured (the query-contamination share differs)."""
    import os
    import subprocess
    import sys

    from rcakit import claims
    from support.page_glue import problems

    env = {**os.environ, "RCAKIT_BOOK_DIR": str(tmp_path / "book"), "RCAKIT_RESULTS_DIR": str(tmp_path / "results")}
    argv = [sys.executable, "-m", "rcakit", "run", "content-corruption", "--quick", "-p", "authors_runs", str(RUNS)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert problems(tmp_path / "book" / "chapters" / "content_corruption.ipynb") == []
    measured = json.loads((tmp_path / "results" / "content-corruption.json").read_text(encoding="utf-8"))
    table = claims.compare("content-corruption", measured)
    mine = table[table["section"] == "The authors' own runs, rescored"]
    assert len(mine) == 37 and set(mine["verdict"]) == {"agrees", "differs", "holds"}  # holds: the label identity
    assert mine[mine["verdict"] == "differs"]["claim"].str.contains("3 of 129").all()


def test_the_bridge_slice_counts_only_failed_bridge_entity_cases_by_hop(tmp_path):
    """§7.2's slice from the records: a failed bridge-entity corruption counts (hits of each diagnoser),
    an answer-fact one or a recovered one does not."""
    from rcakit.chapters.content_corruption import _authors_bridge_section

    record = run_file(predicted=(1, 2))
    record["raw_by_depth"]["1"]["metadata"][1]["strategy"] = "bridge_entity"  # its diagnosers all say hop 2
    record["raw_by_depth"]["1"]["recovered_metadata"][0]["strategy"] = "bridge_entity"
    runs = read_runs(write(tmp_path, "a.json", record))
    section = _authors_bridge_section(runs, "authors_runs")
    bridge = section.numbers["authors_runs"]["bridge_slice"]
    assert (bridge["n"], bridge["n_by_hop"]) == (1, {"1": 1})
    assert bridge["hits"] == {"coverage": 0, "llm_judge": 0, "propagation_aware": 0, "suf_regen": 0}
    record["raw_by_depth"]["1"]["metadata"][0]["strategy"] = "bridge_entity"  # predicted hop 1: a hit
    section = _authors_bridge_section(read_runs(write(tmp_path, "a.json", record)), "authors_runs")
    assert section.numbers["authors_runs"]["bridge_slice"]["accuracy"]["suf_regen"] == 0.5
    assert section.facts["authors"]["bridge_suf_regen"] == "1 of 2"
