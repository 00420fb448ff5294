"""rcakit.llm.settings: one place turns a provider string into a model, with the run's timeout and server;
a second place, in the package, a notebook or a benchmark, is found."""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

from rcakit import RcakitError
from rcakit.llm import LLMSettings, model_for
from rcakit.paths import project_root

# What builds a provider from a spec, and the one file each may be called in.
CONSTRUCTORS = {
    "provider_from_spec": "rcakit/llm/settings.py",  # the spec parser, called by model_for alone
    "OllamaProvider": "rcakit/llm/spec.py",
    "OpenAIProvider": "rcakit/llm/spec.py",
    "AnthropicProvider": "rcakit/llm/spec.py",
    "LlamaCppProvider": "rcakit/llm/spec.py",
    "_client_class": "rcakit/llm/spec.py",
}


def _sources(root: Path) -> dict[str, str]:
    """The Python code of the package, the benchmarks and the notebooks' code cells, by relative path."""
    files = {p: p.read_text(encoding="utf-8") for d in ("rcakit", "benchmarks") for p in (root / d).rglob("*.py")}
    for page in (root / "notebooks").glob("*.md"):
        cells = jupytext.read(page, fmt="md:myst").cells
        code = [c.source for c in cells if c.cell_type == "code"]
        files[page] = "\n".join(line for cell in code for line in cell.splitlines() if not line.startswith(("%", "!")))
    return {p.relative_to(root).as_posix(): text for p, text in files.items()}


def constructions(root: Path) -> set[tuple[str, str]]:
    """Each (file, constructor) where a provider is built from a spec, calls inside functions included."""
    found = set()
    for rel, text in _sources(root).items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name in CONSTRUCTORS:
                    found.add((rel, name))
    return found


def test_one_place_turns_a_provider_string_into_a_model():
    """``model_for`` alone calls the spec parser, and only the parser builds a provider class."""
    assert constructions(project_root()) == {
        ("rcakit/llm/settings.py", "provider_from_spec"),
        ("rcakit/llm/spec.py", "OllamaProvider"),
        ("rcakit/llm/spec.py", "LlamaCppProvider"),
        ("rcakit/llm/spec.py", "_client_class"),
    }


def test_a_second_constructor_in_a_module_or_a_notebook_is_found(tmp_path):
    for folder in ("rcakit/llm", "benchmarks", "notebooks"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "rcakit/llm/settings.py").write_text("def model_for(s):\n    return provider_from_spec(s)\n")
    (tmp_path / "rcakit/chapter.py").write_text("def run():\n    return llm.provider_from_spec('ollama:m')\n")
    (tmp_path / "notebooks/page.md").write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        "```{code-cell} ipython3\nmodel = OllamaProvider('m', host=None, timeout=1)\n```\n"
    )
    found = constructions(tmp_path)
    assert {(f, n) for f, n in found if CONSTRUCTORS[n] != f} == {
        ("rcakit/chapter.py", "provider_from_spec"),
        ("notebooks/page.md", "OllamaProvider"),
    }


def test_settings_read_a_chapters_parameters_and_name_the_role_in_errors():
    params = {"provider": "none", "judge_provider": "none", "llm_timeout": 30.0, "llm_base_url": "", "seed": 1}
    assert LLMSettings.of(params) == LLMSettings("none", "none", 30.0, "")
    assert LLMSettings.of({"provider": "none"}) == LLMSettings()  # a chapter without a judge or a server
    assert not model_for(LLMSettings.of(params))  # none: a falsy provider
    with pytest.raises(RcakitError, match="^judge_provider: unknown provider 'gpt-4'"):
        model_for(LLMSettings(judge_provider="gpt-4"), "judge_provider")
    with pytest.raises(RcakitError, match="^provider: unknown provider"):
        model_for(LLMSettings("gpt-4"))


def test_the_timeout_and_server_reach_the_model():
    pytest.importorskip("openai")
    chat = model_for(LLMSettings("openai:m", timeout=7.0, base_url="http://127.0.0.1:9/v1"))
    assert (chat.timeout, chat.explicit_base_url) == (7.0, "http://127.0.0.1:9/v1")
