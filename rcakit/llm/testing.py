"""Stand-in models for tests and benchmarks: no network, no weights.

:class:`FakeOllamaServer` speaks enough of Ollama's ``/api/chat`` and
``/api/show`` on 127.0.0.1 for the real ``ollama`` client (real HTTP, canned
behaviours). :class:`SilentServer` accepts connections on 127.0.0.1 and never
answers, the server that a timeout must cut short. :class:`ScriptedProvider`
is an in-process provider whose reply is a function of the messages, for unit
tests of LLM-backed methods in other modules.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from rcakit.llm.base import Message, Reply, check_messages, options

Behaviour = tuple[str, Any]  # (kind, payload): the payload's type follows the kind (text, status code, seconds)
_RESPOND: Behaviour = ("respond", None)


def echo(messages: Sequence[Message]) -> str:
    """The default reply: the last message's content as ``{"echo": ...}``."""
    return json.dumps({"echo": messages[-1]["content"]})


class FakeOllamaServer:
    """``/api/chat`` on an ephemeral port; ``requests`` holds each request body.

    ``queue(*behaviours)`` sets what the next requests get, in order:
    ``("reply", text)``, ``("status", code)`` (an HTTP error with an Ollama
    error body) or ``("hang", seconds)`` (no answer until then or until
    ``close``). With nothing queued the server replies ``respond(messages)``.
    Token counts are the characters of the prompt and of the reply.

    ``/api/show`` (what :func:`rcakit.llm.probe` asks) answers for any model
    when ``models`` is ``None``, else only for those names (an untagged name
    means ``:latest``) and HTTP 404 otherwise; ``shown`` holds the names
    asked about. It takes nothing from the queue.

    ``latency`` seconds are waited before each ``/api/chat`` answer, as a model
    server would take to generate; requests are served concurrently, each on
    its own thread, like an Ollama server with ``OLLAMA_NUM_PARALLEL`` slots.
    """

    def __init__(
        self,
        respond: Callable[[Sequence[Message]], str] = echo,
        models: Sequence[str] | None = None,
        latency: float = 0.0,
    ) -> None:
        self.latency = float(latency)
        self.script: deque[Behaviour] = deque()
        self.requests: list[dict] = []
        self.shown: list[str] = []
        self.models = None if models is None else {tagged(m) for m in models}
        self.release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, respond))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def queue(self, *behaviours: Behaviour) -> None:
        self.script.extend(behaviours)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tagged(model: str) -> str:
    """Ollama's full model name: ``:latest`` when no tag is given."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections and never answers.

    It holds every connection open without reading or writing, until
    ``close`` or until ``lifetime`` seconds have passed, whichever is first,
    so a test that forgets it cannot hang on it. ``connections`` counts the
    connections accepted.
    """

    def __init__(self, lifetime: float = 30.0) -> None:
        self.connections = 0
        self._stop = threading.Event()
        self._until = time.monotonic() + lifetime
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._hold, daemon=True)
        self._thread.start()

    def _hold(self) -> None:
        held = []
        try:
            while not self._stop.is_set() and time.monotonic() < self._until:
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    continue
                held.append(conn)
                self.connections += 1
        finally:
            for conn in held:
                conn.close()
            self._sock.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(fake: FakeOllamaServer, respond: Callable[[Sequence[Message]], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/api/show":
                self._show(body["model"])
            else:
                self._chat(body)

        def _chat(self, body: dict) -> None:
            fake.requests.append(body)
            if fake.latency:
                time.sleep(fake.latency)
            kind, payload = fake.script.popleft() if fake.script else _RESPOND
            if kind == "hang":
                fake.release.wait(payload)
                return
            if kind == "status":
                self._send(payload, {"error": "model exploded\nsecond line"})
                return
            content = payload if kind == "reply" else respond(body["messages"])
            self._send(
                200,
                {
                    "model": body["model"],
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": content},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": sum(len(m["content"]) for m in body["messages"]),
                    "eval_count": len(content),
                },
            )

        def _show(self, model: str) -> None:
            fake.shown.append(model)
            if fake.models is not None and tagged(model) not in fake.models:
                self._send(404, {"error": f"model '{model}' not found"})
                return
            self._send(
                200,
                {
                    "modelfile": f"FROM {model}",
                    "details": {"format": "gguf", "family": "fake"},
                    "model_info": {"general.architecture": "fake"},
                },
            )

        def _send(self, status: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class ScriptedProvider:
    """An in-process provider: ``respond(messages) -> text``; records each call.

    Token counts are whitespace words of the prompt and the reply, so tests
    of accounting have exact numbers to expect.
    """

    name = "scripted"
    context_window = None

    def __init__(self, respond: Callable[[Sequence[Message]], str] = echo, model: str = "script") -> None:
        self.respond, self.model = respond, model
        self.calls: list[dict] = []

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m["content"].split()) for m in check_messages(messages))

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 256,
        json_schema: dict | None = None,
    ) -> Reply:
        messages = check_messages(messages)
        self.calls.append({"messages": messages, **options(temperature, seed, max_tokens, json_schema)})
        text = self.respond(messages)
        return Reply(text, self.count_tokens(messages), len(text.split()))
