"""The one interface every language-model backend implements.

A provider turns a list of chat messages into a :class:`Reply`. Everything
else in :mod:`rcakit.llm` (cache, accounting, JSON handling) wraps a provider
and is itself a provider, so an LLM-backed method takes one object with one
method, ``chat``, whatever sits behind it.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NoReturn, Protocol, runtime_checkable

from rcakit import RcakitError

Message = Mapping[str, str]
ROLES = ("system", "user", "assistant")
SPECS = "none, ollama:MODEL, openai:MODEL, anthropic:MODEL, llamacpp:PATH.gguf or llamacpp:smollm2"
REPLY_CHARS_PER_TOKEN = (
    256  # generous: a BPE token is rarely over 32 characters; a longer reply is not max_tokens tokens
)


class ContextOverflow(RcakitError):
    """The prompt does not fit the model's context window.

    Raised, never silently truncated, so a caller that handles long inputs
    (segmenting a trajectory, say) can catch it and report what it did.
    """


@dataclass(frozen=True)
class Reply:
    """A model's answer and what it cost, in the model's own tokens."""

    text: str
    input_tokens: int
    output_tokens: int
    mode: str | None = None  # the structured output the server was asked for (OUTPUT_MODES); None: not negotiated

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


OUTPUT_MODES = ("json_schema", "json_object", "text")  # best first: how a server is asked for a JSON reply
_MODES_USED: dict[str, set[str]] = {}  # "provider:model" -> the output modes its replies came in, this process
_MODES_USED_LOCK = threading.Lock()


def note_output_mode(provider: str, mode: str | None) -> None:
    """That a reply of ``provider`` (``name:model``) came in ``mode`` (nothing for ``None``); read back by
    :func:`output_modes`, which ``rcakit.results.record`` writes as ``llm_output_modes``."""
    if mode is not None:
        with _MODES_USED_LOCK:
            _MODES_USED.setdefault(provider, set()).add(mode)


def output_modes() -> dict[str, list[str]]:
    """Each provider's output modes so far in this process, sorted (the same on a warm rerun: cached replies
    carry their mode)."""
    with _MODES_USED_LOCK:
        return {name: sorted(modes) for name, modes in sorted(_MODES_USED.items())}


@runtime_checkable
class Provider(Protocol):
    """A chat backend: ``name`` and ``model`` identify it in the cache key.

    ``context_window`` is the number of tokens prompt plus reply may span,
    or ``None`` when the backend does not say; ``count_tokens`` sizes a
    prompt against it (exact or a stated over-estimate, per backend), so a
    caller can segment a long input before it is cut. ``replays`` says
    whether the same seeded request is expected to get the same reply (the
    backend takes the seed: Ollama, llama.cpp, OpenAI-compatible servers; not
    Anthropic's API), an expectation that CAR §3's replay action-match rate
    measures rather than assumes. A backend behind a server may also carry
    ``endpoint``, the server's URL without credentials, which the response
    cache adds to its key.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def context_window(self) -> int | None: ...

    @property
    def replays(self) -> bool: ...

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 256,
        json_schema: dict[str, Any] | None = None,
    ) -> Reply: ...

    def count_tokens(self, messages: Sequence[Message]) -> int: ...


CHARS_PER_TOKEN = 3  # English BPE averages about 4 characters a token; 3 over-counts on purpose
TOKENS_PER_MESSAGE = 8  # role markers of a chat template


def request_seed(seed: int, key: str) -> int:
    """A model's sampling seed for one request, from the chapter seed and a stable key
    (a case or trajectory id, never Python's ``hash``): the same request gets the
    same seed, hence the same cache key, whatever the order of the cases."""
    return (int(seed) * 1_000_003 + zlib.crc32(key.encode("utf-8"))) % 2**31


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A deliberate over-estimate of a prompt's tokens, for backends that
    cannot count (Ollama): ``ceil(chars / 3) + 8`` per message."""
    return sum(-(-len(m["content"]) // CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE for m in check_messages(messages))


MAX_TOKEN_COUNT = 10**9  # no single call reads or writes more tokens; a larger count is a broken or hostile server


def check_reply(
    text: object, input_tokens: object, output_tokens: object, *, max_tokens: int, where: str, mode: object = None
) -> Reply:
    """A server's answer as a :class:`Reply`, checked before anything keeps it.

    ``text`` must be a string that encodes as UTF-8 (the cache hashes it) of at
    most ``REPLY_CHARS_PER_TOKEN * max_tokens`` characters, each token count an
    int in 0..``MAX_TOKEN_COUNT``, ``mode`` None or one of :data:`OUTPUT_MODES`; anything else is one
    :class:`RcakitError` line naming ``where`` (the server).
    """
    limit = REPLY_CHARS_PER_TOKEN * int(max_tokens)
    counts = [
        t
        for t in (input_tokens, output_tokens)
        if isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= MAX_TOKEN_COUNT
    ]
    if not isinstance(text, str):
        why = f"the reply text is {type(text).__name__}, not a string"
    elif len(text) > limit:
        why = f"a reply of {len(text)} characters, more than {max_tokens} tokens can hold"
    elif len(counts) != 2:
        why = f"token counts that are not integers in 0..{MAX_TOKEN_COUNT:,}"
    elif not _encodes(text):
        why = "text that is not valid Unicode"
    elif mode is not None and not (type(mode) is str and mode in OUTPUT_MODES):
        why = "an output mode that is not one of " + ", ".join(OUTPUT_MODES)
    else:
        return Reply(text, counts[0], counts[1], mode)
    raise RcakitError(f"{where}: malformed reply from the server ({why})")


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON can carry
        return False
    return True


def check_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Plain-dict copy of ``messages``; a malformed one is a one-line error."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise RcakitError("messages: expected a non-empty list of {role, content} dicts")
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or set(msg) != {"role", "content"}:
            raise RcakitError(f"messages[{i}]: expected exactly the keys role and content")
        if msg["role"] not in ROLES:
            raise RcakitError(f"messages[{i}].role: {msg['role']!r} is not one of {', '.join(ROLES)}")
        if not isinstance(msg["content"], str):
            raise RcakitError(f"messages[{i}].content: expected a string")
        out.append({"role": msg["role"], "content": msg["content"]})
    return out


def options(temperature: float, seed: int, max_tokens: int, json_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The sampling options as one canonical dict (also part of the cache key)."""
    if not 0.0 <= float(temperature) <= 2.0:
        raise RcakitError(f"temperature: {temperature} is outside [0, 2]")
    if int(max_tokens) < 1:
        raise RcakitError(f"max_tokens: {max_tokens} must be at least 1")
    return {
        "temperature": float(temperature),
        "seed": int(seed),
        "max_tokens": int(max_tokens),
        "json_schema": json_schema,
    }


class NullProvider:
    """The ``none`` provider: falsy, and any chat with it is a clear error.

    Chapters test ``if provider:`` to decide whether the LLM-backed methods
    run; calling one anyway names the parameter to set.
    """

    name = "none"
    model = ""
    context_window = None
    replays = False

    def __init__(self, param: str = "provider") -> None:
        self.param = param

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NullProvider()"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        self._refuse()

    def chat(self, messages: Sequence[Message], **_options: object) -> Reply:
        self._refuse()

    def _refuse(self) -> NoReturn:
        raise RcakitError(
            f"{self.param}: none is set, so no language model is available; use {SPECS.removeprefix('none, ')}"
        )
