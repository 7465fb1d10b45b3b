"""From a paper to reviews: an ensemble of structured reviews, an area-chair meta-review,
integrity checks that need no LLM, and a calibration harness (docs/review.md).

    result = review.review_paper("paper.pdf", llm, ReviewConfig(), executor=None)
    result.decision, result.overall, result.meta_review.reviews_used, result.integrity.checks
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import ConfigError
from engine.executor import Executor
from engine.journal import Journal
from engine.llm import LLM
from review.config import ReviewConfig
from review.ensemble import review_papers
from review.form import MetaReviewForm, ReviewForm
from review.paper import Paper, resolve
from review.result import REVIEW_JSON, MetaReview, ReviewRecord, ReviewResult, load_result


def review_paper(
    path: str | Path,
    llm: LLM,
    cfg: ReviewConfig,
    executor: Executor | None = None,
    *,
    journal: Journal | None = None,
) -> ReviewResult:
    """Review one paper (a PDF, or a LaTeX directory) and write review.json and review.md beside it."""
    papers = resolve(Path(path))
    if len(papers) != 1:
        raise ConfigError(f"{path}: holds {len(papers)} papers; use review.review_all for a run directory")
    return review_papers(papers, llm, cfg, executor, journal)[0]


def review_all(
    path: str | Path,
    llm: LLM,
    cfg: ReviewConfig,
    executor: Executor | None = None,
    *,
    journal: Journal | None = None,
) -> list[ReviewResult]:
    """Review every paper a path names (a run directory's papers are reviewed concurrently)."""
    return review_papers(resolve(Path(path)), llm, cfg, executor, journal)


__all__ = [
    "review_paper",
    "review_all",
    "review_papers",
    "resolve",
    "Paper",
    "ReviewConfig",
    "ReviewForm",
    "MetaReviewForm",
    "ReviewResult",
    "ReviewRecord",
    "MetaReview",
    "REVIEW_JSON",
    "load_result",
]
