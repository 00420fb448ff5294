"""What the OpenAI-compatible and the Anthropic providers share.

The two official clients (``openai`` and ``anthropic``) are generated from one
template: the same exceptions, the same retry loop, the same ``httpx``-style
transport. Both providers (:mod:`rcakit.llm.openai`, :mod:`rcakit.llm.anthropic`)
take from here:

- the server's URL, checked (``http`` or ``https`` with a host), and its
  :func:`endpoint`, the URL without any ``user:password``, which names the
  server in errors and in the calls tally and is part of the response cache's
  key;
- the API key, read from the environment by :func:`api_key` (a placeholder
  when none is set, since local servers take any key and the clients refuse
  none); it lives only in the client, never in a provider's pickle, and
  :func:`one_line_errors` removes it (and a URL's password) from every error
  text, since a hostile server may echo the ``Authorization`` header back;
- a deadline on each request's wall time, ``timeout`` seconds from its
  connect to the last byte of its reply (:func:`http_client`, through
  ``rcakit.llm.transport``), so a trickling server times out like a silent one;
- a bounded retry: the client's own ``max_retries`` (:data:`MAX_RETRIES`) on
  HTTP 408, 409, 429 and 5xx, on timeouts and on dropped connections, each
  retry after the server's ``Retry-After`` or else an exponential backoff of
  at most 8 s. A ``Retry-After`` longer than :data:`MAX_RETRY_AFTER` seconds
  is not waited for (:func:`http_client` turns it into the clients' own
  ``x-should-retry: false``): the call fails at once, in one line. So one
  call waits at most ``(MAX_RETRIES + 1) * timeout + MAX_RETRIES *
  MAX_RETRY_AFTER`` seconds (``longest_wait``; 660 s at the default
  120 s timeout);
- :class:`Refusable`, the request fields a server may refuse (Anthropic's
  ``temperature``): an HTTP 400 naming one drops it, for that provider from
  then on, and the request is sent once more (OpenAI's ``response_format`` is
  negotiated in steps, :mod:`rcakit.llm.openai`).

Used in the chapters: `car-shapley`, `gcjr-ablations`, `coverage-collapse`,
`content-corruption`, `longrca-strata` (through their ``provider`` parameters).
"""

from __future__ import annotations

import base64
import email.utils
import importlib
import math
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from rcakit import RcakitError
from rcakit.llm.base import Message, Reply, check_messages, check_reply, estimate_tokens, options

MAX_RETRIES = 3
MAX_RETRY_AFTER = 60.0  # seconds: a server asking for a longer wait is not waited for
NO_KEY = "rcakit-no-key"  # sent when no key is set: a local server takes any key, the clients refuse none
REDACTED = "[redacted]"
REFUSED_STATUS = (400, 422)  # how servers refuse a request field they do not take
RETRIED_STATUS = (408, 409, 429)  # and 5xx: what both clients retry
_USERINFO = re.compile(r"(?<=//)[^/?#@\s]*@")
T = TypeVar("T")


def longest_wait(timeout: float) -> float:
    """The longest one call can take, retries included, with each network wait bounded by ``timeout``."""
    return (MAX_RETRIES + 1) * timeout + MAX_RETRIES * MAX_RETRY_AFTER


def endpoint(url: str) -> str:
    """``url`` without ``user:password@`` and without a trailing ``/``: the server's name in errors and cache keys."""
    return _USERINFO.sub("", url).rstrip("/")


def url_secrets(url: str) -> tuple[str, ...]:
    """The user name and password in ``url``'s ``user:password@`` part (either may be a token), and the
    ``Basic`` credentials the HTTP client makes of them (which a server may quote back), if any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    if not (user or password):
        return ()
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    return tuple(x for x in (parts.username, parts.password, user, password, basic) if x)


def check_url(url: object, param: str) -> str:
    """``url`` stripped, if it is an ``http(s)`` URL with a host and a usable port; else one line naming
    ``param`` and showing the URL without its credentials."""
    if not isinstance(url, str):
        raise RcakitError(f"{param}: expected a URL string, got {type(url).__name__}")
    text = url.strip()
    shown = _short(endpoint(text))
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (raises ValueError for a port out of range or not a number)
    except ValueError as exc:
        raise RcakitError(f"{param}: {shown} is not a usable URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not text.isprintable():
        raise RcakitError(f"{param}: {shown} is not an http:// or https:// URL with a host")
    return text


def server_url(url: str | None, env: str, default: str, param: str) -> str:
    """``url`` (checked against ``param``), else ``$env`` (checked against ``env``), else ``default``."""
    if url:
        return check_url(url, param)
    raw = os.environ.get(env, "").strip()
    return check_url(raw, env) if raw else default


def api_key(env: str) -> str:
    """``$env``, else :data:`NO_KEY`."""
    return os.environ.get(env, "").strip() or NO_KEY


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret in ``secrets`` replaced by :data:`REDACTED`."""
    for secret in secrets:
        if secret and secret != NO_KEY:
            text = text.replace(secret, REDACTED)
    return text


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a response asks the client to wait (``retry-after-ms``, else ``retry-after`` in seconds or as
    an HTTP date), else ``None``."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) else math.inf
    value = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(value) if value else None
    return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _refuse_long_waits(response: Any) -> None:
    """A response hook: a ``Retry-After`` past :data:`MAX_RETRY_AFTER` becomes ``x-should-retry: false``,
    which both clients obey by giving up instead of sleeping; so does a 5xx whose body names
    ``response_format`` (a server that cannot take the structured output asked for, such as
    llama-cpp-python's, answers HTTP 500: asking again is futile, asking otherwise is not)."""
    wait = retry_after(response.headers)
    if wait is not None and wait > MAX_RETRY_AFTER:
        response.headers["x-should-retry"] = "false"
    elif response.status_code >= 500 and b"response_format" in response.read()[:REFUSAL_BYTES]:
        response.headers["x-should-retry"] = "false"


