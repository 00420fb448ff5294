"""A content-addressed response cache in SQLite, so a warm rerun calls no model.

The key is the SHA-256 of the canonical JSON of (provider, model, messages,
options), options being temperature, seed, max_tokens and the JSON schema.
For Ollama and llama.cpp the server host is not part of the key: the same
model answers the same request the same way wherever it runs. A provider
behind an API client (``openai:``, ``anthropic:``) adds its ``endpoint``, the
server's URL without credentials, since one model name may mean different
models on different servers; an API key is never part of a key or a row. The database lives in
``$RCAKIT_LLM_CACHE`` or ``<project>/.cache/llm``; it runs in WAL mode with a
busy timeout, and inserts are ``INSERT OR IGNORE``, so several threads or
processes may write at once without losing or clobbering a row. Each
:class:`ResponseCache` counts its own hits and misses; the database also
keeps running totals over every process that used it, so a command that
runs a chapter in a kernel can read :func:`cache_totals` before and after
and report how many model calls the run made.

Concurrent cases (``rcakit.parallel``) count their own usage: inside
:func:`case_usage`, every chat a :class:`CachedProvider` makes in this thread
is charged to the scope's own :class:`MethodUsage` as well as to the shared
one, so a case returns what it cost and the driver sums the cases, whatever
ran beside them, and on a Dask worker too. A :class:`CachedProvider` pickles
as its backend and its cache folder (the worker opens the same database).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcakit import RcakitError
from rcakit.io import check_entry
from rcakit.llm.accounting import MethodUsage
from rcakit.llm.base import (
    MAX_TOKEN_COUNT,
    Message,
    Provider,
    Reply,
    check_messages,
    check_reply,
    note_output_mode,
    options,
)
from rcakit.parallel import count_call
from rcakit.paths import project_root
from rcakit.progress import warn

FILE_NAME = "responses.sqlite"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, reply TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_BUMP = "INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1"


def default_folder() -> Path:
    """``$RCAKIT_LLM_CACHE`` if set, else ``<project>/.cache/llm``."""
    env = os.environ.get("RCAKIT_LLM_CACHE")
    return Path(env) if env else project_root() / ".cache" / "llm"


def canonical_request(
    provider: str, model: str, messages: Sequence[Message], opts: dict[str, Any], endpoint: str | None = None
) -> str:
    """The request as canonical JSON: sorted keys, no spaces, UTF-8 kept; ``endpoint`` only when given."""
    payload = {"provider": provider, "model": model, "messages": check_messages(messages), "options": opts}
    if endpoint is not None:
        payload["endpoint"] = endpoint
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ResponseCache:
    """Replies keyed by the hash of their request, with hit/miss counters."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(folder or default_folder()) / FILE_NAME
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RcakitError(f"{self.path.parent}: cannot create the LLM cache folder ({exc.strerror})") from None
        for path in (self.path, *(self.path.with_name(self.path.name + end) for end in ("-wal", "-shm", "-journal"))):
            check_entry(path, "LLM cache file")  # sqlite would write through a link planted at any of them
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                con.execute(statement)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            # WAL stays consistent; a cache may lose its last rows on power loss
            con.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise RcakitError(f"{self.path}: cannot open the LLM cache ({exc})") from None
        try:
            yield con
        except sqlite3.DatabaseError as exc:
            raise RcakitError(f"{self.path}: LLM cache error ({exc}); delete the file to start afresh") from None
        finally:
            con.close()

    @staticmethod
    def key(request: str) -> str:
        return hashlib.sha256(request.encode("utf-8")).hexdigest()

    def get(self, request: str) -> Reply | None:
        """The stored reply for ``request``, counting a hit or a miss. A row that is not a reply (a torn, edited
        or poisoned database) is removed with one warning line naming the cache, and counts as a miss, so the
        model is asked again: a bad row is never fatal."""
        key = self.key(request)
        with self._connect() as con:
            row = con.execute("SELECT reply FROM responses WHERE key = ?", (key,)).fetchone()
            reply = None
            if row is not None:
                try:
                    reply = self._reply(row[0])
                except RcakitError as exc:
                    warn(f"{exc}; this row was removed")
                    con.execute("DELETE FROM responses WHERE key = ?", (key,))
            con.execute(_BUMP, ("misses" if reply is None else "hits",))
        with self._count_lock:
            if reply is None:
                self.misses += 1
            else:
                self.hits += 1
        return reply

    def _reply(self, stored: str) -> Reply:
        """A stored reply as a :class:`Reply`; a row that is not one (a torn or edited database) is a
        one-line ``RcakitError`` naming this cache and how to clear it."""
        try:
            fields = json.loads(stored)
            reply = Reply(**fields)
        except (TypeError, ValueError, RecursionError) as exc:  # not text, not JSON, not a dict, wrong fields
            why = type(exc).__name__
        else:
            try:
                return check_reply(
                    reply.text,
                    reply.input_tokens,
                    reply.output_tokens,
                    max_tokens=MAX_TOKEN_COUNT,
                    where="the row",
                    mode=reply.mode,
                )
            except RcakitError:
                why = "a field of the wrong type or out of range"
        raise RcakitError(
            f"{self.path}: a corrupt row in the LLM cache ({why}); clear the cache with "
            f"'rm {shlex.quote(str(self.path))}*' (the next run asks the model again)"
        )

    def put(self, request: str, reply: Reply) -> None:
        """Store ``reply``; a row already there (a concurrent writer's) is kept."""
        with self._connect() as con:
            con.execute(
                "INSERT OR IGNORE INTO responses (key, request, reply) VALUES (?, ?, ?)",
                (self.key(request), request, json.dumps(reply.to_dict(), sort_keys=True)),
            )

    def __len__(self) -> int:
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __reduce__(self) -> tuple[type[ResponseCache], tuple[str]]:
        return ResponseCache, (str(self.path.parent),)

    def counters(self) -> dict[str, Any]:
        """``{"hits": .., "misses": ..}`` since this object was made: run-dependent."""
        return {"hits": self.hits, "misses": self.misses}


