"""Retrieval over each question's own paragraphs or the world's corpus: BM25 or dense (all-MiniLM-L6-v2).

``Corpora`` is what the agent searches. With ``kind = "question"`` (the
authors' protocol, AgenticRAG-FP §6 and the authors' code, ``anote-ai/Research-AgenticRAG``) each question is
run against its own paragraphs only (``World.contexts``: MuSiQue's 20 per
question, supporting and distractor; the synthetic world builds them the
same way); with ``kind = "global"`` every question searches one index over
the whole corpus. With ``empty_search = "first_two"`` (the authors') a search
in which no paragraph scores returns the searched corpus's first two
paragraphs; with ``"nothing"`` it returns nothing.

``retriever`` says how a corpus is searched (the authors' code,
``anote-ai/Research-AgenticRAG``): ``bm25`` (:class:`Retriever`; the authors' retriever for the
content-corruption runs behind Tables 3-4) or ``dense``
(:class:`DenseRetriever`; their Table 2 sweep). Both rank by score, break
ties by paragraph position, and return only paragraphs that score above 0,
so a search where nothing scores is left to the empty-search rule.

BM25: documents are "title: text", split as the authors do (``lower().split()``,
punctuation kept on the words) or, with ``tokenizer = "normalised"``, by the
answer normaliser of ``rcakit.rag.text`` (rcakit's alternative rule). The corpus
statistics (idf, term frequencies, lengths, k1, b) are ``BM25Okapi``'s; the
per-term Okapi weights are laid out once in a sparse term-by-document matrix
(scipy), so a query costs one sparse row sum instead of rank-bm25's Python
loop over documents. ``scores`` equals ``BM25Okapi.get_scores`` (tested).

Dense: documents are "title: text", as the authors embed them; a score is the
cosine of the query's and the paragraph's unit embeddings
(``rcakit.rag.embeddings``), summed in float64 by numpy (no threaded BLAS),
rounded to :data:`DECIMALS` places and clamped at 0, so near-ties become
ties broken by position and a score does not hinge on the last bits of a
float32 sum.

Results are cached per (query, k): sweeps re-issue the same clean queries;
the cache is thread-safe, and a pickled retriever (to a Dask worker) starts
with an empty one. These caches (the search results, a dense retriever's
paragraph embeddings, the per-question indexes of ``Corpora``) are the only
state here, and no result depends on them: they only save work that
concurrent cases would otherwise repeat, so they keep their lock and their
pickling hooks, which leave a cache behind.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

from rcakit import RcakitError
from rcakit.rag.embeddings import Encoder, shared_encoder
from rcakit.rag.settings import AUTHORS
from rcakit.rag.text import TOKENIZERS, split_tokens
from rcakit.rag.world import Paragraph, Question, World

CORPUS_KINDS = ("question", "global")
EMPTY_SEARCH = ("first_two", "nothing")
RETRIEVERS = ("bm25", "dense")
FALLBACK_DOCS = 2  # paragraphs the authors' search returns when nothing scores
DECIMALS = 6  # a dense score's rounding before ranking


def top_positions(scores: np.ndarray, k: int) -> tuple[int, ...]:
    """Positions of the ``k`` highest ``scores`` above 0, ties broken by position."""
    order = np.lexsort((np.arange(len(scores)), -scores))[: max(k, 0)]
    return tuple(int(i) for i in order if scores[i] > 0)


class _Search:
    """Top-k search over ``corpus`` by ``scores``, cached per (query, k); the cache is left out of a pickle."""

    corpus: list[Paragraph]

    def _cached_search(self) -> None:
        self.search = functools.lru_cache(maxsize=200_000)(self._search)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "search"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._cached_search()

    def scores(self, query: str) -> np.ndarray:
        raise NotImplementedError

    def _search(self, query: str, k: int) -> tuple[int, ...]:
        """Positions (in ``corpus``) of the top ``k`` paragraphs with a positive score."""
        return top_positions(self.scores(query), k) if k > 0 else ()


class Retriever(_Search):
    """Top-k BM25 search; ties broken by paragraph position, so results are deterministic."""

    def __init__(self, corpus: list[Paragraph], tokenizer: str = AUTHORS.tokenizer) -> None:
        self.corpus, self.tokenizer = corpus, tokenizer
        self.bm25 = BM25Okapi([split_tokens(f"{p.title}: {p.text}", tokenizer) for p in corpus])
        self._vocab, self._weights = self._okapi_matrix()
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
        ids = [self._vocab[t] for t in split_tokens(query, self.tokenizer) if t in self._vocab]
        if not ids:
            return np.zeros(len(self.corpus))
        return np.asarray(self._weights[ids].sum(axis=0)).ravel()


class DenseRetriever(_Search):
    """Top-k cosine search over all-MiniLM-L6-v2 embeddings of "title: text", scores clamped at 0.

    ``encoder`` is the process's shared one by default; the paragraphs are embedded on the first search.
    """

    def __init__(self, corpus: list[Paragraph], encoder: Encoder | None = None) -> None:
        self.corpus = corpus
        self.encoder = encoder or shared_encoder()
        self._fresh()

    def _fresh(self) -> None:
        self._lock = threading.Lock()
        self._matrix: np.ndarray | None = None
        self._cached_search()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("search", "_lock", "_matrix")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._fresh()

    def documents(self) -> list[str]:
        """The texts embedded for the corpus, "title: text" as the authors write them."""
        return [f"{p.title}: {p.text}" for p in self.corpus]

    def paragraph_embeddings(self) -> np.ndarray:
        """Every paragraph's unit embedding, in float64 (computed once)."""
        with self._lock:
            if self._matrix is None:
                self._matrix = self.encoder.embed(self.documents()).astype(np.float64)
            return self._matrix

    def scores(self, query: str) -> np.ndarray:
        """Cosine of ``query`` with every paragraph, rounded to :data:`DECIMALS` places, clamped at 0;
        all 0 for a blank query."""
        if not query.strip():
            return np.zeros(len(self.corpus))
        paragraphs = self.paragraph_embeddings()
        cosine = (paragraphs * self.encoder.embed([query])[0].astype(np.float64)).sum(axis=1)
        return np.maximum(np.round(cosine, DECIMALS), 0.0)


