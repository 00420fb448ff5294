"""Scoring methods on testbed cases: each against a fresh oracle, whether its answer is right, and the summary.

Accuracy takes the form of the ground truth (a family F of minimal repair
sets): a point p is right when F = {{p}}; a family when it equals F exactly;
a ranking when its top k players, ``k = |∪F|``, are exactly ``∪F`` (a ranking cannot
say whether the sets are joint or alternative, so it is scored on the players
alone). Each proportion gets a 95% Wilson interval. Cost is what the oracle
counted while the method ran on the case alone (seed replays, one rollout
each on the support agent), beside the words of re-executed text and the
replays the shared memo answered. A user's method runs under a per-case time
limit. :func:`compare_methods` scores every method on every case through one
memo and summarises them (a :class:`MethodComparison`).

Used in the chapters: `attribution-families`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

import pandas as pd

from rcakit import RcakitError, stats
from rcakit.attribution.adapters import Method, is_built_in
from rcakit.attribution.interface import KINDS, Attribution, NotApplicable
from rcakit.attribution.oracle import ReplayMemo
from rcakit.attribution.testbeds import TestbedCase
from rcakit.deadlines import check_seconds


def correct(attribution: Attribution, truth: frozenset[Any]) -> bool:
    """Whether an attribution matches the certified family (see the module docstring)."""
    if attribution.kind == "point":
        return attribution.answer is not None and truth == frozenset([frozenset([attribution.answer])])
    if attribution.kind == "family":
        return frozenset(map(frozenset, attribution.answer)) == truth
    union = frozenset().union(*truth)
    return frozenset(list(attribution.answer)[: len(union)]) == union


def family_text(family: Iterable[Iterable[object]]) -> str:
    """A family as text, sets and members sorted: ``{a, b} | {c}`` (``{}`` for the empty family)."""
    sets = sorted("{" + ", ".join(sorted(map(str, s))) + "}" for s in family)
    return " | ".join(sets) if sets else "{}"


def answer_text(attribution: Attribution) -> str:
    """An attribution's answer as text: a point's name, a ranking as ``a > b``, a family as :func:`family_text`."""
    if attribution.kind == "point":
        return str(attribution.answer)
    if attribution.kind == "ranking":
        return " > ".join(map(str, attribution.answer))
    return family_text(attribution.answer)


METHOD_TIMEOUT = 60.0  # seconds a user's method may spend on one case


def check_method_timeout(value: float, param: str = "method_timeout") -> float:
    """``value`` as seconds, a number > 0 and at most a day (``rcakit.deadlines.check_seconds``)."""
    return check_seconds(value, param)


def run_method(
    method: Method,
    case: TestbedCase,
    memo: ReplayMemo,
    budget: int | None = None,
    *,
    name: str | None = None,
    method_timeout: float = METHOD_TIMEOUT,
) -> Attribution | None:
    """One method on one case with a fresh oracle: its attribution with the oracle's cost, or None.

    A built-in method is called as it is. A user's method (one whose code is
    not rcakit's) runs on a daemon thread for at most ``method_timeout``
    seconds, with what it prints discarded; past that, or when it raises, a one-line :class:`RcakitError`
    names the method (``name``, else its own name) and the case. A method
    stopped by the limit is abandoned, and ends with the process.
    """
    oracle = case.oracle(memo)
    what = f"method {name or _method_name(method)!r} on {case.case.testbed} case {case.case.case_id!r}"
    try:
        if is_built_in(method):
            found = method(case.case, oracle, budget)
        else:
            players = case.case.players

            def answer(*args: Any) -> Attribution:  # the call and its answer's reading share the deadline
                return materialise(method(*args), players, what)

            found = _within(answer, (case.case, oracle, budget), check_method_timeout(method_timeout), what)
    except NotApplicable:
        return None
    if not isinstance(found, Attribution):
        raise RcakitError(f"{what} returned {type(found).__name__}, not an Attribution")
    return Attribution(found.kind, found.answer, oracle.cost())


class BadAnswer(RcakitError):
    """A user's answer of the wrong shape or size: the line already names the method and the case."""


FAMILY_CAP = 10_000  # minimal repair sets a user's family may hold (an antichain of n players has C(n, n/2))


def materialise(found: object, players: tuple[Any, ...], what: str) -> Attribution:
    """A user's answer read into rcakit's own values, or one line naming the method and the case (``what``).

    Called on the method's thread, so reading the answer shares its deadline:
    an endless iterator or a huge container is read no further than its
    kind allows (a ranking at most ``len(players)`` entries, a set of a family
    as many, a family :data:`FAMILY_CAP` sets), and every entry must be one of
    the case's players (the players themselves are kept, never the method's
    objects). A point is one player or None; a ranking the players, best first;
    a family sets of players (:class:`~rcakit.attribution.interface.Attribution`).
    """
    if not isinstance(found, Attribution):
        raise BadAnswer(f"{what} returned {type(found).__name__}, not an Attribution")
    kind = found.kind
    if type(kind) is not str or kind not in KINDS:
        shown = " ".join(repr(kind)[:80].split())
        raise BadAnswer(f"{what} returned an Attribution of kind {shown}, not one of {', '.join(KINDS)}")
    index = {player: player for player in players}

    def player(entry: object) -> Any:
        try:
            return index[entry]
        except (KeyError, TypeError):
            shown = " ".join(repr(entry)[:80].split())
            raise BadAnswer(
                f"{what} answered {shown} ({type(entry).__name__}), not one of the case's players"
            ) from None

    def bounded(entries: object, cap: int, shape: str) -> list[Any]:
        if isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
            raise BadAnswer(f"{what} answered a {kind} of {type(entries).__name__}, not {shape}")
        taken = list(islice(entries, cap + 1))
        if len(taken) > cap:
            raise BadAnswer(f"{what} answered a {kind} with more than {cap} entries in {shape} (at most {cap})")
        return taken

    answer = found.answer
    if kind == "point":
        return Attribution(kind, None if answer is None else player(answer))
    if kind == "ranking":
        return Attribution(kind, tuple(player(e) for e in bounded(answer, len(players), "a sequence of players")))
    sets = bounded(answer, FAMILY_CAP, "a collection of sets of players")
    return Attribution(
        kind, frozenset(frozenset(player(e) for e in bounded(s, len(players), "a set of players")) for s in sets)
    )


