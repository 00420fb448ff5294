"""rcakit's simulated agent runs recorded as OpenTelemetry traces, with OpenInference attributes.

Each trajectory of the synthetic long-horizon benchmark (a multi-agent run
with a planted, hence certified, root cause:
:mod:`~rcakit.trajectories.synthetic`) is replayed through the real
OpenTelemetry SDK as one trace, the way an instrumented agent framework
records it: a CHAIN span for the run (the task as ``input.value``), an AGENT
span per turn (``gen_ai.agent.name``) and under it an LLM span whose output
message is the turn's text. The planted root cause goes on the run's span as
``rcakit.trajectories.openinference.LABEL_AGENT`` and
``rcakit.trajectories.openinference.LABEL_STEP``. The SDK's spans are
encoded by the OTLP exporter's own encoder (``opentelemetry-exporter-otlp-proto-common``)
and written as OTLP JSON lines (one ``ExportTraceServiceRequest`` per
trace). Ids come from a seeded id generator and times from the step index,
so the same seed writes the same bytes.

Reading the file back (``rcakit.trajectories.traces.read_traces``) must
give the trajectories that were written: the own-traces chapter checks this
round trip as an identity.

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rcakit.io import atomic_write
from rcakit.trajectories.openinference import AGENT_NAME, LABEL_AGENT, LABEL_REASON, LABEL_STEP, SOURCE, TRAJECTORY_ID
from rcakit.trajectories.schema import Trajectory

EPOCH_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z: every recorded time is this plus the step index
STEP_NS = 10**9  # one simulated second per step


def _id_generator(seed: int) -> Any:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class SeededIds(IdGenerator):
        """Span and trace ids from ``random.Random(seed)``: the same run records the same ids."""

        def __init__(self) -> None:
            self.rng = random.Random(seed)

        def generate_span_id(self) -> int:
            return self.rng.getrandbits(64) or 1

        def generate_trace_id(self) -> int:
            return self.rng.getrandbits(128) or 1

    return SeededIds()


def record_spans(trajectories: Sequence[Trajectory], seed: int = 0) -> list[list[Any]]:
    """The SDK's finished spans of each trajectory's trace (one list per trajectory)."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as A
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource({"service.name": "rcakit-simulated-agents"}), id_generator=_id_generator(seed)
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("rcakit.trajectories.instrumented")
    out = []
    for t in trajectories:
        exporter.clear()
        run = {
            A.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value,
            A.INPUT_VALUE: t.task,
            TRAJECTORY_ID: t.id,
            SOURCE: t.source,
        }
        if t.label is not None:
            run |= {LABEL_AGENT: t.label.role, LABEL_STEP: t.label.step, LABEL_REASON: t.label.reason}
        root = tracer.start_span("agent run", attributes=run, start_time=EPOCH_NS)
        parent = _context(root)
        for step in t.steps:
            at = EPOCH_NS + step.index * STEP_NS
            turn = {A.OPENINFERENCE_SPAN_KIND: Kind.AGENT.value, AGENT_NAME: step.name}
            agent = tracer.start_span(step.speaker, context=parent, attributes=turn, start_time=at + 1)
            message = {
                A.OPENINFERENCE_SPAN_KIND: Kind.LLM.value,
                f"{A.LLM_OUTPUT_MESSAGES}.0.message.content": step.content,
            }
            if step.role is not None:
                message[f"{A.LLM_OUTPUT_MESSAGES}.0.message.role"] = step.role
            llm = tracer.start_span("llm", context=_context(agent), attributes=message, start_time=at + 2)
            llm.end(end_time=at + STEP_NS - 2)
            agent.end(end_time=at + STEP_NS - 1)
        root.end(end_time=EPOCH_NS + len(t.steps) * STEP_NS)
        out.append(list(exporter.get_finished_spans()))
    provider.shutdown()
    return out


def _context(span: Any) -> Any:
    from opentelemetry import trace

    return trace.set_span_in_context(span)


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` in the OTLP/JSON encoding (hex ids), from the exporter's encoder."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = MessageToDict(encode_spans(spans))
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants hex
                        span[key] = _base64_hex(span[key])
    return request


def _base64_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()


def write_traces(trajectories: Sequence[Trajectory], path: Path, seed: int = 0) -> Path:
    """Record ``trajectories`` and write them to ``path`` as OTLP JSON lines (one request per trace)."""
    lines = [json.dumps(otlp_json(spans), sort_keys=True) for spans in record_spans(trajectories, seed)]
    atomic_write(path, "\n".join(lines) + "\n")
    return path