def cache_totals(folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Hits and misses ever counted in the cache at ``folder``, by any process.

    Zeros when there is no cache yet (nothing is created). A misses delta of
    zero across a chapter run means the run made no model call.
    """
    path = Path(folder or default_folder()) / FILE_NAME
    totals = {"hits": 0, "misses": 0}
    if path.is_file():
        with ResponseCache(path.parent)._connect() as con:
            totals.update(con.execute("SELECT name, value FROM counters").fetchall())
    return totals


_DEFAULTS: dict[Path, ResponseCache] = {}
_DEFAULTS_LOCK = threading.Lock()


def default_cache() -> ResponseCache:
    """One shared cache per folder in a process, so its counters sum over methods."""
    folder = default_folder().resolve()
    with _DEFAULTS_LOCK:
        if folder not in _DEFAULTS:
            _DEFAULTS[folder] = ResponseCache(folder)
        return _DEFAULTS[folder]


_SCOPES = threading.local()  # this thread's open case_usage scopes, innermost last


@dataclass
class CaseUsage:
    """What each cached provider charged within one :func:`case_usage` scope, in one thread."""

    usage: dict[int, MethodUsage] = field(default_factory=dict)

    def of(self, chat: Provider) -> MethodUsage:
        """The scope's usage of ``chat`` (a :class:`CachedProvider`; zeros if it made no call)."""
        return self.usage.setdefault(id(chat), MethodUsage())

    def totals(self, chat: Provider) -> dict[str, Any]:
        """:meth:`MethodUsage.totals` (cost columns) of ``chat`` within the scope."""
        return self.of(chat).totals()


@contextmanager
def case_usage() -> Iterator[CaseUsage]:
    """A scope (nestable) in which this thread's cached chats are also charged to a :class:`CaseUsage`."""
    stack = _SCOPES.__dict__.setdefault("stack", [])
    scope = CaseUsage()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.remove(scope)


class _Charges:
    """Charges the shared usage and every open scope's; reads as the shared usage."""

    def __init__(self, usages: list[MethodUsage]) -> None:
        self.usages = usages

    def add_call(self, reply: Reply, cache_hit: bool, seconds: float = 0.0) -> None:
        for usage in self.usages:
            usage.add_call(reply, cache_hit, seconds)

    def add_case(self) -> None:
        for usage in self.usages:
            usage.add_case()

    def add_abstention(self) -> None:
        for usage in self.usages:
            usage.add_abstention()

    def totals(self, runtime: bool = False) -> dict[str, Any]:
        return self.usages[0].totals(runtime)


class CachedProvider:
    """A provider whose replies come from the cache when it has them.

    Every chat is charged to ``accounting`` (a :class:`MethodUsage`) with the
    reply's tokens, whether it was a hit or a model call; only misses reach
    the model. So the method's cost reads the same on a cold and a warm run.
    """

    def __init__(self, provider: Provider, cache: ResponseCache, accounting: MethodUsage) -> None:
        self.provider, self.cache, self.shared_usage = provider, cache, accounting
        self.name, self.model = provider.name, provider.model
        self.context_window, self.replays = provider.context_window, provider.replays
        self.endpoint: str | None = getattr(provider, "endpoint", None)

    @property
    def server(self) -> str:
        """The server in the calls tally of ``rcakit.parallel``: a host if the backend (or the provider a
        wrapper such as ``ReplayChannel`` holds) has one."""
        inner: Any = self.provider  # a chain of wrappers, each holding the next in ``provider``
        while getattr(inner, "host", None) is None and hasattr(inner, "provider"):
            inner = inner.provider
        return getattr(inner, "host", None) or f"{self.provider.name} (in process)"

    @property
    def accounting(self) -> MethodUsage | _Charges:
        """The shared usage; inside :func:`case_usage`, a charger of it and of each open scope's usage."""
        scopes = getattr(_SCOPES, "stack", None)
        if not scopes:
            return self.shared_usage
        return _Charges([self.shared_usage] + [scope.of(self) for scope in scopes])

    def __reduce__(self) -> tuple[Callable[[Provider, ResponseCache], CachedProvider], tuple[Provider, ResponseCache]]:
        # a worker gets the backend (rebuilt from its settings) and the cache folder; its usage starts at zero
        return _unpickled, (self.provider, self.cache)

    def __repr__(self) -> str:
        return f"cached({self.provider!r})"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return self.provider.count_tokens(messages)

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
        request = canonical_request(self.name, self.model, messages, opts, self.endpoint)
        reply = self.cache.get(request)
        count_call(self.server, model_call=reply is None)
        usage = self.accounting
        if reply is not None:
            usage.add_call(reply, cache_hit=True)
            note_output_mode(f"{self.name}:{self.model}", reply.mode)
            return reply
        start = time.perf_counter()
        reply = self.provider.chat(
            messages, temperature=temperature, seed=seed, max_tokens=max_tokens, json_schema=json_schema
        )
        reply = check_reply(  # whatever the backend checked: nothing unchecked is kept or charged
            reply.text,
            reply.input_tokens,
            reply.output_tokens,
            max_tokens=max_tokens,
            where=self.server,
            mode=getattr(reply, "mode", None),
        )
        usage.add_call(reply, cache_hit=False, seconds=time.perf_counter() - start)
        note_output_mode(f"{self.name}:{self.model}", reply.mode)
        self.cache.put(request, reply)
        return reply


def _unpickled(provider: Provider, cache: ResponseCache) -> CachedProvider:
    return CachedProvider(provider, cache, MethodUsage())


def cached(provider: Provider, cache: ResponseCache | None = None, accounting: MethodUsage | None = None) -> Provider:
    """``provider`` behind the response cache, charging ``accounting``.

    A falsy provider (``none``) is returned unchanged, so ``if chat:`` still
    tells a chapter whether its LLM-backed methods run.
    """
    if not provider:
        return provider
    cache = cache if cache is not None else default_cache()
    return CachedProvider(provider, cache, accounting if accounting is not None else MethodUsage())