class Corpora:
    """What the agent searches: one index per question (``question``) or one for all (``global``), each
    searched by ``retriever`` (``bm25`` or ``dense``); the authors' choices by default
    (``rcakit.rag.settings.AUTHORS``), with BM25, their content arm's retriever, which needs no torch.

    Per-question indexes are built on first use and kept (under a lock, since
    concurrent cases share them); a pickled ``Corpora`` starts with none.
    """

    def __init__(
        self,
        world: World,
        kind: str = AUTHORS.corpus,
        empty_search: str = AUTHORS.empty_search,
        retriever: str = AUTHORS.retriever_for("content"),
        tokenizer: str = AUTHORS.tokenizer,
    ) -> None:
        for name, value, allowed in (
            ("corpus", kind, CORPUS_KINDS),
            ("empty_search", empty_search, EMPTY_SEARCH),
            ("retriever", retriever, RETRIEVERS),
            ("tokenizer", tokenizer, TOKENIZERS),
        ):
            if value not in allowed:
                raise RcakitError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
        self.world, self.kind, self.empty_search, self.retriever = world, kind, empty_search, retriever
        self.tokenizer = tokenizer
        self._fresh()

    def _fresh(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[str, Retriever | DenseRetriever] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_indexes")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._fresh()

    def index(self, q: Question) -> Retriever | DenseRetriever:
        """The index question ``q`` searches."""
        key = q.id if self.kind == "question" else ""
        with self._lock:
            if key not in self._indexes:
                docs = self.world.context(q) if self.kind == "question" else self.world.corpus
                made = Retriever(docs, self.tokenizer) if self.retriever == "bm25" else DenseRetriever(docs)
                self._indexes[key] = made
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
