"""JSON answers from a model: validated, retried once, else abstained.

A method states the object it expects as a :class:`Shape` (which is both a
validator and a JSON schema for constrained decoding) or as any callable that
returns the checked value or raises ``ValueError`` with a message. If the
reply does not parse or does not validate, :func:`ask_json` asks once more,
showing the model its reply and the error; if that fails too, it abstains:
it returns ``None`` and charges an abstention to the method's accounting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from rcakit.llm.accounting import MethodUsage
from rcakit.llm.base import Message, Provider

RETRY_PROMPT = "Your reply could not be used: {problem}. Reply again with only the JSON object, nothing else."
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
ENUM_LIMIT = 256  # larger integer ranges are checked by the validator only
FieldSpec = type | range | tuple[str, ...]  # a JSON type, an integer range, or the allowed strings
_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def parse_json(text: str) -> Any:
    """The JSON value in ``text``: the whole reply, a fenced block, or the
    first object starting at a ``{`` (small models often add prose around it)."""
    text = text.strip()
    candidates = [text, *(m.strip() for m in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    start = text.find("{")
    if start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text[start:])[0]
        except ValueError:
            pass
    raise ValueError(f"the reply is not valid JSON: {text[:80]!r}")


class Shape:
    """An expected JSON object, one keyword per field.

    A field's spec is a type (``int``, ``float``, ``str``, ``bool``), a
    ``range`` (an integer inside it; up to ``ENUM_LIMIT`` values are also
    listed in the schema, so a grammar can enforce them) or a tuple of
    allowed strings. Missing
    fields and wrong types are errors; extra fields are dropped. Integers
    must be JSON integers (``"2"`` is rejected, so the retry can fix it).
    """

    def __init__(self, **fields: FieldSpec) -> None:
        self.fields = fields

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON schema handed to the provider for constrained output."""
        return {
            "type": "object",
            "properties": {name: _field_schema(spec) for name, spec in self.fields.items()},
            "required": list(self.fields),
        }

    def __call__(self, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise ValueError(f"expected a JSON object with keys {', '.join(self.fields)}")
        return {name: _check_field(name, spec, obj) for name, spec in self.fields.items()}


def _field_schema(spec: FieldSpec) -> dict[str, Any]:
    if isinstance(spec, range):
        bounds = {"type": "integer", "minimum": spec.start, "maximum": spec.stop - 1}
        # llama.cpp's grammar ignores minimum/maximum (SmolLM2 answered hop 4 and 11 for 1..3);
        # listing the values makes constrained decoding respect the range.
        return {**bounds, "enum": list(spec)} if len(spec) <= ENUM_LIMIT else bounds
    if isinstance(spec, tuple):
        return {"type": "string", "enum": list(spec)}
    return {"type": _JSON_TYPES[spec]}


def _check_field(name: str, spec: FieldSpec, obj: dict[str, Any]) -> Any:
    if name not in obj:
        raise ValueError(f"field {name!r} is missing")
    value = obj[name]
    if isinstance(spec, tuple):
        if value not in spec:
            raise ValueError(f"field {name!r} must be one of {', '.join(map(str, spec))}; got {value!r}")
        return value
    want = int if isinstance(spec, range) else spec
    ok = isinstance(value, want) and not (want is not bool and isinstance(value, bool))
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        ok, value = True, float(value)
    if not ok:
        raise ValueError(f"field {name!r} must be a JSON {_JSON_TYPES[want]}; got {value!r}")
    if isinstance(spec, range) and value not in spec:
        raise ValueError(f"field {name!r} must be between {spec.start} and {spec.stop - 1}; got {value}")
    return value


def ask_json(
    provider: Provider,
    messages: Sequence[Message],
    validate: Callable[[Any], Any],
    *,
    temperature: float = 0.0,
    seed: int = 0,
    max_tokens: int = 256,
    schema: dict[str, Any] | None = None,
    accounting: MethodUsage | None = None,
) -> Any | None:
    """The validated answer, or ``None`` (an abstention) after one failed retry.

    ``schema`` defaults to ``validate.schema`` when ``validate`` is a
    :class:`Shape`; ``accounting`` defaults to the cached provider's own.
    Provider errors (server down, timeout) propagate as ``RcakitError``.
    """
    schema = schema if schema is not None else getattr(validate, "schema", None)
    accounting = accounting if accounting is not None else getattr(provider, "accounting", None)
    sampling: dict[str, Any] = dict(temperature=temperature, seed=seed, max_tokens=max_tokens, json_schema=schema)
    reply = provider.chat(messages, **sampling)
    try:
        return validate(parse_json(reply.text))
    except (ValueError, TypeError, KeyError) as err:
        problem = str(err)
    retry = [
        *messages,
        {"role": "assistant", "content": reply.text},
        {"role": "user", "content": RETRY_PROMPT.format(problem=problem)},
    ]
    reply = provider.chat(retry, **sampling)
    try:
        return validate(parse_json(reply.text))
    except (ValueError, TypeError, KeyError):
        if accounting is not None:
            accounting.add_abstention()
        return None
