"""``anthropic:MODEL``: Anthropic's Messages API through the official client, and the chapters that use it.

Against ``FakeAnthropicServer`` on 127.0.0.1 (``$ANTHROPIC_BASE_URL``): system messages in the
``system`` field, no seed (``replays`` is false), ``temperature`` dropped for a model that refuses it,
the probe's ``GET /v1/models/{id}``, and two chapters run end to end with a warm rerun that makes no
model call and no planted key in anything they wrote. What both API providers share is in
``test_api_clients.py``.
"""

from __future__ import annotations

import pytest

from rcakit import RcakitError
from rcakit.llm import probe, provider_from_spec
from rcakit.llm.anthropic import DEFAULT_URL, AnthropicProvider
from support.llm_apis import ANTHROPIC, ENVIRONMENT, KEY, MODEL, QUESTION, cache_lines, leaks, one_line, rag_model
from support.llm_servers import FakeAnthropicServer

pytestmark = pytest.mark.slow  # every test here starts a server


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))


@pytest.fixture
def fake(monkeypatch):
    with FakeAnthropicServer(models=[MODEL]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        yield server


def test_system_messages_go_in_the_system_field_and_no_seed_is_sent(fake):
    provider = provider_from_spec(f"anthropic:{MODEL}", timeout=2)
    assert provider.endpoint == fake.url and not provider.replays
    messages = [QUESTION[0], {"role": "system", "content": "Be brief."}, *QUESTION[1:]]
    reply = provider.chat(messages, seed=11, max_tokens=40, temperature=0.25)
    (body,) = fake.requests
    assert body["system"] == "You are a judge.\n\nBe brief."
    assert body["messages"] == [{"role": "user", "content": "Which hop failed?"}]
    assert (body["model"], body["max_tokens"], body["temperature"]) == (MODEL, 40, 0.25)
    assert "seed" not in body  # the API takes none
    assert reply.input_tokens == sum(len(m["content"]) for m in messages) + 2  # the fake counts the joined system
    provider.chat(QUESTION[1:])
    assert "system" not in fake.requests[-1]


def test_a_model_that_refuses_temperature_is_asked_without_it_from_then_on():
    with FakeAnthropicServer(models=[MODEL], refuses=["temperature"]) as fake:
        provider = AnthropicProvider(MODEL, fake.url, 2.0)
        assert provider.chat(QUESTION, temperature=0.8).text.startswith('{"echo"')
        provider.chat(QUESTION, temperature=0.8)
    assert ["temperature" in body for body in fake.requests] == [True, False, False]


def test_the_url_is_anthropic_base_url_else_anthropics(fake, monkeypatch):
    probe(f"anthropic:{MODEL}", timeout=2)
    assert fake.paths == [f"GET /v1/models/{MODEL}"] and fake.shown == [MODEL]
    with pytest.raises(RcakitError) as excinfo:
        probe("anthropic:claude-none", timeout=2, param="judge_provider")
    assert one_line(excinfo, "no model 'claude-none' on the server").startswith(
        f"judge_provider: anthropic at {fake.url}"
    )
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert provider_from_spec("anthropic:claude-haiku-4-5").endpoint == DEFAULT_URL
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "not a url")
    with pytest.raises(RcakitError, match="^ANTHROPIC_BASE_URL: not a url is not an http"):
        provider_from_spec("anthropic:claude-haiku-4-5")


def test_llm_base_url_is_for_openai_servers_only(fake):
    provider = provider_from_spec(f"anthropic:{MODEL}", base_url="http://127.0.0.1:1/v1", timeout=2)
    assert provider.endpoint == fake.url
    probe(f"anthropic:{MODEL}", base_url="http://127.0.0.1:1/v1", timeout=2)


# --- chapters end to end ---------------------------------------------------------------------------


def test_longrca_strata_runs_against_anthropics_api(tmp_path):
    with FakeAnthropicServer(models=["claude-test"], key=KEY) as fake:
        cold, warm = cache_lines(
            "longrca-strata", tmp_path, ANTHROPIC.environment(fake), "provider", "anthropic:claude-test"
        )
        calls = len(fake.requests)
    assert calls > 0 and f"+{calls} misses" in cold and "+0 misses" in warm
    assert leaks(tmp_path) == []


def test_coverage_collapse_runs_with_a_claude_agent(tmp_path):
    from rcakit.rag.world import build_world

    world = build_world(0, n_entities=1200, n_questions=40, hops=3)  # the chapter's quick world
    with FakeAnthropicServer(rag_model(world), models=["claude-test"], key=KEY) as fake:
        (cold,) = cache_lines(  # one run: the warm rerun's zero misses are shown on longrca-strata
            "coverage-collapse",
            tmp_path,
            ANTHROPIC.environment(fake),
            "agent",
            "llm",
            "provider",
            "anthropic:claude-test",
            runs=1,
        )
        calls = len(fake.requests)
    assert calls > 0 and f"+{calls} misses" in cold
    assert leaks(tmp_path) == []
