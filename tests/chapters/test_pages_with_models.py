"""Every LLM path the README documents leaves a page that a strict build accepts (issue 29, item 5).

The documented LLM pilot (``gcjr-ablations -p pilot_policy llm``) once left a
glued null that failed every later ``rcakit build``; ``make seeds`` and ``make
bounds`` never run a model. Here each documented model path runs at quick
against the fake servers of ``tests/support/llm_servers.py`` (Ollama, OpenAI-compatible,
Anthropic), whose replies echo the prompt and so match no schema: the hostile
end of what a real model answers. Each page is then judged as a strict build
judges it (``page_glue.problems``, through ``quick_runs.sweep``).
"""

from __future__ import annotations

import pytest

from rcakit.store import store_folder
from support.llm_servers import FakeAnthropicServer, FakeOllamaServer, FakeOpenAIServer
from support.quick_runs import sweep

pytestmark = pytest.mark.chapters

RUNS = {  # the README's model commands, at quick, one protocol or a cross-family pair each
    "car-shapley, Ollama": ("car-shapley", {"provider": "ollama:tiny"}),
    "longrca-strata, OpenAI-compatible": ("longrca-strata", {"provider": "openai:gpt-4o-mini"}),
    "gcjr-ablations, the LLM pilot on Anthropic": (
        "gcjr-ablations",
        {"pilot_policy": "llm", "provider": "anthropic:claude-haiku-4-5"},
    ),
    "coverage-collapse, an LLM agent judged by another family": (
        "coverage-collapse",
        {"agent": "llm", "provider": "ollama:tiny", "judge_provider": "openai:gpt-4o-mini"},
    ),
    "content-corruption, an LLM agent judged by another family": (
        "content-corruption",
        {"agent": "llm", "provider": "anthropic:claude-haiku-4-5", "judge_provider": "openai:gpt-4o-mini"},
    ),
}


@pytest.fixture
def model_servers(monkeypatch, tmp_path):
    """The three fake servers, named by the environment each provider reads; a fresh model cache."""
    with (
        FakeOllamaServer(models=["tiny"]) as ollama,
        FakeOpenAIServer(models=["gpt-4o-mini"]) as openai,
        FakeAnthropicServer(models=["claude-haiku-4-5"]) as anthropic,
    ):
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        monkeypatch.setenv("OPENAI_BASE_URL", openai.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))
        yield {"ollama": ollama, "openai": openai, "anthropic": anthropic}


RAG = ("coverage-collapse", "content-corruption")  # their side-by-side runs use the rule reader, no model


@pytest.mark.parametrize("label", list(RUNS))
def test_each_documented_model_path_leaves_a_page_a_strict_build_accepts(label, model_servers, tmp_path, quick_book):
    """A RAG chapter reads the quick book's case store: its rule-reader runs resume from the book's (their
    cases are keyed by parameters and code, so none is another's), and only the model's cases run here."""
    chapter_id, overrides = RUNS[label]
    if chapter_id in RAG:
        overrides = {**overrides, "store": str(store_folder())}
    failed = sweep(chapter_id, {label: overrides}, tmp_path)
    assert failed == {}, failed
    asked = {name for name, server in model_servers.items() if server.requests}
    wanted = {spec.partition(":")[0] for key, spec in overrides.items() if key.endswith("provider")}
    assert asked == wanted  # each named server was called, and no other
