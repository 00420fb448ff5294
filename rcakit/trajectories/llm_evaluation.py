"""The language-model locators on a seeded subset of a trajectory set, with their cost.

Who&When's three prompting baselines and the RCTA-style pipeline
(:mod:`rcakit.trajectories.llm_locators`, :mod:`rcakit.trajectories.rcta`)
run on ``max_cases`` trajectories of each set beside the offline locators on
the same trajectories (:func:`evaluate_llm`, :func:`compare_llm`); calls,
tokens, abstentions and truncations are counted per diagnosis, and the spread
of the steps a model names shows when it names the same step whatever the log.

Used in the chapters: `longrca-strata`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rcakit import RcakitError
from rcakit.llm import Accounting, CachedProvider, Provider
from rcakit.llm.accounting import cost_table
from rcakit.trajectories.evaluation import evaluate, overall_table
from rcakit.trajectories.llm_locators import (
    LLM_LOCATORS,
    AllAtOnceLocator,
    BinarySearchLocator,
    LLMLocator,
    StepByStepLocator,
)
from rcakit.trajectories.locators import Locator
from rcakit.trajectories.metrics import score_cases, summarise
from rcakit.trajectories.rcta import RCTALocator
from rcakit.trajectories.schema import Trajectory

if TYPE_CHECKING:
    from rcakit.parallel import Progress, Runner


def llm_subset(trajectories: Sequence[Trajectory], n: int, seed: int) -> list[Trajectory]:
    """A seeded sample of at most ``n`` trajectories, kept in their original order."""
    if n >= len(trajectories):
        return list(trajectories)
    rng = np.random.default_rng([int(seed), len(trajectories)])
    return [trajectories[i] for i in sorted(rng.choice(len(trajectories), size=n, replace=False))]


def build_llm_locators(
    providers: Mapping[str, Any], seed: int = 0, prompt_tokens: int | None = None, max_questions: int | None = None
) -> list[LLMLocator]:
    """One locator per name in :data:`~rcakit.trajectories.llm_locators.LLM_LOCATORS`;
    ``providers[name]`` is each one's (cached) provider.

    ``max_questions`` bounds the iterative methods' calls per diagnosis:
    step-by-step's questions and RCTA's segment summaries (binary search
    needs only about ``log2 T``).
    """
    rcta = {} if max_questions is None else {"max_segments": max_questions}
    return [
        AllAtOnceLocator(providers["all_at_once"], seed, prompt_tokens),
        StepByStepLocator(providers["step_by_step"], seed, prompt_tokens, max_questions),
        BinarySearchLocator(providers["binary_search"], seed, prompt_tokens),
        RCTALocator(providers["rcta"], seed, prompt_tokens, **rcta),
    ]


def cost_row(locator: LLMLocator, cases: pd.DataFrame, totals: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Accuracy beside cost for one LLM locator on scored ``cases``: the LongRCA metrics, its row
    of :func:`~rcakit.llm.accounting.cost_table` (cost columns only: no cache hits or seconds,
    which differ between a cold and a warm run), invalid predictions and long inputs.

    ``totals`` is the locator's usage summed over its cases (:func:`evaluate_llm`); without it,
    the locator's chat's shared accounting."""
    if totals is None:
        if not isinstance(locator.chat, CachedProvider):
            raise RcakitError(f"cost_row: {locator.name}: without totals, the locator's chat must be a cached provider")
        totals = locator.chat.accounting.totals()
    cost = cost_table({locator.name: totals}).loc[locator.name]
    return {
        **summarise(cases),
        **{str(k): v.item() if hasattr(v, "item") else v for k, v in cost.items()},
        "invalid": int((~cases["valid"]).sum()),
        **locator.inputs.counts(),
    }


