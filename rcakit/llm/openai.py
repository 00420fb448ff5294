"""Any OpenAI-compatible server through the official ``openai`` client: ``openai:MODEL``.

The hosted OpenAI API, vLLM, llama.cpp's ``llama-server``, LM Studio and
Ollama's ``/v1`` all speak the chat-completions protocol. The server's base URL
is the ``base_url`` argument (the chapters' ``llm_base_url`` parameter), else
``$OPENAI_BASE_URL``, else the hosted API's; the key is ``$OPENAI_API_KEY``, or
a placeholder that a local server accepts. A request carries the model, the
messages, ``temperature``, ``seed`` (so a server that honours it replays a
request exactly: ``replays`` is true) and ``max_tokens``; a JSON schema goes as
``response_format`` of type ``json_schema``, the server's structured output.
That is negotiated, not assumed: a server that rejects it (an HTTP 4xx whose
error names ``response_format``, ``json_schema``, ``json_object`` or structured
output, or a 5xx naming ``response_format``, as llama-cpp-python's server
answers) is asked again for a ``json_object`` (with the schema, which
llama-cpp-python turns into a grammar, and the schema in the prompt), and a
server that rejects that too is asked in plain text with the schema in the
prompt; :func:`rcakit.llm.ask_json`'s validation, retry and abstention do the
rest. The mode a server took is remembered for the run, once per server
(:func:`server_mode`), and every reply carries it (``Reply.mode``), which the
response cache keeps and a chapter's results list (``llm_output_modes``).
Tokens are the reply's ``usage``. Timeouts, retries, errors and the key are
handled as :mod:`rcakit.llm.sdk` describes; ``ClientProvider.probe`` asks for the
server's model list (``GET /v1/models``) once, before a sweep.

Used in the chapters through their ``provider`` parameters: `car-shapley`,
`gcjr-ablations`, `coverage-collapse`, `content-corruption`, `longrca-strata`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from rcakit.llm.base import OUTPUT_MODES
from rcakit.llm.sdk import ClientProvider, error_text

DEFAULT_URL = "https://api.openai.com/v1"
SCHEMA_NAME = "reply"
SHOWN_MODELS = 5  # model names an error about a missing model lists


class OpenAIProvider(ClientProvider):
    """``openai:MODEL``: one model on one OpenAI-compatible server."""

    name = "openai"
    sdk, client_class = "openai", "OpenAI"
    key_env, url_env, default_url, url_param = "OPENAI_API_KEY", "OPENAI_BASE_URL", DEFAULT_URL, "llm_base_url"
    replays = True  # the seed is sent; a server that honours it and serves one request at a time replays exactly

    def _optional(self, opts: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _send(self, turns: list[dict[str, Any]], opts: dict[str, Any]) -> tuple[Any, str | None]:
        """One request; with a schema, in the best mode this server takes, stepping down as it rejects them."""
        schema = opts["json_schema"]
        if schema is None:
            return self._create(turns, opts, {}), None
        while True:
            mode = server_mode(self.endpoint)
            try:
                return self._create(with_schema(turns, schema, mode), opts, response_format(schema, mode)), mode
            except self._module.APIStatusError as exc:
                if mode == OUTPUT_MODES[-1] or not rejects_format(exc.status_code, error_text(exc)):
                    raise
                step_down(self.endpoint, mode)

    def _create(self, turns: list[dict[str, Any]], opts: dict[str, Any], extra: dict[str, Any]) -> Any:
        return self._client.chat.completions.create(
            model=self.model,
            messages=turns,
            temperature=opts["temperature"],
            seed=opts["seed"],
            max_tokens=opts["max_tokens"],
            **extra,
        )

    def _read(self, response: Any) -> tuple[object, object, object]:
        choices = getattr(response, "choices", None)
        message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
        text = getattr(message, "content", None)
        if message is not None and text is None:
            text = ""  # no content (a refusal, say): nothing to parse, which ask_json handles
        usage = getattr(response, "usage", None)
        return text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")

    def _missing_model(self) -> str | None:
        page = self._client.models.list()
        names = sorted(m.id for m in getattr(page, "data", None) or () if isinstance(getattr(m, "id", None), str))
        if self.model in names:
            return None
        more = f", ... ({len(names)} in all)" if len(names) > SHOWN_MODELS else ""
        return f" (it lists: {', '.join(map(repr, names[:SHOWN_MODELS]))}{more})" if names else " (it lists none)"


def _count(usage: object, name: str) -> object:
    """A token count of the reply's ``usage`` (0 when the server sends no usage)."""
    return 0 if usage is None else getattr(usage, name, None) or 0


_MODES: dict[str, str] = {}  # a server's endpoint -> the best output mode it took, for this run (this process)
_MODES_LOCK = threading.Lock()
FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")
NOT_ABOUT_FORMAT = (401, 403, 404, 408, 409, 429)  # the key, the model, a timeout, a conflict, the rate


def server_mode(endpoint: str) -> str:
    """The output mode to ask ``endpoint`` for: :data:`OUTPUT_MODES`' best, until the server rejects it."""
    with _MODES_LOCK:
        return _MODES.get(endpoint, OUTPUT_MODES[0])


def step_down(endpoint: str, rejected: str) -> None:
    """``endpoint`` rejected ``rejected``: the next mode from now on (a concurrent step is not repeated)."""
    with _MODES_LOCK:
        if _MODES.get(endpoint, OUTPUT_MODES[0]) == rejected:
            _MODES[endpoint] = OUTPUT_MODES[OUTPUT_MODES.index(rejected) + 1]


def rejects_format(status: int, text: str) -> bool:
    """Whether an HTTP error rejects the ``response_format`` asked for: a 4xx naming it (not the key's, the
    model's or the rate's), or a 5xx naming ``response_format`` (llama-cpp-python's validation error)."""
    lower = text.lower()
    if 400 <= status < 500 and status not in NOT_ABOUT_FORMAT:
        return any(word in lower for word in FORMAT_WORDS)
    return status >= 500 and "response_format" in lower


def response_format(schema: dict[str, Any], mode: str) -> dict[str, Any]:
    """The request's ``response_format`` field for ``mode`` (none in plain text)."""
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {}


SCHEMA_PROMPT = "Reply with one JSON object, and nothing else, that follows this JSON schema: {schema}"


def with_schema(turns: list[dict[str, Any]], schema: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    """``turns`` as sent in ``mode``: unchanged under ``json_schema``, else the schema told in the last turn."""
    if mode == "json_schema":
        return turns
    told = SCHEMA_PROMPT.format(schema=json.dumps(schema, sort_keys=True))
    last = turns[-1]
    return [*turns[:-1], {"role": last["role"], "content": f"{last['content']}\n\n{told}"}]
