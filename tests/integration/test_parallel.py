"""rcakit.parallel: the same sweep serially, on threads and on a Dask LocalCluster, byte for byte.

The sweep is LLM-bound: each case makes three chained chats with the real
``ollama`` client against the fake server on 127.0.0.1 (a small added
latency), through the response cache. Its results file must be the same bytes
for every setting, after a SIGKILL of a 4-worker run and its rerun too. The
Dask tests skip, with the reason, when ``distributed`` is not installed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rcakit import RcakitError
from rcakit.llm import ResponseCache, cache_totals, cached, provider_from_spec, request_seed
from rcakit.parallel import (
    SCHEDULER_ENV,
    CaseFailed,
    PerProcess,
    Runner,
    check_scheduler,
    check_workers,
    probe_scheduler,
    run_cases,
)
from rcakit.rag import build_world
from rcakit.rag.relations import RELATIONS
from rcakit.results import to_jsonable
from rcakit.store import CaseStore
from support import ROOT, TESTS
from support.llm_servers import FakeOllamaServer

LATENCY = 0.02  # seconds the fake server waits before each reply
STEPS = 3  # chained chats per case
CASES = [(f"q{i}:{d}", (i, d)) for i in range(8) for d in (1, 2)]


def respond(messages) -> str:
    """A deterministic reply: a digest of the prompt, so each step depends on the one before;
    a RAG reader's or judge's prompt (it opens with a system message) gets :func:`rag_respond`."""
    if messages[0]["role"] == "system":
        return rag_respond(messages)
    return json.dumps({"digest": hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:12]})


# the coverage-collapse sweep with agent=llm, small: the chapter's parameters
RAG = dict(
    seed=3,
    n_entities=300,
    n_questions=8,
    hops=2,
    top_k=3,
    reading_noise=0.2,
    distractor_rate=0.3,
    coverage_threshold=0.05,
    provider="ollama:fake",
    judge_provider="none",
    agent="llm",
    llm_max_cases=3,
    llm_timeout=30.0,
    world="synthetic",
)
_PHRASES = [(re.compile("^" + re.escape(r.phrase).replace(r"\{\}", "(.+)") + "$"), r.name) for r in RELATIONS.values()]


@functools.cache
def rag_world():
    return build_world(
        RAG["seed"],
        n_entities=RAG["n_entities"],
        n_questions=RAG["n_questions"],
        hops=RAG["hops"],
        distractor_rate=RAG["distractor_rate"],
    )


def rag_respond(messages) -> str:
    """The fake model as a RAG reader (reads the fact when its paragraph is shown; one prompt in four asks
    to search) or judge (a hop from the prompt's digest): deterministic in the prompt."""
    text = messages[-1]["content"]
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    if "diagnose" in messages[0]["content"]:
        return json.dumps({"stage": "retrieval", "hop": 1 + digest % 2})
    ask = re.match(r"Sub-question: what is (.+)\?\n", text).group(1)
    subject, rel = next((m.group(1), name) for rx, name in _PHRASES if (m := rx.match(ask)))
    if digest % 4 == 0 or f"] {subject}: " not in text:
        return json.dumps({"action": "search", "query": f"{subject} record"})
    return json.dumps({"action": "answer", "answer": rag_world().facts[subject][rel]})


def rag_bytes(run) -> bytes:
    """What the chapter records from a run, plus every case, as bytes."""
    numbers = {"cases": run.cases.to_dict("records"), **run.result, **run.llm_numbers()}
    return json.dumps(to_jsonable(numbers), sort_keys=True, indent=1).encode()


def rag_run(tmp_path, name, **setting):
    """coverage-collapse's structural arm at :data:`RAG` with ``setting`` (workers, scheduler), fresh store, cache."""
    from rcakit.chapters import coverage_collapse

    os.environ["RCAKIT_LLM_CACHE"] = str(tmp_path / f"{name}-cache")
    params = {**RAG, "store": str(tmp_path / f"{name}-store"), "workers": 1, "scheduler": "", **setting}
    return coverage_collapse.run(params, progress=None)


def make_chat(cache_folder: str):
    """The model as a sweep's process sees it: ``ollama:fake`` at this process's ``$OLLAMA_HOST``."""
    return cached(provider_from_spec("ollama:fake", timeout=30), ResponseCache(cache_folder))


class ChatSweep:
    """``work(item)``: three chained chats, seeded by (seed, case key); picklable for Dask."""

    def __init__(self, cache_folder: Path, seed: int = 7):
        self.chat = PerProcess(make_chat, str(cache_folder))
        self.seed = seed
        self.threads: set[str] = set()

    def __call__(self, item):
        i, d = item
        key = f"q{i}:{d}"
        self.threads.add(threading.current_thread().name)
        text, tokens = f"question {i} at depth {d}", 0
        for step in range(STEPS):
            reply = self.chat.get().chat(
                [{"role": "user", "content": f"{key} step {step}: {text}"}],
                seed=request_seed(self.seed, key),
                max_tokens=32,
            )
            text, tokens = json.loads(reply.text)["digest"], tokens + reply.input_tokens + reply.output_tokens
        return {"key": key, "answer": text, "tokens": tokens}


def as_bytes(values) -> bytes:
    return json.dumps(values, sort_keys=True, indent=1).encode()


@pytest.fixture
def fake(monkeypatch):
    with FakeOllamaServer(respond, latency=LATENCY) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        monkeypatch.delenv(SCHEDULER_ENV, raising=False)
        yield server


@pytest.fixture
def serial(fake, tmp_path):
    """The reference: the sweep run one case after another."""
    return run_cases(CASES, ChatSweep(tmp_path / "serial-cache"))


# --- threads -----------------------------------------------------------------------------------


def test_four_threads_give_the_serial_bytes_and_count_the_calls(fake, serial, tmp_path):
    work = ChatSweep(tmp_path / "cache")
    outcome = run_cases(CASES, work, workers=4)
    assert as_bytes(outcome.values) == as_bytes(serial.values)
    assert len(work.threads) > 1 and all(name.startswith("rcakit-case-") for name in work.threads)
    assert outcome.served.calls == serial.served.calls == STEPS * len(CASES)
    table = outcome.served.table(runtime=True)
    assert list(table["server"]) == [fake.url] and list(table["model_calls"]) == [STEPS * len(CASES)]
    warm = run_cases(CASES, ChatSweep(tmp_path / "cache"), workers=4)  # every reply now from the cache
    assert as_bytes(warm.values) == as_bytes(serial.values)
    assert list(warm.served.table(runtime=True)["model_calls"]) == [0]
    assert list(warm.served.table()["calls"]) == [STEPS * len(CASES)] and "model_calls" not in warm.served.table()


def test_values_come_in_item_order_whatever_order_cases_finish():
    items = [(str(i), i) for i in range(6)]
    arrived = []

    def slow_first(i):
        time.sleep(0.05 * (6 - i))  # the first case finishes last
        return {"i": i}

    out = run_cases(items, slow_first, workers=6, on_result=lambda key, value: arrived.append(key))
    assert [v["i"] for v in out.values] == list(range(6))
    assert arrived != [k for k, _ in items] and sorted(arrived) == sorted(k for k, _ in items)


def test_the_store_is_written_by_the_driver_with_a_runner(tmp_path):
    items = [(str(i), i) for i in range(20)]
    writer_threads = set()
    store = CaseStore(tmp_path / "cases.jsonl")
    put = store.put

    def spy(key, value):
        writer_threads.add(threading.current_thread().name)
        put(key, value)

    store.put = spy
    out = store.run(items, lambda i: {"y": i * i}, runner=Runner(workers=4))
    assert out == [{"y": i * i} for i in range(20)]
    assert writer_threads == {threading.current_thread().name}
    again = CaseStore(tmp_path / "cases.jsonl")
    assert len(again) == 20 and again.run(items, lambda i: pytest.fail("nothing left to compute")) == out


# --- retries and failure -------------------------------------------------------------------------


class Flaky:
    """Fails the first ``failures`` attempts of each key in ``keys``."""

    def __init__(self, keys, failures=1):
        self.keys, self.failures, self.tries = set(keys), failures, {}
        self.lock = threading.Lock()

    def __call__(self, i):
        with self.lock:
            self.tries[i] = self.tries.get(i, 0) + 1
            tries = self.tries[i]
        if i in self.keys and tries <= self.failures:
            raise ConnectionError(f"server dropped case {i}")
        return {"y": i * i}


@pytest.mark.parametrize("workers", [1, 4])
def test_a_case_that_fails_then_succeeds_is_retried(workers):
    items = [(str(i), i) for i in range(10)]
    work = Flaky({3, 7}, failures=2)
    out = run_cases(items, work, workers=workers, retries=2)
    assert out.values == [{"y": i * i} for i in range(10)]
    assert work.tries[3] == work.tries[7] == 3 and work.tries[0] == 1


@pytest.mark.parametrize("workers", [1, 3])
def test_a_case_failing_every_attempt_is_named_and_the_finished_ones_are_saved(tmp_path, workers):
    items = [(str(i), i) for i in range(12)]
    store = CaseStore(tmp_path / "cases.jsonl")
    work = Flaky({5}, failures=99)
    message = r"^case '5' failed after 3 attempts: ConnectionError: server dropped case 5;"
    with pytest.raises(CaseFailed, match=message) as info:
        store.run(items, work, runner=Runner(workers=workers, retries=2))
    assert info.value.key == "5" and isinstance(info.value, RcakitError)
    assert isinstance(info.value.__cause__, ConnectionError)
    saved = CaseStore(tmp_path / "cases.jsonl")
    finished = {k for k, _ in items if k in saved}
    assert "5" not in finished and finished <= {str(i) for i in work.tries}
    assert all(saved[k] == {"y": int(k) ** 2} for k in finished)
    if workers == 1:
        assert finished == {str(i) for i in range(5)}  # serial: stops at the failing case
    out = saved.run(items, Flaky(set()), runner=Runner(workers=workers))
    assert out == [{"y": i * i} for i in range(12)]


def test_a_driver_error_in_on_result_stops_the_run():
    def full_disk(key, value):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        run_cases([(str(i), i) for i in range(50)], lambda i: {"i": i}, workers=4, on_result=full_disk)


# --- settings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, phrase",
    [
        ("http://host:8786", "tcp://HOST:PORT"),
        ("tcp://host", "tcp://HOST:PORT"),
        ("tcp://:8786", "tcp://HOST:PORT"),
        ("tcp://host:99999", "tcp://HOST:PORT"),
        (8786, "expected a string"),
    ],
)
def test_a_bad_scheduler_is_one_line(value, phrase):
    with pytest.raises(RcakitError, match=f"^scheduler: .*{phrase}") as info:
        check_scheduler(value)
    assert "\n" not in str(info.value)
    with pytest.raises(RcakitError, match="^scheduler: "):
        Runner(scheduler=value)


