"""Anthropic's Messages API through the official ``anthropic`` client: ``anthropic:MODEL``.

The key is ``$ANTHROPIC_API_KEY``; the server is ``$ANTHROPIC_BASE_URL`` (a test
server, a proxy) else Anthropic's API. System messages go in the request's
``system`` field, joined by blank lines; the other messages keep their order.
The API takes no seed, so the same request need not get the same reply:
``replays`` is false, and CAR §3's replay action-match rate measures how far a
replay strays. ``temperature`` is sent where the model takes it: a model that
refuses it (HTTP 400 naming it; Anthropic's newer models take no sampling
parameters) is asked again without it, and this provider leaves it out from
then on. JSON comes from the prompt alone, checked by
:func:`rcakit.llm.ask_json` (one retry, then an abstention). Tokens are the
reply's ``usage``; timeouts, retries, errors and the key are handled as
:mod:`rcakit.llm.sdk` describes. ``ClientProvider.probe`` asks about the model
once (``GET /v1/models/{id}``).

Used in the chapters through their ``provider`` parameters: `car-shapley`,
`gcjr-ablations`, `coverage-collapse`, `content-corruption`, `longrca-strata`.
"""

from __future__ import annotations

from typing import Any

from rcakit.llm.sdk import ClientProvider

DEFAULT_URL = "https://api.anthropic.com"


class AnthropicProvider(ClientProvider):
    """``anthropic:MODEL``: one Claude model (the API also resolves aliases such as ``claude-haiku-4-5``)."""

    name = "anthropic"
    sdk, client_class = "anthropic", "Anthropic"
    key_env, url_env, default_url, url_param = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", DEFAULT_URL, "base_url"
    refusable = {"temperature": ("temperature",)}
    replays = False  # the API takes no seed

    def _optional(self, opts: dict[str, Any]) -> dict[str, Any]:
        return {"temperature": opts["temperature"]}

    def _create(self, turns: list[dict[str, Any]], opts: dict[str, Any], extra: dict[str, Any]) -> Any:
        system = "\n\n".join(m["content"] for m in turns if m["role"] == "system")
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": opts["max_tokens"],
            "messages": [m for m in turns if m["role"] != "system"],
        }
        if system:
            request["system"] = system
        return self._client.messages.create(**request, extra_body=extra or None)

    def _read(self, response: Any) -> tuple[object, object, object]:
        blocks = getattr(response, "content", None)
        listed = blocks if isinstance(blocks, list) else ()
        texts = [getattr(b, "text", None) for b in listed if getattr(b, "type", None) == "text"]
        strings = [t for t in texts if isinstance(t, str)]
        text = "".join(strings) if isinstance(blocks, list) and len(strings) == len(texts) else None
        usage = getattr(response, "usage", None)
        return text, getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)

    def _missing_model(self) -> str | None:
        try:
            self._client.models.retrieve(self.model)
        except self._module.NotFoundError:
            return ""
        return None
