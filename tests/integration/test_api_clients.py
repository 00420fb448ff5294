"""What the ``openai:`` and ``anthropic:`` providers share, each test run against both fake servers.

The fakes (``tests/support/llm_servers.py``) speak each protocol over real HTTP on 127.0.0.1, for the official
clients; the key planted in the environment (``llm_apis.KEY``) must never come back in an error, a
cache file or a pickle. Retries are the clients' own (``rcakit.llm.sdk.MAX_RETRIES``), a server's
``Retry-After`` honoured up to ``MAX_RETRY_AFTER`` seconds and refused beyond it.
"""

from __future__ import annotations

import base64
import pickle
import socket

import pytest

from rcakit import RcakitError
from rcakit.llm import MethodUsage, ResponseCache, Shape, ask_json, cached
from rcakit.llm.base import REPLY_CHARS_PER_TOKEN
from rcakit.llm.sdk import MAX_RETRIES, MAX_RETRY_AFTER, REDACTED, longest_wait
from support.llm_apis import APIS, ENVIRONMENT, KEY, MODEL, QUESTION, leaks, one_line
from support.llm_servers import SilentServer

VERDICT = Shape(stage=("retrieval", "answer"), hop=range(1, 4))
PROMPT_CHARS = sum(len(m["content"]) for m in QUESTION)
pytestmark = pytest.mark.slow  # every test here starts a server


@pytest.fixture(autouse=True)
def planted_key(tmp_path, monkeypatch):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for api in APIS.values():
        monkeypatch.setenv(api.key_env, KEY)
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))


@pytest.fixture(params=sorted(APIS))
def api(request):
    return APIS[request.param]


@pytest.fixture
def fake(api):
    with api.serve(key=KEY) as server:
        yield server


def test_a_round_trip_counts_the_replys_usage_and_a_warm_rerun_asks_nothing(api, fake, tmp_path):
    usage = MethodUsage()
    chat = cached(api.provider(fake), ResponseCache(tmp_path / "c"), accounting=usage)
    reply = chat.chat(QUESTION, max_tokens=40)
    assert reply.text == '{"echo": "Which hop failed?"}'
    assert (reply.input_tokens, reply.output_tokens) == (PROMPT_CHARS, len(reply.text))  # the fake's usage
    warm_usage = MethodUsage()
    warm = cached(api.provider(fake), ResponseCache(tmp_path / "c"), accounting=warm_usage)
    assert warm.chat(QUESTION, max_tokens=40) == reply and len(fake.requests) == 1
    assert warm_usage.totals() == usage.totals() and warm_usage.model_calls == 0 and usage.model_calls == 1


def test_a_429_storm_is_retried_after_retry_after_then_one_line(api, fake):
    fake.queue(*[("status", (429, 1))] * (MAX_RETRIES + 1))
    with pytest.raises(RcakitError) as excinfo:
        api.provider(fake).chat(QUESTION)
    one_line(excinfo, f"{api.kind} at {fake.url}", "HTTP 429: model exploded second line", f"({MAX_RETRIES + 1} tries)")
    assert len(fake.requests) == MAX_RETRIES + 1  # the bound: no request after the last retry
    gaps = [b - a for a, b in zip(fake.times, fake.times[1:], strict=False)]
    assert min(gaps) >= 0.95  # each retry waited the server's 1 s, not the clients' first 0.5 s backoff


def test_a_429_that_clears_is_answered(api, fake):
    fake.queue(("status", (429, 0.2)), ("status", (429, 0.2)))
    assert api.provider(fake).chat(QUESTION).text == '{"echo": "Which hop failed?"}'
    assert len(fake.requests) == 3


def test_a_retry_after_past_the_bound_is_not_waited_for(api, fake):
    fake.queue(("status", (429, 3600)), ("reply", "too late"))
    with pytest.raises(RcakitError) as excinfo:
        api.provider(fake).chat(QUESTION)
    one_line(excinfo, "HTTP 429", f"asks to wait 3600 s, longer than the {MAX_RETRY_AFTER:g} s rcakit waits")
    assert len(fake.requests) == 1
    assert longest_wait(120.0) == (MAX_RETRIES + 1) * 120 + MAX_RETRIES * MAX_RETRY_AFTER == 660.0


