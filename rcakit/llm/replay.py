"""A provider seen under its own cache name, for replays (CAR §3).

A cached model would answer a replay from the cache, so a replay's
action-match rate would be 1 whatever the model does. :class:`ReplayChannel`
gives the replay its own cache name (``<name>+replay``): the replay asks the
model again once, and a rerun reads the replay's own answer back.

Used in the chapters: `car-shapley`, `coverage-collapse`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rcakit.llm.base import Message, Provider, Reply


class ReplayChannel:
    """A provider seen under its own cache name (``<name>+replay``), the request unchanged.

    Behind :func:`rcakit.llm.cached` a replay then reaches the model instead
    of reading the recorded run's reply, and is itself cached for a rerun.
    """

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.name = f"{provider.name}+replay"
        self.model = provider.model
        self.context_window, self.replays = provider.context_window, provider.replays
        self.endpoint: str | None = getattr(provider, "endpoint", None)

    def __repr__(self) -> str:
        return f"ReplayChannel({self.provider!r})"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return self.provider.count_tokens(messages)

    def chat(self, messages: Sequence[Message], **options: Any) -> Reply:
        return self.provider.chat(messages, **options)
