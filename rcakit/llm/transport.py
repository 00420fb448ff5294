"""A wall-clock deadline on each request to a model server, headers and body included.

``httpx``'s timeouts bound each network operation: a connect, a write, the gap
between two reads. A server that trickles its reply (one byte a second) never
trips them, so a call with ``timeout=3`` could take minutes.
:func:`bounded_client` builds the ``httpx.Client`` that every HTTP provider
(:mod:`rcakit.llm.ollama`, and the OpenAI-compatible and Anthropic clients of
:mod:`rcakit.llm.sdk`) sends through, in which one request, from the connect to
the last byte of the body, takes at most ``seconds`` of wall time:

- a transport that starts the clock when a request is sent and keeps it
  running while the client reads the body;
- its connection pool's network backend, which gives every connect, TLS
  handshake, write and read only the time left, and once none is left raises
  httpcore's own timeout, which ``httpx`` turns into ``httpx.ReadTimeout``
  (or ``ConnectTimeout``, ``WriteTimeout``).

There are two HTTP stacks in one environment: ``ollama`` sends through
``httpx`` and ``httpcore``, the official OpenAI and Anthropic clients through
their fork ``httpx2`` and ``httpcore2``. The classes are built for the stack
the client's class derives from (:func:`stack_of`), once per stack.

So a trickling server is seen by the providers as a timeout, like a silent
one: the same one-line error, and the same bounded retries of the official
clients (``rcakit.llm.sdk.longest_wait``). Connections through a proxy from
the environment (``HTTPS_PROXY``) are bounded the same way.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")
CORE_OF = {"httpx": "httpcore", "httpx2": "httpcore2"}  # an httpx-style package and the httpcore it sends through
_DEADLINE: ContextVar[float | None] = ContextVar("rcakit_request_deadline", default=None)


def stack_of(make: object) -> str:
    """The HTTP package (``httpx`` or ``httpx2``) whose ``Client`` the class ``make`` derives from; ``httpx``
    for a client that wraps one (``ollama.Client``)."""
    for base in getattr(make, "__mro__", ()):
        root = base.__module__.partition(".")[0]
        if base.__name__ == "Client" and root in CORE_OF:
            return root
    return "httpx"


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before this request's deadline; ``late`` once none is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the server's reply did not arrive in full before the request's deadline")
    return left if timeout is None else min(timeout, left)


@functools.cache
def _bounded_classes(stack: str) -> tuple[type, type]:
    """``(Backend, Transport)`` for the stack ``httpx`` or ``httpx2`` (see the module's docstring)."""
    http: ModuleType = importlib.import_module(stack)
    core: ModuleType = importlib.import_module(CORE_OF[stack])

    class Stream(core.NetworkStream):
        """A connection whose every read, write and TLS handshake gets at most the time left."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _left(timeout, core.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _left(timeout, core.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, core.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(core.NetworkBackend):
        """httpcore's network backend, its connects and streams cut to the request's deadline."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            wait = _left(timeout, core.ConnectTimeout)
            return Stream(self._inner.connect_tcp(host, port, wait, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> Any:
            return Stream(self._inner.connect_unix_socket(path, _left(timeout, core.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    class Body(http.SyncByteStream):
        """A response body read under its request's deadline (the client reads it after the transport returns)."""

        def __init__(self, inner: Any, deadline: float) -> None:
            self._inner, self._deadline = inner, deadline

        def __iter__(self) -> Iterator[bytes]:
            chunks = iter(self._inner)
            while True:
                token = _DEADLINE.set(self._deadline)
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                finally:
                    _DEADLINE.reset(token)
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class Transport(http.BaseTransport):
        """``inner`` (the stack's ``HTTPTransport``), each request bounded to ``seconds`` of wall time in all."""

        def __init__(self, inner: Any, seconds: float) -> None:
            pool = getattr(inner, "_pool", None)  # httpx keeps its httpcore pool here
            if not isinstance(getattr(pool, "_network_backend", None), core.NetworkBackend):
                raise TypeError(f"{stack} {http.__version__}: its transport no longer shows the pool's network backend")
            if not isinstance(pool._network_backend, Backend):  # pyright: ignore[reportOptionalMemberAccess]
                pool._network_backend = Backend(pool._network_backend)  # pyright: ignore[reportOptionalMemberAccess]
            self._inner, self.seconds = inner, float(seconds)

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + self.seconds
            token = _DEADLINE.set(deadline)
            try:
                response = self._inner.handle_request(request)
            finally:
                _DEADLINE.reset(token)
            return http.Response(
                response.status_code,
                headers=response.headers,
                stream=Body(response.stream, deadline),
                extensions=response.extensions,
                request=request,
            )

        def close(self) -> None:
            self._inner.close()

    return Backend, Transport


def bounded_transport(seconds: float, stack: str = "httpx", inner: Any = None) -> Any:
    """A transport of ``stack`` (``inner``, else a new ``HTTPTransport``) whose every request takes at most
    ``seconds`` from its connect to the last byte of its body."""
    transport = _bounded_classes(stack)[1]
    return transport(inner if inner is not None else importlib.import_module(stack).HTTPTransport(), seconds)


def bounded_client(make: Callable[..., T], seconds: float, **kwargs: Any) -> T:
    """``make(**kwargs)``, a client whose every request, proxied ones included, takes at most ``seconds``
    from its connect to the last byte of its body.

    ``make`` is ``httpx.Client``, a client library's subclass of an httpx-style ``Client`` (the official
    clients' ``DefaultHttpxClient``) or a client that keeps its ``httpx.Client`` as ``_client``
    (``ollama.Client``). The client is built as ``make`` builds it, its proxies from the environment
    included (a ``transport`` argument would turn them off), and then each of its transports is bounded.
    """
    stack = stack_of(make)
    http = importlib.import_module(stack)
    client = make(**kwargs)
    inner: Any = client if isinstance(client, http.Client) else getattr(client, "_client", None)
    if not isinstance(inner, http.Client) or not isinstance(getattr(inner, "_transport", None), http.HTTPTransport):
        raise TypeError(f"{make!r} did not build an {stack} client: its requests cannot be bounded")
    inner._transport = bounded_transport(seconds, stack, inner._transport)
    mounts = inner._mounts  # the environment's proxies (HTTPS_PROXY and the like), each its own transport
    for pattern, transport in list(mounts.items()):
        if isinstance(transport, http.HTTPTransport):
            mounts[pattern] = bounded_transport(seconds, stack, transport)
    return client


__all__ = ["bounded_client", "bounded_transport", "stack_of"]
