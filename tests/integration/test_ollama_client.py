"""rcakit.llm against a fake Ollama server on 127.0.0.1, over real HTTP.

The fake server (``FakeOllamaServer`` of ``tests/support/llm_servers.py``) speaks enough of
Ollama's ``/api/chat`` for the real ``ollama`` client: a non-streaming JSON
reply with ``message.content``, ``prompt_eval_count``, ``eval_count`` and
``done``. Each test queues canned behaviours (a reply, an HTTP status, a
hang); with none queued the server echoes the last message as JSON.
The llama.cpp tests carry the ``llamacpp`` marker and skip, with the reason,
when llama-cpp-python is not importable, unless ``RCAKIT_REQUIRE_LLAMACPP`` is
set (``make smoke-llm`` and ``make test-llm`` set it): then they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from rcakit import RcakitError
from rcakit.llm import (
    Accounting,
    ContextOverflow,
    MethodUsage,
    NullProvider,
    Reply,
    ResponseCache,
    Shape,
    ask_json,
    cache_totals,
    cached,
    parse_json,
    probe,
    provider_from_spec,
)
from rcakit.llm.cache import canonical_request
from support import ROOT
from support.llm_servers import FakeOllamaServer, ScriptedProvider

VERDICT = Shape(stage=("retrieval", "reasoning", "answer"), hop=range(1, 4))
QUESTION = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Which hop failed?"}]


@pytest.fixture
def fake():
    with FakeOllamaServer() as server:
        yield server


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test's default cache lives in its own tmp folder, never the project's."""
    monkeypatch.setenv("RCAKIT_LLM_CACHE", str(tmp_path / "llm-cache"))
    return tmp_path / "llm-cache"


def ollama(fake, timeout=2.0):
    return provider_from_spec("ollama:tiny:1b", host=fake.url, timeout=timeout)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the Ollama provider over real HTTP -------------------------------------


def test_valid_json_reply_passes_options_and_schema(fake, tmp_path):
    fake.queue(("reply", '{"stage": "retrieval", "hop": 2, "why": "doc missing"}'))
    usage = MethodUsage()
    chat = cached(ollama(fake), ResponseCache(tmp_path), accounting=usage)
    verdict = ask_json(chat, QUESTION, VERDICT, seed=7, max_tokens=64)
    assert verdict == {"stage": "retrieval", "hop": 2}
    (request,) = fake.requests
    assert request["model"] == "tiny:1b" and request["stream"] is False
    assert request["options"]["seed"] == 7 and request["options"]["num_predict"] == 64
    assert request["options"]["temperature"] == 0.0
    assert request["format"] == VERDICT.schema
    assert request["messages"] == QUESTION
    content_chars = sum(len(m["content"]) for m in QUESTION)
    assert usage.totals() == {
        "cases": 0,
        "calls": 1,
        "input_tokens": content_chars,
        "output_tokens": 54,
        "abstentions": 0,
    }


def test_malformed_json_is_retried_once_with_the_error_then_abstains(fake, tmp_path):
    fake.queue(("reply", '{"stage": "retrieval", "hop": '), ("reply", "hop two, I think"))
    usage = MethodUsage()
    chat = cached(ollama(fake), ResponseCache(tmp_path), accounting=usage)
    assert ask_json(chat, QUESTION, VERDICT) is None
    assert len(fake.requests) == 2
    retry = fake.requests[1]["messages"]
    assert retry[:2] == QUESTION
    assert retry[2] == {"role": "assistant", "content": '{"stage": "retrieval", "hop": '}
    assert retry[3]["role"] == "user" and "not valid JSON" in retry[3]["content"]
    assert usage.abstentions == 1 and usage.calls == 2


def test_invalid_shape_is_fed_back_and_a_good_retry_is_used(fake, tmp_path):
    fake.queue(("reply", '{"stage": "retrieval", "hop": 9}'), ("reply", '{"stage": "answer", "hop": 3}'))
    usage = MethodUsage()
    chat = cached(ollama(fake), ResponseCache(tmp_path), accounting=usage)
    assert ask_json(chat, QUESTION, VERDICT) == {"stage": "answer", "hop": 3}
    assert "'hop' must be between 1 and 3; got 9" in fake.requests[1]["messages"][-1]["content"]
    assert usage.abstentions == 0 and usage.calls == 2


