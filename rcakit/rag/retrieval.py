"""BM25 retrieval over the world's corpus (rank-bm25 ``BM25Okapi``).

Documents are title plus text, tokenised with the answer normaliser of
``rcakit.rag.text`` so retrieval and scoring see the same tokens. The corpus
statistics (idf, term frequencies, lengths, k1, b) are ``BM25Okapi``'s; the
per-term Okapi weights are laid out once in a sparse term-by-document matrix
(scipy), so a query costs one sparse row sum instead of rank-bm25's Python
loop over documents. ``scores`` equals ``BM25Okapi.get_scores`` (tested).
Results are cached per (query, k): sweeps re-issue the same clean queries;
the cache is thread-safe, and a pickled retriever (to a Dask worker) starts
with an empty one.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import functools

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

from rcakit.rag.text import tokens
from rcakit.rag.world import Paragraph


class Retriever:
    """Top-k BM25 search; ties broken by paragraph id, so results are deterministic."""

    def __init__(self, corpus: list[Paragraph]):
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
        if not tokens(query) or k <= 0:
            return ()
        scores = self.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return tuple(int(i) for i in order if scores[i] > 0)
