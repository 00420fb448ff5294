"""Any OpenAI-compatible server through the official ``openai`` client: ``openai:MODEL``.

The hosted OpenAI API, vLLM, llama.cpp's ``llama-server``, LM Studio and
Ollama's ``/v1`` all speak the chat-completions protocol. The server's base URL
is the ``base_url`` argument (the chapters' ``llm_base_url`` parameter), else
``$OPENAI_BASE_URL``, else the hosted API's; the key is ``$OPENAI_API_KEY``, or
a placeholder that a local server accepts. A request carries the model, the
messages, ``temperature``, ``seed`` (so a server that honours it replays a
request exactly: ``replays`` is true) and ``max_tokens``; a JSON schema goes as
``response_format`` of type ``json_schema``, the server's structured output.
A server that refuses ``response_format`` (HTTP 400 naming it) is asked again
without it, and never again with it by this provider: then
:func:`rcakit.llm.ask_json`'s validation, retry and abstention do the work.
Tokens are the reply's ``usage``. Timeouts, retries, errors and the key are
handled as :mod:`rcakit.llm.sdk` describes; ``ClientProvider.probe`` asks for the
server's model list (``GET /v1/models``) once, before a sweep.

Used in the chapters through their ``provider`` parameters: `car-shapley`,
`gcjr-ablations`, `coverage-collapse`, `content-corruption`, `longrca-strata`.
"""

from __future__ import annotations

from typing import Any

from rcakit.llm.sdk import ClientProvider

DEFAULT_URL = "https://api.openai.com/v1"
SCHEMA_NAME = "reply"
SHOWN_MODELS = 5  # model names an error about a missing model lists


class OpenAIProvider(ClientProvider):
    """``openai:MODEL``: one model on one OpenAI-compatible server."""

    name = "openai"
    sdk, client_class = "openai", "OpenAI"
    key_env, url_env, default_url, url_param = "OPENAI_API_KEY", "OPENAI_BASE_URL", DEFAULT_URL, "llm_base_url"
    refusable = {"response_format": ("response_format", "json_schema", "structured output")}
    replays = True  # the seed is sent; a server that honours it and serves one request at a time replays exactly

    def _optional(self, opts: dict[str, Any]) -> dict[str, Any]:
        schema = opts["json_schema"]
        if schema is None:
            return {}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}}

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