def _method_name(method: Method) -> str:
    base = getattr(method, "func", method)
    return getattr(base, "__name__", None) or type(base).__name__


def _within(method: Method, args: tuple[Any, ...], seconds: float, what: str) -> Attribution:
    """``method(*args)`` on a daemon thread, waited for ``seconds`` at most; its errors name it (``what``)."""
    from rcakit.attribution.muting import muted
    from rcakit.parallel import one_line

    done: list[Any] = []

    def call() -> None:
        try:
            with muted():  # a method's prints would be published in the chapter's notebook
                done.append((True, method(*args)))
        except BaseException as exc:  # noqa: B036 - whatever a user's method raises reaches the caller
            done.append((False, exc))

    thread = threading.Thread(target=call, daemon=True, name="rcakit-user-method")
    thread.start()
    thread.join(seconds)
    if not done:
        raise RcakitError(
            f"{what}: stopped after {seconds:g} s (method_timeout); raise method_timeout or make the method faster"
        )
    ok, value = done[0]
    if ok:
        return value
    if isinstance(value, NotApplicable | BadAnswer):
        raise value
    raise RcakitError(f"{what} failed: {one_line(value)}") from value


SCORE_COLUMNS = (
    "testbed",
    "fault_type",
    "case_id",
    "method",
    "kind",
    "answer",
    "truth",
    "correct",
    "replays",
    "tokens",
    "memo_hits",
)  # one row of score_methods, in order


def score_methods(
    testbeds: Mapping[str, list[TestbedCase]],
    methods: Mapping[str, Method],
    budget: int | None = None,
    memo: ReplayMemo | None = None,
    *,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    method_timeout: float = METHOD_TIMEOUT,
) -> pd.DataFrame:
    """One row per (testbed, case, method) that applies: kind, correct, replays, words (column ``tokens``), memo hits.

    A user's method gets ``method_timeout`` seconds per case (:func:`run_method`).
    """
    check_method_timeout(method_timeout)
    memo = memo if memo is not None else ReplayMemo()
    items = [(bed, case) for bed, cases in testbeds.items() for case in cases]
    rows = []
    for bed, case in progress(items) if progress else items:
        for name, method in methods.items():
            found = run_method(method, case, memo, budget, name=name, method_timeout=method_timeout)
            if found is None:
                continue
            rows.append(
                {
                    "testbed": bed,
                    "fault_type": case.fault_type,
                    "case_id": case.case.case_id,
                    "method": name,
                    "kind": found.kind,
                    "answer": answer_text(found),
                    "truth": family_text(case.truth),
                    "correct": correct(found, case.truth),
                    "replays": found.cost.replays,
                    "tokens": found.cost.words,  # the column and the results keep their name
                    "memo_hits": found.cost.memo_hits,
                }
            )
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per testbed, fault type and method: n, accuracy, Wilson 95% interval, mean replays, words, memo hits."""
    grouped = scores.groupby(["testbed", "fault_type", "method"], sort=False)
    table = grouped.agg(
        kind=("kind", "first"),
        n=("correct", "size"),
        hits=("correct", "sum"),
        mean_cost=("replays", "mean"),
        mean_tokens=("tokens", "mean"),
        mean_memo_hits=("memo_hits", "mean"),
    ).reset_index()
    cis = [stats.wilson_ci(int(h), int(n)) for h, n in zip(table["hits"], table["n"], strict=True)]
    table["accuracy"] = table["hits"] / table["n"]
    table["ci_lo"], table["ci_hi"] = [c[0] for c in cis], [c[1] for c in cis]
    return table.drop(columns="hits")


@dataclass(frozen=True)
class MethodComparison:
    """Every method's row per case (:func:`score_methods`), their :func:`summary` per cell, and the shared memo."""

    scores: pd.DataFrame
    summary: pd.DataFrame
    memo: ReplayMemo


def compare_methods(
    testbeds: Mapping[str, list[TestbedCase]],
    methods: Mapping[str, Method],
    *,
    budget: int | None = None,
    method_timeout: float = METHOD_TIMEOUT,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> MethodComparison:
    """Every method on every case of ``testbeds`` through one :class:`ReplayMemo`, scored and summarised.

    ``budget`` caps the seed replays a method may spend per case (None: each
    method's own default); a user's method gets ``method_timeout`` seconds per case.
    """
    memo = ReplayMemo()
    scores = score_methods(testbeds, methods, budget, memo, progress=progress, method_timeout=method_timeout)
    return MethodComparison(scores, summary(scores), memo)
