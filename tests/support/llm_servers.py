"""Stand-in models for tests and benchmarks: no network, no weights. They live with the tests, not in the
package, so the wheel ships none of them; a benchmark puts ``tests/`` on its import path to use them.

Fake model servers on 127.0.0.1 speak enough of each protocol for the official
clients (real HTTP, canned behaviours): :class:`FakeOllamaServer` (Ollama's
``/api/chat`` and ``/api/show``), :class:`FakeOpenAIServer`
(``/v1/chat/completions``, ``/v1/models``, ``/v1/models/{id}``) and
:class:`FakeAnthropicServer` (``/v1/messages``, ``/v1/models/{id}``).
:class:`SilentServer` accepts connections on 127.0.0.1 and never answers, the
server that a timeout must cut short. :class:`ScriptedProvider` is an
in-process provider whose reply is a function of the messages, for unit tests
of LLM-backed methods in other modules.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from rcakit.llm.base import Message, Reply, check_messages, options

Behaviour = tuple[str, Any]  # (kind, payload): the payload's type follows the kind (text, status code, seconds)
_RESPOND: Behaviour = ("respond", None)
ERROR_TEXT = "model exploded\nsecond line"


def echo(messages: Sequence[Message]) -> str:
    """The default reply: the last message's content as ``{"echo": ...}``."""
    return json.dumps({"echo": messages[-1]["content"]})