REFUSAL_BYTES = 65536  # of an error body searched for the name of the field it refuses


def http_client(sdk: ModuleType, seconds: float) -> Any:
    """The client module's own default HTTP client, with the hook that bounds ``Retry-After``, each request
    taking at most ``seconds`` of wall time however slowly the server sends (``rcakit.llm.transport``)."""
    from rcakit.llm.transport import bounded_client  # httpx comes with the client libraries

    return bounded_client(sdk.DefaultHttpxClient, seconds, event_hooks={"response": [_refuse_long_waits]})


@dataclass
class Refusable:
    """Request fields a server may refuse, each with the words its refusal names (OpenAI-compatible servers
    without some feature reject its field). Refused fields are left out from then on."""

    words: Mapping[str, tuple[str, ...]]
    refused: set[str] = field(default_factory=set)

    def send(self, call: Callable[[dict[str, Any]], T], fields: Mapping[str, Any], sdk: ModuleType) -> T:
        """``call(fields)`` without the refused fields; on HTTP 400 naming a field, that field is refused and
        the call made once more without it."""
        wanted = {k: v for k, v in fields.items() if k not in self.refused}
        try:
            return call(wanted)
        except sdk.APIStatusError as exc:
            text = error_text(exc).lower()
            named = {k for k in wanted if exc.status_code in REFUSED_STATUS and _names(text, self.words.get(k, ()))}
            if not named:
                raise
            self.refused |= named
            return call({k: v for k, v in wanted.items() if k not in named})


def _names(text: str, words: Iterable[str]) -> bool:
    return any(word in text for word in words)


