"""What a plan assumes where no previous run says otherwise (docs/plan.md, "Defaults"),
and the lines that print it."""

from __future__ import annotations

import math
import random

from pydantic import BaseModel, Field, field_validator

from engine.llm.prices import resolve_model
from silva.config import RunConfig

LEDGER_FILE = "llm_ledger.jsonl"
PAPER, REVIEW = "paper", "review"  # the phases' node kinds (silva/paper_phases.py)
LLM_STEPS = ("think", "judge", "selection")  # jobs that wait on an LLM and hold no slot
SUPPORT = frozenset({"aggregation", "selection", PAPER, REVIEW})  # node kinds that are no search node


class Lognormal(BaseModel):
    """A duration in seconds: lognormal with this median and log-space sigma."""

    median_s: float = Field(gt=0)
    sigma: float = Field(0.5, ge=0)

    def draw(self, rng: random.Random) -> float:
        return self.median_s * math.exp(self.sigma * rng.gauss(0.0, 1.0))


class LLMRole(BaseModel):
    """One LLM role's calls: latency, tokens, and how many calls one job makes."""

    model_config = {"extra": "forbid"}

    latency: Lognormal
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    calls: int = Field(1, ge=1, description="calls one job makes (a writeup: its sections and fixes)")


# Hosted models in late 2026 (docs/plan.md, "Defaults"): code-writing calls of 30-120 s and
# judgements of 5-20 s (5th to 95th percentile: a lognormal of sigma 0.42 about the median).
DEFAULT_ROLES = {
    "code": LLMRole(latency=Lognormal(median_s=60.0, sigma=0.42), input_tokens=8000, output_tokens=4000),
    "feedback": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=6000, output_tokens=600),
    "vision": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=3000, output_tokens=400),
    "selection": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=4000, output_tokens=300),
    "writeup": LLMRole(
        latency=Lognormal(median_s=60.0, sigma=0.42), input_tokens=20000, output_tokens=3000, calls=25
    ),
    "review": LLMRole(
        latency=Lognormal(median_s=40.0, sigma=0.42), input_tokens=15000, output_tokens=2000, calls=6
    ),
    # One idea of a rolling forest: a draft, its reflections, its novelty rounds (`calls` is
    # replaced by the section's own count); made ahead of the slots, so only its price counts.
    "ideation": LLMRole(latency=Lognormal(median_s=30.0, sigma=0.42), input_tokens=4000, output_tokens=1500),
}


DEFAULT_DURATIONS = {
    "default": Lognormal(median_s=1200.0, sigma=0.75),  # an experiment: 20 min median
    "aggregation": Lognormal(median_s=5.0, sigma=0.3),
    "selection": Lognormal(median_s=10.0, sigma=0.42),
    PAPER: Lognormal(median_s=60.0, sigma=0.3),  # the offline results report
    REVIEW: Lognormal(median_s=120.0, sigma=0.42),
}


class PlanSettings(BaseModel):
    """What a plan assumes where no previous run says otherwise (docs/plan.md, "Defaults")."""

    model_config = {"extra": "forbid"}

    durations: dict[str, Lognormal] = Field(
        default_factory=lambda: dict(DEFAULT_DURATIONS),
        description="per node kind; `default` for experiment kinds not named",
    )
    buggy: dict[str, float] = Field(
        default_factory=dict, description="per node kind: the share of attempts that fail"
    )
    ideas_failing: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="the share of ideas whose every experiment fails (failures that come together: "
        "a bad idea, a machine too loaded for it); the other ideas' attempts fail at `buggy`",
    )
    llm: dict[str, LLMRole] = Field(
        default_factory=lambda: dict(DEFAULT_ROLES), description="per LLM role: latency and tokens a call"
    )

    # A file that names some kinds or roles overrides those: the others keep their defaults (a
    # file naming only `default` left aggregations at 20 minutes, holding 16% of the slots).
    @field_validator("durations", mode="after")
    @classmethod
    def _other_kinds_kept(cls, v: dict[str, Lognormal]) -> dict[str, Lognormal]:
        return {**DEFAULT_DURATIONS, **v}

    @field_validator("llm", mode="after")
    @classmethod
    def _other_roles_kept(cls, v: dict[str, LLMRole]) -> dict[str, LLMRole]:
        return {**DEFAULT_ROLES, **v}


def instant_scripted(cfg: RunConfig, settings: PlanSettings) -> PlanSettings:
    """Roles a scripted provider answers (the offline examples) take no time: a fact of the
    config, where the defaults assume a hosted model's latency."""
    if cfg.llm is None:
        return settings
    roles = dict(settings.llm)
    for role, rc in cfg.llm.roles.items():
        if cfg.llm.providers[resolve_model(cfg.llm, rc.model).provider].kind == "scripted":
            r = roles.get(role) or roles["feedback"]
            roles[role] = r.model_copy(update={"latency": Lognormal(median_s=1e-3, sigma=0.0)})
    return settings.model_copy(update={"llm": roles})


def scaled(settings: PlanSettings, experiments: float = 1.0, llm: float = 1.0) -> PlanSettings:
    """The settings with every experiment duration (not aggregation, selection, paper, review)
    and every LLM latency multiplied."""
    durations = {
        k: d if k in SUPPORT else d.model_copy(update={"median_s": d.median_s * experiments})
        for k, d in settings.durations.items()
    }
    roles = {
        k: r.model_copy(
            update={"latency": r.latency.model_copy(update={"median_s": r.latency.median_s * llm})}
        )
        for k, r in settings.llm.items()
    }
    return settings.model_copy(update={"durations": durations, "llm": roles})


def assumptions(settings: PlanSettings) -> list[str]:
    """What a plan without --from assumed, one line each."""
    lines = [
        f"{kind} duration: lognormal, median {d.median_s:g} s, sigma {d.sigma:g}"
        for kind, d in settings.durations.items()
    ]
    lines += [f"{kind} attempts failing: {share:.0%}" for kind, share in settings.buggy.items()]
    lines += [
        f"ideas failing whole: {settings.ideas_failing:.0%} (every experiment of such an idea fails; the "
        "others' attempts fail on their own at their kind's share)"
    ]
    lines += [
        f"LLM {role}: {r.calls} call(s) a job, latency median {r.latency.median_s:g} s (sigma "
        f"{r.latency.sigma:g}), {r.input_tokens} tokens in, {r.output_tokens} out"
        for role, r in settings.llm.items()
    ]
    return lines