def step_distribution(cases: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per method: the most frequent predicted step, its share of all cases, the number of
    distinct steps, invalid predictions, and the mean predicted position ``step / (T - 1)``."""
    rows = {}
    for name, frame in cases.items():
        counts = frame["step"].dropna().astype(int).value_counts()
        position = (frame["step"] / (frame["length"] - 1).clip(lower=1)).mean()
        rows[name] = {
            "modal_step": int(counts.index[0]) if len(counts) else None,
            "modal_share": float(counts.iloc[0] / len(frame)) if len(counts) else 0.0,
            "distinct_steps": int(len(counts)),
            "invalid": int((~frame["valid"]).sum()),
            "mean_position": float(position) if pd.notna(position) else None,
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")


LONG_INPUTS = ("truncated", "segmented", "unfinished")  # the headings of a locator's LongInputs


@dataclass
class LocatorCase:
    """``work(trajectory)`` for one LLM locator: its prediction, the usage it caused (counted within
    the case alone, so concurrent cases do not mix) and the long-input headings it fell under."""

    locator: LLMLocator

    def __call__(self, trajectory: Trajectory) -> dict[str, Any]:
        from rcakit.llm.cache import case_usage

        with case_usage() as scope:
            prediction = self.locator.locate(trajectory)
        inputs = self.locator.inputs
        return {
            "prediction": prediction,
            "usage": scope.totals(self.locator.chat),
            "long": [h for h in LONG_INPUTS if trajectory.id in getattr(inputs, h)],
        }


def evaluate_llm(
    provider: Provider,
    trajectories: Sequence[Trajectory],
    accounting: Accounting,
    subset: str,
    *,
    seed: int = 0,
    prompt_tokens: int | None = None,
    max_questions: int | None = None,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]]]:
    """Run every LLM locator on ``trajectories`` through the response cache, charging
    ``accounting["<subset>.<method>"]``; return ``(per-case scores, cost rows)`` by method.

    ``progress`` wraps each locator's pass over the trajectories (iterable in,
    iterable out); by default :func:`rcakit.progress.track`. ``runner``
    (``rcakit.parallel.Runner``, serial by default) runs the cases serially, on
    threads or on a Dask cluster; each case's usage is summed here, so the cost
    rows are the same for every setting.
    """
    from rcakit.llm import cached
    from rcakit.parallel import Runner
    from rcakit.progress import track

    runner = runner or Runner()
    providers = {name: cached(provider, accounting=accounting[f"{subset}.{name}"]) for name in LLM_LOCATORS}
    items = [(f"{i}:{t.id}", t) for i, t in enumerate(trajectories)]
    cases, rows = {}, {}
    for locator in build_llm_locators(providers, seed, prompt_tokens, max_questions):
        bar = (lambda s, name=locator.name: track(s, desc=f"{subset} {name}")) if progress is None else progress
        done = runner.run(items, LocatorCase(locator), progress=bar)
        for t, d in zip(trajectories, done, strict=True):  # the driver's record of each case's long inputs
            for heading in d["long"]:
                getattr(locator.inputs, heading).add(t.id)
        totals = {k: sum(d["usage"][k] for d in done) for k in done[0]["usage"]} if done else None
        cases[locator.name] = score_cases(trajectories, [d["prediction"] for d in done])
        rows[locator.name] = cost_row(locator, cases[locator.name], totals)
    return cases, rows


@dataclass(frozen=True)
class LLMComparison:
    """The LLM locators on a seeded subset of each set, beside the offline ones on the same subset.

    ``table``: per set, the offline locators' metrics then each LLM locator's
    :func:`cost_row`; ``spread``: per set, :func:`step_distribution`;
    ``numbers``: ``{set: {method: cost row + predicted_steps}}`` for the results.
    """

    cases: dict[str, Any]
    table: pd.DataFrame
    spread: pd.DataFrame
    numbers: dict[str, Any]


def compare_llm(
    provider: Provider,
    sets: Mapping[str, Sequence[Trajectory]],
    offline: Sequence[Locator],
    accounting: Accounting,
    *,
    max_cases: int,
    seed: int = 0,
    prompt_tokens: int | None = None,
    max_questions: int | None = None,
    runner: Runner | None = None,
) -> LLMComparison:
    """:func:`evaluate_llm` on :func:`llm_subset` (``max_cases``) of every set, with the offline
    locators on the same trajectories and the distribution of the steps each method predicted;
    ``runner`` (``rcakit.parallel.Runner``) says where the LLM locators' cases run."""
    cases, tables, spreads, numbers = {}, {}, {}, {}
    for name, trajectories in sets.items():
        picked = llm_subset(trajectories, max_cases, seed)
        cases[name], rows = evaluate_llm(
            provider,
            picked,
            accounting,
            name,
            seed=seed,
            prompt_tokens=prompt_tokens,
            max_questions=max_questions,
            runner=runner,
        )
        offline_table = overall_table(evaluate(offline, picked))
        tables[name] = pd.concat([offline_table, pd.DataFrame.from_dict(rows, orient="index")])
        spreads[name] = step_distribution(cases[name])
        numbers[name] = {m: {**row, "predicted_steps": spreads[name].loc[m].to_dict()} for m, row in rows.items()}
    return LLMComparison(cases, pd.concat(tables), pd.concat(spreads), numbers)