def test_a_500_is_retried_and_without_retries_is_one_line(api, fake):
    fake.queue(("status", 500))
    assert api.provider(fake).chat(QUESTION).text.startswith('{"echo"') and len(fake.requests) == 2
    fake.queue(("status", 503))
    with pytest.raises(RcakitError) as excinfo:
        api.provider(fake, max_retries=0).chat(QUESTION)
    assert "tries" not in one_line(excinfo, "HTTP 503: model exploded second line", MODEL)


@pytest.mark.parametrize(
    "body, phrase",
    [
        ("{not json", "malformed reply from the server"),
        ('{"unexpected": true}', "the reply text is NoneType, not a string"),
        ("[1, 2]", "malformed reply from the server"),
    ],
)
def test_a_malformed_body_is_one_line_and_nothing_is_cached(api, fake, tmp_path, body, phrase):
    fake.queue(("malformed", body))
    cache = ResponseCache(tmp_path / "c")
    with pytest.raises(RcakitError) as excinfo:
        cached(api.provider(fake), cache).chat(QUESTION)
    one_line(excinfo, phrase, f"{api.kind} at {fake.url}")
    assert len(cache) == 0


def test_a_reply_longer_than_max_tokens_can_hold_is_refused(api, fake, tmp_path):
    fake.queue(("reply", "x" * (REPLY_CHARS_PER_TOKEN * 4 + 1)))
    cache = ResponseCache(tmp_path / "c")
    with pytest.raises(RcakitError) as excinfo:
        cached(api.provider(fake), cache).chat(QUESTION, max_tokens=4)
    one_line(excinfo, "more than 4 tokens can hold")
    assert len(cache) == 0


def test_a_reply_that_ignores_the_schema_is_retried_once_then_abstained(api, fake, tmp_path):
    fake.queue(("reply", "The second hop, I believe."), ("reply", "Hop two."))
    usage = MethodUsage()
    chat = cached(api.provider(fake), ResponseCache(tmp_path / "c"), accounting=usage)
    assert ask_json(chat, QUESTION, VERDICT) is None
    assert usage.abstentions == 1 and usage.calls == 2 and len(fake.requests) == 2
    assert "not valid JSON" in str(fake.requests[1]["messages"][-1]["content"])
    fake.queue(("reply", "Hop two."), ("reply", '{"stage": "answer", "hop": 2}'))
    assert ask_json(chat, [{"role": "user", "content": "again"}], VERDICT) == {"stage": "answer", "hop": 2}


def test_a_silent_server_fails_after_each_try_times_out(api):
    with SilentServer(lifetime=30) as silent:
        provider = api.provider_class(MODEL, api.url(silent), 0.5)
        with pytest.raises(RcakitError) as excinfo:
            provider.chat(QUESTION)
        assert silent.connections == MAX_RETRIES + 1  # each try a fresh connection, each cut at 0.5 s
    one_line(excinfo, silent.url, f"no reply within the 0.5 s timeout ({MAX_RETRIES + 1} tries)")


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "status line and headers"])
def test_a_server_that_trickles_its_reply_times_out_like_a_silent_one(api, fake, headers_too):
    """One byte every 0.1 s never trips a per-read timeout: the 1 s bound is on the whole request."""
    fake.trickle = (0.1, headers_too)
    for call in (
        lambda: api.provider_class(MODEL, api.url(fake), 1.0, max_retries=0).chat(QUESTION),
        lambda: api.provider_class.probe(MODEL, api.url(fake), 1.0, "provider"),
    ):
        with pytest.raises(RcakitError) as excinfo:  # a per-read bound would let the 20 s reply through
            call()
        one_line(excinfo, fake.url, "no reply within the 1 s timeout")


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_the_probe_asks_once_and_names_the_parameter_and_the_server(api, fake):
    api.provider_class.probe(MODEL, api.url(fake), 2.0, "judge_provider")
    assert len(fake.paths) == 1 and fake.requests == []  # one GET about the model, no chat
    with pytest.raises(RcakitError) as excinfo:
        api.provider_class.probe("absent-model", api.url(fake), 2.0, "judge_provider")
    message = one_line(excinfo, f"{api.kind} at {fake.url}", "no model 'absent-model' on the server")
    assert message.startswith("judge_provider: ")


