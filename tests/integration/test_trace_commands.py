"""``rcakit validate`` on trace files, and ``rcakit run own-traces -p traces PATH`` on good and bad traces.

A malformed span file is one line naming it and exit status 2, before a kernel starts and with
nothing written; a folder of OTLP JSON written through the OpenTelemetry SDK and the TRAIL fixture
(traces with their labels) run the chapter, which scores the locators on exactly those traces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rcakit.trajectories import instrumented
from rcakit.trajectories.synthetic import GeneratorConfig, generate_benchmark
from support import FIXTURES

TRACES = FIXTURES / "traces"
WHERE = "resourceSpans[0].scopeSpans[0].spans[0]"


def rcakit(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "rcakit", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "RCAKIT_PROGRESS": "0", **(env or {})},
        timeout=600,
    )


def test_validate_counts_good_traces_and_names_each_bad_record(tmp_path):
    good = rcakit("validate", str(TRACES / "collector.jsonl"))
    assert (good.returncode, good.stdout) == (0, f"{TRACES / 'collector.jsonl'}: 1 good records, 0 bad\n")
    path = tmp_path / "spans.jsonl"
    path.write_text((TRACES / "collector.jsonl").read_text() + '{"resourceSpans": 3}\n')
    bad = rcakit("validate", str(path))
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [f"rcakit: error: {path}:3: resourceSpans: expected a list, got int"]
    assert bad.stdout == f"{path}: 1 good records, 1 bad\n"
    trail = rcakit("validate", str(TRACES / "trail" / "traces"), "--format", "trail")
    assert (trail.returncode, trail.stdout.split(": ")[-1]) == (0, "1 good records, 0 bad\n")


@pytest.mark.slow
def test_a_malformed_span_file_stops_the_run_before_a_kernel_with_one_line(tmp_path):
    path = tmp_path / "export.json"
    path.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": 7}]}]}]}\n')
    env = {"RCAKIT_BOOK_DIR": str(tmp_path / "book"), "RCAKIT_RESULTS_DIR": str(tmp_path / "results")}
    proc = rcakit("run", "own-traces", "--quick", "-p", "traces", str(path), env=env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    why = "traceId: expected a hex or base64 id, got None"
    assert line == f"rcakit: error: own-traces: parameter 'traces': {path}: {WHERE}: {why}"
    assert not (tmp_path / "book").exists() and not (tmp_path / "results").exists()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["sdk", "trail"])
def test_the_chapter_scores_the_locators_on_a_users_traces(source, tmp_path):
    if source == "sdk":
        folder = tmp_path / "exports"
        folder.mkdir()
        runs = generate_benchmark(7, GeneratorConfig(n=5))
        instrumented.write_traces(runs[:3], folder / "1.json", seed=7)
        instrumented.write_traces(runs[3:], folder / "2.jsonl", seed=8)
        args, n = ["-p", "traces", str(folder)], 5
    else:
        args, n = (
            ["-p", "traces", str(TRACES / "trail" / "traces"), "-p", "labels", str(TRACES / "trail" / "labels")],
            1,
        )
    env = {"RCAKIT_BOOK_DIR": str(tmp_path / "book"), "RCAKIT_RESULTS_DIR": str(tmp_path / "results")}
    proc = rcakit("run", "own-traces", "-p", "n_traces", "2", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "results" / "own-traces.json").read_text())
    bins = numbers["accuracy"]["handoff_trace"]["distance_bins"]
    assert sum(b["n"] for b in bins.values()) == n  # scored on the user's traces, not rcakit's own
    assert numbers["agreement"]["n"] == n
    assert numbers["round_trip"] == {"errors": 0, "identical": 1.0, "n": 2}
