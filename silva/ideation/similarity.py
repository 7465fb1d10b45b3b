"""Duplicate detection by text similarity: TF-IDF vectors (scikit-learn) of title, hypothesis and
abstract, compared by cosine. Offline, deterministic, no model download."""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import ConfigError


def idea_text(idea: dict[str, object]) -> str:
    return " ".join(str(idea.get(k, "")) for k in ("title", "hypothesis", "abstract"))


def most_similar(text: str, others: Sequence[str]) -> tuple[int, float] | None:
    """Index and cosine similarity of the archived text closest to `text` (None if none)."""
    if not others:
        return None
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity
    except ImportError:
        raise ConfigError("ideation needs scikit-learn for duplicate detection: pip install 'silva[ideation]'") from None
    vectors = TfidfVectorizer(stop_words="english", ngram_range=(1, 2), sublinear_tf=True).fit_transform([text, *others])
    sims = cosine_similarity(vectors[0], vectors[1:])[0]
    best = int(sims.argmax())
    return best, float(sims[best])
