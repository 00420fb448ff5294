"""Calls, tokens, cache hits and abstentions per LLM-backed method, and the one cost table.

The cost columns (cases, calls, tokens, abstentions) depend only on the
requests a method makes, so they are the same on a cold and on a warm run
and may go into a chapter's results. The runtime columns (model calls,
cache hits, seconds) depend on the cache's state and the machine: print them
to the terminal or a log, never into results or notebook outputs.
:func:`cost_table` turns totals into per-case cost, one way for every chapter.

Used in the chapters: `car-shapley`, `longrca-strata`, `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd

    from rcakit.llm.base import Reply

COST = ("cases", "calls", "input_tokens", "output_tokens", "abstentions")
RUNTIME = ("model_calls", "cache_hits", "model_seconds")
PER_CASE = ("calls_per_case", "input_tokens_per_case", "output_tokens_per_case", "tokens_per_case")
DECIMALS = 3  # the per-case columns' rounding


@dataclass
class MethodUsage:
    """One method's running totals; thread-safe to update."""

    cases: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    abstentions: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    model_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _add(self, **amounts: float) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)

    def add_call(self, reply: Reply, cache_hit: bool, seconds: float = 0.0) -> None:
        """One chat request and its reply's tokens (charged on hits too)."""
        self._add(
            calls=1,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cache_hits=int(cache_hit),
            model_calls=int(not cache_hit),
            model_seconds=seconds,
        )

    def add_case(self) -> None:
        """One diagnosis (or agent run) finished, whatever it cost."""
        self._add(cases=1)

    def add_abstention(self) -> None:
        """One answer given up after the validated retry failed."""
        self._add(abstentions=1)

    def totals(self, runtime: bool = False) -> dict[str, Any]:
        names = COST + (RUNTIME if runtime else ())
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name in names}


class Accounting(Mapping[str, Any]):
    """Usage per method name, created on first access: ``acct["llm_judge"]``."""

    def __init__(self) -> None:
        self._methods: dict[str, MethodUsage] = {}
        self._lock = threading.Lock()

    def __getitem__(self, method: str) -> MethodUsage:
        with self._lock:
            return self._methods.setdefault(method, MethodUsage())

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._methods))

    def __len__(self) -> int:
        return len(self._methods)

    def to_dict(self, runtime: bool = False) -> dict[str, Any]:
        """Plain nested dict for ``rcakit.results.record`` (cost columns only by default)."""
        return {name: self._methods[name].totals(runtime) for name in sorted(self._methods)}

    def table(self, runtime: bool = False) -> pd.DataFrame:
        """:func:`cost_table` of every method (with ``runtime``, also the cache-dependent columns)."""
        return cost_table(self.to_dict(runtime))


def cost_table(totals: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per method: its totals, then :data:`PER_CASE` cost, rounded to :data:`DECIMALS`.

    ``totals`` maps a method to its :data:`COST` counts (as
    :meth:`MethodUsage.totals` gives them; :data:`RUNTIME` counts too, when
    present, add ``seconds_per_case``). A method without a case has no
    per-case cost (NaN) rather than a division by zero.
    """
    import pandas as pd

    rows = {name: dict(row) for name, row in totals.items()}
    present = set().union(*rows.values()) if rows else set()
    columns = list(COST) + [c for c in RUNTIME if c in present]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame.index.name = "method"
    cases = frame["cases"].where(frame["cases"] > 0)
    frame["calls_per_case"] = frame["calls"] / cases
    frame["input_tokens_per_case"] = frame["input_tokens"] / cases
    frame["output_tokens_per_case"] = frame["output_tokens"] / cases
    frame["tokens_per_case"] = (frame["input_tokens"] + frame["output_tokens"]) / cases
    if "model_seconds" in present:
        frame["seconds_per_case"] = frame["model_seconds"] / cases
    per_case = [c for c in frame.columns if c.endswith("_per_case")]
    frame[per_case] = frame[per_case].round(DECIMALS)
    return frame
