"""``openai:MODEL``: any OpenAI-compatible server through the official client, and the chapters that use it.

Against ``FakeOpenAIServer`` on 127.0.0.1: the request's fields (seed, temperature, max_tokens, the JSON
schema as ``response_format``), the fallback for a server without structured output, the server's URL
(``base_url``, ``$OPENAI_BASE_URL``, the chapters' ``llm_base_url``), the probe's model list, spec
errors, and two chapters run end to end with a warm rerun that makes no model call and no planted key
in anything they wrote. What both API providers share is in ``test_api_clients.py``.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from rcakit import RcakitError
from rcakit.book import registry
from rcakit.llm import ResponseCache, Shape, ask_json, cached, check_base_url, check_spec, probe, provider_from_spec
from rcakit.llm.cache import canonical_request
from rcakit.llm.openai import DEFAULT_URL, OpenAIProvider
from rcakit.llm.spec import SPECS
from support.llm_apis import ENVIRONMENT, KEY, MODEL, OPENAI, QUESTION, cache_lines, leaks, one_line, rag_model
from support.llm_servers import FakeOpenAIServer

VERDICT = Shape(stage=("retrieval", "answer"), hop=range(1, 4))
ANSWER = '{"stage": "answer", "hop": 2}'


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))


@pytest.fixture
def fake():
    with FakeOpenAIServer(models=[MODEL]) as server:
        yield server


@pytest.mark.slow
def test_the_request_carries_seed_options_and_the_schema_as_structured_output(fake):
    provider = provider_from_spec(f"openai:{MODEL}", base_url=fake.base_url, timeout=2)
    fake.queue(("reply", ANSWER))
    assert ask_json(provider, QUESTION, VERDICT, seed=7, max_tokens=64, temperature=0.5) == {
        "stage": "answer",
        "hop": 2,
    }
    (body,) = fake.requests
    assert (body["model"], body["seed"], body["max_tokens"], body["temperature"]) == (MODEL, 7, 64, 0.5)
    assert body["messages"] == QUESTION  # a system message stays a message
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": VERDICT.schema},
    }
    provider.chat(QUESTION)
    assert "response_format" not in fake.requests[-1]  # no schema, no structured output
    assert provider.replays and provider.context_window is None and provider.count_tokens(QUESTION) == 14 + 14


@pytest.mark.slow
def test_a_server_without_structured_output_is_asked_plainly_once_and_from_then_on(tmp_path):
    with FakeOpenAIServer(models=[MODEL], refuses=["response_format"]) as fake:
        provider = OpenAIProvider(MODEL, fake.base_url, 2.0)
        fake.queue(("reply", ANSWER), ("reply", "no JSON here"), ("reply", ANSWER))
        assert ask_json(provider, QUESTION, VERDICT) == {"stage": "answer", "hop": 2}
        asked = [body.get("response_format", {}).get("type") for body in fake.requests]
        assert asked == ["json_schema", "json_object", None]  # each refused, then plain text
        assert VERDICT.schema == json.loads(fake.requests[-1]["messages"][-1]["content"].split("JSON schema: ", 1)[1])
        assert ask_json(provider, QUESTION, VERDICT) == {"stage": "answer", "hop": 2}  # validated and retried
        assert ["response_format" in body for body in fake.requests[3:]] == [False, False]  # remembered
        fake.queue(("status", 400))
        with pytest.raises(RcakitError) as excinfo:  # a 400 about something else is not a fallback
            provider.chat(QUESTION, json_schema=VERDICT.schema)
        one_line(excinfo, "HTTP 400: model exploded second line")
        assert len(fake.requests) == 6


@pytest.mark.slow
@pytest.mark.parametrize(
    ("formats", "status", "modes"),
    [
        (None, 400, ["json_schema"]),
        (["json_object"], 400, ["json_schema", "json_object"]),
        (["json_object"], 500, ["json_schema", "json_object"]),  # llama-cpp-python's server answers 500
        (["json_object"], 422, ["json_schema", "json_object"]),
        ([], 400, ["json_schema", "json_object", "text"]),
        ([], 500, ["json_schema", "json_object", "text"]),
    ],
    ids=["takes json_schema", "400s json_schema", "500s json_schema", "422s json_schema", "400s both", "500s both"],
)
def test_structured_output_is_negotiated_once_per_server_and_the_mode_is_recorded(
    tmp_path, monkeypatch, formats, status, modes
):
    """Issue 48, item 5: a server that rejects json_schema is asked for json_object, then in plain text, each
    step once per server for the run (a second provider on it starts where the first ended); the 5xx naming
    response_format is not retried as a server fault; the mode goes into the reply, the cache and the results."""
    from rcakit import results
    from rcakit.llm import base

    monkeypatch.setattr(base, "_MODES_USED", {})
    monkeypatch.setenv("RCAKIT_RESULTS_DIR", str(tmp_path / "results"))
    with FakeOpenAIServer(models=[MODEL], formats=formats, format_status=status) as fake:
        provider = cached(OpenAIProvider(MODEL, fake.base_url, 2.0), ResponseCache(tmp_path / "cache"))
        fake.queue(("reply", ANSWER))
        assert ask_json(provider, QUESTION, VERDICT) == {"stage": "answer", "hop": 2}
        asked = [body.get("response_format", {}).get("type") or "text" for body in fake.requests]
        assert asked == modes  # one request per mode: no retry of a rejection
        again = OpenAIProvider(MODEL, fake.base_url, 2.0)  # the same server: remembered for the run
        fake.queue(("reply", ANSWER))
        assert again.chat(QUESTION, json_schema=VERDICT.schema).mode == modes[-1]
        assert len(fake.requests) == len(modes) + 1
        assert (fake.requests[-1].get("response_format") or {}).get("type", "text") == modes[-1]
    results.record("toy", {"x": 1}, {})
    assert results.load("toy")["llm_output_modes"] == {f"openai:{MODEL}": [modes[-1]]}
    monkeypatch.setattr(base, "_MODES_USED", {})  # a warm rerun: the cached reply carries its mode
    assert ask_json(provider, QUESTION, VERDICT) == {"stage": "answer", "hop": 2}
    assert base.output_modes() == {f"openai:{MODEL}": [modes[-1]]}


@pytest.mark.slow
def test_a_rejection_about_something_else_is_not_a_fallback(tmp_path):
    with FakeOpenAIServer(models=[MODEL]) as fake:
        provider = OpenAIProvider(MODEL, fake.base_url, 2.0, max_retries=0)
        fake.queue(("status", 500), ("status", 401))
        for code in (500, 401):
            with pytest.raises(RcakitError, match=f"HTTP {code}"):
                provider.chat(QUESTION, json_schema=VERDICT.schema)
        assert [body["response_format"]["type"] for body in fake.requests] == ["json_schema", "json_schema"]


@pytest.mark.slow
def test_the_url_is_the_argument_else_openai_base_url_else_openais(fake, monkeypatch):
    assert OpenAIProvider(MODEL).endpoint == DEFAULT_URL
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/")
    assert provider_from_spec(f"openai:{MODEL}").endpoint == fake.base_url
    assert provider_from_spec(f"openai:{MODEL}", base_url="").chat(QUESTION).text.startswith('{"echo"')
    assert provider_from_spec(f"openai:{MODEL}", base_url="http://elsewhere:1/v1").endpoint == "http://elsewhere:1/v1"
    probe(f"openai:{MODEL}", timeout=2)
    assert fake.paths[-1] == "GET /v1/models"
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://files.example")
    with pytest.raises(RcakitError, match=r"^OPENAI_BASE_URL: ftp://files.example is not an http:// or https:// URL"):
        provider_from_spec(f"openai:{MODEL}")


@pytest.mark.slow
def test_the_probe_lists_what_the_server_has_when_the_model_is_missing():
    with FakeOpenAIServer(models=[f"m{i}" for i in range(8)]) as fake:
        with pytest.raises(RcakitError) as excinfo:
            probe("openai:gpt-4o-mini", base_url=fake.base_url, timeout=2, param="judge_provider")
    message = one_line(excinfo, "no model 'gpt-4o-mini' on the server (it lists: 'm0', 'm1', 'm2', 'm3', 'm4', ...")
    assert message.startswith(f"judge_provider: openai at {fake.base_url}") and "(8 in all)" in message


@pytest.mark.slow
def test_the_cache_key_adds_the_endpoint_for_openai_and_not_for_ollama(fake, tmp_path):
    opts = {"temperature": 0.0, "seed": 0, "max_tokens": 8, "json_schema": None}
    messages = [{"role": "user", "content": "hi"}]
    assert canonical_request("ollama", "m", messages, opts) == (  # today's Ollama and llama.cpp keys, byte for byte
        '{"messages":[{"content":"hi","role":"user"}],"model":"m",'
        '"options":{"json_schema":null,"max_tokens":8,"seed":0,"temperature":0.0},"provider":"ollama"}'
    )
    chat = cached(OpenAIProvider(MODEL, fake.base_url, 2.0), ResponseCache(tmp_path / "c"))
    chat.chat(messages, max_tokens=8)
    request = canonical_request("openai", MODEL, messages, opts, fake.base_url)
    assert f'"endpoint":"{fake.base_url}"' in request and ResponseCache(tmp_path / "c").get(request) is not None


@pytest.mark.parametrize(
    "value, phrase",
    [
        ("ftp://host/v1", "is not an http:// or https:// URL with a host"),
        ("localhost:8000", "is not an http:// or https:// URL with a host"),
        ("http://", "is not an http:// or https:// URL with a host"),
        ("http://127.0.0.1:99999/v1", "is not a usable URL"),
        ("http://bob:s3cret@host/v1", "a user name or password in the URL would be recorded"),
        (8000, "expected a URL string"),
    ],
)
def test_llm_base_url_is_checked_in_one_line_without_the_network(value, phrase):
    with pytest.raises(RcakitError) as excinfo:
        check_base_url(value)
    message = one_line(excinfo, phrase)
    assert message.startswith("llm_base_url: ") and "s3cret" not in message
    if isinstance(value, str):  # a chapter refuses another type first, as for any str parameter
        with pytest.raises(RcakitError, match=f"^longrca-strata: llm_base_url: .*{re.escape(phrase)}"):
            registry.validate("longrca-strata", {"provider": "openai:m", "llm_base_url": value})


def test_every_chapter_with_a_provider_takes_llm_base_url():
    with_provider = [c for c in registry.PAGES if "provider" in registry.get(c).parameters]
    assert len(with_provider) == 5
    for chapter_id in with_provider:
        chapter = registry.get(chapter_id)
        assert chapter.parameters["llm_base_url"].default == ""
        assert "openai|anthropic:MODEL" in chapter.parameters["provider"].comment


@pytest.mark.parametrize(
    "spec, phrase",
    [
        ("openai:", "unknown provider 'openai:'"),
        ("openai:   ", "unknown provider"),
        ("anthropic:", "unknown provider 'anthropic:'"),
        ("gemini:flash", "unknown provider 'gemini:flash'"),
        ("gpt-4o-mini", "unknown provider 'gpt-4o-mini'"),
    ],
)
def test_spec_errors_are_one_line_naming_the_parameter_and_the_forms(spec, phrase):
    with pytest.raises(RcakitError) as excinfo:
        check_spec(spec, param="judge_provider")
    message = one_line(excinfo, phrase, SPECS)
    assert message.startswith("judge_provider: ") and "openai:MODEL, anthropic:MODEL" in message


def test_a_missing_client_names_the_extra(monkeypatch):
    for module in ("openai", "anthropic"):
        monkeypatch.setitem(sys.modules, module, None)
        with pytest.raises(RcakitError, match=rf"^provider: the {module} client is not installed; pip install"):
            check_spec(f"{module}:m")


def test_model_names_keep_slashes_and_colons():
    for name in ("meta-llama/Llama-3.1-8B-Instruct", "qwen2.5:0.5b"):
        provider = provider_from_spec(f"openai:{name}", base_url="http://127.0.0.1:1/v1")
        assert provider.model == name and provider.name == "openai"


# --- chapters end to end ---------------------------------------------------------------------------


@pytest.mark.slow
def test_longrca_strata_runs_against_an_openai_compatible_server(tmp_path):
    with FakeOpenAIServer(models=["served-model"], key=KEY) as fake:
        env = {"OPENAI_API_KEY": KEY}
        cold, warm = cache_lines(
            "longrca-strata", tmp_path, env, "provider", "openai:served-model", "llm_base_url", fake.base_url
        )
        calls = len(fake.requests)
    assert calls > 0 and f"+{calls} misses" in cold and "+0 misses" in warm
    assert leaks(tmp_path) == []


@pytest.mark.slow
def test_coverage_collapse_runs_with_an_llm_agent_on_an_openai_compatible_server(tmp_path):
    from rcakit.rag.world import build_world

    world = build_world(0, n_entities=1200, n_questions=40, hops=3)  # the chapter's quick world
    with FakeOpenAIServer(rag_model(world), models=["served-model"], key=KEY) as fake:
        (cold,) = cache_lines(  # one run: the warm rerun's zero misses are shown on longrca-strata
            "coverage-collapse",
            tmp_path,
            {**OPENAI.environment(fake), "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"},  # the parameter wins
            *("agent", "llm", "provider", "openai:served-model", "llm_base_url", fake.base_url),
            runs=1,
        )
        calls = len(fake.requests)
    assert calls > 0 and f"+{calls} misses" in cold
    assert leaks(tmp_path) == []