@pytest.mark.parametrize("value", [0, -1, 1000, 2.0, True, "4"])
def test_bad_workers_are_one_line(value):
    with pytest.raises(RcakitError, match="^workers: expected a whole number from 1 to"):
        check_workers(value)


def test_the_scheduler_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "dask.example:8786")
    with pytest.raises(RcakitError, match=f"^{SCHEDULER_ENV}: expected '' or a Dask scheduler address"):
        run_cases([("a", 1)], lambda i: {})
    assert check_scheduler("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786" and check_scheduler("") == ""


def test_duplicate_keys_are_refused():
    with pytest.raises(RcakitError, match="two cases share a key"):
        run_cases([("a", 1), ("a", 2)], lambda i: {})


def test_a_scheduler_that_does_not_answer_is_one_line(monkeypatch):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'rcakit[cluster]')")
    monkeypatch.setattr("rcakit.parallel.cluster.CONNECT_SECONDS", 1)
    with pytest.raises(RcakitError, match="^scheduler: cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        run_cases([("a", 1)], lambda i: {}, scheduler="tcp://127.0.0.1:9")


# --- a peer that is not a Dask scheduler: bounded waits ------------------------------------------


@contextlib.contextmanager
def not_dask(reply: bytes | None):
    """A TCP server on 127.0.0.1 that accepts and then says nothing (``reply`` None) or sends ``reply``."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                held.append(conn)  # kept open: the peer never hangs up
                if reply is not None:
                    conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


GARBAGE = {
    "silent": None,
    "http": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "short frame": b"\x01" + bytes(7) + b"\x05" + bytes(7) + b"abcde",
    "huge frame": b"\xff" * 64,
}


@pytest.mark.parametrize("peer", list(GARBAGE))
@pytest.mark.slow
def test_a_port_that_is_not_dask_fails_the_probe_within_the_timeout(peer):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'rcakit[cluster]')")
    with not_dask(GARBAGE[peer]) as address:
        with pytest.raises(RcakitError) as info:
            probe_scheduler(address)  # the default timeout, 10 s
    message = str(info.value)
    assert message.startswith(f"scheduler: {address} accepted a connection but ")
    assert "\n" not in message and len(message) < 300
    if peer == "silent":  # only the deadline ends a wait on a silent peer
        assert "no Dask handshake within 10 s" in message
    else:  # a peer that answers garbage is refused on its bytes, not at the deadline
        assert "does not speak Dask's protocol" in message


@pytest.mark.slow
def test_a_run_on_a_silent_scheduler_stops_within_the_connect_timeout(monkeypatch):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'rcakit[cluster]')")
    monkeypatch.setattr("rcakit.parallel.cluster.CONNECT_SECONDS", 2)
    with not_dask(None) as address:
        with pytest.raises(
            RcakitError, match=f"^scheduler: {address} accepted a connection but gave no Dask handshake within 2 s"
        ):
            run_cases([("a", 1)], lambda i: {}, scheduler=address)


@pytest.mark.parametrize("timeout", [0, -1.0, float("inf"), float("nan"), "10", True])
def test_a_bad_probe_timeout_is_one_line(timeout):
    with pytest.raises(RcakitError, match="^timeout: expected a number of seconds > 0"):
        probe_scheduler("tcp://127.0.0.1:9", timeout)


# --- a killed parallel run -----------------------------------------------------------------------

SWEEP_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_parallel import CASES, ChatSweep, as_bytes
from rcakit.parallel import Runner
from rcakit.store import CaseStore
store_path, cache, workers, out = sys.argv[2:6]
values = CaseStore(store_path).run(CASES, ChatSweep(cache), runner=Runner(workers=int(workers)))
open(out, "wb").write(as_bytes(values))
"""


def _child_env() -> dict[str, str]:
    """The environment of a child that imports this module: no progress bars, and ``tests/`` on its path for
    ``support`` (pytest puts it on its own path only)."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "RCAKIT_PROGRESS": "0", "PYTHONPATH": path}


def _sweep(tmp_path, name, workers):
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            SWEEP_SCRIPT,
            str(Path(__file__).parent),
            str(tmp_path / f"{name}.jsonl"),
            str(tmp_path / f"{name}-cache"),
            str(workers),
            str(tmp_path / f"{name}.json"),
        ],
        env=_child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_killed_four_worker_run_resumes_to_the_serial_bytes(fake, tmp_path):
    serial = _sweep(tmp_path, "serial", 1)
    assert serial.wait(timeout=120) == 0, serial.stderr.read()
    killed = _sweep(tmp_path, "parallel", 4)
    store = tmp_path / "parallel.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not store.exists() or store.read_bytes().count(b"\n") < 5):
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL
    done = len(CaseStore(store))
    assert 4 <= done < len(CASES), "the kill must land mid-sweep"
    requests = len(fake.requests)
    rerun = _sweep(tmp_path, "parallel", 4)
    assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
    assert (tmp_path / "parallel.json").read_bytes() == (tmp_path / "serial.json").read_bytes()
    assert len(fake.requests) - requests <= STEPS * (len(CASES) - done)  # the finished cases were not rerun


FAILING_SCRIPT = """
import sys
from rcakit.parallel import Runner
from rcakit.store import CaseStore

def work(i):
    if i == 4:
        raise ValueError("no verdict in the reply")
    return {"i": i}

CaseStore(sys.argv[1]).run([(f"case-{i}", i) for i in range(8)], work, runner=Runner(workers=2, retries=1))
"""


def test_a_run_whose_case_fails_every_attempt_exits_non_zero_naming_it(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", FAILING_SCRIPT, str(tmp_path / "s.jsonl")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "CaseFailed: case 'case-4' failed after 2 attempts: ValueError: no verdict in the reply" in proc.stderr
    saved = CaseStore(tmp_path / "s.jsonl")
    assert "case-4" not in saved and len(saved) >= 4


# --- the response cache under concurrent writers -----------------------------------------------

WRITER = """
import sys, threading
from rcakit.llm import Reply, ResponseCache
cache = ResponseCache(sys.argv[1])
name, n = sys.argv[2], int(sys.argv[3])

def write(thread):
    for i in range(thread, n, 2):
        for key in (f"{name}-{i}", f"shared-{i}"):
            cache.put(key, Reply(key, i, len(key)))
            assert cache.get(key).text == key

threads = [threading.Thread(target=write, args=(t,)) for t in range(2)]
for t in threads: t.start()
for t in threads: t.join()
"""


@pytest.mark.slow
def test_four_processes_of_two_threads_lose_no_cache_entry(tmp_path):
    n = 300
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), f"p{k}", str(n)], env=env, stderr=subprocess.PIPE, text=True
        )
        for k in range(4)
    ]  # no cache file yet: a race
    errors = [(proc.wait(timeout=240), proc.stderr.read()) for proc in procs]
    assert errors == [(0, "")] * 4
    cache = ResponseCache(tmp_path)
    assert len(cache) == 4 * n + n
    assert cache_totals(tmp_path) == {"hits": 4 * 2 * n, "misses": 0}
    for key in ("p0-0", "p3-299", "p2-150", "shared-299"):
        reply = cache.get(key)
        assert reply.text == key and reply.output_tokens == len(key)


# --- a Dask LocalCluster of two processes -------------------------------------------------------


_BY_VALUE: list[bool] = []  # the clusters open now that need this module pickled by value


@contextlib.contextmanager
def two_process_cluster():
    """A LocalCluster of two single-thread worker processes, with the fake Ollama server in their environment."""
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed (pip install 'rcakit[cluster]')"
    )
    import cloudpickle

    if not _BY_VALUE:  # workers need not import the tests; clusters nest (a test's own inside the module's)
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    _BY_VALUE.append(True)
    server = FakeOllamaServer(respond, latency=LATENCY)
    before = os.environ.get("OLLAMA_HOST")
    os.environ["OLLAMA_HOST"] = server.url  # the workers' own environment, fixed when they start
    try:
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        ) as local:
            yield local, server
    finally:
        if before is None:
            os.environ.pop("OLLAMA_HOST", None)
        else:
            os.environ["OLLAMA_HOST"] = before
        server.close()
        _BY_VALUE.pop()
        if not _BY_VALUE:
            cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with two_process_cluster() as made:
        yield made


@pytest.fixture
def own_cluster():
    """A cluster for one test that kills its workers: no later test waits on the nannies' restarts."""
    with two_process_cluster() as made:
        yield made


@pytest.mark.slow
def test_a_two_process_cluster_gives_the_serial_bytes_with_hosts_from_the_workers(cluster, tmp_path, monkeypatch):
    local, server = cluster
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    serial = run_cases(CASES, ChatSweep(tmp_path / "serial-cache"))
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # the driver's host is never used by a worker
    arrived = []
    outcome = run_cases(
        CASES,
        ChatSweep(tmp_path / "cluster-cache"),
        scheduler=local.scheduler_address,
        on_result=lambda key, value: arrived.append(key),
    )
    assert as_bytes(outcome.values) == as_bytes(serial.values)
    assert sorted(arrived) == sorted(k for k, _ in CASES)
    assert list(outcome.served.table()["server"]) == [server.url]
    assert outcome.served.calls == STEPS * len(CASES)


class DiesOnce:
    """Kills its worker process the first time it runs ``victim`` (a marker file remembers)."""

    def __init__(self, marker: Path, victim: int):
        self.marker, self.victim = marker, victim

    def __call__(self, i):
        if i == self.victim and not self.marker.exists():
            self.marker.write_text("died")
            os._exit(1)
        return {"y": i * i}


@pytest.mark.slow
def test_a_case_whose_cluster_worker_dies_is_retried(cluster, tmp_path):
    local, _ = cluster
    items = [(str(i), i) for i in range(6)]
    out = run_cases(items, DiesOnce(tmp_path / "marker", 2), scheduler=local.scheduler_address)
    assert (tmp_path / "marker").read_text() == "died"
    assert out.values == [{"y": i * i} for i in range(6)]


def test_the_probe_accepts_the_scheduler_and_refuses_a_worker(cluster):
    local, _ = cluster
    probe_scheduler(local.scheduler_address)
    worker = next(iter(local.scheduler_info["workers"]))
    with pytest.raises(
        RcakitError, match=f"^scheduler: {worker} answered Dask's handshake but is a Dask Worker, not a scheduler$"
    ):
        probe_scheduler(worker, timeout=5)


class Freezes:
    """Stops its own worker process (SIGSTOP) when it runs ``victim``, leaving the pid in ``marker``."""

    def __init__(self, marker: Path, victim: int):
        self.marker, self.victim = marker, victim

    def __call__(self, i):
        if i == self.victim:
            self.marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(0.05)
        return {"y": i}


def stalled(address: str, seconds: int) -> str:
    """The start of the one line a stalled cluster run ends with: no case finished, or a finished case's
    value stuck on its frozen worker."""
    what = r"(no case finished \(\d+ unfinished\)|a finished case's value never came from its worker)"
    return rf"scheduler: {what} on the Dask cluster at {re.escape(address)} within {seconds} s"


def _announced(monkeypatch) -> list[str]:
    """The lines the cluster code says on the terminal, kept in a list."""
    said: list[str] = []
    monkeypatch.setattr("rcakit.parallel.cluster.announce", said.append)
    return said


@pytest.mark.slow
def test_a_frozen_worker_stops_the_run_with_one_line_within_the_stall_deadline(own_cluster, tmp_path, monkeypatch):
    """A worker stopped with SIGSTOP keeps its connections: Dask would wait for its worker-ttl (five minutes).
    The run says it is waiting each notice period, then stops with one line, the finished cases delivered."""
    local, _ = own_cluster
    monkeypatch.setenv("RCAKIT_DASK_TIMEOUT", "4")
    monkeypatch.setattr("rcakit.parallel.cluster.NOTICE_SECONDS", 1.5)
    said = _announced(monkeypatch)
    marker, arrived = tmp_path / "frozen-pid", []
    try:
        with pytest.raises(RcakitError) as info:
            run_cases(
                [(str(i), i) for i in range(6)],
                Freezes(marker, 3),
                scheduler=local.scheduler_address,
                on_result=lambda key, value: arrived.append(key),
            )
    finally:
        if marker.exists():
            os.kill(int(marker.read_text()), signal.SIGCONT)
    message = str(info.value)
    assert re.fullmatch(
        stalled(local.scheduler_address, 4) + r" \(did a worker or the scheduler stop\?\); "
        r"the finished cases are kept for the rerun, and \$RCAKIT_DASK_TIMEOUT sets this deadline",
        message,
    ), message
    assert "3" not in arrived, arrived
    waiting = [line for line in said if "no case has finished" in line]
    assert all("the run stops after 4 s ($RCAKIT_DASK_TIMEOUT)" in line for line in waiting)
    assert waiting or "value never came" in message  # a wait for the next case is announced as it goes


@pytest.mark.slow
def test_a_frozen_scheduler_stops_the_run_with_one_line_within_the_stall_deadline(tmp_path, monkeypatch):
    """A scheduler in its own process, stopped with SIGSTOP once a case has finished: the run ends within the
    deadline plus the bounded teardown, not never."""
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'rcakit[cluster]')")
    monkeypatch.setenv("RCAKIT_DASK_TIMEOUT", "3")
    monkeypatch.setattr("rcakit.parallel.cluster.CONNECT_SECONDS", 3)
    _announced(monkeypatch)
    address_file = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(address_file),
        ],
        **quiet,
    )
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(address_file.read_text())["address"]
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                "--scheduler-file",
                str(address_file),
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
            ],
            **quiet,
        )
        frozen = threading.Event()

        def freeze(key, value):
            if not frozen.is_set():
                frozen.set()
                os.kill(scheduler.pid, signal.SIGSTOP)

        with pytest.raises(RcakitError, match="^" + stalled(address, 3)):  # the stall deadline, named
            run_cases([(str(i), 0.2) for i in range(20)], time.sleep, scheduler=address, on_result=freeze)
        assert frozen.is_set()
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.kill()
                process.wait(10)


