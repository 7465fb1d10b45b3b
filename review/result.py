"""What reviewing a paper produces: review.json (validated on the way out and in) and review.md."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from review.config import ReviewConfig
from review.form import SCORES, STORED, Decision, MetaReviewForm, ReviewForm
from review.integrity import IntegrityReport

REVIEW_JSON = "review.json"
REVIEW_MD = "review.md"


class ReviewRecord(BaseModel):
    """One reviewer's outcome: a validated form, or why there is none."""

    index: int
    persona: str
    status: Literal["ok", "failed"]
    form: ReviewForm | None = None
    error: str = Field(
        "", description="why it failed; or a reflection round that failed after a valid review"
    )
    reflections: int = Field(0, description="reflection rounds completed")
    started_at: float = 0.0
    finished_at: float = 0.0
    worker: str = ""


class ScoreStats(BaseModel):
    mean: float
    std: float
    min: float
    max: float


def aggregate(forms: list[ReviewForm]) -> dict[str, ScoreStats]:
    out = {}
    for name in SCORES:
        values = [float(getattr(f, name)) for f in forms]
        out[name] = ScoreStats(
            mean=statistics.fmean(values),
            std=statistics.stdev(values) if len(values) > 1 else 0.0,
            min=min(values),
            max=max(values),
        )
    return out


class MetaReview(BaseModel):
    """The area chair's meta-review, with how many reviews it rests on."""

    reviews_used: int
    reviews_failed: int
    accept_votes: int
    aggregate: dict[str, ScoreStats]
    form: MetaReviewForm | None = None
    error: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0


class ReviewResult(BaseModel):
    paper: str
    title: str
    idea: str | None = None
    config: ReviewConfig
    reviews: list[ReviewRecord]
    meta_review: MetaReview | None = Field(None, description="None when no review succeeded")
    decision: Decision | None = Field(
        None, description="the area chair's; None when there is no meta-review form"
    )
    overall: float | None = Field(None, description="the area chair's overall score, else the reviews' mean")
    integrity: IntegrityReport
    created_at: float

    @property
    def reviews_used(self) -> int:
        return sum(r.status == "ok" for r in self.reviews)

    def write(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / REVIEW_JSON).write_text(self.model_dump_json(indent=2) + "\n")
        (out_dir / REVIEW_MD).write_text(render_markdown(self))
        return out_dir / REVIEW_JSON


def load_result(path: Path) -> ReviewResult:
    return ReviewResult.model_validate_json(path.read_text(), context=STORED)


def _items(title: str, items: list[str]) -> list[str]:
    return [f"**{title}**", ""] + ([f"- {i}" for i in items] or ["- none"]) + [""]


def _form_lines(form: ReviewForm | MetaReviewForm) -> list[str]:
    scores = ", ".join(f"{n} {getattr(form, n)}" for n in SCORES)
    lines = [f"Scores: {scores}. Decision: **{form.decision}**.", "", form.summary, ""]
    lines += _items("Strengths", form.strengths) + _items("Weaknesses", form.weaknesses)
    if isinstance(form, MetaReviewForm):
        lines += _items("Disagreements", form.disagreements)
    else:
        lines += _items("Questions", form.questions) + _items("Limitations", form.limitations)
        lines += _items("Ethical concerns", form.ethical_concerns)
    return lines


def render_markdown(result: ReviewResult) -> str:
    used, total = result.reviews_used, len(result.reviews)
    lines = [f"# Review: {result.title}", "", f"Paper: `{result.paper}`", ""]
    decision = result.decision or "none (no meta-review)"
    overall = f"{result.overall:.2f}" if result.overall is not None else "n/a"
    lines += [f"**Decision: {decision}** · overall {overall} · {used} of {total} review(s) used", ""]
    meta = result.meta_review
    if meta is not None:
        lines += [
            "## Meta-review (area chair)",
            "",
            f"Based on {meta.reviews_used} review(s); {meta.reviews_failed} failed. "
            f"Accept votes: {meta.accept_votes} of {meta.reviews_used}.",
            "",
            "| score | mean | sd | min | max |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {n} | {s.mean:.2f} | {s.std:.2f} | {s.min:g} | {s.max:g} |" for n, s in meta.aggregate.items()
        ]
        lines.append("")
        lines += (
            _form_lines(meta.form) if meta.form is not None else [f"The meta-review failed: {meta.error}", ""]
        )
    lines += ["## Integrity checks (no LLM)", "", "| check | status | detail |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.status} | {c.detail} |" for c in result.integrity.checks]
    lines.append("")
    lines += [f"- {line}" for line in result.integrity.lines(limit=100)] + [""]
    for r in result.reviews:
        lines += [f"## Review {r.index + 1} ({r.persona[:60]})", ""]
        if r.form is None:
            lines += [f"Failed: {r.error}", ""]
            continue
        if r.error:
            lines += [f"Note: {r.error}", ""]
        lines += _form_lines(r.form)
    return "\n".join(lines)
