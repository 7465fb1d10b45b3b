"""Claim embeddings, novelty against a bank, and pruning the bank to K by greedy max-min distance.

Embeddings are offline TF-IDF (scikit-learn) of each claim's statement and variables. Any object
with `embed(texts) -> array (n, d)` can stand in (the `Embedder` protocol): the LLM gateway has
no embeddings call yet, so TF-IDF is what runs today.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class TfidfEmbedder:
    """Word and bigram TF-IDF fitted on the texts at hand, rows L2-normalised."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not texts:
            return np.zeros((0, 1))
        try:
            matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(list(texts))
        except ValueError:  # only stop words or empty strings: every text is alike
            return np.ones((len(texts), 1))
        return np.asarray(matrix.todense())


def cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    nb = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.clip(1.0 - na @ nb.T, 0.0, 2.0)


def novelty(candidates: Sequence[str], bank: Sequence[str], embedder: Embedder) -> list[float]:
    """Per candidate: cosine distance to the nearest bank claim (1.0 with an empty bank)."""
    if not bank:
        return [1.0] * len(candidates)
    vecs = embedder.embed([*candidates, *bank])
    d = cosine_distances(vecs[: len(candidates)], vecs[len(candidates):])
    return [float(x) for x in d.min(axis=1)]


def prune_max_min(ids: Sequence[str], texts: Sequence[str], capacity: int, embedder: Embedder,
                  keep_first: str | None = None) -> list[str]:
    """The `capacity` ids chosen greedily so that each added one is the farthest (max over the
    remaining of the min distance to those kept) from those already kept.

    Starts from `keep_first` (the newest claim, so a fresh finding is never pruned on arrival)
    or the first id; ties go to the earlier id, so the result is deterministic."""
    if len(ids) <= capacity:
        return list(ids)
    vecs = embedder.embed(list(texts))
    dist = cosine_distances(vecs, vecs)
    start = ids.index(keep_first) if keep_first in ids else 0
    kept = [start]
    nearest = dist[start].copy()
    while len(kept) < capacity:
        nearest[kept] = -1.0
        nxt = int(np.argmax(nearest))
        kept.append(nxt)
        nearest = np.minimum(nearest, dist[nxt])
    return [ids[i] for i in sorted(kept)]