class Marked(ChatSweep):
    """:class:`ChatSweep`, slowed, leaving ``started-<case>-<pid>`` and ``done-<case>-<pid>`` files in ``folder``."""

    def __init__(self, cache_folder: Path, folder: Path):
        super().__init__(cache_folder)
        self.folder = folder

    def __call__(self, item):
        mark = f"q{item[0]}:{item[1]}-{os.getpid()}"
        (self.folder / f"started-{mark}").touch()
        time.sleep(0.25)
        value = super().__call__(item)
        (self.folder / f"done-{mark}").touch()
        return value


def _in_flight(folder: Path) -> dict[str, int]:
    """``{case: pid}`` of the cases that started and did not finish."""
    started = {p.name.removeprefix("started-") for p in folder.glob("started-*")}
    running = started - {p.name.removeprefix("done-") for p in folder.glob("done-*")}
    return {mark.rpartition("-")[0]: int(mark.rpartition("-")[2]) for mark in running}


@pytest.mark.parametrize("victims", [1, 2])
@pytest.mark.slow
def test_a_sweep_whose_workers_are_killed_mid_case_gives_the_serial_bytes(own_cluster, tmp_path, monkeypatch, victims):
    """SIGKILL one worker process (its case is rerun), or both at once (the shipped work is lost with them:
    every pending case is resubmitted with the work shipped again); either way the serial bytes."""
    local, server = own_cluster
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    serial = run_cases(CASES, ChatSweep(tmp_path / "serial-cache"))
    marks = tmp_path / "marks"
    marks.mkdir()
    killed: dict[str, int] = {}

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(marks.glob("done-*"))) < 2:
            time.sleep(0.01)
        while time.monotonic() < deadline and len(set(_in_flight(marks).values())) < victims:
            time.sleep(0.005)
        for case, pid in list(_in_flight(marks).items())[:victims]:
            os.kill(pid, signal.SIGKILL)
            killed[case] = pid

    thread = threading.Thread(target=killer)
    thread.start()
    outcome = run_cases(CASES, Marked(tmp_path / "cluster-cache", marks), scheduler=local.scheduler_address)
    thread.join()
    assert len(set(killed.values())) == victims, "the kill must land while a case runs"
    assert as_bytes(outcome.values) == as_bytes(serial.values)
    assert outcome.served.calls == serial.served.calls
    for case, pid in killed.items():  # the killed case ran again, in another process, to the end
        assert not (marks / f"done-{case}-{pid}").exists()
        assert any(p.name != f"done-{case}-{pid}" for p in marks.glob(f"done-{case}-*"))


