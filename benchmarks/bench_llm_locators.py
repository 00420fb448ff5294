"""Cost and wall time per diagnosis of the LLM locators (rcakit.trajectories.llm_locators and .rcta).

Runs the four locators on the chapter's LLM subsets with a fresh response
cache in a temporary folder (so every call reaches the model) and prints,
per set and method, calls, tokens, abstentions and model seconds per
diagnosis, plus the predicted-step distribution.

    .venv/bin/python benchmarks/bench_llm_locators.py llamacpp:smollm2 --cases 1 --prompt-tokens 320 --max-questions 4
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import pandas as pd

from rcakit import trajectories as tr
from rcakit.llm import Accounting, LLMSettings, model_for
from rcakit.paths import resolve
from rcakit.trajectories import llm_evaluation


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("provider")
    parser.add_argument("--cases", type=int, default=1)
    parser.add_argument("--prompt-tokens", type=int, default=320)
    parser.add_argument("--max-questions", type=int, default=4)
    parser.add_argument("--n-trajectories", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sets", nargs="*", default=None, help="Hand-Crafted Algorithm-Generated synthetic (default: all)"
    )
    args = parser.parse_args()
    os.environ["RCAKIT_LLM_CACHE"] = tempfile.mkdtemp(prefix="bench-llm-")
    model = model_for(LLMSettings(args.provider))
    loaded = tr.read_who_and_when(resolve("../shared/data/who_and_when"))
    sets = loaded.by_source(tr.WHO_AND_WHEN_SUBSETS)
    sets["synthetic"] = list(tr.generate_benchmark(args.seed, tr.GeneratorConfig(n=args.n_trajectories)))
    usage, spreads, rows = Accounting(), {}, {}
    for name, trajectories in sets.items():
        if args.sets and name not in args.sets:
            continue
        picked = llm_evaluation.llm_subset(trajectories, args.cases, args.seed)
        start = time.perf_counter()
        cases, cost = llm_evaluation.evaluate_llm(
            model,
            picked,
            usage,
            name,
            seed=args.seed,
            prompt_tokens=args.prompt_tokens,
            max_questions=args.max_questions,
        )
        print(
            f"{name}: {len(picked)} trajectories, lengths {[len(t) for t in picked]}, "
            f"{time.perf_counter() - start:.1f} s for all four methods",
            flush=True,
        )
        spreads[name] = llm_evaluation.step_distribution(cases)
        rows[name] = pd.DataFrame.from_dict(cost, orient="index")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", None)
    print(usage.table(runtime=True))
    print(pd.concat(rows).round(3))
    print(pd.concat(spreads).round(3))


if __name__ == "__main__":
    main()
