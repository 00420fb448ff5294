"""Dense against BM25 retrieval in the RAG chapters: encode costs, the empty-search fallback, run times, cells.

Run: ``.venv/bin/python benchmarks/bench_retrieval.py [--chapters]``. One run measures, on the chapters'
default world (2,400 entities, 120 questions):

- the dense retriever's costs: loading all-MiniLM-L6-v2 (imports included), and encoding one paragraph
  and one query, each alone as the retriever encodes them;
- for each retriever, the structural sweep behind coverage-collapse (lab and every case, in this
  process, a throwaway case store): its wall time, how many searches it made, how many of them nothing
  scored (so the authors' first-two fallback fired), and how many distinct texts the encoder embedded;
  then the ratio dense / BM25;
- with ``--chapters``: the whole coverage-collapse chapter (kernel, every section, the Explore runs)
  at quick and at its defaults with each retriever, into scratch folders, with the ratios, and at the
  defaults the main cells of ``results/coverage-collapse.json`` side by side and how many recorded
  values differ.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rcakit.rag import embeddings, protocol
from rcakit.rag.retrieval import Corpora
from rcakit.rag.world import build_world

RETRIEVERS = ("bm25", "dense")
CELLS = ("coverage", "propagation_aware", "suf_regen", "rule_based", "oracle_gold_hop")


def encode_costs() -> None:
    """Seconds to load the model, and milliseconds to encode one paragraph and one query."""
    world = build_world(0)
    encoder = embeddings.Encoder()
    start = time.perf_counter()
    encoder.embed(["a first text"])
    print(f"model load (imports, weights check, load): {time.perf_counter() - start:.1f} s")
    paragraphs = [f"{p.title}: {p.text}" for p in world.corpus[:300]]
    queries = [rel.phrase.format(q.start) for q in world.questions for rel in map(world.relations.get, q.relations)]
    for label, texts in (("paragraph", paragraphs), ("query", list(dict.fromkeys(queries))[:300])):
        start = time.perf_counter()
        encoder.embed(texts)
        per = (time.perf_counter() - start) / len(texts)
        words = sum(len(t.split()) for t in texts) / len(texts)
        print(f"encode one {label} ({words:.0f} words on average, {len(texts)} texts): {per * 1e3:.1f} ms")


def sweep_counts(retriever: str) -> float:
    """The structural sweep with ``retriever``: prints its searches and empty ones; returns its seconds."""
    counts: Counter = Counter()
    queries: set[str] = set()
    search = Corpora.search

    def counted(self: Corpora, q, query: str, k: int):
        counts["searches"] += 1
        counts["nothing scored"] += not self.index(q).search(query, k)
        queries.add(query)
        return search(self, q, query, k)

    Corpora.search = counted  # type: ignore[method-assign]
    before = embeddings.shared_encoder().cached
    try:
        start = time.perf_counter()
        lab = protocol.build_lab(0, retriever=retriever)
        with tempfile.TemporaryDirectory() as tmp:
            store = protocol.case_store("bench-retrieval", {"retriever": retriever}, tmp)
            cases = protocol.sweep(lab, "structural", [1, 2, 3], store, progress=None)
        seconds = time.perf_counter() - start
    finally:
        Corpora.search = search  # type: ignore[method-assign]
    share = counts["nothing scored"] / counts["searches"]
    print(
        f"{retriever}: lab and {len(cases)} cases in {seconds:.0f} s; {counts['searches']:,} searches "
        f"({len(queries):,} distinct queries), nothing scored in {counts['nothing scored']:,} ({share:.2%}: "
        f"the first-two fallback fired); texts embedded: {embeddings.shared_encoder().cached - before:,}"
    )
    return seconds


def chapter_run(retriever: str, quick: bool, folder: Path) -> tuple[float, dict]:
    """Seconds for one coverage-collapse run with ``retriever`` into ``folder``, and its results."""
    from rcakit.book import runner

    os.environ.update(RCAKIT_RESULTS_DIR=str(folder), RCAKIT_BOOK_DIR=str(folder / "book"), RCAKIT_PROGRESS="0")
    start = time.perf_counter()
    runner.run_chapter("coverage-collapse", {"retriever": retriever}, quick=quick, output_dir=folder)
    seconds = time.perf_counter() - start
    return seconds, json.loads((folder / "coverage-collapse.json").read_text(encoding="utf-8"))


def leaves(value, prefix: str = "") -> dict:
    """A results file's values by dotted key."""
    if not isinstance(value, dict):
        return {prefix: value}
    return {k: v for key, item in value.items() for k, v in leaves(item, f"{prefix}.{key}" if prefix else key).items()}


def show_cells(results: dict[str, dict]) -> None:
    """The main cells of both retrievers' results, and how many recorded values differ."""
    flat = {r: leaves(results[r]) for r in RETRIEVERS}
    keys = [k for k in flat["bm25"] if not k.startswith(("params", "rcakit_version"))]
    differ = [k for k in keys if flat["bm25"][k] != flat["dense"].get(k)]
    print(f"recorded values that differ (bm25 -> dense): {len(differ)} of {len(keys)}")
    rows = [f"accuracy.{name}.{d}.point" for name in CELLS for d in (1, 2, 3)]
    rows += [f"{key}.{d}" for key in ("failed_n", "recovery", "eligible_questions") for d in (1, 2, 3)]
    rows += ["clean_accuracy", "suf_regen_hop1_share_min"]
    for key in rows:
        a, b = flat["bm25"][key], flat["dense"][key]
        print(f"  {key}: {a:.3f} -> {b:.3f}" if isinstance(a, float) else f"  {key}: {a} -> {b}")


def main() -> None:
    encode_costs()
    seconds = {r: sweep_counts(r) for r in RETRIEVERS}
    print(f"structural sweep, dense / bm25: {seconds['dense'] / seconds['bm25']:.1f}x")
    if "--chapters" not in sys.argv[1:]:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for quick in (True, False):
            runs = {r: chapter_run(r, quick, Path(tmp) / f"{r}-{quick}") for r in RETRIEVERS}
            label = "quick" if quick else "defaults"
            times = ", ".join(f"{r} {runs[r][0]:.0f} s" for r in RETRIEVERS)
            print(f"coverage-collapse at {label}: {times}; dense / bm25: {runs['dense'][0] / runs['bm25'][0]:.1f}x")
        show_cells({r: runs[r][1] for r in RETRIEVERS})


if __name__ == "__main__":
    main()
