"""Claim embeddings, novelty against a bank, and pruning the bank to K by greedy max-min distance.

Each claim is embedded from its statement and variables. Any object with `embed(texts) -> array
(n, d)` can stand in (the `Embedder` protocol). With an `embedding` role in the LLM config the
vectors come from the LLM gateway (`GatewayEmbedder`: an OpenAI or OpenAI-compatible embedding
model, accounted, cached per text); without one, offline TF-IDF (scikit-learn) is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from engine.llm import EMBEDDING_ROLE, LLM, BudgetExceeded, CacheMiss, LLMConfig, LLMError


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HasHypothesis(Protocol):
    statement: str
    variables: list[str]


def claim_text(h: HasHypothesis) -> str:
    """What is embedded for a claim: its statement and the variables it uses."""
    return f"{h.statement} {' '.join(h.variables)}"


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


class GatewayEmbedder:
    """Vectors from `LLM.embed` for the `embedding` role, attributed in the ledger to a node.

    A call that fails for good (retries exhausted, a malformed answer) is answered by TF-IDF for
    that call, and `fallback` says why: novelty and bank diversity guide the search, they are not
    worth a failed node. A replay's cache miss propagates (the replay diverged), and so does a
    spent budget in a job (`BudgetExceeded`: the run stops cleanly as for any other call); on the
    driver (`in_driver`), where no job can hand the refusal back, a spent budget falls back too.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        node_id: str | None = None,
        stage: str | None = None,
        idea: str | None = None,
        in_driver: bool = False,
    ) -> None:
        self.llm, self.node_id, self.stage, self.idea = llm, node_id, stage, idea
        self.in_driver = in_driver
        self.fallback = ""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1))
        try:
            vectors = self.llm.embed(list(texts), node_id=self.node_id, stage=self.stage, idea=self.idea)
        except CacheMiss:
            raise
        except BudgetExceeded as e:
            if not self.in_driver:
                raise
            self.fallback = f"LLM budget spent, TF-IDF used: {str(e)[:500]}"
            return TfidfEmbedder().embed(texts)
        except LLMError as e:
            self.fallback = f"embeddings call failed, TF-IDF used: {str(e)[:500]}"
            return TfidfEmbedder().embed(texts)
        return np.asarray(vectors, dtype=float)


def has_embedding_role(llm_cfg: LLMConfig | None) -> bool:
    """True when the run's LLM config maps the `embedding` role (so the gateway embeds)."""
    return llm_cfg is not None and EMBEDDING_ROLE in llm_cfg.roles


def make_embedder(
    llm: LLM | None,
    use_gateway: bool,
    *,
    node_id: str | None = None,
    stage: str | None = None,
    idea: str | None = None,
    in_driver: bool = False,
) -> GatewayEmbedder | TfidfEmbedder:
    """The gateway's embeddings when an embedding role is configured, else offline TF-IDF."""
    if use_gateway and llm is not None:
        return GatewayEmbedder(llm, node_id=node_id, stage=stage, idea=idea, in_driver=in_driver)
    return TfidfEmbedder()


def fallback_reason(embedder: Embedder) -> str:
    """Why TF-IDF answered instead of the gateway ("" when it did not)."""
    return embedder.fallback if isinstance(embedder, GatewayEmbedder) else ""


def cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    nb = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.clip(1.0 - na @ nb.T, 0.0, 2.0)


def novelty(candidates: Sequence[str], bank: Sequence[str], embedder: Embedder) -> list[float]:
    """Per candidate: cosine distance to the nearest bank claim (1.0 with an empty bank)."""
    if not bank:
        return [1.0] * len(candidates)
    vecs = embedder.embed([*candidates, *bank])
    d = cosine_distances(vecs[: len(candidates)], vecs[len(candidates) :])
    return [float(x) for x in d.min(axis=1)]


def prune_max_min(
    ids: Sequence[str], texts: Sequence[str], capacity: int, embedder: Embedder, keep_first: str | None = None
) -> list[str]:
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
