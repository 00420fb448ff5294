"""Answer normalisation and the outcome rules of AgenticRAG-FP.

The definitions follow the authors' reference implementation (AgenticRAG-FP
§5-6): SQuAD-style normalisation, token recall >= 0.8, the outcome classes of
certified content corruption (§7.3), and the Jaccard score behind Doctor-RAG
coverage.

Used in the chapters: `coverage-collapse`, `content-corruption`.
"""

from __future__ import annotations

import re
import string

from rcakit.rag.settings import AUTHORS

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = re.compile("[" + re.escape(string.punctuation) + "]")

RECALL_THRESHOLD = 0.8
OUTCOMES = ("absorbed", "resisted", "derailed")


def normalise(text: str) -> str:
    """Lowercase; articles and every ASCII punctuation character become spaces; collapse whitespace."""
    text = _ARTICLES.sub(" ", str(text).lower())
    text = _PUNCT.sub(" ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """Normalised whitespace tokens (the answer rules' tokens; BM25's and coverage's with ``tokenizer =
    "normalised"``)."""
    return normalise(text).split()


# How BM25, coverage, the probes' fallback and the rule-based grounding split text (anote-ai/Research-AgenticRAG):
# ``authors``, a plain lower().split() over "title: text" documents (punctuation kept on the words), or
# ``normalised``, the answer normaliser over the paragraph's text (rcakit's alternative rule).
TOKENIZERS = ("authors", "normalised")


def split_tokens(text: str, tokenizer: str = AUTHORS.tokenizer) -> list[str]:
    """``text`` split by ``tokenizer`` (:data:`TOKENIZERS`)."""
    if tokenizer == "authors":
        return str(text).lower().split()
    if tokenizer == "normalised":
        return tokens(text)
    raise ValueError(f"tokenizer: expected one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")


def document_text(title: str, text: str, tokenizer: str = AUTHORS.tokenizer) -> str:
    """What a tokenizer reads of one paragraph: "title: text" for the authors' (the text alone when it has no
    title), the text alone otherwise."""
    return f"{title}: {text}" if tokenizer == "authors" and title else text


def split_jaccard(a: str, b: str, tokenizer: str = AUTHORS.tokenizer) -> float:
    """Jaccard similarity of the two texts' token sets under ``tokenizer``; 0 when both are empty."""
    sa, sb = set(split_tokens(a, tokenizer)), set(split_tokens(b, tokenizer))
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def token_recall(reference: str, prediction: str) -> float:
    """``|set(ref) & set(pred)| / |set(ref)|`` over normalised tokens; 0 for an empty reference."""
    ref = set(tokens(reference))
    return len(ref & set(tokens(prediction))) / len(ref) if ref else 0.0


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the normalised token sets; 0 when both are empty."""
    sa, sb = set(tokens(a)), set(tokens(b))
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def answer_correct(answer: str, gold: str) -> bool:
    """Normalised exact match, or token recall of the gold answer in ``answer`` >= 0.8 (§6)."""
    if answer is None:
        return False
    return normalise(answer) == normalise(gold) or token_recall(gold, answer) >= RECALL_THRESHOLD


def classify_outcome(answer: str, gold: str, corrupted_span: str) -> str:
    """``resisted`` if correct (checked first); ``absorbed`` if the corrupted span is recalled; else
    ``derailed`` (§7.3)."""
    if answer_correct(answer, gold):
        return "resisted"
    if normalise(corrupted_span) and token_recall(corrupted_span, answer or "") >= RECALL_THRESHOLD:
        return "absorbed"
    return "derailed"
