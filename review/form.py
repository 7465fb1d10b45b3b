"""The review form and the area chair's meta-review form: structured LLM outputs, validated.

The field descriptions are part of the JSON schema the model is given, so they say what each
field is for in the reviewer's terms.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

Decision = Literal["accept", "reject"]
# Bounded strings and lists: a small model's grammar-constrained answer must close every string
# within max_tokens; a bound it cannot exceed keeps the whole form inside the answer.
Point = Annotated[str, Field(max_length=240)]
SUMMARY_CHARS = 800
SCORES: tuple[str, ...] = ("soundness", "presentation", "contribution", "overall", "confidence")
ACCEPT_FROM = 6  # the overall score from which the form's scale reads "accept" (6 marginal accept)


STORED = {"stored": True}  # validation context of a form read back from disk: taken as written


def _agrees(overall: int, decision: Decision, info: ValidationInfo) -> None:
    """A decision the overall score contradicts ("accept" at overall 1) is not a review: the model's
    answer is re-asked like any that does not validate. A stored form (an older run's) reads as written."""
    if info.context == STORED:
        return
    if (decision == "accept") != (overall >= ACCEPT_FROM):
        raise ValueError(
            f"decision {decision!r} contradicts overall {overall}: accept from {ACCEPT_FROM} up, reject below"
        )


class ReviewForm(BaseModel):
    """One reviewer's assessment of a research paper."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        max_length=SUMMARY_CHARS,
        description="what the paper claims and how it supports the claims, in your words",
    )
    strengths: list[Point] = Field(max_length=5, description="specific strengths, each one point")
    weaknesses: list[Point] = Field(
        max_length=5, description="specific weaknesses, each one point, most serious first"
    )
    questions: list[Point] = Field(
        max_length=5, description="questions whose answers could change your assessment"
    )
    limitations: list[Point] = Field(
        max_length=5, description="limitations the paper does not acknowledge, or acknowledges too weakly"
    )
    ethical_concerns: list[Point] = Field(
        max_length=5, description="ethical concerns; an empty list when there are none"
    )
    soundness: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    presentation: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    contribution: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    overall: int = Field(
        ge=1, le=10, description="1 very strong reject ... 6 marginal accept ... 10 award quality"
    )
    confidence: int = Field(ge=1, le=5, description="1 educated guess ... 5 certain, checked the details")
    decision: Decision = Field(description=f"accept when overall is {ACCEPT_FROM} or more, else reject")

    @model_validator(mode="after")
    def _decision_follows_overall(self, info: ValidationInfo) -> ReviewForm:
        _agrees(self.overall, self.decision, info)
        return self


class PartNotes(BaseModel):
    """A reviewer's notes on one part of a paper too long for the model to read at once."""

    model_config = ConfigDict(extra="forbid")

    notes: list[Point] = Field(
        max_length=6, description="what this part claims, shows and lacks, each note one point"
    )


class MetaReviewForm(BaseModel):
    """The area chair's meta-review, written from the reviews of one paper."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        max_length=SUMMARY_CHARS,
        description="the paper and the reviewers' assessment, in a paragraph",
    )
    strengths: list[Point] = Field(max_length=5, description="strengths the reviewers agree on")
    weaknesses: list[Point] = Field(max_length=5, description="weaknesses that weigh on the decision")
    disagreements: list[Point] = Field(
        max_length=5, description="where reviewers disagree, and which side you find convincing"
    )
    soundness: int = Field(ge=1, le=4)
    presentation: int = Field(ge=1, le=4)
    contribution: int = Field(ge=1, le=4)
    overall: int = Field(ge=1, le=10)
    confidence: int = Field(ge=1, le=5)
    decision: Decision = Field(description=f"accept when overall is {ACCEPT_FROM} or more, else reject")

    @model_validator(mode="after")
    def _decision_follows_overall(self, info: ValidationInfo) -> MetaReviewForm:
        _agrees(self.overall, self.decision, info)
        return self