class FakeServer(ABC):
    """What the fake model servers share; a subclass maps its protocol's paths and bodies.

    ``queue(*behaviours)`` sets what the next chat requests get, in order:
    ``("reply", text)`` (also a reply that ignores the schema asked for),
    ``("status", code)`` or ``("status", (code, retry_after))`` (an HTTP error
    with the protocol's error body, and a ``Retry-After`` header when given),
    ``("hang", seconds)`` (no answer until then or until ``close``),
    ``("malformed", text)`` (HTTP 200 with ``text`` as a JSON body that is not
    the protocol's), ``("redirect", code)`` (a redirect to the same path, a
    loop) or ``("echo_auth", code)`` (an HTTP error whose message quotes the
    request's ``Authorization`` and ``x-api-key`` headers, as a hostile server
    might). With nothing queued the server replies
    ``respond(messages)``. Token counts are the characters of the prompt and of
    the reply. ``requests`` holds each chat request body, ``paths`` every
    request's method and path, ``times`` the ``time.monotonic()`` of each chat
    request's arrival.

    ``models`` are the names the server has (``None``: any name it is asked
    about, and none in a listing); ``shown`` holds the names asked about. A
    chat request that carries a field in ``refuses`` gets HTTP 400 naming it,
    as a server without that feature answers (it takes nothing from the queue).
    With a ``key``, a request that presents another (as ``Authorization:
    Bearer`` or ``x-api-key``) gets HTTP 401 quoting what it presented.
    ``formats`` (``None``: any) are the ``response_format`` types the server
    takes besides ``text``; a request for another gets ``format_status``
    (400, or 500 as llama-cpp-python's server answers) with a validation error
    naming ``response_format``.
    ``latency`` seconds are waited before each chat answer, as a model server
    would take to generate; requests are served concurrently, each on its own
    thread. Setting ``trickle = (seconds, headers_too)`` makes every response
    from then on arrive one byte every ``seconds`` (its body, or with
    ``headers_too`` the whole response from the status line on), until done or
    ``close``: a per-read timeout never trips on it.
    """

    trickle: tuple[float, bool] | None = None

    def __init__(
        self,
        respond: Callable[[Sequence[Message]], str] = echo,
        models: Sequence[str] | None = None,
        latency: float = 0.0,
        refuses: Collection[str] = (),
        key: str | None = None,
        formats: Collection[str] | None = None,
        format_status: int = 400,
    ) -> None:
        self.respond, self.latency, self.refuses, self.key = respond, float(latency), tuple(refuses), key
        self.formats, self.format_status = None if formats is None else tuple(formats), int(format_status)
        self.script: deque[Behaviour] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.times: list[float] = []
        self.shown: list[str] = []
        self.models = None if models is None else {self.full_name(m) for m in models}
        self.release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
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

    def full_name(self, model: str) -> str:
        """A model's name as the server stores it."""
        return model

    def has(self, model: str) -> bool:
        """Whether the server has ``model``; the name is recorded in ``shown``."""
        self.shown.append(model)
        return self.models is None or self.full_name(model) in self.models

    def route(self, http: _Exchange, method: str, path: str, body: dict[str, Any]) -> None:
        """Answer one request (a subclass maps its paths)."""
        http.send(404, {"error": f"no route {method} {path}"})

    def authorised(self, http: _Exchange) -> bool:
        """Whether the request presents :attr:`key` (always, without one); else it is answered with HTTP 401."""
        if self.key is None or self.key in (http.headers.get("x-api-key"), _bearer(http.headers)):
            return True
        http.send(401, self.error_body(f"invalid credentials: {_credentials(http.headers)}"))
        return False

    def chat(self, http: _Exchange, body: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        """Answer one chat request with the next queued behaviour."""
        self.requests.append(body)
        self.times.append(time.monotonic())
        refused = [name for name in self.refuses if name in body]
        if refused:
            http.send(400, self.error_body(f"this server does not support {refused[0]}"))
            return
        asked = body.get("response_format", {}).get("type")
        if self.formats is not None and asked is not None and asked not in self.formats:
            takes = " or ".join(repr(kind) for kind in ("text", *self.formats))
            why = f"1 validation error: ('body', 'response_format', 'type'): Input should be {takes}, input: {asked!r}"
            http.send(self.format_status, self.error_body(why))
            return
        if self.latency:
            time.sleep(self.latency)
        kind, payload = self.script.popleft() if self.script else _RESPOND
        if kind == "hang":
            self.release.wait(payload)
        elif kind == "status":
            code, wait = payload if isinstance(payload, tuple) else (payload, None)
            http.send(code, self.error_body(ERROR_TEXT), {} if wait is None else {"Retry-After": str(wait)})
        elif kind == "echo_auth":
            http.send(payload, self.error_body(f"invalid credentials: {_credentials(http.headers)}"))
        elif kind == "malformed":
            http.send_bytes(200, str(payload).encode())
        elif kind == "redirect":  # to the same path: a loop
            http.send_bytes(payload, b"", {"Location": http.path})
        else:
            text = payload if kind == "reply" else self.respond(messages)
            http.send(200, self.reply_body(body, text, sum(len(m["content"]) for m in messages)))

    def error_body(self, message: str) -> dict[str, Any]:
        return {"error": message}

    @abstractmethod
    def reply_body(self, request: dict[str, Any], text: str, prompt_chars: int) -> dict[str, Any]:
        """The protocol's reply to a chat request."""


def _bearer(headers: Any) -> str | None:
    value = headers.get("Authorization") or ""
    return value.removeprefix("Bearer ") if value.startswith("Bearer ") else None


def _credentials(headers: Any) -> str:
    """What a request presented as its key, quoted back as a careless (or hostile) server does."""
    return f"Authorization {headers.get('Authorization')!r}, x-api-key {headers.get('x-api-key')!r}"


class FakeOllamaServer(FakeServer):
    """Ollama's ``/api/chat`` and ``/api/show`` (what :func:`rcakit.llm.probe` asks; an untagged name means
    ``:latest``, a model it lacks is HTTP 404), as :class:`FakeServer` describes."""

    def full_name(self, model: str) -> str:
        return tagged(model)

    def route(self, http: _Exchange, method: str, path: str, body: dict[str, Any]) -> None:
        if path == "/api/show":
            model = body["model"]
            if not self.has(model):
                http.send(404, {"error": f"model '{model}' not found"})
                return
            show = {"details": {"format": "gguf", "family": "fake"}, "model_info": {"general.architecture": "fake"}}
            http.send(200, {"modelfile": f"FROM {model}", **show})
        elif path == "/api/chat":
            self.chat(http, body, body["messages"])
        else:
            super().route(http, method, path, body)

    def reply_body(self, request: dict[str, Any], text: str, prompt_chars: int) -> dict[str, Any]:
        return {
            "model": request["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt_chars,
            "eval_count": len(text),
        }


def tagged(model: str) -> str:
    """Ollama's full model name: ``:latest`` when no tag is given."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class FakeOpenAIServer(FakeServer):
    """An OpenAI-compatible server: ``POST /v1/chat/completions``, ``GET /v1/models`` (the ``models``
    given) and ``GET /v1/models/{id}``, as :class:`FakeServer` describes. Its URL for the ``openai``
    client (``base_url``) is ``url + "/v1"``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base_url = f"{self.url}/v1"

    def route(self, http: _Exchange, method: str, path: str, body: dict[str, Any]) -> None:
        if method == "POST" and path == "/v1/chat/completions":
            self.chat(http, body, body["messages"])
        elif method == "GET" and path == "/v1/models":
            http.send(200, {"object": "list", "data": [_openai_model(m) for m in sorted(self.models or ())]})
        elif method == "GET" and path.startswith("/v1/models/"):
            model = path.removeprefix("/v1/models/")
            if self.has(model):
                http.send(200, _openai_model(model))
            else:
                http.send(404, self.error_body(f"The model '{model}' does not exist"))
        else:
            super().route(http, method, path, body)

    def error_body(self, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    def reply_body(self, request: dict[str, Any], text: str, prompt_chars: int) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"},
            ],
            "usage": {"prompt_tokens": prompt_chars, "completion_tokens": len(text), "total_tokens": 0},
        }


def _openai_model(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "fake"}


class FakeAnthropicServer(FakeServer):
    """Anthropic's ``POST /v1/messages`` and ``GET /v1/models/{id}``, as :class:`FakeServer` describes.
    ``respond`` sees the request's ``system`` field as a leading system message."""

    def route(self, http: _Exchange, method: str, path: str, body: dict[str, Any]) -> None:
        if method == "POST" and path == "/v1/messages":
            system = [{"role": "system", "content": body["system"]}] if "system" in body else []
            self.chat(http, body, system + body["messages"])
        elif method == "GET" and path.startswith("/v1/models/"):
            model = path.removeprefix("/v1/models/")
            if self.has(model):
                http.send(
                    200, {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z"}
                )
            else:
                http.send(404, self.error_body(f"model: {model}"))
        else:
            super().route(http, method, path, body)

    def error_body(self, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

    def reply_body(self, request: dict[str, Any], text: str, prompt_chars: int) -> dict[str, Any]:
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": request["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_chars, "output_tokens": len(text)},
        }


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections and never answers.

    It holds every connection open without answering, until
    ``close`` or until ``lifetime`` seconds have passed, whichever is first,
    so a test that forgets it cannot hang on it. ``connections`` counts the
    connections accepted, ``hung_up`` those the client closed first (what a
    client's deadline does, seen from the server, with no clock involved).
    """

    def __init__(self, lifetime: float = 30.0) -> None:
        self.connections = 0
        self.hung_up = 0
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
                self._notice_hangups(held)
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

    def _notice_hangups(self, held: list[socket.socket]) -> None:
        """Count (and forget) the connections whose client closed them; what a client sent is read and dropped."""
        if not held:
            return
        readable, _, _ = select.select(held, [], [], 0)
        for conn in readable:
            try:
                closed = conn.recv(65536) == b""
            except OSError:
                closed = True
            if closed:
                held.remove(conn)
                conn.close()
                self.hung_up += 1

    def hangups(self, expected: int, wait: float = 10.0) -> int:
        """``hung_up`` once it reaches ``expected`` or ``wait`` seconds have passed (the server polls)."""
        until = time.monotonic() + wait
        while self.hung_up < expected and time.monotonic() < until and self._thread.is_alive():
            time.sleep(0.02)
        return self.hung_up

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Exchange(BaseHTTPRequestHandler):
    """One request to a fake server: read, routed to ``fake.route``, answered with :meth:`send`."""

    fake: FakeServer

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size)) if size else {}
        path = self.path.split("?", 1)[0]
        self.fake.paths.append(f"{method} {path}")
        if self.fake.authorised(self):
            self.fake.route(self, method, path, body)

    def send(self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(obj).encode(), headers)

    def send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        if self.fake.trickle is not None:
            self._trickle(status, data, *self.fake.trickle)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _trickle(self, status: int, data: bytes, gap: float, headers_too: bool) -> None:
        """The response, one byte every ``gap`` seconds (the head at once unless ``headers_too``)."""
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        self.close_connection = True
        slow = head.encode() + data if headers_too else data
        try:
            if not headers_too:
                self.wfile.write(head.encode())
            for i in range(len(slow)):
                if self.fake.release.wait(gap):
                    return
                self.wfile.write(slow[i : i + 1])
        except OSError:  # the client gave up and closed the connection
            return

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class names it
        pass


def _handler(fake: FakeServer) -> type[_Exchange]:
    return type("Exchange", (_Exchange,), {"fake": fake})


class ScriptedProvider:
    """An in-process provider: ``respond(messages) -> text``; records each call.

    Token counts are whitespace words of the prompt and the reply, so tests
    of accounting have exact numbers to expect.
    """

    name = "scripted"
    context_window = None
    replays = True  # a function of the messages

    def __init__(self, respond: Callable[[Sequence[Message]], str] = echo, model: str = "script") -> None:
        self.respond, self.model = respond, model
        self.calls: list[dict[str, Any]] = []

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m["content"].split()) for m in check_messages(messages))

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 256,
        json_schema: dict[str, Any] | None = None,
    ) -> Reply:
        messages = check_messages(messages)
        self.calls.append({"messages": messages, **options(temperature, seed, max_tokens, json_schema)})
        text = self.respond(messages)
        return Reply(text, self.count_tokens(messages), len(text.split()))
