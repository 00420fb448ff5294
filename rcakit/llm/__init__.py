"""Language-model backends behind one small interface.

A chapter turns its model parameters into a provider (:func:`model_for`, the one
place a provider string becomes a model), wraps it in the response cache with
one :class:`MethodUsage` per method, and asks for JSON::

    acct = Accounting()
    judge = cached(model_for(LLMSettings.of(params), "judge_provider"), accounting=acct["llm_judge"])
    if judge:
        verdict = ask_json(judge, messages, Shape(stage=("retrieval", "answer"), hop=range(1, 4)))

Everything here runs without a model; ``none`` gives a falsy provider.
Before a kernel starts, a runner calls ``check_spec`` (the string and the
disk only; ``check_base_url`` for an OpenAI-compatible server's URL) and
``probe`` (one short request to a model server); every network wait of a model
call is bounded by ``timeout`` seconds (``check_timeout``; default
``$RCAKIT_LLM_TIMEOUT`` or 120), and the API clients' retries by
``rcakit.llm.sdk.longest_wait``. The backends: Ollama, any OpenAI-compatible
server, Anthropic's API, and llama.cpp in process.
"""

from rcakit.llm.accounting import Accounting, MethodUsage
from rcakit.llm.base import ContextOverflow, NullProvider, Provider, Reply, request_seed
from rcakit.llm.cache import CachedProvider, ResponseCache, cache_totals, cached, default_cache
from rcakit.llm.replay import ReplayChannel
from rcakit.llm.settings import LLMSettings, model_for
from rcakit.llm.spec import check_base_url, check_spec, check_timeout, probe, provider_from_spec
from rcakit.llm.structured import Shape, ask_json, parse_json

__all__ = [
    "Accounting",
    "CachedProvider",
    "ContextOverflow",
    "LLMSettings",
    "MethodUsage",
    "NullProvider",
    "Provider",
    "ReplayChannel",
    "Reply",
    "ResponseCache",
    "Shape",
    "ask_json",
    "cache_totals",
    "cached",
    "check_base_url",
    "check_spec",
    "check_timeout",
    "default_cache",
    "model_for",
    "parse_json",
    "probe",
    "provider_from_spec",
    "request_seed",
]
