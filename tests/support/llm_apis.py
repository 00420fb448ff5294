"""Shared by the tests of the providers behind an official API client (``openai:``, ``anthropic:``).

:data:`APIS` describes each protocol once (its fake server, its provider class, its environment
variables), so a behaviour both must share is one test run twice. :data:`KEY` is the key planted in
the environment; :func:`leaks` finds it (or any other secret) in files, and :func:`one_line` checks
an error is one line with no chained traceback. :func:`rag_model` answers like a reader that reads
the documents of the synthetic world, and like a judge, for chapter runs with ``agent = llm``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rcakit.llm.anthropic import AnthropicProvider
from rcakit.llm.openai import OpenAIProvider
from rcakit.llm.sdk import ClientProvider
from support.llm_servers import FakeAnthropicServer, FakeOpenAIServer, FakeServer
from support.scripted_reader import oracle

KEY = "sk-rcakit-PLANTED-6f1d0c9b2e7a"
MODEL = "model-under-test"
QUESTION = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Which hop failed?"}]


@dataclass(frozen=True)
class Api:
    """One protocol: its spec kind, fake server, provider class and environment variables."""

    kind: str
    fake: type[FakeServer]
    provider_class: type[ClientProvider]
    key_env: str
    url_env: str

    def url(self, server: FakeServer | str) -> str:
        """The URL its client is given for a server (or a server's URL): the OpenAI client's ends in ``/v1``."""
        base = server if isinstance(server, str) else server.url
        return base + "/v1" if self.kind == "openai" else base

    def provider(self, fake: FakeServer, timeout: float = 2.0, **kwargs: object) -> ClientProvider:
        return self.provider_class(MODEL, self.url(fake), timeout, **kwargs)

    def serve(self, **kwargs: object) -> FakeServer:
        return self.fake(models=[MODEL], **kwargs)

    def environment(self, fake: FakeServer) -> dict[str, str]:
        """The variables that point a chapter's ``provider = KIND:MODEL`` at ``fake``, with the planted key."""
        return {self.key_env: KEY, self.url_env: self.url(fake)}


OPENAI = Api("openai", FakeOpenAIServer, OpenAIProvider, "OPENAI_API_KEY", "OPENAI_BASE_URL")
ANTHROPIC = Api("anthropic", FakeAnthropicServer, AnthropicProvider, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
APIS = {"openai": OPENAI, "anthropic": ANTHROPIC}
ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "RCAKIT_LLM_TIMEOUT")


def one_line(excinfo, *phrases: str) -> str:
    """The error's message, checked: one line, no chained traceback, each phrase in it, no planted key."""
    message = str(excinfo.value)
    assert "\n" not in message and len(message) < 500, message
    for phrase in phrases:
        assert phrase in message, message
    assert KEY not in message, message
    error = excinfo.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    return message


def leaks(folder: Path, *secrets: str) -> list[str]:
    """The files under ``folder`` whose bytes hold any of ``secrets`` (default: the planted key)."""
    wanted = [s.encode() for s in secrets or (KEY,)]
    return [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and any(w in p.read_bytes() for w in wanted)]


def rag_model(world):
    """A judge's verdict for the judge's prompt, else the answer a careful reader finds in the documents."""
    read = oracle(world)

    def respond(messages):
        if "diagnose" in messages[0]["content"]:
            return json.dumps({"stage": "retrieval", "hop": 1})
        return read(messages)

    return respond


def run_chapter(chapter_id: str, folder: Path, env: dict[str, str], *params: str) -> subprocess.CompletedProcess:
    """``rcakit run CHAPTER --quick -p ...`` with its book, results and LLM cache in ``folder``."""
    environ = {
        **{k: v for k, v in os.environ.items() if k not in ENVIRONMENT},
        "RCAKIT_BOOK_DIR": str(folder / "book"),
        "RCAKIT_RESULTS_DIR": str(folder / "results"),
        "RCAKIT_LLM_CACHE": str(folder / "llm-cache"),
        "RCAKIT_PROGRESS": "0",
        **env,
    }
    args = [sys.executable, "-m", "rcakit", "run", chapter_id, "--quick"]
    pairs = [["-p", name, value] for name, value in zip(params[::2], params[1::2], strict=True)]
    return subprocess.run(args + sum(pairs, []), env=environ, capture_output=True, text=True, timeout=1800)


def cache_lines(chapter_id: str, folder: Path, env: dict[str, str], *params: str, runs: int = 2) -> list[str]:
    """``runs`` runs of a chapter into ``folder`` (each must pass and leak no key): the "LLM cache" line of each."""
    lines = []
    for _ in range(runs):
        proc = run_chapter(chapter_id, folder, env, *params)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert KEY not in proc.stderr + proc.stdout
        lines.append(next(line for line in proc.stderr.splitlines() if line.startswith("LLM cache: ")))
    return lines