def error_text(exc: Any) -> str:
    """The server's own error message in an ``APIStatusError``: ``error.message`` of a JSON body, else the body."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        body = inner.get("message", inner) if isinstance(inner, dict) else inner
    text = body if isinstance(body, str) else str(body if body is not None else getattr(exc, "message", ""))
    return text


@contextmanager
def one_line_errors(
    sdk: ModuleType, where: str, timeout: float, *, secrets: Iterable[str], key_env: str, tries: int
) -> Iterator[None]:
    """The client's exceptions as one :class:`RcakitError` line starting ``where``, secrets redacted, chain
    dropped; ``key_env`` is named when the server refuses the key, ``tries`` (attempts made) when it never
    answered."""
    hidden = tuple(secrets)
    try:
        yield
    except RcakitError as exc:
        raise RcakitError(redact(str(exc), hidden)) from None
    except Exception as exc:
        message = _describe(sdk, exc, timeout, key_env, tries)
        if message is None:
            raise
        raise RcakitError(f"{where}: {_squeeze(redact(message, hidden))}") from None


def _describe(sdk: ModuleType, exc: Exception, timeout: float, key_env: str, tries: int) -> str | None:
    if isinstance(exc, sdk.APIStatusError):
        status: Any = exc  # the client module is loaded by name, so its exception types are not known statically
        code = status.status_code
        message = f"HTTP {code}: {error_text(exc)}"
        if code in (401, 403):
            message += f" (is {key_env} set to a key this server takes?)"
        wait = retry_after(status.response.headers)
        if wait is not None and wait > MAX_RETRY_AFTER:
            message += f" (the server asks to wait {wait:.0f} s, longer than the {MAX_RETRY_AFTER:g} s rcakit waits)"
        elif tries > 1 and (code in RETRIED_STATUS or code >= 500):
            message += f" ({tries} tries)"
        return message
    if isinstance(exc, sdk.APITimeoutError):
        return f"no reply within the {timeout:g} s timeout" + (f" ({tries} tries)" if tries > 1 else "")
    if isinstance(exc, sdk.APIConnectionError) and type(exc.__cause__).__name__ == "TooManyRedirects":
        return "the server redirects the request in a loop (too many redirects)" + (
            f" ({tries} tries)" if tries > 1 else ""
        )
    if isinstance(exc, sdk.APIConnectionError):
        return "cannot connect (is the server running at this URL?)" + (f" ({tries} tries)" if tries > 1 else "")
    if isinstance(exc, RecursionError):  # JSON nested deeper than the parser goes
        return "malformed reply from the server (JSON nested too deeply to read)"
    if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):
        return f"malformed reply from the server ({type(exc).__name__})"
    if isinstance(exc, sdk.APIError):
        return f"{type(exc).__name__}: {exc}"
    return None


def _squeeze(text: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters (cut after redaction, so no part of a secret survives)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}..."


def _short(text: str, limit: int = 120) -> str:
    text = text if text.isprintable() else repr(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class ClientProvider(ABC):
    """A provider behind one of the official clients; a subclass names the client and maps one request.

    Class settings: ``name`` (the spec's kind), ``sdk`` and ``client_class`` (the client's module and
    class names), ``key_env`` and
    ``url_env`` (the environment variables of the key and the URL), ``default_url``, ``url_param`` (what
    an explicit ``base_url`` is called in errors) and ``refusable`` (:class:`Refusable`'s words). The
    provider pickles as its settings: the process that unpickles it reads the key, and the URL unless it
    was given, from its own environment. Token counts are :func:`rcakit.llm.base.estimate_tokens`'s
    over-estimate (the APIs count only by a request of their own); ``context_window`` is ``None``.
    """

    name = "api"
    sdk = client_class = ""
    key_env = url_env = default_url = url_param = ""
    refusable: Mapping[str, tuple[str, ...]] = {}
    replays = False
    context_window = None

    def __init__(
        self, model: str, base_url: str | None = None, timeout: float = 120.0, max_retries: int = MAX_RETRIES
    ) -> None:
        self.model = model
        self.explicit_base_url = base_url or None  # None: from the environment of the process
        url = server_url(base_url, self.url_env, self.default_url, self.url_param)
        self.endpoint = self.host = endpoint(url)
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        key = api_key(self.key_env)
        self._secrets = (key, *url_secrets(url))
        self._module = self._load()
        self._refusable = Refusable(self.refusable)
        self._client = self._module_client(url, key)

    def __reduce__(self) -> tuple[type[ClientProvider], tuple[str, str | None, float, int]]:
        return type(self), (self.model, self.explicit_base_url, self.timeout, self.max_retries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, endpoint={self.endpoint!r})"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return estimate_tokens(messages)

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
        turns = check_messages(messages)
        where = f"{self.name} at {self.endpoint} (model {self.model})"
        with self.errors(where):
            response, mode = self._send(turns, opts)
            text, input_tokens, output_tokens = self._read(response)
        return check_reply(text, input_tokens, output_tokens, max_tokens=opts["max_tokens"], where=where, mode=mode)

    def _send(self, turns: list[dict[str, Any]], opts: dict[str, Any]) -> tuple[Any, str | None]:
        """The response to one request, the refusable fields dropped as the server refuses them, and the
        structured-output mode it was asked in (``None``: this provider does not negotiate one)."""
        send = self._refusable.send(lambda extra: self._create(turns, opts, extra), self._optional(opts), self._module)
        return send, None

    @classmethod
    def probe(cls, model: str, base_url: str | None, timeout: float, param: str) -> None:
        """:meth:`check_model` of a provider that makes no retry: one request within ``timeout`` seconds."""
        cls(model, base_url, timeout, max_retries=0).check_model(param)

    def check_model(self, param: str) -> None:
        """One request about the model (no retry): the server answers, takes the key and has the model."""
        where = f"{param}: {self.name} at {self.endpoint}"
        with self.errors(where):  # inside, so that what the server said is redacted too
            missing = self._missing_model()
            if missing is not None:
                raise RcakitError(_squeeze(f"{where}: no model {self.model!r} on the server{missing}"))

    def errors(self, where: str) -> AbstractContextManager[None]:
        """:func:`one_line_errors` for this provider's client, key and retries."""
        return one_line_errors(
            self._module, where, self.timeout, secrets=self._secrets, key_env=self.key_env, tries=self.max_retries + 1
        )

    def _load(self) -> ModuleType:
        try:
            return importlib.import_module(self.sdk)
        except ImportError:
            raise RcakitError(
                f"provider {self.name}: the {self.sdk} client is not installed; pip install 'rcakit[llm]'"
            ) from None

    def _module_client(self, url: str, key: str) -> Any:
        """The client object (the module's :attr:`client_class`), bounded by :attr:`timeout` and
        :attr:`max_retries`, with :func:`http_client`."""
        return getattr(self._module, self.client_class)(
            api_key=key,
            base_url=url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client(self._module, self.timeout),
        )

    @abstractmethod
    def _optional(self, opts: dict[str, Any]) -> dict[str, Any]:
        """The request fields the server may refuse (:attr:`refusable`), for these options."""

    @abstractmethod
    def _create(self, turns: list[dict[str, Any]], opts: dict[str, Any], extra: dict[str, Any]) -> Any:
        """One request of checked messages and options, with the optional fields ``extra`` still sent."""

    @abstractmethod
    def _read(self, response: Any) -> tuple[object, object, object]:
        """(text, input tokens, output tokens) as the response holds them, unchecked."""

    @abstractmethod
    def _missing_model(self) -> str | None:
        """``None`` when the server has the model, else a hint for the error (``""`` for none)."""
