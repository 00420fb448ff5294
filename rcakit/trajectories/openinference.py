"""Spans to steps: one trace becomes one :class:`~rcakit.trajectories.schema.Trajectory`.

The mapping reads the OpenInference attributes and the OpenTelemetry GenAI
semantic conventions, whichever a span carries:

- **steps**: every LLM or TOOL span (``openinference.span.kind``), or
  ``chat``/``text_completion``/``generate_content``/``execute_tool`` span
  (``gen_ai.operation.name``), in the order of a depth-first walk of the span
  tree, parents before children and siblings by start time (then span id);
- **agent** (the step's name): ``gen_ai.agent.name`` on the span, else that of
  the nearest AGENT / ``invoke_agent`` ancestor (its span name when it has
  none), else ``agent``;
- **role**: the first output message's role (``llm.output_messages.0.message.role``
  or ``gen_ai.output.messages``); ``tool`` for a tool span;
- **content**: the output messages' text and tool calls, else ``output.value``
  (a tool span: ``name(input) -> output``), else the GenAI ``gen_ai.choice``
  events; an ERROR status, ``error.type`` or an ``exception`` event adds a line
  ``error: <type>: <message>``, which is how the log records the failure;
- **task**: the root span's ``input.value``, else the first step's last input message;
- **label**: the attributes :data:`LABEL_AGENT` and :data:`LABEL_STEP` on any
  span (a 0-based step; :data:`LABEL_REASON` optional), a span marked :data:`ROOT_CAUSE`, or a side file's
  span ids (TRAIL's ``labels``: the earliest annotated step,
  :mod:`~rcakit.trajectories.trail`); the label passes the same checks as a
  LongRCA label (LongRCA §3.3).

Used in the chapters: `own-traces`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rcakit.trajectories.parsing import label_of
from rcakit.trajectories.reading import RecordError, short
from rcakit.trajectories.schema import Step, Trajectory
from rcakit.trajectories.spans import Span

KIND = "openinference.span.kind"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
STEP_KINDS = frozenset({"LLM", "TOOL"})
STEP_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "execute_tool"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
TRAJECTORY_ID = "rcakit.trajectory.id"  # optional: the trajectory's id (default: the trace id)
SOURCE = "rcakit.trajectory.source"  # optional: the trajectory's source (default: the format's name)
LABEL_AGENT = "rcakit.root_cause.agent"  # the reference responsible agent ...
LABEL_STEP = "rcakit.root_cause.step"  # ... and 0-based root-cause step, on any span of the trace
LABEL_REASON = "rcakit.root_cause.reason"  # optional: why (kept as the label's reason)
ROOT_CAUSE = "rcakit.root_cause"  # true on the span whose step is the root cause (the agent is the step's)


def is_step(span: Span) -> bool:
    """An LLM or tool call: a span that becomes a step."""
    return span.attributes.get(KIND) in STEP_KINDS or span.attributes.get(OPERATION) in STEP_OPERATIONS


def is_tool(span: Span) -> bool:
    return span.attributes.get(KIND) == "TOOL" or span.attributes.get(OPERATION) in TOOL_OPERATIONS


def is_agent(span: Span) -> bool:
    return span.attributes.get(KIND) == "AGENT" or span.attributes.get(OPERATION) in AGENT_OPERATIONS


def walk(spans: Sequence[Span]) -> list[Span]:
    """Every span once, depth first: roots and siblings by ``(start, span_id)``, a parent before its children.

    A span whose parent is not in the trace is a root; a parent cycle (a
    corrupt export) is broken where the walk meets a span it has seen.
    """
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)
    order, seen = [], set()
    stack = sorted(children.get(None, []), key=_start, reverse=True)
    leftovers = sorted(spans, key=_start, reverse=True)  # spans on a cycle, never reached from a root
    while stack or leftovers:
        span = stack.pop() if stack else leftovers.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        order.append(span)
        stack.extend(sorted(children.get(span.span_id, []), key=_start, reverse=True))
    return order


def _start(span: Span) -> tuple[int, str]:
    return span.start, span.span_id


def agent_of(span: Span, by_id: Mapping[str, Span]) -> str:
    """``gen_ai.agent.name`` on the span or on its nearest agent ancestor (that span's name if it has
    none); ``agent`` when no ancestor is an agent."""
    current: Span | None = span
    seen: set[str] = set()
    while current is not None and current.span_id not in seen:
        seen.add(current.span_id)
        name = current.attributes.get(AGENT_NAME)
        if isinstance(name, str) and name.strip():
            return name
        if current is not span and is_agent(current) and current.name.strip():
            return current.name
        current = by_id.get(current.parent_id) if current.parent_id else None
    return "agent"


def _indexed(attributes: Mapping[str, Any], prefix: str, suffix: str) -> list[Any]:
    """``prefix.0.suffix``, ``prefix.1.suffix``, … (OpenInference's flattened lists), in index order."""
    found = {}
    for key, value in attributes.items():
        if key.startswith(prefix + ".") and key.endswith("." + suffix):
            middle = key[len(prefix) + 1 : -len(suffix) - 1]
            if middle.isdigit():
                found[int(middle)] = value
    return [found[i] for i in sorted(found)]


def _genai_messages(attributes: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    """``gen_ai.input.messages``/``gen_ai.output.messages`` (a JSON string or a list of objects)."""
    value = attributes.get(name)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _parts_text(message: Mapping[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, list):
        return "\n".join(str(p.get("content", "")) for p in parts if isinstance(p, dict) and p.get("content"))
    return str(message.get("content") or "")


def output_text(span: Span) -> str:
    """What the step said or did: output messages with their tool calls, ``output.value``, or GenAI events."""
    a = span.attributes
    prefix = "llm.output_messages"
    texts = [str(t) for t in _indexed(a, prefix, "message.content") if t]
    names = [k for k in sorted(a) if k.startswith(prefix) and k.endswith("tool_call.function.name")]
    calls = [f"call {a[k]}({a.get(k.replace('.name', '.arguments'), '')})" for k in names]
    if texts or calls:
        return "\n".join(texts + calls)
    genai = "\n".join(_parts_text(m) for m in _genai_messages(a, "gen_ai.output.messages"))
    if genai.strip():
        return genai
    if is_tool(span):
        tool = a.get("tool.name") or a.get("gen_ai.tool.name") or span.name
        return f"{tool}({_text(a.get('input.value'))}) -> {_text(a.get('output.value'))}"
    if a.get("output.value") is not None:
        return _text(a.get("output.value"))
    events = [e for n, e in span.events if n in ("gen_ai.choice", "gen_ai.assistant.message")]
    return "\n".join(_text(e.get("message", e.get("content", ""))) for e in events)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, sort_keys=True)


def error_line(span: Span) -> str | None:
    """``error: <type>: <message>`` for a failed span (status ERROR, ``error.type`` or an exception event)."""
    kind = span.attributes.get("error.type")
    message = span.status_message
    for name, event in span.events:
        if name == "exception":
            kind = kind or event.get("exception.type")
            message = message or _text(event.get("exception.message"))
    if span.status != "ERROR" and kind is None:
        return None
    return ": ".join(["error", str(kind or "status ERROR")] + ([message] if message else []))


def role_of(span: Span) -> str | None:
    roles = _indexed(span.attributes, "llm.output_messages", "message.role")
    roles += [m.get("role") for m in _genai_messages(span.attributes, "gen_ai.output.messages")]
    if roles and isinstance(roles[0], str):
        return roles[0]
    return "tool" if is_tool(span) else None


def task_of(order: Sequence[Span], steps: Sequence[Span]) -> str:
    """The root span's ``input.value``, else the first step's last input message."""
    root = order[0].attributes.get("input.value")
    if isinstance(root, str) and root.strip():
        return root
    inputs = _indexed(steps[0].attributes, "llm.input_messages", "message.content") if steps else []
    inputs += [_parts_text(m) for m in _genai_messages(steps[0].attributes, "gen_ai.input.messages")] if steps else []
    return str(inputs[-1]) if inputs else ""


def trajectory_of(spans: Sequence[Span], where: str, source: str, labelled_spans: Iterable[str] = ()) -> Trajectory:
    """The trajectory of one trace's spans; ``labelled_spans`` are span ids a side file marks as errors."""
    seen: set[str] = set()
    for span in spans:
        if span.span_id in seen:
            raise RecordError(f"{where}: span {short(span.span_id)} appears twice in the trace")
        seen.add(span.span_id)
    order = walk(spans)
    step_spans = [s for s in order if is_step(s)]
    if not step_spans:
        raise RecordError(f"{where}: no LLM or tool spans (openinference.span.kind or gen_ai.operation.name)")
    by_id = {s.span_id: s for s in spans}
    steps = []
    for i, span in enumerate(step_spans):
        content = "\n".join(t for t in (output_text(span), error_line(span)) if t)
        steps.append(Step(index=i, name=agent_of(span, by_id), role=role_of(span), content=content))
    root_attributes: dict[str, Any] = {}
    for span in reversed(order):
        root_attributes.update(span.attributes)
    ids = str(root_attributes.get(TRAJECTORY_ID) or spans[0].trace_id)
    record = _label_record(root_attributes, order, step_spans, steps, set(labelled_spans), by_id)
    if record.get("mistake_agent") is None and "mistake_step" in record and isinstance(record["mistake_step"], str):
        raise RecordError(f"{where}: labels: {record['mistake_step']} is not a span of the trace")
    label = label_of(record, tuple(steps), where)
    return Trajectory(
        id=ids,
        source=str(root_attributes.get(SOURCE) or source),
        task=task_of(order, step_spans),
        steps=tuple(steps),
        label=label,
        meta={"trace_id": spans[0].trace_id, "spans": len(spans)},
    )


def _label_record(
    attributes: Mapping[str, Any],
    order: Sequence[Span],
    step_spans: Sequence[Span],
    steps: Sequence[Step],
    labelled: set[str],
    by_id: Mapping[str, Span],
) -> dict[str, Any]:
    """``{mistake_agent, mistake_step}`` from the label attributes, a marked span or the side file's spans."""
    if LABEL_AGENT in attributes or LABEL_STEP in attributes:
        record = {}
        if LABEL_AGENT in attributes:
            record["mistake_agent"] = attributes[LABEL_AGENT]
        if LABEL_STEP in attributes:
            record["mistake_step"] = attributes[LABEL_STEP]
        if isinstance(attributes.get(LABEL_REASON), str):
            record["mistake_reason"] = attributes[LABEL_REASON]
        return record
    marked = labelled | {s.span_id for s in order if s.attributes.get(ROOT_CAUSE) is True}
    if not marked:
        return {}
    positions = [_step_at(span_id, order, step_spans, by_id) for span_id in sorted(marked)]
    found = [p for p in positions if p is not None]
    if not found:
        return {"mistake_agent": None, "mistake_step": f"span {short(sorted(marked)[0])}"}
    step = min(found)
    return {"mistake_agent": steps[step].name, "mistake_step": step}


def _step_at(span_id: str, order: Sequence[Span], step_spans: Sequence[Span], by_id: Mapping[str, Span]) -> int | None:
    """The step a labelled span denotes: itself, else the first step inside it, else its nearest step ancestor."""
    index = {s.span_id: i for i, s in enumerate(step_spans)}
    if span_id in index:
        return index[span_id]
    if span_id not in by_id:
        return None
    inside = [index[s.span_id] for s in order if s.span_id in index and _under(s, span_id, by_id)]
    if inside:
        return min(inside)
    parent = by_id[span_id].parent_id
    while parent is not None and parent in by_id:
        if parent in index:
            return index[parent]
        parent = by_id[parent].parent_id
    return None


def _under(span: Span, ancestor: str, by_id: Mapping[str, Span]) -> bool:
    current, hops = span.parent_id, 0
    while current is not None and hops <= len(by_id):
        if current == ancestor:
            return True
        current, hops = (by_id[current].parent_id if current in by_id else None), hops + 1
    return False