# --- the coverage-collapse sweep, agent=llm, through rcakit.parallel ------------------------------


@pytest.fixture
def rag_env(fake, monkeypatch):
    monkeypatch.setenv("RCAKIT_LLM_CACHE", "unset")  # rag_run sets it per run; monkeypatch restores it
    return fake


def test_the_llm_sweep_gives_the_same_bytes_on_one_and_four_workers(rag_env, tmp_path):
    serial = rag_run(tmp_path, "w1")
    assert serial.llm_cost["llm_reader"]["calls"] > 0 and serial.judged is not None and len(serial.judged) > 0
    assert serial.replay is not None and serial.replay["n"] > 0
    four = rag_run(tmp_path, "w4", workers=4)
    assert rag_bytes(four) == rag_bytes(serial)
    assert four.runner.served.calls > 0 and list(four.runner.served.table()["server"]) == [rag_env.url]


def test_per_case_reader_usage_does_not_mix_concurrent_cases(rag_env, tmp_path):
    serial, four = rag_run(tmp_path, "u1"), rag_run(tmp_path, "u4", workers=4)
    assert list(four.cases["reader_usage"]) == list(serial.cases["reader_usage"])
    assert four.llm_cost == serial.llm_cost and serial.llm_cost["llm_judge"]["cases"] == len(serial.judged)


