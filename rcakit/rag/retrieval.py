"""BM25 retrieval (rank-bm25 ``BM25Okapi``) over each question's own paragraphs or the world's corpus.

``Corpora`` is what the agent searches. With ``kind = "question"`` (the
authors' protocol, AgenticRAG-FP §6 and ``papers/README.md``) each question is
run against its own paragraphs only (``World.contexts``: MuSiQue's 20 per
question, supporting and distractor; the synthetic world builds them the
same way); with ``kind = "global"`` every question searches one index over
the whole corpus. With ``empty_search = "first_two"`` (the authors') a search
in which no paragraph scores returns the searched corpus's first two
paragraphs; with ``"nothing"`` it returns nothing.

Documents are title plus text, tokenised with the answer normaliser of
``rcakit.rag.text`` so retrieval and scoring see the same tokens. The corpus
statistics (idf, term frequencies, lengths, k1, b) are ``BM25Okapi``'s; the
per-term Okapi weights are laid out once in a sparse term-by-document matrix
(scipy), so a query costs one sparse row sum instead of rank-bm25's Python
loop over documents. ``scores`` equals ``BM25Okapi.get_scores`` (tested).
Results are cached per (query, k): sweeps re-issue the same clean queries;
the cache is thread-safe, and a pickled retriever (to a Dask worker) starts
with an empty one. These caches (the search results, the per-question
indexes of ``Corpora``) are the only state here, and no result depends on
them: they only save work that concurrent cases would otherwise repeat, so
they keep their lock and their pickling hooks, which leave a cache behind.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

from rcakit import RcakitError
from rcakit.rag.text import tokens
from rcakit.rag.world import Paragraph, Question, World

CORPUS_KINDS = ("question", "global")
EMPTY_SEARCH = ("first_two", "nothing")
FALLBACK_DOCS = 2  # paragraphs the authors' search returns when nothing scores


class Retriever:
    """Top-k BM25 search; ties broken by paragraph id, so results are deterministic."""

    def __init__(self, corpus: list[Paragraph]) -> None:
        self.corpus = corpus
        self.bm25 = BM25Okapi([tokens(f"{p.title} {p.text}") for p in corpus])
        self._vocab, self._weights = self._okapi_matrix()
        self._cached_search()

    def _cached_search(self) -> None:
        self.search = functools.lru_cache(maxsize=200_000)(self._search)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "search"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._cached_search()

    def _okapi_matrix(self) -> tuple[dict[str, int], sparse.csr_matrix]:
        bm, vocab, rows, cols, vals = self.bm25, {}, [], [], []
        norm = bm.k1 * (1 - bm.b + bm.b * np.asarray(bm.doc_len) / bm.avgdl)
        for doc, freqs in enumerate(bm.doc_freqs):
            for term, f in freqs.items():
                rows.append(vocab.setdefault(term, len(vocab)))
                cols.append(doc)
                vals.append(bm.idf.get(term, 0.0) * f * (bm.k1 + 1) / (f + norm[doc]))
        return vocab, sparse.csr_matrix((vals, (rows, cols)), shape=(len(vocab), len(bm.doc_freqs)))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paragraph for ``query`` (each query token counted as often as it occurs)."""
        ids = [self._vocab[t] for t in tokens(query) if t in self._vocab]
        if not ids:
            return np.zeros(len(self.corpus))
        return np.asarray(self._weights[ids].sum(axis=0)).ravel()

    def _search(self, query: str, k: int) -> tuple[int, ...]:
        """Positions (in ``corpus``) of the top ``k`` paragraphs with a positive score."""
        if not tokens(query) or k <= 0:
            return ()
        scores = self.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return tuple(int(i) for i in order if scores[i] > 0)


class Corpora:
    """What the agent searches: one BM25 index per question (``question``) or one for all (``global``).

    Per-question indexes are built on first use and kept (under a lock, since
    concurrent cases share them); a pickled ``Corpora`` starts with none.
    """

    def __init__(self, world: World, kind: str = "question", empty_search: str = "first_two") -> None:
        if kind not in CORPUS_KINDS:
            raise RcakitError(f"corpus: expected one of {', '.join(CORPUS_KINDS)}, got {kind!r}")
        if empty_search not in EMPTY_SEARCH:
            raise RcakitError(f"empty_search: expected one of {', '.join(EMPTY_SEARCH)}, got {empty_search!r}")
        self.world, self.kind, self.empty_search = world, kind, empty_search
        self._fresh()

    def _fresh(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[str, Retriever] = {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_indexes")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fresh()

    def index(self, q: Question) -> Retriever:
        """The BM25 index question ``q`` searches."""
        key = q.id if self.kind == "question" else ""
        with self._lock:
            if key not in self._indexes:
                docs = self.world.context(q) if self.kind == "question" else self.world.corpus
                self._indexes[key] = Retriever(docs)
            return self._indexes[key]

    def size(self, q: Question) -> int:
        """How many paragraphs question ``q`` searches."""
        return len(self.world.contexts.get(q.id, ())) if self.kind == "question" else len(self.world.corpus)

    def search(self, q: Question, query: str, k: int) -> tuple[Paragraph, ...]:
        """Top-``k`` paragraphs for ``query`` in ``q``'s corpus; when none scores, the empty-search rule."""
        index = self.index(q)
        found = index.search(query, k)
        if not found and self.empty_search == "first_two":
            found = tuple(range(min(FALLBACK_DOCS, len(index.corpus))))
        return tuple(index.corpus[i] for i in found)
