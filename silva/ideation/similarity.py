"""Duplicate detection: cosine similarity of idea texts (title, hypothesis and abstract).

With an `embedding` role in the topic file's `llm:` section the vectors come from the LLM gateway
(`LLM.embed`: accounted in the archive's ledger, cached per text, so re-embedding the archive for
each new idea costs only the new idea). Without one, TF-IDF vectors (scikit-learn) of the texts
at hand: offline, deterministic, no model download.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.errors import ConfigError
from engine.llm import LLM


def idea_text(idea: dict[str, object]) -> str:
    return " ".join(str(idea.get(k, "")) for k in ("title", "hypothesis", "abstract"))


def most_similar(text: str, others: Sequence[str], llm: LLM | None = None) -> tuple[int, float] | None:
    """Index and cosine similarity of the archived text closest to `text` (None if none).
    `llm`: embed through its `embedding` role; None: TF-IDF."""
    if not others:
        return None
    sims = (
        _embedding_similarities(text, others, llm) if llm is not None else _tfidf_similarities(text, others)
    )
    best = int(sims.argmax())
    return best, float(sims[best])


def _embedding_similarities(text: str, others: Sequence[str], llm: LLM) -> np.ndarray:
    vectors = np.asarray(llm.embed([text, *others], stage="ideation"), dtype=float)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return unit[1:] @ unit[0]


def _tfidf_similarities(text: str, others: Sequence[str]) -> np.ndarray:
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity
    except ImportError:
        raise ConfigError(
            "ideation needs scikit-learn for duplicate detection: pip install 'silva[ideation]'"
        ) from None
    vectors = TfidfVectorizer(stop_words="english", ngram_range=(1, 2), sublinear_tf=True).fit_transform(
        [text, *others]
    )
    return np.asarray(cosine_similarity(vectors[0], vectors[1:])[0])
