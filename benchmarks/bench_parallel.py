"""Throughput of coverage-collapse's sweep with an LLM agent through rcakit.parallel: workers 1, 2, 4, 8
and a 2-process LocalCluster.

Run: ``.venv/bin/python benchmarks/bench_parallel.py [questions]``. The sweep is
the chapter's own (``rcakit.chapters.coverage_collapse.run(...)``) at its
``quick`` values with ``agent = "llm"``: the clean runs, every injected case with
its probes, the LLM judge's sample and the replay check. The model is the fake
Ollama server (``tests/support/llm_servers.py``, which the wheel does not ship; the
script puts ``tests/`` on the import path to reach it) with 100 ms of latency per call, over real
HTTP; it reads like an oracle (it answers from the world's facts when the
subject's paragraph is shown, else asks to search) and judges with a hop taken
from the prompt's digest. Each setting uses a fresh response cache and case
store, so every call reaches the server. Printed: cases per second, the speedup
over serial, and whether the recorded numbers (and every case) are
byte-identical to the serial run's. The work waits on the server, so the goal
is >= 3.5x at 4 workers and >= 6x at 8.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from rcakit.book import registry
from rcakit.chapters import coverage_collapse
from rcakit.rag import build_world
from rcakit.rag.relations import RELATIONS
from rcakit.results import to_jsonable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fake servers: tests/support, not shipped
from support.llm_servers import FakeOllamaServer  # noqa: E402

LATENCY = 0.1  # seconds per model call
WORKERS = (1, 2, 4, 8)
PHRASES = [(re.compile("^" + re.escape(r.phrase).replace(r"\{\}", "(.+)") + "$"), r.name) for r in RELATIONS.values()]


def chapter_params(n_questions: int | None) -> dict:
    """coverage-collapse's defaults with its quick values, ``agent = llm`` on the fake server."""
    chapter = registry.get("coverage-collapse")
    params = {**chapter.defaults, **chapter.quick, "agent": "llm", "provider": "ollama:fake", "llm_timeout": 60.0}
    if n_questions:
        params["n_questions"] = n_questions
    return params


def fake_model(world):
    def respond(messages):
        text = messages[-1]["content"]
        if "diagnose" in messages[0]["content"]:
            return json.dumps({"stage": "retrieval", "hop": 1 + int(hashlib.sha256(text.encode()).hexdigest(), 16) % 3})
        ask = re.match(r"Sub-question: what is (.+)\?\n", text).group(1)
        subject, rel = next((m.group(1), name) for rx, name in PHRASES if (m := rx.match(ask)))
        if f"] {subject}: " not in text:
            return json.dumps({"action": "search", "query": subject})
        return json.dumps({"action": "answer", "answer": world.facts[subject][rel]})

    return respond


def timed_run(folder: Path, name: str, params: dict, **setting) -> tuple[float, bytes, int, int]:
    os.environ["RCAKIT_LLM_CACHE"] = str(folder / f"cache-{name}")
    params = {**params, "store": str(folder / f"store-{name}"), **setting}
    start = time.perf_counter()
    run = coverage_collapse.run(params, progress=None)
    seconds = time.perf_counter() - start
    numbers = {"cases": run.cases.to_dict("records"), **run.result, **run.llm_numbers()}
    data = json.dumps(to_jsonable(numbers), sort_keys=True).encode()
    return seconds, data, len(run.cases), run.runner.served.calls


def main(n_questions: int | None = None) -> None:
    params = chapter_params(n_questions)
    world = build_world(
        params["seed"],
        n_entities=params["n_entities"],
        n_questions=params["n_questions"],
        hops=params["hops"],
        distractor_rate=params["distractor_rate"],
    )
    rows = []
    with FakeOllamaServer(fake_model(world), latency=LATENCY) as server, tempfile.TemporaryDirectory() as tmp:
        os.environ["OLLAMA_HOST"] = server.url  # read by every process that builds a provider
        folder = Path(tmp)
        for workers in WORKERS:
            rows.append((f"workers={workers}", *timed_run(folder, f"w{workers}", params, workers=workers)))
            print(f"  {rows[-1][0]}: {rows[-1][1]:.1f} s", file=sys.stderr, flush=True)
        try:
            from distributed import LocalCluster
        except ImportError:
            print("LocalCluster: skipped (Dask distributed is not installed)")
        else:
            with LocalCluster(
                n_workers=2, threads_per_worker=4, processes=True, dashboard_address=":0", silence_logs=40
            ) as cluster:
                rows.append(
                    (
                        "LocalCluster 2 processes x 4 threads",
                        *timed_run(folder, "dask", params, scheduler=cluster.scheduler_address),
                    )
                )
    serial_seconds, serial_bytes, cases, calls = rows[0][1:]
    print(
        f"coverage-collapse quick, agent=llm, {params['n_questions']} questions: {cases} cases, "
        f"{calls} model calls per sweep, {LATENCY * 1e3:.0f} ms per call"
    )
    print(f"{'setting':<38} {'seconds':>8} {'cases/s':>8} {'speedup':>8}  identical")
    for name, seconds, data, n, _calls in rows:
        print(
            f"{name:<38} {seconds:8.2f} {n / seconds:8.2f} {serial_seconds / seconds:7.2f}x  "
            f"{'yes' if data == serial_bytes else 'NO'}"
        )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