ARM_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from test_parallel import rag_bytes, rag_run
run = rag_run(Path(sys.argv[2]), sys.argv[3], workers=int(sys.argv[4]))
Path(sys.argv[5]).write_bytes(rag_bytes(run))
"""


def _arm(tmp_path, name, workers, out):
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            ARM_SCRIPT,
            str(Path(__file__).parent),
            str(tmp_path),
            name,
            str(workers),
            str(tmp_path / out),
        ],
        env=_child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_killed_four_worker_chapter_sweep_resumes_to_the_serial_bytes(rag_env, tmp_path):
    serial = _arm(tmp_path, "serial", 1, "serial.json")
    assert serial.wait(timeout=300) == 0, serial.stderr.read()
    killed = _arm(tmp_path, "killed", 4, "killed.json")
    deadline = time.monotonic() + 120

    def stored() -> int:
        files = list((tmp_path / "killed-store").glob("*.jsonl"))
        return files[0].read_bytes().count(b"\n") if files else 0

    while time.monotonic() < deadline and stored() < 8:
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL
    [path] = (tmp_path / "killed-store").glob("*.jsonl")
    done, total = len(CaseStore(path)), len(rag_run(tmp_path, "serial").cases)  # the serial store: no new call
    assert 4 <= done < total, f"the kill must land mid-sweep ({done} of {total})"
    rerun = _arm(tmp_path, "killed", 4, "killed.json")
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    assert (tmp_path / "killed.json").read_bytes() == (tmp_path / "serial.json").read_bytes()


@pytest.mark.slow
def test_a_two_process_cluster_gives_the_llm_sweeps_serial_bytes(cluster, tmp_path, monkeypatch):
    local, server = cluster
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    monkeypatch.setenv("RCAKIT_LLM_CACHE", "unset")
    serial = rag_run(tmp_path, "serial")
    on_cluster = rag_run(tmp_path, "cluster", scheduler=local.scheduler_address)
    assert rag_bytes(on_cluster) == rag_bytes(serial)
    assert list(on_cluster.runner.served.table()["server"]) == [server.url]  # the workers' own OLLAMA_HOST
