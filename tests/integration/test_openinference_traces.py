"""Traces a real instrumentation writes read back as the steps the agent took.

A short tool-using agent written with the official ``openai`` client calls ``FakeOpenAIServer`` on
127.0.0.1; the official ``openinference-instrumentation-openai`` records its calls through the
OpenTelemetry SDK, and the SDK's OTLP encoder writes them as OTLP/JSON lines and as protobuf. The
reader must recover the step count, order, roles, tool calls and the agent named by the agent span.
"""

from __future__ import annotations

import base64
import json

import pytest

from rcakit.trajectories.traces import read_traces
from support.llm_servers import FakeOpenAIServer

openai = pytest.importorskip("openai")  # the dev extra installs it; a bare install has no client to trace
pytest.importorskip("openinference.instrumentation.openai")

MODEL = "gpt-fake"
TOOL_CALL = {
    "id": "chatcmpl-tool",
    "object": "chat.completion",
    "created": 0,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order": "1234"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
}


@pytest.fixture
def recorded():
    """The finished spans of one agent run: a tool call, the tool, and the final answer."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("test-agent")
    agent = {SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.AGENT.value}
    tool = {SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.TOOL.value, "tool.name": "lookup_order"}
    try:
        with FakeOpenAIServer(models=[MODEL]) as server:
            server.queue(("malformed", json.dumps(TOOL_CALL)), ("reply", "Order 1234 arrived late: no refund."))
            client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
            messages = [{"role": "user", "content": "Refund order 1234?"}]
            with tracer.start_as_current_span("support_agent", attributes=agent):
                first = client.chat.completions.create(model=MODEL, messages=messages)
                call = first.choices[0].message.tool_calls[0]
                with tracer.start_as_current_span("lookup_order", attributes=tool) as span:
                    span.set_attribute("input.value", call.function.arguments)
                    span.set_attribute("output.value", '{"status": "late", "condition": "intact"}')
                said = first.choices[0].message.model_dump(exclude_none=True)
                messages += [{**said, "content": ""}]  # the fake server counts every message's content
                messages += [{"role": "tool", "tool_call_id": call.id, "content": "late, intact"}]
                client.chat.completions.create(model=MODEL, messages=messages)
    finally:
        instrumentor.uninstrument()
    return list(exporter.get_finished_spans())


def _encoded(spans):
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans)


def _check(trajectory):
    assert [(s.name, s.role) for s in trajectory.steps] == [
        ("support_agent", "assistant"),
        ("support_agent", "tool"),
        ("support_agent", "assistant"),
    ]
    assert 'call lookup_order({"order": "1234"})' in trajectory.steps[0].content
    assert trajectory.steps[1].content == 'lookup_order({"order": "1234"}) -> {"status": "late", "condition": "intact"}'
    assert trajectory.steps[2].content == "Order 1234 arrived late: no refund."
    assert trajectory.label is None


def test_openai_instrumentation_traces_read_back_as_json_lines(recorded, tmp_path):
    from google.protobuf.json_format import MessageToDict

    assert len(recorded) == 4  # the agent span, two chat completions, the tool
    request = MessageToDict(_encoded(recorded))  # ids in base64, as protobuf's JSON mapping writes them
    path = tmp_path / "collector.json"  # the Collector writes one request per line, whatever the suffix
    path.write_text(json.dumps(request) + "\n" + json.dumps({"resourceSpans": []}) + "\n")
    result = read_traces(path, announce=False)
    assert result.errors == []
    (trajectory,) = result.trajectories
    _check(trajectory)
    trace_id = base64.b64decode(request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]).hex()
    assert trajectory.id == trace_id
    assert trajectory.task == "Refund order 1234?"


def test_openai_instrumentation_traces_read_back_as_protobuf(recorded, tmp_path):
    path = tmp_path / "export.pb"
    path.write_bytes(_encoded(recorded).SerializeToString())
    (trajectory,) = read_traces(path, announce=False).trajectories
    _check(trajectory)
    path.write_bytes(b"\xff\xff not protobuf")
    assert read_traces(path, announce=False).errors == [f"{path}: not an OTLP protobuf ExportTraceServiceRequest"]