def assert_one_line_error(excinfo, host: str, *phrases: str):
    message = str(excinfo.value)
    assert "\n" not in message and host in message
    for phrase in phrases:
        assert phrase in message
    assert excinfo.value.__cause__ is None and excinfo.value.__suppress_context__


def test_http_500_is_one_line_naming_the_host(fake):
    fake.queue(("status", 500))
    with pytest.raises(RcakitError) as excinfo:
        ollama(fake).chat(QUESTION)
    assert_one_line_error(excinfo, fake.url, "HTTP 500", "model exploded second line", "tiny:1b")


def test_hang_past_the_timeout_is_one_line_naming_the_host(fake):
    fake.queue(("hang", 10.0))
    with pytest.raises(RcakitError) as excinfo:  # the hang ends without a reply: only the deadline names 0.5 s
        ollama(fake, timeout=0.5).chat(QUESTION)
    assert_one_line_error(excinfo, fake.url, "0.5 s timeout")


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "status line and headers"])
def test_a_server_that_trickles_its_reply_times_out_within_the_timeout(fake, headers_too):
    """One byte every 0.1 s never trips a per-read timeout: the bound is on the whole request, probe included."""
    fake.trickle = (0.1, headers_too)
    chat = ollama(fake, timeout=1.0).chat
    for call in (lambda: chat(QUESTION), lambda: probe("ollama:tiny:1b", host=fake.url, timeout=1.0)):
        with pytest.raises(RcakitError) as excinfo:  # a per-read bound would let the 10 s reply through
            call()
        assert_one_line_error(excinfo, fake.url, "1 s timeout")


