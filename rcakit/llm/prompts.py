"""Prompt budgeting: clip a text with a marker, and fit a prompt to a model's context window.

A prompt is built from :class:`Block` s, runs of ``(label, text)`` items shown
together (the steps of a log, the documents of a hop). What does not fit is
cut on purpose and marked in the prompt, by one strategy (``Budget.fit``):

1. every item's text is clipped to the largest common length that fits
   (:func:`clip`, marker ``…[N more characters cut]``);
2. if even :data:`MIN_CHARS` characters per item do not fit, each block shows
   only its largest common number of items, from the block's ``keep`` end,
   and a marker line says which were left out;
3. if the question without any item does not fit, :class:`PromptTooLong`.

The budget (:class:`Budget`) is the smaller of an optional prompt cap and the
provider's ``context_window`` less room for the reply and for the single
retry of :func:`rcakit.llm.ask_json`.

Used in the chapters: `longrca-strata`, `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rcakit import RcakitError
from rcakit.llm.base import Message, Provider

MIN_CHARS = 24  # shortest clipped text before items are left out
MAX_TOKEN_CHARS = 16  # a generous bound on characters per token, to skip hopeless prompt sizes
RETRY_TOKENS = 96  # the retry's error message, with room to spare
CUT_MARKER = " …[{} more characters cut]"


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, followed by a marker naming how many were cut.

    ``limit=None`` keeps the whole text. A text was cut exactly when
    :func:`is_clipped` says so.
    """
    if limit is None or not is_clipped(text, limit):
        return text
    return text[:limit] + CUT_MARKER.format(len(text) - limit)


def is_clipped(text: str, limit: int | None) -> bool:
    """Whether :func:`clip` cuts ``text`` at ``limit``."""
    return limit is not None and len(text) > limit


@dataclass(frozen=True)
class Block:
    """Consecutive items (``(label, text)``) shown together; ``keep`` is the end kept when items must go."""

    items: tuple[Any, ...]
    keep: str = "head"

    def __post_init__(self) -> None:
        if self.keep not in ("head", "tail"):
            raise RcakitError(f"Block: keep: must be 'head' or 'tail', got {self.keep!r}")

    def clipped(self, limit: int | None) -> int:
        """How many of the items' texts :func:`clip` cuts at ``limit``."""
        return sum(is_clipped(text, limit) for _, text in self.items)


def render(block: Block, cap: int | None, shown: int | None) -> str:
    """One block as ``label: text`` lines, texts clipped to ``cap``, at most ``shown`` items.

    The items left out are replaced by one marker line on their side, naming
    the first word of the first and last left-out labels.
    """
    items = block.items
    if shown is None or shown >= len(items):
        kept, omitted = items, ()
    elif block.keep == "head":
        kept, omitted = items[:shown], items[shown:]
    else:
        kept, omitted = items[len(items) - shown :], items[: len(items) - shown]
    lines = [f"{label}: {clip(text, cap)}" for label, text in kept]
    if omitted:
        span = f"{omitted[0][0].split()[0]} to {omitted[-1][0].split()[0]}"
        marker = f"[{len(omitted)} items ({span}) not shown: the prompt budget is full]"
        lines = lines + [marker] if block.keep == "head" else [marker] + lines
    return "\n".join(lines)


def largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """The largest ``v`` in ``lo..hi`` with ``ok(v)``, by bisection (``ok`` true up to a point, then false).

    ``None`` when ``ok(lo)`` is false.
    """
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def chat_messages(system: str, text: str) -> list[dict[str, Any]]:
    """A system prompt and one user message."""
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


class PromptTooLong(RcakitError):
    """Even with every item cut, the question does not fit the prompt budget."""


@dataclass(frozen=True)
class Fitted:
    """A prompt fitted by ``Budget.fit``: the messages, the common clip length
    (``None``: nothing clipped) and the items shown per block (``None``: all)."""

    messages: list[Any]
    cap: int | None = None
    shown: int | None = None

    @property
    def cut(self) -> bool:
        """Whether anything was clipped or left out."""
        return self.cap is not None or self.shown is not None

    def clipped(self, blocks: Sequence[Block]) -> int:
        """How many items of ``blocks`` lost characters (items left out whole not counted)."""
        return sum(b.clipped(self.cap) for b in blocks)


class Budget:
    """How many prompt tokens a call may use: the smaller of ``prompt_tokens`` and the window
    less room for the reply and for :func:`~rcakit.llm.ask_json`'s retry (which adds the first
    reply and a short error message to the prompt). ``limit`` is ``None`` when neither is known."""

    def __init__(self, provider: Provider, max_tokens: int, prompt_tokens: int | None = None) -> None:
        window = provider.context_window
        room = 2 * max_tokens + RETRY_TOKENS
        limits = [x for x in (window - room if window else None, prompt_tokens) if x]
        self.provider, self.limit = provider, min(limits) if limits else None

    def fits(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` fit the limit, as the provider counts tokens."""
        return self.limit is None or self.provider.count_tokens(messages) <= self.limit

    def fit(self, blocks: Sequence[Block], build: Callable[[list[str]], list[Any]]) -> Fitted:
        """Messages ``build([rendered block, ...])`` within the budget, cut by the module's strategy.

        Clips every text to the largest common length that fits; if even
        :data:`MIN_CHARS` does not, shows the largest common number of items
        per block (the block's ``keep`` end; possibly none, leaving only the
        marker). Fails only if the question without any item does not fit.
        """

        def at(cap: int | None, shown: int | None = None) -> list[Any]:
            return build([render(b, cap, shown) for b in blocks])

        chars = [len(t) for b in blocks for _, t in b.items]
        # no token is shorter than a character, nor (in practice) longer than MAX_TOKEN_CHARS: skip hopeless sizes
        hopeless = self.limit is not None and sum(chars) > MAX_TOKEN_CHARS * self.limit
        if not hopeless and self.fits(at(None)):
            return Fitted(at(None))
        longest = max(chars, default=0)
        top = max(longest, MIN_CHARS) if self.limit is None else min(longest, MAX_TOKEN_CHARS * self.limit)
        cap = largest(MIN_CHARS, max(top, MIN_CHARS), lambda c: self.fits(at(c)))
        if cap is not None:
            return Fitted(at(cap), cap)
        most = max(len(b.items) for b in blocks)
        shown = largest(0, most, lambda n: self.fits(at(MIN_CHARS, n)))
        if shown is None:
            raise PromptTooLong(
                f"prompt budget of {self.limit} tokens (the prompt cap or the context window): "
                "too small for the question itself"
            )
        return Fitted(at(MIN_CHARS, shown), MIN_CHARS, shown)