def test_the_probe_of_a_server_that_is_down_silent_or_refuses_the_key(api, monkeypatch):
    down = closed_port_url()
    with pytest.raises(RcakitError) as excinfo:
        api.provider_class.probe(MODEL, api.url(down), 1.0, "provider")
    assert one_line(excinfo, "cannot connect").startswith(f"provider: {api.kind} at {down}")
    with SilentServer(lifetime=30) as silent:
        with pytest.raises(RcakitError) as excinfo:
            api.provider_class.probe(MODEL, api.url(silent.url), 0.5, "provider")
        assert silent.connections == 1  # a probe makes no retry
    one_line(excinfo, silent.url, "no reply within the 0.5 s timeout")
    with api.serve(key="another-key") as strict:
        with pytest.raises(RcakitError) as excinfo:
            api.provider_class.probe(MODEL, api.url(strict), 2.0, "provider")
    message = one_line(excinfo, "HTTP 401: invalid credentials", f"is {api.key_env} set to a key this server takes?")
    assert REDACTED in message  # the server quoted the key back; the line does not


def test_an_error_body_that_echoes_the_key_is_redacted(api, fake, tmp_path):
    fake.queue(("echo_auth", 401), ("echo_auth", 400))
    for _ in range(2):
        with pytest.raises(RcakitError) as excinfo:
            api.provider(fake).chat(QUESTION)
        assert REDACTED in one_line(excinfo, "invalid credentials")


def test_the_cache_key_holds_the_endpoint_and_never_the_key(api, tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path / "c")
    with api.serve() as first, api.serve() as second:
        cached(api.provider(first), cache).chat(QUESTION)
        cached(api.provider(second), cache).chat(QUESTION)  # another server: another key, a miss
        monkeypatch.setenv(api.key_env, "sk-another-key-entirely")
        cached(api.provider(first), cache).chat(QUESTION)  # another API key, same server: a hit
        assert (len(first.requests), len(second.requests), cache.hits, cache.misses) == (1, 1, 1, 2)
    assert leaks(tmp_path) == [] and leaks(tmp_path, "sk-another-key-entirely") == []


def test_a_provider_pickles_as_its_settings_and_reads_the_key_where_it_lands(api, fake, tmp_path, monkeypatch):
    chat = cached(api.provider(fake, timeout=3.0), ResponseCache(tmp_path / "c"))
    data = pickle.dumps(chat)
    assert KEY.encode() not in data and KEY not in repr(chat)
    monkeypatch.setenv(api.key_env, "sk-the-workers-own")  # the process that unpickles has its own key
    again = pickle.loads(data)
    assert (again.provider.model, again.provider.timeout, again.endpoint) == (MODEL, 3.0, api.url(fake).rstrip("/"))
    with pytest.raises(RcakitError, match="HTTP 401"):
        again.chat(QUESTION)  # it sent the worker's key, which this server refuses
    monkeypatch.setenv(api.key_env, KEY)
    assert pickle.loads(data).chat(QUESTION).text.startswith('{"echo"')


def test_credentials_in_the_url_stay_out_of_errors_and_keys(api, monkeypatch, tmp_path):
    with api.serve() as fake:
        url = api.url(fake).replace("http://", "http://alice:hunter2-secret@")
        monkeypatch.setenv(api.url_env, url)
        provider = api.provider_class(MODEL, None, 2.0)
        assert provider.endpoint == api.url(fake) and "hunter2" not in repr(provider)
        fake.queue(("echo_auth", 401))
        with pytest.raises(RcakitError) as excinfo:
            provider.chat(QUESTION)
        message = one_line(excinfo, api.url(fake), "invalid credentials: Authorization 'Basic [redacted]'")
        assert "hunter2-secret" not in message and base64.b64encode(b"alice:hunter2-secret").decode() not in message
        cached(provider, ResponseCache(tmp_path / "c")).chat(QUESTION)
    assert leaks(tmp_path, "hunter2-secret", "alice") == []


def test_a_reply_nested_too_deeply_is_one_line_naming_the_server(api, fake):
    """Issue 48, D15: before, a bare RecursionError naming no server."""
    fake.queue(("malformed", "[" * 200_000 + "]" * 200_000))
    with pytest.raises(RcakitError) as excinfo:
        api.provider(fake, max_retries=0).chat(QUESTION)
    one_line(excinfo, fake.url, "malformed reply from the server (JSON nested too deeply to read)")


def test_a_redirect_loop_on_the_chat_request_says_so(api, fake):
    """Issue 48, D21: before, a 307 loop on the chat POST read as "cannot connect"."""
    fake.queue(*[("redirect", 307)] * 100)
    with pytest.raises(RcakitError) as excinfo:
        api.provider(fake, max_retries=0).chat(QUESTION)
    message = one_line(excinfo, fake.url, "the server redirects the request in a loop (too many redirects)")
    assert "cannot connect" not in message
