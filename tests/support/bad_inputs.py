"""The bad inputs a new user tries, each run as a real ``rcakit`` command.

Shared by ``tests/integration/test_errors.py`` (one test per case) and by the script
that tabulates them (``python tests/support/bad_inputs.py TABLE.md``): the command,
its exit status, the one line it prints, and whether anything changed on disk.
Every case runs in a scratch folder that holds a good executed notebook, a
good results file and a case store, so "nothing changed" is checked byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support import FIXTURES

GOOD_NOTEBOOK = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
GOOD_RESULTS = b'{"params": {"seed": 0}, "rcakit_version": "0.1.0"}\n'
GOOD_STORE = b'{"key": "a", "value": {"x": 1}}\n'


@dataclass
class Case:
    """One bad input: ``args`` after ``rcakit`` (``{tmp}`` is the scratch folder)."""

    name: str
    args: list[str]
    expect: str  # a substring of the one line printed
    status: int = 2
    setup: Callable[[Path, list], dict] | None = None  # makes files; returns env overrides
    mount: bool = False  # needs a tmpfs mount (root): skipped elsewhere
    interrupt: bool = False  # Ctrl-C once the chapter's kernel is running
    as_nobody: bool = False  # run as an unprivileged user (root reads every file)
    deadline: tuple[str, ...] = ()  # the words that name the deadline which ended the wait (never a wall time)


def scratch(tmp: Path) -> dict:
    """The scratch folders with one good file each; the environment that points at them."""
    (tmp / "book" / "chapters").mkdir(parents=True)
    (tmp / "book" / "chapters" / "car_shapley.ipynb").write_bytes(GOOD_NOTEBOOK)
    (tmp / "results").mkdir()
    (tmp / "results" / "car-shapley.json").write_bytes(GOOD_RESULTS)
    (tmp / "store").mkdir()
    (tmp / "store" / "cases.jsonl").write_bytes(GOOD_STORE)
    return {"RCAKIT_BOOK_DIR": str(tmp / "book"), "RCAKIT_RESULTS_DIR": str(tmp / "results"), "RCAKIT_PROGRESS": "0"}


def snapshot(tmp: Path) -> dict[str, bytes]:
    """Every regular file under ``tmp`` and its bytes."""
    out = {}
    for path in sorted(tmp.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(tmp))] = path.read_bytes()
    return out


def _file_as_results(tmp, cleanup):
    (tmp / "results.json").write_text("{}\n")
    return {"RCAKIT_RESULTS_DIR": str(tmp / "results.json")}


def _linked_failed_folder(tmp, cleanup):
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "car_shapley.ipynb").write_bytes(GOOD_NOTEBOOK)
    (tmp / "book" / "failed").symlink_to(tmp / "elsewhere", target_is_directory=True)
    return {}


def _file_as_book(tmp, cleanup):
    (tmp / "bookfile").write_text("not a folder\n")
    return {"RCAKIT_BOOK_DIR": str(tmp / "bookfile" / "book")}


def _mount_tmpfs(folder: Path, cleanup: list, size: str = "1m", readonly: bool = False) -> None:
    folder.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True, capture_output=True
    )
    cleanup.append(lambda: subprocess.run(["umount", "-l", str(folder)], capture_output=True))
    if readonly:
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)


def _readonly_results(tmp, cleanup):
    _mount_tmpfs(tmp / "ro", cleanup, readonly=True)
    return {"RCAKIT_RESULTS_DIR": str(tmp / "ro")}


def _readonly_book(tmp, cleanup):
    _mount_tmpfs(tmp / "robook", cleanup, readonly=True)
    return {"RCAKIT_BOOK_DIR": str(tmp / "robook")}


def _full_results(tmp, cleanup):
    _mount_tmpfs(tmp / "full", cleanup, size="256k")
    with contextlib.suppress(OSError), open(tmp / "full" / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()
    return {"RCAKIT_RESULTS_DIR": str(tmp / "full")}


def _fifo(tmp, cleanup):
    os.mkfifo(tmp / "logs.json")
    return {}


def _closed_port(tmp, cleanup):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"OLLAMA_HOST": f"http://127.0.0.1:{port}"}


def _silent_server(tmp, cleanup):
    """A server that accepts connections (the kernel's backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    cleanup.append(s.close)
    return {"OLLAMA_HOST": f"http://127.0.0.1:{s.getsockname()[1]}"}


def _deep_json(tmp, cleanup):
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    return {}


def _unreadable(tmp, cleanup):
    """A file nobody may read, in a folder everyone may enter (the command runs as nobody when root)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rcakit-unreadable-"))
    folder.chmod(0o755)
    cleanup.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    (folder / "log.json").write_text("{}\n")
    (folder / "log.json").chmod(0)
    (tmp / "where").write_text(str(folder))
    return {"HOME": str(folder)}


TOY_CHAPTER = textwrap.dedent(
    """\
    ---
    kernelspec: {display_name: Python 3, language: python, name: python3}
    rcakit:
      title: Toy
      bounds: {seed: [0, null], nap: [0.0, 600.0]}
    ---
    # Toy

    ```{code-cell} ipython3
    :tags: [parameters]

    seed = 0  # seed
    nap = 0.0  # seconds to sleep between cases
    store = "store/toy.jsonl"  # case store
    marker = ""  # file written once the sweep runs
    ```

    ```{code-cell} ipython3
    import time
    from pathlib import Path

    from rcakit.paths import resolve
    from rcakit.store import CaseStore

    cases = CaseStore(resolve(store))
    for i in range(100000 if nap else 3):
        if i == 1 and marker:
            Path(marker).write_text("running")
        cases.put(str(i), {"square": i * i, "seed": seed})
        time.sleep(nap)
    print(len(cases), "cases")
    ```
    """
)


def _toy_root(tmp, cleanup):
    (tmp / "root" / "notebooks").mkdir(parents=True)
    (tmp / "root" / "notebooks" / "car_shapley.md").write_text(TOY_CHAPTER)
    return {"RCAKIT_ROOT": str(tmp / "root")}


# -- inputs a chapter reads, checked before its kernel starts (rcakit.book.inputs, issue 20)


def _musique(edit: Callable[[list], list] = list, tail: bytes = b""):
    """A setup: ``{tmp}/musique.jsonl``, the fixture's questions after ``edit`` and then ``tail``, and a
    fake model server (the RAG chapters read MuSiQue only with the LLM agent)."""

    def setup(tmp, cleanup):
        import json

        from support.llm_servers import FakeOllamaServer

        lines = (FIXTURES / "musique" / "musique_fixture.jsonl").read_text(encoding="utf-8").splitlines()
        records = edit([json.loads(line) for line in lines])
        (tmp / "musique.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
        server = FakeOllamaServer()
        cleanup.append(server.close)
        return {"OLLAMA_HOST": server.url}

    return setup


def _hop_2_refers_to_hop_5(records: list) -> list:
    records[0]["question_decomposition"][1]["question"] = "Where was #5 born?"
    return records


def _untitled_paragraph(records: list) -> list:
    del records[1]["paragraphs"][3]["title"]
    return records


def _longrca(name: str, make: Callable[[list[str]], str]):
    """A setup: ``{tmp}/<name>`` made by ``make`` from the LongRCA fixture's lines."""

    def setup(tmp, cleanup):
        lines = (FIXTURES / "longrca_sample.jsonl").read_text(encoding="utf-8").splitlines()
        (tmp / name).write_text(make(lines), encoding="utf-8")
        return {}

    return setup


def _who_and_when(good: int, bad: int = 0, subset_folders: bool = True):
    """A setup: ``{tmp}/who/Hand-Crafted`` (or ``{tmp}/who`` itself) with ``good`` valid and ``bad`` invalid logs."""

    def setup(tmp, cleanup):
        import json

        folder = tmp / "who" / ("Hand-Crafted" if subset_folders else "")
        folder.mkdir(parents=True)
        history = [{"role": r, "content": f"turn {i}"} for i, r in enumerate(["User", "Planner", "Planner"])]
        log = {"question": "q", "history": history, "mistake_agent": "Planner", "mistake_step": "1"}
        for i in range(good):
            (folder / f"{i + 1}.json").write_text(json.dumps(log), encoding="utf-8")
        for i in range(good, good + bad):
            (folder / f"{i + 1}.json").write_text("{}", encoding="utf-8")
        return {}

    return setup


def _failing_plugin(tmp, cleanup):
    (tmp / "brokenplugin.py").write_text("raise ValueError('needs a GPU')\n")
    return {"PYTHONPATH": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}


def _plugin(source: str, **env: str) -> Callable[[Path, list], dict]:
    """A module ``hostile.py`` on ``PYTHONPATH`` whose import runs ``source``."""

    def setup(tmp, cleanup):
        body = textwrap.dedent(source) + "\n\ndef mine(case, oracle, budget=None):\n    return None\n"
        (tmp / "hostile.py").write_text(body)
        return {"PYTHONPATH": str(tmp), "PYTHONDONTWRITEBYTECODE": "1", **env}

    return setup


def _not_a_scheduler(tmp, cleanup):
    """A port that accepts connections and never speaks Dask; its address in ``{where}``."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    cleanup.append(s.close)
    (tmp / "where").write_text(f"tcp://127.0.0.1:{s.getsockname()[1]}")
    return {}


def _garbage_scheduler(tmp, cleanup):
    """A port that answers every connection with an HTTP reply, never Dask's bytes; its address in ``{where}``."""
    import threading

    s = socket.create_server(("127.0.0.1", 0))
    cleanup.append(s.close)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = s.accept()
                with conn:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    threading.Thread(target=serve, daemon=True).start()
    (tmp / "where").write_text(f"tcp://127.0.0.1:{s.getsockname()[1]}")
    return {}


def _two_argument_plugin(tmp, cleanup):
    (tmp / "twoargs.py").write_text("def mine(case, oracle):\n    return None\n")
    return {"PYTHONPATH": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}


def _authors_run(damage: Callable[[dict], None]) -> Callable[[Path, list], dict]:
    """A folder ``{tmp}/runs`` with one small run in the authors' format, damaged by ``damage``."""

    def setup(tmp, cleanup):
        meta = {
            "sample_id": "s1", "question": "q?", "reference_answer": "Port Karith", "final_answer": "New Ostion",
            "original_span": "Port Karith", "corrupted_span": "New Ostion", "strategy": "answer_fact",
            "absorption": "absorbed", "query_contaminated": False, "iterations_used": 1,
        }  # fmt: skip
        names = ["rule_based", "doctor_rag", "llm_judge", "propagation_aware", "suffix_regen"]
        run = {
            "dataset": "hotpotqa", "provider": "openai:gpt-4o-mini", "judge": "claude:claude-haiku-4-5",
            "retriever": "bm25", "criterion": "hop", "diagnosers": names,
            "raw_by_depth": {"1": {"truth": [["retrieval", 1]], "metadata": [meta], "recovered_metadata": [],
                                   "predictions": {n: [["retrieval", 1, 0]] for n in names}}},
        }  # fmt: skip
        damage(run)
        (tmp / "runs").mkdir()
        (tmp / "runs" / "run.json").write_text(__import__("json").dumps(run), encoding="utf-8")
        return {}

    return setup


AUTHORS = ["run", "content-corruption", "-p", "authors_runs", "{tmp}/runs"]
WORLD = ["-p", "world", "{tmp}/musique.jsonl", "-p", "agent", "llm", "-p", "provider", "ollama:fake"]
WHO = ["run", "longrca-strata", "-p", "who_and_when_path", "{tmp}/who"]
INPUT_CASES = [
    Case(
        "MuSiQue: a malformed line",
        ["run", "coverage-collapse", *WORLD],
        "parameter 'world': {tmp}/musique.jsonl, line 7: not a MuSiQue question",
        setup=_musique(tail=b'{"id": \n'),
    ),
    Case(
        "MuSiQue: no three-hop question",
        ["run", "content-corruption", *WORLD],
        "{tmp}/musique.jsonl holds no answerable 3-hop question",
        setup=_musique(lambda rs: [r for r in rs if len(r["question_decomposition"]) != 3]),
    ),
    Case(
        "MuSiQue: a question without a decomposition",
        ["run", "coverage-collapse", *WORLD],
        "line 1: not a MuSiQue question (missing field 'question_decomposition')",
        setup=_musique(lambda rs: [{k: v for k, v in rs[0].items() if k != "question_decomposition"}, *rs[1:]]),
    ),
    Case(
        "MuSiQue: an empty decomposition",
        ["run", "coverage-collapse", *WORLD],
        "line 1: not a MuSiQue question (question_decomposition is empty)",
        setup=_musique(lambda rs: [{**rs[0], "question_decomposition": []}, *rs[1:]]),
    ),
    Case(
        "MuSiQue: a #5 reference in a three-hop question",
        ["run", "content-corruption", *WORLD],
        "{tmp}/musique.jsonl, line 1: question '3hop1__9001_9002_9003': hop 2 refers to #5",
        setup=_musique(_hop_2_refers_to_hop_5),
    ),
    Case(
        "MuSiQue: invalid UTF-8",
        ["run", "coverage-collapse", *WORLD],
        "parameter 'world': {tmp}/musique.jsonl, line 7: invalid UTF-8 at byte 11",
        setup=_musique(tail=b'{"id": "caf\xe9"}\n'),
    ),
    Case(
        "MuSiQue: a paragraph without a title",
        ["run", "coverage-collapse", *WORLD],
        "line 2: not a MuSiQue question (paragraph 3 lacks 'title')",
        setup=_musique(_untitled_paragraph),
    ),
    Case(
        "LongRCA: no usable record",
        ["run", "longrca-strata", "-p", "longrca", "{tmp}/records.jsonl"],
        "parameter 'longrca': {tmp}/records.jsonl: no labelled LongRCA record (0 unlabelled, 2 rejected",
        setup=_longrca("records.jsonl", lambda lines: '{"question_ID": "x"}\n[]\n'),
    ),
    Case(
        "LongRCA: a trailing comma",
        ["run", "longrca-strata", "-p", "longrca", "{tmp}/records.json"],
        "invalid JSON at line 4 column 1: a trailing comma",
        setup=_longrca("records.json", lambda lines: "[" + ",\n".join(lines) + ",\n]\n"),
    ),
    Case(
        "LongRCA: duplicate question_IDs",
        ["validate", "{tmp}/records.jsonl"],
        "{tmp}/records.jsonl:4: question_ID: 'swebench_pro-0001' repeats {tmp}/records.jsonl:1",
        setup=_longrca("records.jsonl", lambda lines: "\n".join([*lines, lines[0]]) + "\n"),
    ),
    Case(
        "Who&When: an empty subset folder",
        WHO,
        "parameter 'who_and_when_path': {tmp}/who/Hand-Crafted: folder holds no .json files",
        setup=_who_and_when(0),
    ),
    Case(
        "Who&When: a folder of logs with no subset folder",
        WHO,
        "{tmp}/who: no Who&When subset folder",
        setup=_who_and_when(2, subset_folders=False),
    ),
    Case(
        "Who&When: a subset with no good log",
        WHO,
        "{tmp}/who/Hand-Crafted: no Hand-Crafted log (0 unlabelled, 2 rejected",
        setup=_who_and_when(0, bad=2),
    ),
    Case(
        "plug-in method that cannot be imported",
        ["run", "attribution-families", "-p", "methods", "builtin,nosuch.module:fn"],
        "methods: cannot import 'nosuch.module:fn'",
    ),
    Case(
        "plug-in method that is not callable",
        ["run", "attribution-families", "-p", "methods", "rcakit.parallel:CONNECT_SECONDS"],
        "methods: 'rcakit.parallel:CONNECT_SECONDS' is not callable",
    ),
    Case(
        "plug-in module that fails on import",
        ["run", "attribution-families", "-p", "methods", "brokenplugin:x"],
        "methods: importing 'brokenplugin:x' failed: ValueError: needs a GPU",
        setup=_failing_plugin,
    ),
    Case(
        "scheduler port that does not speak Dask",
        ["run", "coverage-collapse", "-p", "scheduler", "{where}"],
        "coverage-collapse: scheduler: tcp://127.0.0.1:",
        setup=_not_a_scheduler,
        deadline=("gave no Dask handshake within 5 s",),
    ),
    Case(
        "RCAKIT_DASK_TIMEOUT is not a number of seconds",
        ["run", "coverage-collapse", "-p", "scheduler", "tcp://127.0.0.1:9"],
        "coverage-collapse: RCAKIT_DASK_TIMEOUT: expected a number of seconds > 0, got '-5'",
        setup=lambda tmp, cleanup: {"RCAKIT_DASK_TIMEOUT": "-5"},
    ),
    Case(
        "scheduler port that answers HTTP",
        ["run", "longrca-strata", "-p", "scheduler", "{where}"],
        "accepted a connection but does not speak Dask's protocol",
        setup=_garbage_scheduler,
    ),
    Case(
        "a plug-in that calls sys.exit(3) as it is imported",
        ["run", "attribution-families", "-p", "methods", "hostile:mine"],
        "methods: importing 'hostile:mine' called sys.exit(3)",
        setup=_plugin("import sys\nsys.exit(3)"),
    ),
    Case(
        "a plug-in that sleeps as it is imported",
        ["run", "attribution-families", "-p", "methods", "hostile:mine"],
        "methods: importing 'hostile:mine' did not finish within 2 s (RCAKIT_PLUGIN_TIMEOUT)",
        setup=_plugin("import time\ntime.sleep(600)", RCAKIT_PLUGIN_TIMEOUT="2"),
    ),
    Case(
        "a plug-in that forks as it is imported",
        ["run", "attribution-families", "-p", "methods", "hostile:mine"],
        "methods: importing 'hostile:mine' started another process (a fork)",
        setup=_plugin("import os\nos.fork()"),
    ),
    Case(
        "a plug-in that prints 8 MiB and then fails as it is imported",
        ["run", "attribution-families", "-p", "methods", "hostile:mine"],
        "methods: importing 'hostile:mine' failed: ValueError: no GPU",
        setup=_plugin(
            "import sys\nsys.stdout.write('x' * (8 << 20))\nsys.stderr.write('y' * (8 << 20))\n"
            "raise ValueError('no GPU')"
        ),
    ),
    Case(
        "a plug-in that kills its own process as it is imported",
        ["run", "attribution-families", "-p", "methods", "hostile:mine"],
        "methods: importing 'hostile:mine' ended the check with exit status 5 and no answer",
        setup=_plugin("import os\nos._exit(5)"),
    ),
    Case(
        "RCAKIT_PLUGIN_TIMEOUT is not a number",
        ["run", "attribution-families", "-p", "methods", "builtin,hostile:mine"],
        "RCAKIT_PLUGIN_TIMEOUT: expected a number of seconds > 0, got 'soon'",
        setup=_plugin("", RCAKIT_PLUGIN_TIMEOUT="soon"),
    ),
    Case(
        "plug-in method without a budget argument",
        ["run", "attribution-families", "-p", "methods", "twoargs:mine"],
        "methods: 'twoargs:mine' cannot be called as method(case, oracle, budget)",
        setup=_two_argument_plugin,
    ),
]


def _serve_in_thread(tmp, cleanup, content: Callable[[str], bytes | None]) -> str:
    """A bounded HTTP server on 127.0.0.1 (tests/support/shared_data.py) for one case; its base URL, no slash."""
    from support.shared_data import start_server

    server = start_server(content)
    cleanup.append(server.stop)
    return f"http://127.0.0.1:{server.server_address[1]}"


def _hostile_file_list(name: str):
    """A Hub listing of LongRCA Bench whose last record name is ``name``; ``{tmp}/sentinel.json`` is what
    a ``../`` name reaches from the data set's folder (an earlier fetch left ``data/full`` behind)."""

    def setup(tmp, cleanup):
        import json

        (tmp / "sentinel.json").write_text('{"kept": "byte for byte"}\n')
        (tmp / "data-home" / "longrca-bench" / "data" / "full").mkdir(parents=True)
        names = ["README.md", *(f"data/full/{i}.json" for i in range(1, 1140)), name.replace("{tmp}", str(tmp))]
        listing = json.dumps({"siblings": [{"rfilename": n} for n in names]}).encode()
        url = _serve_in_thread(tmp, cleanup, lambda p: listing if p.startswith("api/") else b'{"history": []}')
        return {"RCAKIT_DATA_DIR": str(tmp / "data-home"), "RCAKIT_DATA_URL": url + "/", "HF_ENDPOINT": url}

    return setup


def _html_mirror(tmp, cleanup):
    """A mirror that answers every path with a 63-byte HTML page (a rate-limit page)."""
    page = b"<!DOCTYPE html><html><body>429 Too Many Requests</body></html>\n"
    url = _serve_in_thread(tmp, cleanup, lambda p: page)
    return {"RCAKIT_DATA_DIR": str(tmp / "data-home"), "RCAKIT_DATA_URL": url + "/"}


DATA_CASES = [
    Case(
        "a malformed RCAKIT_DATA_URL",
        ["data", "fetch", "musique"],
        "RCAKIT_DATA_URL: 'http://[::1' is not a usable URL (Invalid IPv6 URL)",
        setup=lambda tmp, cleanup: {"RCAKIT_DATA_DIR": str(tmp / "data-home"), "RCAKIT_DATA_URL": "http://[::1"},
    ),
    Case(
        "an HF_ENDPOINT with a port out of range",
        ["data", "fetch", "longrca-bench"],
        "HF_ENDPOINT: 'http://127.0.0.1:99999' is not a usable URL (Port out of range 0-65535)",
        setup=lambda tmp, cleanup: {"RCAKIT_DATA_DIR": str(tmp / "data-home"), "HF_ENDPOINT": "http://127.0.0.1:99999"},
    ),
    Case(
        "LongRCA file list: a name with ../",
        ["data", "fetch", "longrca-bench"],
        "lists 'data/full/../../../../sentinel.json', which is not a path inside the data set's folder ('..' leads "
        "out of the folder); nothing was fetched",
        setup=_hostile_file_list("data/full/../../../../sentinel.json"),
    ),
    Case(
        "LongRCA file list: an absolute name",
        ["data", "fetch", "longrca-bench"],
        "which is not a path inside the data set's folder (an absolute path)",  # the name is cut to 80 characters
        setup=_hostile_file_list("{tmp}/sentinel.json"),
    ),
    Case(
        "an HTML page served as MuSiQue",
        ["data", "fetch", "musique"],
        "musique: musique_ans_v1.0_dev.jsonl: refused at first fetch (an HTML page: 63 bytes, the registry expects "
        "28.9 MB to 31.9 MB); nothing from http://127.0.0.1:",
        setup=_html_mirror,
    ),
]


PLUS = "+" * 5000
DIGITS = "1" * 5000
DEEP = "[" * 60_000 + "]" * 60_000  # one argument may hold at most 128 KiB


def _chapter_running(tmp, cleanup):
    """Another run of car-shapley holds its lock (the lock file in the results folder, flock-ed)."""
    import fcntl

    fd = os.open(tmp / "results" / ".car-shapley.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    cleanup.append(lambda: os.close(fd))
    return {}


def _dying_kernel(tmp, cleanup):
    """The toy chapter, whose kernel kills itself (as a crash in native code would) at seed 9."""
    (tmp / "root" / "notebooks").mkdir(parents=True)
    first = "cases = CaseStore(resolve(store))"
    body = f"import os, signal\nif seed == 9:\n    os.kill(os.getpid(), signal.SIGKILL)\n{first}"
    (tmp / "root" / "notebooks" / "car_shapley.md").write_text(TOY_CHAPTER.replace(first, body))
    return {"RCAKIT_ROOT": str(tmp / "root")}


SMALL_CASES = [  # issue 20, item 12
    Case("a full-width digit", ["run", "car-shapley", "-p", "seed", "\uff13"], "holds non-ASCII digits; type 0-9"),
    Case("nan for a float", ["run", "car-shapley", "-p", "q", "nan"], "parameter 'q' = 'nan' is not a finite number"),
    Case(
        "a Shapley budget too small for two permutations",
        ["run", "car-shapley", "-p", "budget", "50"],
        "parameter 'budget': 50 rollouts buy fewer than two antithetic permutations",
    ),
    Case(
        "the same -p twice",
        ["run", "car-shapley", "-p", "seed", "1", "-p", "seed", "2"],
        "parameter 'seed' is given twice",
    ),
    Case("a parameter for a page without any", ["run", "claims", "-p", "x", "1"], "claims: takes no parameters"),
    Case(
        "a second run of a chapter while one runs",
        ["run", "car-shapley", "--quick"],
        "car-shapley: another rcakit run of this chapter is running (it holds {tmp}/results/.car-shapley.lock)",
        setup=_chapter_running,
    ),
    Case(
        "a kernel that dies",
        ["run", "car-shapley", "-p", "seed", "9"],
        "the kernel died",
        status=1,
        setup=_dying_kernel,
    ),
]


CASES = [
    *SMALL_CASES,
    Case("seed -1", ["run", "car-shapley", "-p", "seed", "-1"], "parameter 'seed' = -1 is outside [0, inf]"),
    Case("negative value after -p", ["run", "car-shapley", "-p", "q", "-1e-3"], "parameter 'q' = -0.001 is outside"),
    Case(
        "gcjr list [1,'a']",
        ["run", "gcjr-ablations", "-p", "r_values", "[1,'a']"],
        "parameter 'r_values' element 1 expects int, got 'a'",
    ),
    Case("gcjr list []", ["run", "gcjr-ablations", "-p", "r_values", "[]"], "expects a non-empty list of int"),
    Case("gcjr list [5.0]", ["run", "gcjr-ablations", "-p", "r_values", "[5.0]"], "element 0 expects int, got 5.0"),
    Case(
        "gcjr list element out of bounds",
        ["run", "gcjr-ablations", "-p", "noise_levels", "[0.1, 2]"],
        "element 1 = 2.0 is outside [0.0, 0.99]",
    ),
    Case("empty provider", ["run", "coverage-collapse", "-p", "provider", ""], "provider: unknown provider ''"),
    Case("bad provider", ["run", "coverage-collapse", "-p", "provider", "gpt"], "provider: unknown provider 'gpt'"),
    Case(
        "bad judge provider",
        ["run", "content-corruption", "-p", "judge_provider", "ollama:"],
        "judge_provider: unknown provider 'ollama:'",
    ),
    Case(
        "agent llm without a provider",
        ["run", "coverage-collapse", "-p", "agent", "llm"],
        "parameter 'agent' = 'llm' needs 'provider' to be set",
    ),
    Case(
        "unreachable model server",
        ["run", "coverage-collapse", "-p", "provider", "ollama:qwen2.5:0.5b"],
        "provider: ollama at http://127.0.0.1:",
        setup=_closed_port,
    ),
    Case(
        "server that never answers (2 s timeout)",
        ["run", "longrca-strata", "-p", "provider", "ollama:qwen2.5:0.5b", "-p", "llm_timeout", "2"],
        "provider: ollama at http://127.0.0.1:",
        setup=_silent_server,
        deadline=("no reply within the 2 s timeout",),
    ),
    Case(
        "store path is a file",
        ["run", "coverage-collapse", "-p", "store", "{tmp}/store/cases.jsonl"],
        "parameter 'store': {tmp}/store/cases.jsonl is a file, not a folder",
    ),
    Case(
        "store under a file",
        ["run", "content-corruption", "-p", "store", "{tmp}/store/cases.jsonl/sub"],
        "cannot be created: {tmp}/store/cases.jsonl is a file",
    ),
    Case(
        "authors' runs: a prediction without its cost",
        AUTHORS,
        "parameter 'authors_runs': {tmp}/runs/run.json: raw_by_depth['1'].predictions.llm_judge[0]: expected "
        "[stage, hop, cost], got ['retrieval', 1]",
        setup=_authors_run(lambda r: r["raw_by_depth"]["1"]["predictions"]["llm_judge"][0].pop()),
    ),
    Case(
        "authors' runs: a misspelled folder",
        ["run", "content-corruption", "-p", "authors_runs", "{tmp}/rnus"],
        "parameter 'authors_runs': {tmp}/rnus does not exist",
    ),
    Case(
        "misspelled who_and_when_path",
        ["run", "longrca-strata", "-p", "who_and_when_path", "{tmp}/who_and_wen"],
        "parameter 'who_and_when_path': {tmp}/who_and_wen does not exist",
    ),
    Case(
        "who_and_when_path is a FIFO",
        ["run", "longrca-strata", "-p", "who_and_when_path", "{tmp}/logs.json"],
        "is not a regular file or folder",
        setup=_fifo,
    ),
    Case("a value of 5,000 + signs", ["run", "car-shapley", "-p", "q", PLUS], "parameter 'q' expects float, got '+++"),
    Case("a 5,000-digit number", ["run", "car-shapley", "-p", "seed", DIGITS], "is too large (the limit is 2**63)"),
    Case(
        "a list nested 60k deep after -p",
        ["run", "gcjr-ablations", "-p", "hidden_fractions", DEEP],
        "parameter 'hidden_fractions' expects list of float",
    ),
    Case("JSON nested 100k deep", ["validate", "{tmp}/deep.json"], "rcakit: error: ", setup=_deep_json),
    Case(
        "an unreadable file", ["validate", "{where}/log.json"], "Permission denied", setup=_unreadable, as_nobody=True
    ),
    Case(
        "results folder is a file",
        ["run", "car-shapley"],
        "results folder (RCAKIT_RESULTS_DIR): {tmp}/results.json is a file",
        setup=_file_as_results,
    ),
    Case(
        "RCAKIT_BOOK_DIR under a file", ["run", "car-shapley"], "book folder (RCAKIT_BOOK_DIR): ", setup=_file_as_book
    ),
    Case(
        "read-only RCAKIT_BOOK_DIR",
        ["run", "car-shapley"],
        "is not writable: Read-only file system",
        setup=_readonly_book,
        mount=True,
    ),
    Case(
        "read-only results folder",
        ["run", "car-shapley"],
        "is not writable: Read-only file system",
        setup=_readonly_results,
        mount=True,
    ),
    Case(
        "full results folder",
        ["run", "car-shapley"],
        "results folder (RCAKIT_RESULTS_DIR): ",
        setup=_full_results,
        mount=True,
    ),
    Case(
        "book/failed is a link to another folder",
        ["run", "car-shapley"],
        "the failed-runs folder: {tmp}/book/failed is a symbolic link",
        setup=_linked_failed_folder,
    ),
    Case(
        "a parameter byte that is not UTF-8",
        ["run", "coverage-collapse", "--quick", "-p", "store", b"st\xff".decode("utf-8", "surrogateescape")],
        "parameter 'store': 'st\\xff' is not UTF-8 text",
    ),
    Case(
        "SOURCE_DATE_EPOCH that is not a number",
        ["run", "car-shapley"],
        "SOURCE_DATE_EPOCH: expected a whole number of seconds since 1970, got 'abc'",
        setup=lambda tmp, cleanup: {"SOURCE_DATE_EPOCH": "abc"},
    ),
    Case(
        "a malformed OLLAMA_HOST",
        ["run", "coverage-collapse", "--quick", "-p", "provider", "ollama:tiny"],
        "OLLAMA_HOST: 'http://[::1' is not a usable host",
        setup=lambda tmp, cleanup: {"OLLAMA_HOST": "http://[::1"},
    ),
    *INPUT_CASES,
    *DATA_CASES,
    Case("missing -p value", ["run", "car-shapley", "-p", "q"], "argument -p/--param: expected 2 arguments"),
    Case("unknown parameter", ["run", "car-shapley", "-p", "qq", "1"], "unknown parameter 'qq'"),
    Case("unknown chapter", ["run", "no-such-chapter"], "unknown chapter 'no-such-chapter'"),
    Case(
        "Ctrl-C during a sweep",
        ["run", "car-shapley", "-p", "nap", "0.05", "-p", "marker", "{tmp}/running"],
        "rcakit: interrupted",
        status=130,
        setup=_toy_root,
        interrupt=True,
    ),
]


@dataclass
class Outcome:
    status: int
    lines: list[str]
    stdout: str
    changed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    env: dict = field(default_factory=dict)  # what the case's setup set, beside the scratch folders


def run_case(case: Case, tmp: Path) -> Outcome:
    """Run ``case`` in the scratch folder ``tmp``; report what it printed and changed."""
    env = {**os.environ, **scratch(tmp)}
    env.pop("PYTHONHASHSEED", None)
    cleanup: list = []
    try:
        extra = case.setup(tmp, cleanup) if case.setup else {}
        env.update(extra)
        before = snapshot(tmp)
        args = [_fill(a, tmp) for a in case.args]
        cmd = [sys.executable, "-m", "rcakit", *args]
        if case.as_nobody and os.geteuid() == 0:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        start = time.monotonic()
        if case.interrupt:
            out, err, status = _interrupted(cmd, env, tmp / "running")
        else:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            out, err, status = proc.stdout, proc.stderr, proc.returncode
        seconds = time.monotonic() - start
        after = snapshot(tmp)
    finally:
        for undo in reversed(cleanup):
            undo()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return Outcome(status, err.strip().splitlines(), out, changed, seconds, extra)


def _fill(arg: str, tmp: Path) -> str:
    arg = arg.replace("{tmp}", str(tmp))
    if "{where}" in arg:
        arg = arg.replace("{where}", (tmp / "where").read_text())
    return arg


def _interrupted(cmd, env, marker: Path):
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
    out, err = proc.communicate(timeout=120)
    return out, err, proc.returncode


def expected(case: Case, tmp: Path) -> str:
    return case.expect.replace("{tmp}", str(tmp))


def nobody_can_run() -> bool:
    """Whether an unprivileged user can run this checkout's rcakit: not when the checkout sits under a folder
    only root may enter (``mktemp -d`` makes them 0700), where the "run as nobody" cases cannot start at all."""
    if os.geteuid() != 0:
        return True  # the cases then run as this user, who can read the checkout
    probe = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-c",
        "import rcakit.book.cli",
    ]
    return subprocess.run(probe, capture_output=True).returncode == 0


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root in a privileged container)."""
    if os.geteuid() != 0:
        return False
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", d], capture_output=True)
        return ok


def _shown(args: list[str]) -> str:
    def one(a: str) -> str:
        a = a if len(a) <= 40 else f"{a[:12]}…({len(a)} chars)"
        return a if a and all(c.isalnum() or c in "-_./:{}=" for c in a) else repr(a)

    return "rcakit " + " ".join(one(a) for a in args)


def table(path: Path) -> None:
    """Run every case and write the Markdown table to ``path``."""
    import tempfile

    mount = can_mount()
    rows = [
        "| case | command | exit | the one line printed (stderr) | changed on disk |",
        "| --- | --- | --- | --- | --- |",
    ]
    for case in CASES:
        if case.mount and not mount:
            rows.append(f"| {case.name} | `{_shown(case.args)}` | skipped | needs a tmpfs mount | |")
            continue
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            got = run_case(case, tmp)
            shown = [line.replace(str(tmp), "$TMP") for line in got.lines]
            env = " ".join(f"{k}={v.replace(str(tmp), '$TMP')}" for k, v in got.env.items() if k != "HOME")
        line = " / ".join(shown).replace("|", "\\|")
        line = line if len(line) <= 220 else f"{line[:220]}…"
        changed = ", ".join(got.changed) if got.changed else "nothing"
        command = (env + " " if env else "") + _shown(case.args).replace("{tmp}", "$TMP")
        rows.append(f"| {case.name} | `{command}` | {got.status} | `{line}` | {changed} |")
        print(case.name, got.status, len(got.lines), f"{got.seconds:.1f}s", file=sys.stderr)
    env_note = (
        f"Generated by `python tests/support/bad_inputs.py` with {sys.executable}; each command ran in a scratch "
        "folder holding a good notebook, results file and case store ($TMP), and 'changed on disk' "
        "compares every file there byte for byte before and after. The Ctrl-C row runs a toy chapter "
        "(RCAKIT_ROOT) whose sweep appends to a case store, and sends SIGINT to the command's process "
        "group once the sweep runs; the store it leaves is read back by the test, line by line."
    )
    path.write_text(env_note + "\n\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    table(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bad-inputs.md"))
