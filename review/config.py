"""The `review:` section of a run config: how many reviewers, how they think, what is checked.

Reviewing is the last phase of a run when this section is present; `silva review` reads the same
section from the config it is given (or from a run directory's config snapshot).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.llm.config import LLMConfig
from review.guidelines import PERSONAS


class ReviewConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reviews: int = Field(5, ge=1, le=20, description="independent reviews per paper")
    temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="sampling temperature of the `review` role; null keeps llm.roles.review.temperature",
    )
    personas: list[str] = Field(
        default_factory=lambda: ["balanced"],
        min_length=1,
        description=f"reviewer k takes personas[k % len]: a built-in name ({', '.join(PERSONAS)}) "
        "or a sentence describing the reviewer",
    )
    reflection_rounds: int = Field(0, ge=0, le=5, description="times each reviewer revisits its own review")
    page_limit: int | None = Field(
        9, ge=1, description="pages of main text before the references; null: no limit"
    )
    page_images: int = Field(
        0, ge=0, le=20, description="first pages sent as images to the reviewers (needs a vision model)"
    )
    max_paper_chars: int = Field(60_000, ge=2_000, description="paper text shown to a reviewer, cut beyond")
    max_parallel: int = Field(8, ge=1, description="reviews in flight at once when Silva makes the executor")
    text_width_in: float = Field(5.5, gt=0, description="printed text width, for the figure-size check")
    min_figure_font_pt: float = Field(
        5.0, gt=0, description="estimated printed size of a figure's 10 pt text below which it is too small"
    )
    llm_claims: bool = Field(
        False,
        description="the claims check's model layer: the review model also extracts every comparative "
        "statement into a typed record checked against the ledger (LLM calls per paper; off by default)",
    )

    @field_validator("personas")
    @classmethod
    def _known_personas(cls, value: list[str]) -> list[str]:
        for p in value:
            # One word is meant as a built-in name: a typo must not become a one-word reviewer.
            if " " not in p.strip() and p not in PERSONAS:
                raise ValueError(
                    f"unknown persona {p!r}: use one of {', '.join(PERSONAS)} or a sentence describing the "
                    "reviewer"
                )
        return value

    def persona(self, index: int) -> str:
        return self.personas[index % len(self.personas)]


def llm_for_review(llm: LLMConfig, cfg: ReviewConfig) -> LLMConfig:
    """The LLM config with the review section's temperature on the `review` role (the gateway
    samples at the role's temperature). Unchanged when the section leaves it unset."""
    if cfg.temperature is None or "review" not in llm.roles:
        return llm
    role = llm.roles["review"].model_copy(update={"temperature": cfg.temperature})
    return llm.model_copy(update={"roles": {**llm.roles, "review": role}})
