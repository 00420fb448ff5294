"""The dense retriever (all-MiniLM-L6-v2, rcakit.rag.embeddings and rcakit.rag.retrieval.DenseRetriever) beside
BM25: cosine scores, clamping and the empty-search rule, determinism, the offline and verified model load,
pickling, the retriever parameter and its preflight. Tests that load the model are marked slow."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rcakit import RcakitError
from rcakit.book import inputs, registry
from rcakit.parallel import Runner
from rcakit.rag import embeddings as E
from rcakit.rag import protocol as P
from rcakit.rag import retrieval as R
from rcakit.rag.world import build_world

DENSE_INSTALLED = not E.missing_packages()
needs_dense = pytest.mark.skipif(not DENSE_INSTALLED, reason="the dense extra is not installed")


@pytest.fixture(scope="module")
def world():
    return build_world(3, n_entities=300, n_questions=8, hops=2)


class FixedEncoder:
    """An encoder with chosen unit vectors: ``vectors[text]``, else the first axis."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls: list[tuple[str, ...]] = []

    def embed(self, texts):
        self.calls.append(tuple(texts))
        unit = np.eye(E.DIMENSIONS, dtype=np.float32)[0]
        return np.stack([self.vectors.get(t, unit) for t in texts])


def _axis(i: int, sign: float = 1.0) -> np.ndarray:
    return sign * np.eye(E.DIMENSIONS, dtype=np.float32)[i]


# --- no model: the ranking rules, the parameter and its preflight ------------------------------------


def test_scores_are_clamped_at_zero_and_a_search_where_nothing_scores_follows_the_empty_search_rule(world, monkeypatch):
    q = world.questions[0]
    docs = world.context(q)
    texts = [f"{p.title}: {p.text}" for p in docs]
    fake = FixedEncoder({texts[3]: _axis(1), texts[7]: _axis(1), "opposite": _axis(0, -1.0), "second": _axis(1)})
    dense = R.DenseRetriever(docs, fake)
    assert dense.documents() == texts  # "title: text", the authors' documents
    assert (dense.scores("opposite") == 0.0).all() and dense.search("opposite", 5) == ()
    assert dense.search("second", 5) == (3, 7)  # only the paragraphs that score, tied ones by position
    assert dense.search("second", 1) == (3,) and dense.search("second", 0) == ()
    assert (dense.scores("   ") == 0.0).all() and dense.search(" ", 5) == ()
    monkeypatch.setattr(R, "shared_encoder", lambda: fake)
    fallback = R.Corpora(world, "question", "first_two", "dense")
    assert fallback.search(q, "opposite", 5) == tuple(docs[:2])
    assert R.Corpora(world, "question", "nothing", "dense").search(q, "opposite", 5) == ()
    assert fallback.search(q, "second", 5) == (docs[3], docs[7])


def test_scores_are_rounded_so_near_ties_rank_by_position():
    scores = np.array([0.3, 0.5000001, 0.5, 0.0, 0.5])
    assert R.top_positions(np.round(scores, R.DECIMALS), 5) == (1, 2, 4, 0)
    assert R.top_positions(np.zeros(4), 3) == ()


def test_a_retriever_outside_the_choices_is_one_line(world):
    with pytest.raises(RcakitError, match=r"^retriever: expected one of bm25, dense, got 'sparse'$"):
        R.Corpora(world, retriever="sparse")


def test_a_wrong_weights_file_is_one_line_before_any_load(tmp_path):
    (tmp_path / E.WEIGHTS).write_bytes(b"not the model")
    with pytest.raises(RcakitError) as info:
        E.Encoder(tmp_path).embed(["a query"])
    message = str(info.value)
    assert "\n" not in message and "13 bytes" in message and "90,868,376" in message and "--force-reinstall" in message
    same_size = tmp_path / "same-size"
    same_size.mkdir()
    with (same_size / E.WEIGHTS).open("wb") as handle:
        handle.truncate(E.WEIGHTS_BYTES)  # the pinned size, the wrong bytes
    with pytest.raises(RcakitError, match=r"with sha256 [0-9a-f]{16}\.\.\., not the pinned"):
        E.verify_weights(same_size)
    with pytest.raises(RcakitError, match="is missing"):
        E.verify_weights(tmp_path / "nowhere")


def test_an_encoder_pickles_as_the_receiving_process_s_shared_one(tmp_path):
    own = E.Encoder(tmp_path)
    assert pickle.loads(pickle.dumps(own)) is E.shared_encoder() is E.shared_encoder()


# --- the model --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder():
    return E.shared_encoder()


