"""Prompts and structured outputs of the discovery policies.

What a prompt may contain: the train part's description, the prior information, the tool
library, earlier hypotheses with their TRAIN evidence and train-gate verdict, Reflect's guidance
and the bank. Never held-out numbers or held-out verdicts: a proposal that could see them would
make the held-out test adaptive and its p-values meaningless.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from search.discovery.evidence import Hypothesis, TestOutcome

SYSTEM = (
    "You are a careful data scientist doing hypothesis-driven discovery on a table. Each hypothesis "
    "you write is tested by the analysis code you write with it, run in a sandbox on the training "
    "part of the data. Prefer specific, falsifiable claims about the data at hand over what is "
    "commonly believed: an effect is accepted only if the data support it and it replicates on "
    "data you never see."
)

TOOLS = """Statistical tools (module `silva_stats`, imported as `st`; \
each returns effect, p, log_p, n, assumptions):
- st.load() -> pandas DataFrame of the data (no other file is readable)
- st.compare_groups(df, outcome, group, a=None, b=None, method="welch"|"mannwhitney")  \
effect: Cohen's d of a minus b
- st.correlation(df, x, y, method="pearson"|"spearman")  effect: r
- st.regression(df, outcome, predictor, covariates=[...])  effect: standardized beta adjusted for covariates
- st.interaction(df, outcome, a, b, covariates=[...])  effect: standardized a:b interaction
- st.stratified(df, outcome, predictor, strata)  \
effect: pooled within-stratum standardized slope (confound check)
- st.contingency(df, a, b)  effect: phi (2x2, signed) or Cramér's V
- st.enrichment(df, feature, selected)  effect: d from the log odds ratio (one-sided over-representation)
- st.conditional_independence(df, a, b, given=[...])  discrete columns: stratified G-test \
within strata of `given`; effect: Cramér's V
- st.cmh(df, a, b, given=[...])  two binary columns: Cochran-Mantel-Haenszel across strata of `given`; \
effect: d from the pooled odds ratio
Gates compare every effect as Cohen's d (r, beta, phi and V converted). Test discrete (integer-coded) \
columns with the contingency tools, not as linear predictors; a stratified or adjusted check of an \
earlier claim names it in `refines`.
The code must end with exactly one st.record(result, expected_sign=..., figures=[...]) for the test of H1.
expected_sign: +1 or -1 when H1 predicts the sign of the effect, 0 when two-sided. \
Printed output is ignored."""


class ScoredHypothesis(Hypothesis):
    plausibility: float = Field(ge=0, le=1, description="how likely the claim is true, 0..1")


class SeedCandidates(BaseModel):
    candidates: list[ScoredHypothesis] = Field(min_length=1, max_length=12)


class Reflection(BaseModel):
    """DiscoPER's Reflect: the hypotheses so far treated as data."""

    gaps: list[str] = Field(
        default_factory=list, max_length=10, description="regions of the data not explored"
    )
    confounds: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="train-passing effects that may vanish when stratified, and by what",
    )
    compounds: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="conjunctions of train-passing hypotheses worth testing together",
    )

    def guidance(self) -> str:
        parts = [("Gap", self.gaps), ("Confound", self.confounds), ("Compound", self.compounds)]
        return "\n".join(f"- {label}: {item}" for label, items in parts for item in items)


@dataclass(frozen=True)
class Tested:
    """An earlier hypothesis as a prompt may show it: train evidence and train verdict only."""

    id: str
    hypothesis: Hypothesis
    evidence: TestOutcome | None
    train_verdict: str  # passed the train gate / failed it / no result

    def line(self) -> str:
        ev = self.evidence.brief() if self.evidence else "no test result"
        return f"- [{self.id}] {self.hypothesis.statement} | {ev} | {self.train_verdict}"


@dataclass(frozen=True)
class Context:
    dataset: str
    prior: str
    iteration: int
    history: list[Tested] = field(default_factory=list)
    guidance: str = ""
    inflight: int = 0


def _common(ctx: Context) -> list[str]:
    out = [f"## Dataset\n{ctx.dataset}"]
    if ctx.prior:
        out.append(f"## Prior information\n{ctx.prior}")
    out.append(f"## Tools\n{TOOLS}")
    return out


def hypothesis_prompt(ctx: Context) -> str:
    parts = [f"Proposal #{ctx.iteration} of this discovery run.", *_common(ctx)]
    if ctx.guidance:
        parts.append(f"## Guidance from reflection on the hypotheses so far\n{ctx.guidance}")
    if ctx.history:
        parts.append(
            "## Hypotheses already tested (training evidence)\n" + "\n".join(t.line() for t in ctx.history)
        )
    if ctx.inflight:
        parts.append(
            f"{ctx.inflight} other hypotheses are being tested right now; propose something different."
        )
    parts.append(
        "Propose ONE new hypothesis that is not a repeat: statement, h0, h1, variables, expected_sign, "
        "rationale, refines (id of an earlier hypothesis it refines or re-analyses, or empty; a confound "
        "check, stratified or adjusted, must name the claim it checks), and code."
    )
    return "\n\n".join(parts)


def reflect_prompt(ctx: Context, index: int) -> str:
    parts = [
        f"Reflection #{index}: treat the hypotheses tested so far as data.",
        f"## Dataset\n{ctx.dataset}",
    ]
    if ctx.prior:
        parts.append(f"## Prior information\n{ctx.prior}")
    parts.append(
        "## Hypotheses tested (training evidence and train-gate verdict)\n"
        + ("\n".join(t.line() for t in ctx.history) or "none")
    )
    parts.append(
        "Write: gaps (variables or regions not explored), confounds (passing effects that may vanish "
        "when stratified by another variable: name it), compounds (conjunctions of passing hypotheses "
        "worth testing as one, e.g. an interaction)."
    )
    return "\n\n".join(parts)


def seed_prompt(ctx: Context, bank: list[Tested], n: int) -> str:
    parts = [
        f"Seed acquisition #{ctx.iteration}: propose {n} candidate hypotheses, each with a plausibility in "
        "[0, 1]. The one scoring best on plausibility plus novelty against the bank is tested and refined.",
        *_common(ctx),
    ]
    parts.append("## Bank of accepted claims\n" + ("\n".join(t.line() for t in bank) or "empty"))
    if ctx.history:
        parts.append(
            "## Hypotheses already tested (training evidence)\n" + "\n".join(t.line() for t in ctx.history)
        )
    return "\n\n".join(parts)


def refine_prompt(ctx: Context, chain: list[Tested], step: int, steps: int) -> str:
    parts = [
        f"Refinement step {step} of {steps} of chain {chain[0].id}. Refine the hypothesis using the evidence "
        "so far: sharpen the population, add a covariate, test a mechanism or a moderator. Every step "
        "is one more test in the chain's Bonferroni correction.",
        *_common(ctx),
    ]
    parts.append("## This chain so far (hypothesis, evidence)\n" + "\n".join(t.line() for t in chain))
    parts.append("Propose ONE refined hypothesis with its code.")
    return "\n\n".join(parts)


def vision_prompt(h: Hypothesis) -> str:
    return (
        f"These figures were produced by the analysis of the hypothesis: {h.statement}\n"
        "Describe in three sentences what they show and whether they support it."
    )
