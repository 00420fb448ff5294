"""Agent traces to trajectories: OTLP JSON and protobuf, Phoenix's span export, TRAIL, and rcakit's own recording.

The fixtures under ``tests/fixtures/traces`` hold one hand-written trace in each format (the same
trace for OTLP and Phoenix), with sibling spans listed out of start order, an agent named only by
its AGENT ancestor, a failed tool call and a GenAI ``gen_ai.output.messages`` step.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from rcakit import RcakitError
from rcakit.trajectories import instrumented, openinference, otlp
from rcakit.trajectories.loaders import detect_format, validate_path
from rcakit.trajectories.schema import Label
from rcakit.trajectories.spans import Span, hex_id
from rcakit.trajectories.synthetic import GeneratorConfig, generate_benchmark
from rcakit.trajectories.traces import check_traces, read_traces
from support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "traces"
TRACE = "5b8efff798038103d269b633813fc60c"
EXPECTED_STEPS = [
    ("planner", "assistant", "The primes below 10 are 2, 3, 5, 7."),
    ("planner", "assistant", "Ask the coder to add them."),
    ("coder", "tool", "python(print(2+3+5+7+9)) -> 26\nerror: WrongResult: checker rejected 26"),
    ("coder", "assistant", "The answer is 26."),
]


def steps_of(trajectory):
    return [(s.name, s.role, s.content) for s in trajectory.steps]


@pytest.mark.parametrize("name", ["collector.jsonl", "single.json", "phoenix_spans.jsonl"])
def test_one_trace_in_each_format_reads_as_the_same_ordered_steps(name):
    result = read_traces(FIXTURES / name, announce=False)
    assert result.errors == []
    (trajectory,) = result.trajectories
    assert steps_of(trajectory) == EXPECTED_STEPS
    assert [s.index for s in trajectory.steps] == [0, 1, 2, 3]
    assert trajectory.task == "Sum the primes below 10."
    assert trajectory.label == Label(role="coder", step=2)
    assert trajectory.id == TRACE


def test_a_trace_split_over_lines_and_files_is_one_trajectory(tmp_path):
    lines = (FIXTURES / "collector.jsonl").read_text().splitlines()
    (tmp_path / "a.jsonl").write_text(lines[1] + "\n")  # the later spans in the earlier file
    (tmp_path / "b.json").write_text(lines[0] + "\n")
    (trajectory,) = read_traces(tmp_path, announce=False).trajectories
    assert steps_of(trajectory) == EXPECTED_STEPS


def test_protobuf_decoded_by_opentelemetry_proto_reads_as_its_json(tmp_path):
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = json.loads((FIXTURES / "single.json").read_text())
    for resource in request["resourceSpans"]:  # protobuf's JSON mapping wants base64 ids
        for span in resource["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in span:
                    span[key] = __import__("base64").b64encode(bytes.fromhex(span[key])).decode()
    message = ParseDict(request, ExportTraceServiceRequest())
    (tmp_path / "trace.pb").write_bytes(message.SerializeToString())
    (trajectory,) = read_traces(tmp_path / "trace.pb", announce=False).trajectories
    assert steps_of(trajectory) == EXPECTED_STEPS
    assert trajectory.label == Label(role="coder", step=2)


def test_bad_records_are_one_line_each_naming_file_and_line_and_good_traces_are_kept(tmp_path):
    good = (FIXTURES / "collector.jsonl").read_text().splitlines()
    bad_span = json.loads(good[1])
    bad_span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "not an id!"
    text = "\n".join([good[0], "{not json", json.dumps({"spans": []}), json.dumps(bad_span), good[1]]) + "\n"
    path = tmp_path / "export.jsonl"
    path.write_text(text)
    result = read_traces(path, announce=False)
    assert len(result.errors) == 3
    assert result.errors[0].startswith(f"{path}:2: invalid JSON")
    assert result.errors[1] == f"{path}:3: resourceSpans: missing field (not an OTLP trace request)"
    assert result.errors[2].startswith(f"{path}:4: resourceSpans[0].scopeSpans[0].spans[0]: spanId:")
    assert steps_of(result.trajectories[0]) == EXPECTED_STEPS
    assert validate_path(path) == (1, result.errors)


def test_a_fifo_in_a_trace_folder_is_one_error_not_a_hang(tmp_path):
    shutil.copy(FIXTURES / "collector.jsonl", tmp_path / "1.jsonl")
    os.mkfifo(tmp_path / "2.json")  # opening this for reading would block forever
    result = read_traces(tmp_path, "otlp", announce=False)
    assert result.errors == [f"{tmp_path / '2.json'}: not a regular file (a FIFO)"]
    assert len(result.trajectories) == 1


def test_a_trace_without_model_or_tool_spans_and_a_label_outside_it_are_errors(tmp_path):
    request = json.loads((FIXTURES / "collector.jsonl").read_text().splitlines()[0])
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["attributes"][-1]["value"] = {"intValue": "9"}  # rcakit.root_cause.step beyond the 2 steps here
    other = json.loads(json.dumps(request))
    for span in other["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = "f" * 32
        span["attributes"] = [a for a in span["attributes"] if a["key"] != "openinference.span.kind"]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(request) + "\n" + json.dumps(other) + "\n")
    errors = read_traces(path, announce=False).errors
    assert errors[0] == f"{path}: trace {TRACE}: mistake_step: 9 is outside the trajectory (0..1)"
    assert errors[1].startswith(f"{path}: trace {'f' * 32}: no LLM or tool spans")


def test_trail_trace_with_its_labels_takes_the_earliest_annotated_step():
    result = read_traces(FIXTURES / "trail" / "traces", labels=FIXTURES / "trail" / "labels", announce=False)
    (trajectory,) = result.trajectories
    assert [(s.name, s.role) for s in trajectory.steps] == [
        ("manager", "assistant"),
        ("manager", "tool"),
        ("manager", "assistant"),
    ]
    assert trajectory.steps[1].content == "web_search(moons of Mars) -> \nerror: status ERROR: rate limited"
    assert trajectory.task == "How many moons has Mars?"
    # errors at the step-2 span, at the span that holds step 2, and at the span that holds steps 0-1
    assert trajectory.label == Label(role="manager", step=0)
    assert read_traces(FIXTURES / "trail" / "traces", announce=False).trajectories[0].label is None


def test_trail_labels_naming_a_span_outside_the_trace_are_an_error(tmp_path):
    labels = json.loads((FIXTURES / "trail" / "labels" / "mars.json").read_text())
    labels["errors"] = [{"category": "x", "location": "9999999999999999"}]
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    errors = read_traces(FIXTURES / "trail" / "traces", labels=tmp_path / "labels.json", announce=False).errors
    assert errors == [
        f"{FIXTURES / 'trail' / 'traces' / 'mars.json'}: trace 0123456789abcdef0123456789abcdef: "
        "labels: span '9999999999999999' is not a span of the trace"
    ]


def test_rcakits_own_recording_reads_back_equal_and_byte_identical(tmp_path):
    written = generate_benchmark(3, GeneratorConfig(n=3))
    first = instrumented.write_traces(written, tmp_path / "a.jsonl", seed=3)
    again = instrumented.write_traces(written, tmp_path / "b.jsonl", seed=3)
    assert first.read_bytes() == again.read_bytes()
    read = read_traces(first, announce=False)
    assert read.errors == []
    assert [(t.id, t.source, t.task, t.steps, t.label) for t in read.trajectories] == [
        (t.id, t.source, t.task, t.steps, t.label) for t in written
    ]
    line = json.loads(first.read_text().splitlines()[0])
    assert len(line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]) == 32  # hex, as OTLP/JSON


def test_walk_orders_parents_first_and_siblings_by_start_and_survives_a_cycle():
    def span(i, parent, start):
        return Span("t", i, parent, i, start, start)

    spans = [span("c2", "p", 5), span("p", None, 0), span("c1", "p", 3), span("g", "c2", 6)]
    assert [s.span_id for s in openinference.walk(spans)] == ["p", "c1", "c2", "g"]
    cycle = [span("a", "b", 1), span("b", "a", 2)]
    assert sorted(s.span_id for s in openinference.walk(cycle)) == ["a", "b"]


def test_ids_are_hex_whether_written_as_hex_or_base64():
    assert hex_id("AAAAAAAAAAE=", "w", "spanId") == "0000000000000001"
    assert hex_id("ABCDEF0123456789", "w", "spanId") == "abcdef0123456789"
    with pytest.raises(RcakitError, match="neither hex nor base64"):
        hex_id("zz", "w", "spanId")


def test_deeply_nested_attribute_values_are_an_error_not_a_recursion():
    value: dict = {"stringValue": "x"}
    for _ in range(100):
        value = {"arrayValue": {"values": [value]}}
    with pytest.raises(RcakitError, match="nested deeper"):
        otlp.any_value(value, "w")


def test_validate_detects_trace_files_and_the_pre_kernel_check_names_the_first_bad_record(tmp_path):
    assert detect_format(FIXTURES / "collector.jsonl") == "traces"
    assert detect_format(FIXTURES / "trail" / "traces") == "traces"
    assert validate_path(FIXTURES / "phoenix_spans.jsonl") == (1, [])
    check_traces(str(FIXTURES / "collector.jsonl"), {"trace_format": "auto"})
    path = tmp_path / "broken.jsonl"
    path.write_text((FIXTURES / "collector.jsonl").read_text() + "{oops\n")
    with pytest.raises(RcakitError, match=rf"^{path}:3: invalid JSON"):
        check_traces(str(path), {"trace_format": "auto"})


def test_phoenix_nested_attributes_with_lists_of_messages_read_as_openinference_keys(tmp_path):
    span = {
        "name": "ChatCompletion",
        "context": {"trace_id": "ab" * 16, "span_id": "cd" * 8},
        "span_kind": "LLM",
        "parent_id": None,
        "start_time": "2026-01-01T00:00:00.5Z",
        "end_time": "2026-01-01T00:00:01Z",
        "status_code": "OK",
        "attributes": {
            "llm": {"output_messages": [{"message": {"role": "assistant", "content": "Paris."}}]},
            "input": {"value": "Capital of France?"},
            "deep": json.loads('{"a": ' * 40 + "1" + "}" * 40),
        },
    }
    (tmp_path / "page.json").write_text(json.dumps({"data": [span], "next_cursor": None}))
    (trajectory,) = read_traces(tmp_path / "page.json", announce=False).trajectories
    assert steps_of(trajectory) == [("agent", "assistant", "Paris.")]
    assert trajectory.task == "Capital of France?"


def test_trail_rows_as_released_hold_trace_and_labels_as_strings(tmp_path):
    trace = (FIXTURES / "trail" / "traces" / "mars.json").read_text()
    labels = (FIXTURES / "trail" / "labels" / "mars.json").read_text()
    path = tmp_path / "trail_gaia.jsonl"  # what datasets' to_json writes: one row per line
    path.write_text(json.dumps({"trace": trace, "labels": labels}) + "\n")
    (trajectory,) = read_traces(path, labels=path, announce=False).trajectories
    assert trajectory.label == Label(role="manager", step=0)
    assert len(trajectory) == 3
