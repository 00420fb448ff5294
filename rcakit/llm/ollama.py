"""An Ollama server through the official ``ollama`` Python client.

The host comes from the ``host`` argument, else ``$OLLAMA_HOST``, else the
client's default (http://127.0.0.1:11434). Sampling options go to the server
as Ollama's ``seed``, ``temperature``, ``num_predict`` and ``num_ctx``; a JSON
schema goes as ``format``, which makes the server constrain its output to it.
A server that is down, slow past ``timeout`` or answers with an HTTP error
becomes one :class:`rcakit.RcakitError` line naming the host. The timeout
bounds each request's wall time, from the connect to the last byte of the
reply (``rcakit.llm.transport``), so a server that accepts a connection and
never answers, or trickles its reply, fails after ``timeout`` seconds.
:func:`probe_server` asks the server about the model once, before a sweep,
so that these faults surface before any offline work. Token counts
are the server's ``prompt_eval_count`` and ``eval_count``; Ollama may count a
prompt prefix it reused from its own cache as zero, and the response cache
then keeps that first figure for every rerun.

A provider pickles as its settings: the process that unpickles it (a Dask
worker) builds its own client, and, when the host was not given explicitly,
reads ``$OLLAMA_HOST`` from its own environment, so each machine of a cluster
talks to its own model server.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from rcakit import RcakitError
from rcakit.llm.base import Message, Reply, check_messages, check_reply, estimate_tokens, options

if TYPE_CHECKING:
    import ollama

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaProvider:
    """``ollama:MODEL``: one model on one Ollama server."""

    name = "ollama"
    replays = True  # the seed goes to the server as Ollama's ``seed``

    def __init__(self, model: str, host: str | None = None, timeout: float = 120.0, num_ctx: int = 8192) -> None:
        self.model = model
        self.explicit_host = host or None  # None: the host comes from the environment of the process
        self.host = server_host(host)
        self.timeout = float(timeout)
        self.context_window = int(num_ctx)
        self._client = _client(self.host, self.timeout, f"ollama at {self.host}")

    def __reduce__(self) -> tuple[type[OllamaProvider], tuple[str, str | None, float, int]]:
        return OllamaProvider, (self.model, self.explicit_host, self.timeout, self.context_window)

    def __repr__(self) -> str:
        return f"OllamaProvider({self.model!r}, host={self.host!r})"

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 256,
        json_schema: dict[str, Any] | None = None,
    ) -> Reply:
        opts = options(temperature, seed, max_tokens, json_schema)
        sampling = {
            "seed": opts["seed"],
            "temperature": opts["temperature"],
            "num_predict": opts["max_tokens"],
            "num_ctx": self.context_window,
        }
        with self._one_line_errors():
            response = self._client.chat(
                model=self.model, messages=check_messages(messages), format=json_schema, options=sampling, stream=False
            )
        return check_reply(
            response.message.content or "",
            response.prompt_eval_count or 0,
            response.eval_count or 0,
            max_tokens=opts["max_tokens"],
            where=f"ollama at {self.host} (model {self.model})",
        )

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """An over-estimate (the server does not count before it runs).

        Ollama cuts a prompt longer than ``num_ctx`` on the server without an
        error, so callers must keep ``count_tokens + max_tokens`` within
        ``context_window`` themselves."""
        return estimate_tokens(messages)

    def _one_line_errors(self) -> AbstractContextManager[None]:
        return _one_line_errors(f"ollama at {self.host} (model {self.model})", self.timeout)


def server_host(host: str | None = None) -> str:
    """``host``, else ``$OLLAMA_HOST``, else :data:`DEFAULT_HOST`; checked (:func:`check_host`)."""
    if host:
        return check_host(host, "the ollama host")
    return check_host(os.environ.get("OLLAMA_HOST") or DEFAULT_HOST, "OLLAMA_HOST")


def check_host(host: str, what: str) -> str:
    """``host`` if it reads as ``[scheme://]name[:port]`` with a port in 1..65535 and no control character or
    space, else one ``RcakitError`` line naming ``what``. The ollama client parses ``$OLLAMA_HOST`` when it is
    imported, so a bad value is caught here, before any import of it."""
    if any(ch.isspace() or not ch.isprintable() for ch in host):
        raise RcakitError(f"{what}: {host!r} holds a space or a control character; expected host[:port]")
    try:
        parts = urllib.parse.urlsplit(host if "://" in host else f"http://{host}")
        port = parts.port
    except ValueError as exc:
        raise RcakitError(f"{what}: {host!r} is not a usable host ({exc}); expected host[:port]") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise RcakitError(f"{what}: {host!r} is not a usable host; expected http(s)://host[:port]")
    return host


def probe_server(model: str, host: str | None = None, *, timeout: float, param: str = "provider") -> None:
    """One request (``POST /api/show``) within ``timeout`` s: the server answers and has ``model``.

    Raises one :class:`rcakit.RcakitError` line naming ``param`` and the host;
    a model the server does not have is named with the ``ollama pull`` that
    fetches it.
    """
    import pydantic

    try:
        host = server_host(host)
    except RcakitError as exc:
        raise RcakitError(f"{param}: {exc}") from None
    where = f"{param}: ollama at {host}"
    try:
        with _one_line_errors(where, timeout):
            try:
                _client(host, timeout, where).show(model)
            except pydantic.ValidationError:
                pass  # HTTP 200 for the model: its details, which vary by server version, do not matter
    except RcakitError as exc:
        if "HTTP 404" in str(exc):
            raise RcakitError(f"{where}: no model {model!r} on the server (ollama pull {model})") from None
        raise


def _client(host: str, timeout: float, where: str) -> ollama.Client:
    server_host()  # the client parses $OLLAMA_HOST at import: check it first
    try:
        import ollama
    except ImportError:
        raise RcakitError("provider ollama: the ollama client is not installed; pip install 'rcakit[llm]'") from None
    from rcakit.llm.transport import bounded_client  # httpx comes with the ollama client

    try:
        return bounded_client(ollama.Client, timeout, host=host, timeout=timeout)  # a trickling reply times out too
    except ValueError as exc:  # a host the client cannot parse, e.g. a bad port
        raise RcakitError(f"{where}: not a usable host ({_squeeze(exc)})") from None


@contextmanager
def _one_line_errors(where: str, timeout: float) -> Iterator[None]:
    """Turn the client's exceptions into one RcakitError line, chain dropped."""
    try:
        yield
    except RcakitError:
        raise
    except Exception as exc:
        message = _describe(exc, timeout)
        if message is None:
            raise
        raise RcakitError(f"{where}: {message}") from None


def _describe(exc: BaseException, timeout: float) -> str | None:
    import httpx
    import ollama
    import pydantic

    if isinstance(exc, ollama.ResponseError):
        return f"HTTP {exc.status_code}: {_squeeze(exc.error)}"
    if isinstance(exc, httpx.TimeoutException):
        return f"no reply within the {timeout:g} s timeout"
    if isinstance(exc, (ConnectionError, httpx.ConnectError)):
        return "cannot connect (is the server running? set OLLAMA_HOST or the host parameter)"
    if isinstance(exc, httpx.InvalidURL):
        return f"not a usable URL ({_squeeze(exc)})"
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}: {_squeeze(exc)}"
    if isinstance(exc, (ValueError, pydantic.ValidationError)):
        return f"malformed reply from the server ({type(exc).__name__})"
    return None


def _squeeze(text: object) -> str:
    return " ".join(str(text).split())[:200]