def test_a_proxy_from_the_environment_is_still_used_and_bounded_too(fake, monkeypatch):
    """Bounding the requests keeps ``HTTP_PROXY``: the request reaches the proxy, which trickles, and times out."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake.url)
    fake.trickle = (0.1, False)
    with pytest.raises(RcakitError) as excinfo:
        provider_from_spec("ollama:tiny", host="http://model-server.invalid:11434", timeout=1.0).chat(QUESTION)
    assert fake.paths == ["POST http://model-server.invalid:11434/api/chat"]  # the proxy got it
    assert_one_line_error(excinfo, "http://model-server.invalid:11434", "1 s timeout")


def test_refused_connection_is_one_line_naming_the_host():
    host = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(RcakitError) as excinfo:
        provider_from_spec("ollama:tiny", host=host, timeout=0.5).chat(QUESTION)
    assert_one_line_error(excinfo, host, "cannot connect")


def test_abstention_is_not_charged_for_a_server_error(fake, tmp_path):
    fake.queue(("reply", "not json"), ("status", 500))
    usage = MethodUsage()
    chat = cached(ollama(fake), ResponseCache(tmp_path), accounting=usage)
    with pytest.raises(RcakitError, match="HTTP 500"):
        ask_json(chat, QUESTION, VERDICT)
    assert usage.abstentions == 0 and usage.calls == 1


def test_host_comes_from_ollama_host(fake, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", fake.url)
    provider = provider_from_spec("ollama:tiny")
    assert provider.host == fake.url
    reply = provider.chat(QUESTION, max_tokens=5)
    assert json.loads(reply.text) == {"echo": "Which hop failed?"}
    assert len(fake.requests) == 1


# --- the response cache ------------------------------------------------------


def run_method(chat, prompts):
    """A stand-in LLM-backed method: one JSON call per case."""
    answers = []
    for prompt in prompts:
        answers.append(ask_json(chat, [{"role": "user", "content": prompt}], lambda o: o["echo"]))
        chat.accounting.add_case()
    return answers


def test_warm_rerun_makes_zero_model_calls_and_costs_the_same(fake, cache_dir):
    prompts = ["case a", "case b", "case c", "case a"]
    cold_acct, warm_acct = Accounting(), Accounting()
    assert cache_totals() == {"hits": 0, "misses": 0} and not cache_dir.exists()
    cold_cache = ResponseCache()
    cold = run_method(cached(ollama(fake), cold_cache, cold_acct["echo"]), prompts)
    assert len(fake.requests) == 3  # the repeated case is a hit already
    assert cold_cache.counters() == {"hits": 1, "misses": 3}
    warm_cache = ResponseCache()  # a new process would build a new one
    warm = run_method(cached(ollama(fake), warm_cache, warm_acct["echo"]), prompts)
    assert warm == cold == prompts
    assert len(fake.requests) == 3
    assert warm_cache.counters() == {"hits": 4, "misses": 0}
    assert warm_acct.to_dict() == cold_acct.to_dict()
    assert cold_acct.to_dict(runtime=True)["echo"]["model_calls"] == 3
    assert warm_acct.to_dict(runtime=True)["echo"]["model_calls"] == 0
    assert cache_totals() == {"hits": 5, "misses": 3}  # what a runner reads around each run


def test_cache_key_covers_provider_model_messages_and_options():
    opts = {"temperature": 0.0, "seed": 0, "max_tokens": 8, "json_schema": None}
    base = canonical_request("ollama", "m", QUESTION, opts)
    variants = [
        canonical_request("llamacpp", "m", QUESTION, opts),
        canonical_request("ollama", "m2", QUESTION, opts),
        canonical_request("ollama", "m", QUESTION[1:], opts),
        canonical_request("ollama", "m", QUESTION, {**opts, "seed": 1}),
        canonical_request("ollama", "m", QUESTION, {**opts, "temperature": 0.7}),
        canonical_request("ollama", "m", QUESTION, {**opts, "max_tokens": 9}),
        canonical_request("ollama", "m", QUESTION, {**opts, "json_schema": VERDICT.schema}),
    ]
    keys = {ResponseCache.key(r) for r in [base, *variants]}
    assert len(keys) == 1 + len(variants)
    reordered = [{"content": m["content"], "role": m["role"]} for m in QUESTION]
    assert canonical_request("ollama", "m", reordered, dict(reversed(opts.items()))) == base


def test_concurrent_threads_lose_nothing(fake, tmp_path):
    cache = ResponseCache(tmp_path)
    acct = Accounting()
    chat = cached(ollama(fake), cache, acct["threads"])
    prompts = [f"prompt {i}" for i in range(40)]

    def worker(offset):
        for prompt in prompts[offset:] + prompts[:offset]:
            chat.chat([{"role": "user", "content": prompt}])

    threads = [threading.Thread(target=worker, args=(k * 10,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 40
    assert acct["threads"].calls == 160
    assert cache.hits + cache.misses == 160
    fresh = ResponseCache(tmp_path)
    for prompt in prompts:
        request = canonical_request(
            "ollama",
            "tiny:1b",
            [{"role": "user", "content": prompt}],
            {"temperature": 0.0, "seed": 0, "max_tokens": 256, "json_schema": None},
        )
        assert json.loads(fresh.get(request).text) == {"echo": prompt}


WRITER = """
import sys
from rcakit.llm import Reply, ResponseCache
cache = ResponseCache(sys.argv[1])
for i in range(int(sys.argv[3])):
    for key in (f"{sys.argv[2]}-{i}", f"shared-{i}"):
        cache.put(key, Reply(key, i, len(key)))
        assert cache.get(key).text == key
    assert cache.get(f"absent-{i}") is None
