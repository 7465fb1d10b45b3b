"""What a hypothesis is and what its test returned: the typed records shared by the job, the
gates and the claim store (validated on the host: the sandbox's file is untrusted)."""

from __future__ import annotations

import ast
import json
import math
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_RESULT_BYTES = 200_000
# Effects on the correlation scale; the gate reads them as Cohen's d (docs/discovery.md, "One effect scale").
R_SCALE = frozenset({"r", "rho", "standardized_beta", "phi", "cramers_v"})
MAX_R = 0.999999


def as_d(effect: float, effect_name: str) -> float:
    """The effect as Cohen's d: d itself, or r (and its kin) as for two equal groups,
    d = 2r / sqrt(1 - r^2), so that one `min_effect` means one effect size whatever the tool."""
    if effect_name not in R_SCALE:
        return effect
    r = max(min(effect, MAX_R), -MAX_R)
    return 2 * r / math.sqrt(1 - r * r)


ClaimStatus = Literal[
    "proposed",
    "accepted",
    "rejected",
    "supported",
    "weakened",
    "refuted",
    "inconclusive",
    "explained",
    "duplicate",
    "spurious",
]
STATUSES: tuple[ClaimStatus, ...] = get_args(ClaimStatus)
GOOD: tuple[ClaimStatus, ...] = ("accepted", "supported")  # the statuses of a claim Silva stands behind
# Tests that re-analyse an association adjusted for, or within strata of, other variables.
ADJUSTED_TESTS = frozenset(
    {"ols_regression", "stratified_fixed_effect", "cmh", "stratified_g_test", "partial_correlation"}
)


class Hypothesis(BaseModel):
    """A hypothesis as the LLM writes it: a statement and the analysis code that tests it."""

    statement: str = Field(min_length=3, max_length=2000, description="the claim in one sentence")
    h0: str = Field(min_length=3, max_length=1000, description="null hypothesis")
    h1: str = Field(min_length=3, max_length=1000, description="alternative hypothesis")
    variables: list[str] = Field(min_length=1, max_length=20, description="columns the test uses")
    expected_sign: Literal[-1, 0, 1] = Field(
        0, description="+1 / -1 when H1 predicts a direction, 0 two-sided"
    )
    rationale: str = Field("", max_length=2000)
    refines: str = Field(
        "", max_length=40, description="id of an earlier hypothesis this one refines or re-analyses"
    )
    code: str = Field(
        min_length=10, max_length=20_000, description="Python using silva_stats; ends with st.record(...)"
    )


def hypothesis_key(h: Hypothesis) -> str:
    """What makes two hypotheses one test: the code with comments and layout normalized away (its
    syntax tree), the variables as a set and the predicted sign."""
    try:
        code = ast.dump(ast.parse(h.code))
    except SyntaxError:
        code = " ".join(
            line.split("#")[0].strip() for line in h.code.splitlines() if line.split("#")[0].strip()
        )
    return json.dumps([code, sorted(set(h.variables)), h.expected_sign])


class Check(BaseModel):
    ok: bool
    detail: str = Field("", max_length=500)


class TestOutcome(BaseModel):
    """The hypothesis code's `silva_test.json`, written by `silva_stats.record`."""

    model_config = ConfigDict(extra="ignore")

    test: str = Field(max_length=80)
    effect: float
    effect_name: str = Field(max_length=80)
    p: float = Field(ge=0, le=1)
    log_p: float = Field(le=0)
    n: int = Field(ge=0)
    assumptions: dict[str, Check] = Field(default_factory=dict, max_length=50)
    estimates: dict[str, Any] = Field(default_factory=dict)
    expected_sign: Literal[-1, 0, 1] = 0
    figures: list[str] = Field(default_factory=list, max_length=8)

    @field_validator("effect", "log_p")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @property
    def sign(self) -> int:
        return (self.effect > 0) - (self.effect < 0)

    @property
    def effect_d(self) -> float:
        """The effect on the gate's one scale, Cohen's d (`as_d`)."""
        return as_d(self.effect, self.effect_name)

    @property
    def adjusted_for(self) -> list[str]:
        """What an adjusted or stratified test conditions on ([] for a marginal test)."""
        if self.test not in ADJUSTED_TESTS:
            return []
        names = self.estimates.get("adjusted_for")
        return [str(x) for x in names] if isinstance(names, list) else []

    @property
    def pair(self) -> frozenset[str]:
        """The two variables an adjusted test relates (empty when it does not say)."""
        names = self.estimates.get("pair")
        return (
            frozenset(str(x) for x in names) if isinstance(names, list) and len(names) == 2 else frozenset()
        )

    def brief(self) -> str:
        return f"{self.test}: {self.effect_name}={self.effect:+.3f}, log p={self.log_p:.2f}, n={self.n}"
