"""Speed of rcakit.rag on the default world: BM25 queries, clean traces, and one chapter sweep per protocol.

The agent searches each question's own paragraphs (the authors' protocol); the
global index over the whole world is the earlier protocol's. Run:
``.venv/bin/python benchmarks/bench_rag.py``. Uses a throwaway case store.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from rcakit.rag import protocol
from rcakit.rag.agent import Agent
from rcakit.rag.readers import RuleReader
from rcakit.rag.retrieval import Corpora, Retriever
from rcakit.rag.settings import EARLIER
from rcakit.rag.text import tokens
from rcakit.rag.world import build_world


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    t_build = time.perf_counter()
    lab = protocol.build_lab(0)  # the chapters' default world: 2,400 entities, 120 questions
    t_build = time.perf_counter() - t_build
    world = lab.world
    retriever = Retriever(world.corpus)  # the global index: the slowest search either protocol makes
    print(f"world + per-question BM25 indexes + clean traces: {t_build:.2f} s ({len(world.corpus)} paragraphs)")

    rng = random.Random(0)
    queries = [f"the founder of {rng.choice(sorted(world.types))} {i}" for i in range(300)]
    t_vec = timed(lambda: [retriever.scores(q) for q in queries]) / len(queries)
    t_raw = timed(lambda: [retriever.bm25.get_scores(tokens(q)) for q in queries[:60]]) / 60
    print(
        f"global BM25 query (sparse Okapi weights): {1000 * t_vec:.3f} ms; rank_bm25 get_scores: {1000 * t_raw:.2f} ms"
    )

    other = build_world(1)  # a new world and indexes, so no query is cached yet
    for kind in ("question", "global"):
        agent = Agent(other, Corpora(other, kind), RuleReader(other, 0.2, 1))
        n = len(other.questions)
        t_cold = timed(lambda agent=agent: [agent.run(q) for q in other.questions])
        t_warm = timed(lambda agent=agent: [agent.run(q) for q in other.questions])
        print(
            f"agent traces per second, {kind} corpus: {n / t_cold:.0f} cold cache, {n / t_warm:.0f} warm "
            f"({n} questions)"
        )

    for label, lab_ in (("authors'", lab), ("earlier", protocol.build_lab(0, **EARLIER.lab_params()))):
        with tempfile.TemporaryDirectory() as folder:
            store = protocol.case_store("bench", {"bench": 1}, Path(folder))
            t_sweep = timed(
                lambda lab_=lab_, store=store: protocol.sweep(lab_, "structural", [1, 2, 3], store, progress=None)
            )
            print(
                f"structural sweep, {label} protocol ({len(store)} cases, with diagnosers and fsync per case): "
                f"{t_sweep:.1f} s"
            )


if __name__ == "__main__":
    main()