"""


@pytest.mark.slow
def test_concurrent_processes_lose_nothing(tmp_path):
    ResponseCache(tmp_path)  # the file exists before the race, as after a first run
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), name, "100"], env=env, stderr=subprocess.PIPE, text=True
        )
        for name in ("left", "right")
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert cache_totals(tmp_path) == {"hits": 400, "misses": 200}  # no lost counter update
    cache = ResponseCache(tmp_path)
    assert len(cache) == 300
    for key in ("left-99", "right-0", "shared-77"):
        reply = cache.get(key)
        assert reply.text == key and reply.output_tokens == len(key)


def test_default_cache_is_shared_by_methods_in_a_process(cache_dir):
    acct, model = Accounting(), ScriptedProvider()
    judge = cached(model, accounting=acct["judge"])
    reader = cached(model, accounting=acct["reader"])
    prompt = [{"role": "user", "content": "the same two words"}]
    assert judge.chat(prompt) == reader.chat(prompt)
    assert len(model.calls) == 1 and judge.cache is reader.cache
    assert judge.cache.counters() == {"hits": 1, "misses": 1}
    assert judge.cache.path == cache_dir / "responses.sqlite"
    assert (
        acct.to_dict()["judge"]
        == acct.to_dict()["reader"]
        == {"cases": 0, "calls": 1, "input_tokens": 4, "output_tokens": 5, "abstentions": 0}
    )


def test_unwritable_cache_folder_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RcakitError, match="cannot create the LLM cache folder"):
        ResponseCache(blocker / "sub")


# --- specs, the none provider, shapes, accounting ----------------------------


def test_none_is_falsy_and_its_use_names_the_parameter():
    judge = provider_from_spec("none", param="judge_provider")
    assert isinstance(judge, NullProvider) and not judge
    assert cached(judge, accounting=MethodUsage()) is judge
    with pytest.raises(RcakitError, match="^judge_provider: none is set"):
        judge.chat(QUESTION)


@pytest.mark.parametrize(
    "spec, phrase",
    [
        ("gpt-4o", "unknown provider 'gpt-4o'"),
        ("ollama:", "unknown provider"),
        ("llamacpp:weights.bin", "'weights.bin' is not a .gguf file"),
        ("llamacpp:/no/such/model.gguf", "/no/such/model.gguf does not exist"),
        (3, "expected a string"),
    ],
)
def test_bad_spec_is_one_line_naming_the_parameter(spec, phrase):
    with pytest.raises(RcakitError) as excinfo:
        provider_from_spec(spec)
    assert str(excinfo.value).startswith("provider: ") or "provider llamacpp" in str(excinfo.value)
    assert phrase in str(excinfo.value)


def test_token_counts_size_prompts_against_the_window(fake, tmp_path):
    provider = ollama(fake)
    assert provider.context_window == 8192
    # ceil(16 / 3) + 8 and ceil(17 / 3) + 8: an over-estimate, as documented
    assert provider.count_tokens(QUESTION) == 14 + 14
    assert cached(provider, ResponseCache(tmp_path)).count_tokens(QUESTION) == 28
    assert fake.requests == []
    with pytest.raises(RcakitError, match="provider: none is set"):
        provider_from_spec("none").count_tokens(QUESTION)


def test_missing_optional_packages_name_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ollama", None)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(RcakitError, match=r"ollama client is not installed; pip install 'rcakit\[llm\]'"):
        provider_from_spec("ollama:tiny")
    weights = tmp_path / "never-loaded.gguf"
    weights.write_bytes(b"GGUF")
    with pytest.raises(RcakitError, match=r"llama-cpp-python is not installed; pip install 'rcakit\[local-llm\]'"):
        provider_from_spec(f"llamacpp:{weights}")


def test_bad_messages_and_options_are_one_line_errors(fake):
    provider = ollama(fake)
    with pytest.raises(RcakitError, match=r"messages\[0\]\.role: 'robot'"):
        provider.chat([{"role": "robot", "content": "hi"}])
    with pytest.raises(RcakitError, match="temperature: 3"):
        provider.chat(QUESTION, temperature=3)
    assert fake.requests == []


def test_shape_checks_types_ranges_and_choices():
    assert VERDICT({"stage": "answer", "hop": 1, "extra": True}) == {"stage": "answer", "hop": 1}
    for bad, phrase in [
        ({"stage": "answer"}, "'hop' is missing"),
        ({"stage": "answer", "hop": "2"}, "JSON integer"),
        ({"stage": "answer", "hop": True}, "JSON integer"),
        ({"stage": "answer", "hop": 0}, "between 1 and 3"),
        ({"stage": "memory", "hop": 1}, "one of retrieval, reasoning, answer"),
        ([1, 2], "JSON object"),
    ]:
        with pytest.raises(ValueError, match=phrase):
            VERDICT(bad)
    assert Shape(score=float)({"score": 1}) == {"score": 1.0}
    assert VERDICT.schema["properties"]["hop"] == {"type": "integer", "minimum": 1, "maximum": 3, "enum": [1, 2, 3]}
    assert "enum" not in Shape(step=range(0, 1000)).schema["properties"]["step"]
    assert VERDICT.schema["required"] == ["stage", "hop"]


def test_parse_json_finds_fenced_and_embedded_objects():
    assert parse_json('```json\n{"hop": 2}\n```') == {"hop": 2}
    assert parse_json('Sure! {"hop": 3} hope that helps') == {"hop": 3}
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_json('{"hop": ')


def test_accounting_table_per_case():
    acct = Accounting()
    for tokens in (10, 30):
        acct["judge"].add_call(Reply("x", tokens, 2), cache_hit=False, seconds=0.5)
    acct["judge"].add_case()
    acct["idle"]
    table = acct.table()
    assert list(table.index) == ["idle", "judge"]
    assert table.loc["judge", "calls_per_case"] == 2 and table.loc["judge", "tokens_per_case"] == 44
    assert table["calls_per_case"].isna()["idle"]
    assert "model_seconds" not in table and acct.table(runtime=True).loc["judge", "seconds_per_case"] == 1.0


# --- llama.cpp (make test-llm) -----------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    if os.environ.get("RCAKIT_REQUIRE_LLAMACPP"):
        import llama_cpp  # noqa: F401  (an ImportError here fails the smoke test)
    else:
        pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make test-llm installs it)")
    return provider_from_spec("llamacpp:smollm2")


@pytest.mark.llamacpp
def test_smollm2_answers_deterministically(smollm2):
    messages = [{"role": "user", "content": "Name one colour."}]
    first = smollm2.chat(messages, max_tokens=12, seed=3, temperature=0.8)
    smollm2.chat([{"role": "user", "content": "Name one colour and one animal."}], max_tokens=12, seed=4)
    again = smollm2.chat(messages, max_tokens=12, seed=3, temperature=0.8)
    assert first.text.strip() and first == again  # same seed, and no trace of the call in between
    assert first.input_tokens > 5 and 0 < first.output_tokens <= 12


@pytest.mark.llamacpp
def test_smollm2_json_schema_constrains_the_reply(smollm2, tmp_path):
    usage = MethodUsage()
    chat = cached(smollm2, ResponseCache(tmp_path), accounting=usage)
    messages = [{"role": "user", "content": "A 3-hop search failed. Reply with JSON: the stage and the hop."}]
    verdict = ask_json(chat, messages, VERDICT, max_tokens=40)
    # the grammar built from the schema (enum included) leaves no invalid reply, so no retry
    assert verdict["stage"] in VERDICT.fields["stage"] and verdict["hop"] in range(1, 4)
    assert usage.calls == 1 and usage.model_calls == 1 and usage.abstentions == 0


@pytest.mark.llamacpp
def test_overlong_prompt_raises_context_overflow(smollm2):
    from rcakit.llm.llamacpp import LlamaCppProvider

    small = LlamaCppProvider(smollm2.path, n_ctx=256)
    long = [{"role": "user", "content": "step " * 300}]
    assert small.context_window == 256 and small.count_tokens(long) > 256
    with pytest.raises(ContextOverflow, match=r"Requested tokens \(\d+\) exceed context window of 256"):
        small.chat(long, max_tokens=4)
    with pytest.raises(RcakitError, match="n_ctx: 64 is below"):
        LlamaCppProvider(smollm2.path, n_ctx=64)


@pytest.mark.llamacpp
def test_smollm2_token_count_is_the_prompt_it_runs(smollm2):
    for messages in (QUESTION, [{"role": "user", "content": "Count these words, please: " + "alpha beta " * 40}]):
        reply = smollm2.chat(messages, max_tokens=1)
        assert smollm2.count_tokens(messages) == reply.input_tokens


@pytest.mark.llamacpp
def test_smollm2_warm_rerun_makes_zero_model_calls(smollm2, tmp_path):
    question = "A 3-hop search failed at retrieval. Reply with JSON: the stage and the hop."
    messages = [{"role": "user", "content": question}]
    cold_acct, warm_acct = Accounting(), Accounting()
    cold = ask_json(cached(smollm2, ResponseCache(tmp_path), cold_acct["judge"]), messages, VERDICT, max_tokens=40)
    warm_cache = ResponseCache(tmp_path)  # as a second process would open it
    warm = ask_json(cached(smollm2, warm_cache, warm_acct["judge"]), messages, VERDICT, max_tokens=40)
    assert warm == cold and cold["stage"] in VERDICT.fields["stage"]
    assert cold_acct.to_dict(runtime=True)["judge"]["model_calls"] == 1
    assert warm_acct.to_dict(runtime=True)["judge"]["model_calls"] == 0
    assert warm_cache.counters() == {"hits": 1, "misses": 0}
    assert warm_acct.to_dict() == cold_acct.to_dict()  # the same tokens are charged


@pytest.mark.llamacpp
def test_smollm2_call_past_its_timeout_raises_and_leaves_no_trace(smollm2):
    from rcakit.llm.llamacpp import LlamaCppProvider

    messages = [{"role": "user", "content": "Name one colour."}]
    before = smollm2.chat(messages, max_tokens=8)
    hurried = LlamaCppProvider(smollm2.path, timeout=1e-6)  # the same loaded model, a tiny time limit
    with pytest.raises(RcakitError) as excinfo:
        hurried.chat(messages, max_tokens=8)
    assert str(excinfo.value) == f"llamacpp model {smollm2.model}: no reply within the 1e-06 s timeout"
    assert smollm2.chat(messages, max_tokens=8) == before  # the deadline was the hurried call's only
    assert provider_from_spec("llamacpp:smollm2", timeout=5).timeout == 5.0


def test_an_ollama_provider_pickles_as_its_settings_and_reads_the_host_where_it_lands(monkeypatch, tmp_path):
    import pickle

    from rcakit.llm import ResponseCache, cached
    from rcakit.llm.ollama import OllamaProvider

    monkeypatch.setenv("OLLAMA_HOST", "http://driver:1")
    from_env = OllamaProvider("m", timeout=3, num_ctx=1024)
    explicit = OllamaProvider("m", host="http://given:2")
    data_env, data_explicit = pickle.dumps(from_env), pickle.dumps(explicit)
    monkeypatch.setenv("OLLAMA_HOST", "http://worker:3")  # the environment of the process that unpickles
    back = pickle.loads(data_env)
    assert (back.model, back.host, back.timeout, back.context_window) == ("m", "http://worker:3", 3.0, 1024)
    assert back._client is not from_env._client and pickle.loads(data_explicit).host == "http://given:2"
    chat = cached(explicit, cache=ResponseCache(tmp_path / "c"))
    chat.accounting.add_case()
    again = pickle.loads(pickle.dumps(chat))
    assert again.cache.path == chat.cache.path and again.provider.host == "http://given:2"
    assert again.accounting.totals()["cases"] == 0 and again.server == "http://given:2"


def test_case_usage_counts_each_threads_calls_apart_and_the_shared_total_too(tmp_path):
    import threading

    from rcakit.llm import MethodUsage, ResponseCache, cached
    from rcakit.llm.cache import case_usage
    from support.llm_servers import ScriptedProvider

    chat = cached(ScriptedProvider(lambda m: "ok"), cache=ResponseCache(tmp_path / "c"), accounting=MethodUsage())
    barrier, got = threading.Barrier(4), {}

    def case(n):
        with case_usage() as scope:
            barrier.wait()
            for i in range(n):
                chat.chat([{"role": "user", "content": f"{n}-{i}"}])
            chat.accounting.add_abstention()
        got[n] = scope.totals(chat)

    threads = [threading.Thread(target=case, args=(n,)) for n in (1, 2, 3, 4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert {n: (t["calls"], t["abstentions"]) for n, t in got.items()} == {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (4, 1)}
    assert chat.accounting.totals()["calls"] == 10 and chat.accounting.totals()["abstentions"] == 4


class _Hostile(ScriptedProvider):
    """A backend whose replies skipped their own checks: what the cache layer must still refuse."""

    def __init__(self, reply):
        super().__init__(lambda messages: reply.text)
        self.reply = reply

    def chat(self, messages, **kwargs):
        return self.reply


@pytest.mark.parametrize(
    "reply, phrase",
    [
        (Reply("fine", -120, 5), "token counts"),
        (Reply("fine", 10**40, 5), "token counts"),
        (Reply("bad \ud800 text", 1, 1), "not valid Unicode"),
        (Reply("x" * 10_000_000, 1, 1), "more than 16 tokens can hold"),
    ],
)
def test_a_reply_that_fails_its_checks_is_neither_cached_nor_charged(tmp_path, reply, phrase):
    """Issue 29, item 10: negative or absurd token counts, a lone surrogate and a 10 MB reply never enter the
    cache (which they would poison for every later run) or the published costs."""
    usage = MethodUsage()
    chat = cached(_Hostile(reply), cache=ResponseCache(tmp_path), accounting=usage)
    with pytest.raises(RcakitError, match=phrase):
        chat.chat([{"role": "user", "content": "hi"}], max_tokens=16)
    assert len(ResponseCache(tmp_path)) == 0 and usage.calls == 0
