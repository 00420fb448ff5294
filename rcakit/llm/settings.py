"""A chapter's language-model parameters as one value, and the one place a provider string becomes a model.

:class:`LLMSettings` holds what a chapter's ``provider``, ``judge_provider``,
``llm_timeout`` and ``llm_base_url`` parameters say; :func:`model_for` builds the
provider one of its specs names (``rcakit.llm.spec.provider_from_spec`` does
the parsing). Every chapter, science module and notebook that needs a model
asks :func:`model_for` for it, so a spec is read with the same timeout and server
wherever it is used (``tests/unit/llm/test_settings.py`` fails on a second
place). What the model is then wrapped in (the response cache, a cost ledger
per method) stays with the code that calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rcakit.llm.base import Provider
from rcakit.llm.spec import provider_from_spec

Role = Literal["provider", "judge_provider"]


@dataclass(frozen=True)
class LLMSettings:
    """The models a run uses and how long each reply may take.

    ``provider`` and ``judge_provider`` are specs (``none``, ``ollama:MODEL``,
    ``openai:MODEL``, ``anthropic:MODEL``, ``llamacpp:NAME|PATH.gguf``);
    ``timeout`` bounds each network wait of a model call in seconds (``None``:
    ``$RCAKIT_LLM_TIMEOUT`` or the default); ``base_url`` is the server of an
    ``openai:`` spec (``""`` or ``None``: ``$OPENAI_BASE_URL``, else the hosted
    API) and ``host`` the server of an ``ollama:`` spec (``None``: ``$OLLAMA_HOST``).
    """

    provider: str = "none"
    judge_provider: str = "none"
    timeout: float | None = None
    base_url: str | None = None
    host: str | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> LLMSettings:
        """The settings a chapter's checked parameters name: ``provider``, ``judge_provider``, ``llm_timeout``
        and ``llm_base_url``, each where the chapter has it."""
        return cls(
            provider=params.get("provider", "none"),
            judge_provider=params.get("judge_provider", "none"),
            timeout=params.get("llm_timeout"),
            base_url=params.get("llm_base_url"),
        )


def model_for(settings: LLMSettings, role: Role = "provider") -> Provider:
    """The provider that ``settings``' ``role`` spec names (``none``: a falsy provider), not yet cached.

    Errors are one line naming ``role``, the chapter parameter.
    """
    return provider_from_spec(
        getattr(settings, role), settings.host, timeout=settings.timeout, param=role, base_url=settings.base_url
    )


__all__ = ["LLMSettings", "Role", "model_for"]
