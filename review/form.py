"""The review form and the area chair's meta-review form: structured LLM outputs, validated.

The field descriptions are part of the JSON schema the model is given, so they say what each
field is for in the reviewer's terms.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Decision = Literal["accept", "reject"]
SCORES: tuple[str, ...] = ("soundness", "presentation", "contribution", "overall", "confidence")


class ReviewForm(BaseModel):
    """One reviewer's assessment of a research paper."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1, description="what the paper claims and how it supports the claims, in your words"
    )
    strengths: list[str] = Field(description="specific strengths, each one point")
    weaknesses: list[str] = Field(description="specific weaknesses, each one point, most serious first")
    questions: list[str] = Field(description="questions whose answers could change your assessment")
    limitations: list[str] = Field(
        description="limitations the paper does not acknowledge, or acknowledges too weakly"
    )
    ethical_concerns: list[str] = Field(description="ethical concerns; an empty list when there are none")
    soundness: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    presentation: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    contribution: int = Field(ge=1, le=4, description="1 poor, 2 fair, 3 good, 4 excellent")
    overall: int = Field(
        ge=1, le=10, description="1 very strong reject ... 6 marginal accept ... 10 award quality"
    )
    confidence: int = Field(ge=1, le=5, description="1 educated guess ... 5 certain, checked the details")
    decision: Decision


class MetaReviewForm(BaseModel):
    """The area chair's meta-review, written from the reviews of one paper."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, description="the paper and the reviewers' assessment, in a paragraph")
    strengths: list[str] = Field(description="strengths the reviewers agree on")
    weaknesses: list[str] = Field(description="weaknesses that weigh on the decision")
    disagreements: list[str] = Field(
        description="where reviewers disagree, and which side you find convincing"
    )
    soundness: int = Field(ge=1, le=4)
    presentation: int = Field(ge=1, le=4)
    contribution: int = Field(ge=1, le=4)
    overall: int = Field(ge=1, le=10)
    confidence: int = Field(ge=1, le=5)
    decision: Decision