@needs_dense
def test_the_preflight_passes_with_the_installed_wheel():
    folder = E.check_available()
    assert (folder / E.WEIGHTS).stat().st_size == E.WEIGHTS_BYTES
    inputs.check_parameters("coverage-collapse", registry.get("coverage-collapse").defaults)


@pytest.mark.slow
@needs_dense
def test_cosine_scores_are_the_normalised_dot_product_of_the_models_own_embeddings(world, encoder):
    q = world.questions[0]
    dense = R.DenseRetriever(world.context(q), encoder)
    query = f"the founder of {q.start}"
    scores = dense.scores(query)
    model = encoder._model
    raw = model.encode([*dense.documents(), query], normalize_embeddings=False, convert_to_numpy=True)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    expected = np.maximum(unit[:-1] @ unit[-1], 0.0)
    assert np.allclose(scores, expected, atol=2e-6) and (scores >= 0).all() and scores.max() > 0.3
    assert np.array_equal(scores, np.round(scores, R.DECIMALS))
    assert np.allclose(np.linalg.norm(encoder.embed(dense.documents()), axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
@needs_dense
def test_a_query_naming_a_paragraphs_distinctive_words_retrieves_it(world, encoder):
    for q in world.questions[:4]:
        docs = world.context(q)
        dense = R.DenseRetriever(docs, encoder)
        for position in (0, 5, 11):
            target = docs[position]
            assert dense.search(f"{target.title} {target.text.split('.')[0]}", 1) == (position,), target


@pytest.mark.slow
@needs_dense
def test_embeddings_do_not_depend_on_order_batch_or_torch_threads(world):
    import torch

    texts = [f"{p.title}: {p.text}" for p in world.corpus[:40]] + ["the founder of Wenund Systems"]
    first = E.Encoder().embed(texts)
    shuffled = texts[:]
    random.Random(1).shuffle(shuffled)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        other = E.Encoder()
        other.embed(shuffled[:7])  # another cache history
        again = other.embed(shuffled)
    finally:
        torch.set_num_threads(threads)
    by_text = dict(zip(shuffled, again, strict=True))
    assert np.stack([by_text[t] for t in texts]).tobytes() == first.tobytes()


@pytest.mark.slow
@needs_dense
def test_the_same_cases_with_four_workers_or_one_and_under_another_hash_seed(tmp_path):
    def sweep(workers: int) -> list:
        runner = Runner(workers)
        lab = P.build_lab(5, n_entities=300, n_questions=8, hops=2, retriever="dense", runner=runner)
        store = P.case_store("dense-test", {"workers": workers}, tmp_path / f"w{workers}")
        cases = P.sweep(lab, "structural", [1, 2], store, progress=None, runner=runner)
        return cases.sort_values(["qid", "depth", "kind"]).to_dict("records")

    one, four = sweep(1), sweep(4)
    assert one == four and len(one) > 10
    code = """
        from rcakit.rag import protocol as P
        lab = P.build_lab(5, n_entities=300, n_questions=8, hops=2, retriever="dense")
        for qid in sorted(lab.clean):
            print(qid, [[d.id for d in h.docs] for h in lab.clean[qid].hops], lab.clean[qid].answer)
    """
    runs = [
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("0", "123")
    ]
    assert runs[0].returncode == 0 and runs[0].stdout == runs[1].stdout and runs[0].stdout.count("\n") == 8
    lab = P.build_lab(5, n_entities=300, n_questions=8, hops=2, retriever="dense")
    here = "".join(
        f"{qid} {[[d.id for d in h.docs] for h in lab.clean[qid].hops]} {lab.clean[qid].answer}\n"
        for qid in sorted(lab.clean)
    )
    assert here == runs[0].stdout


@pytest.mark.slow
@needs_dense
def test_the_model_loads_offline_and_quietly():
    code = """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        from rcakit.rag.embeddings import Encoder
        vector = Encoder().embed(["the founder of Wenund Systems"])[0]
        import os
        print(vector.shape[0], round(float((vector * vector).sum()), 4), os.environ["HF_HUB_OFFLINE"])
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["384", "1.0", "1"] and done.stderr == ""


@pytest.mark.slow
@needs_dense
def test_a_pickled_dense_retriever_starts_empty_and_searches_alike(world, encoder):
    q = world.questions[1]
    dense = R.DenseRetriever(world.context(q), encoder)
    queries = [f"the founder of {q.start}", f"{q.start} director", "zzz"]
    found = [dense.search(x, 5) for x in queries]
    copy = pickle.loads(pickle.dumps(dense))
    assert copy._matrix is None and copy.search.cache_info().currsize == 0
    assert copy.encoder is E.shared_encoder()
    assert [copy.search(x, 5) for x in queries] == found and all(found)
