"""Structured LLM outputs of the operators (pydantic: they cross the LLM boundary).

A proposal is validated against the job's situation (a diff must apply to the parent's code,
a hyperparameter setting or ablation must be untried). A failed check raises inside pydantic
validation, so the LLM client re-asks with the reason, a bounded number of times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.llm import FinalAnswer
from search.agentic.operators.claims import ClaimBook, canonical_ablation, canonical_setting
from search.agentic.operators.diff import DiffError, apply_unified_diff

# Bounded strings: a small model's grammar-constrained answer must close each string within
# max_tokens. Code is the answer's substance and is bounded by max_tokens alone.
PLAN_CHARS = 600
REASON_CHARS = 300


class Proposal(BaseModel):
    """Your plan and the experiment code that carries it out."""

    plan: str = Field(
        min_length=1, max_length=PLAN_CHARS, description="what you will do and why, in a few sentences"
    )
    code: str | None = Field(None, description="the whole new experiment.py")
    diff: str | None = Field(
        None, description="instead of `code`: a unified diff against the shown experiment.py"
    )
    plot_code: str | None = Field(None, description="the whole plot.py; omit to keep the shown one")

    def setting(self) -> dict[str, Any]:
        """The hyperparameter setting this step tries: only a hyperparameter step has one."""
        return {}

    def ablated(self) -> str:
        """The component this step removes: only an ablation step has one."""
        return ""


class SettingProposal(Proposal):
    """Your plan, the experiment code, and the hyperparameter setting it tries."""

    hyperparameters: dict[str, Any] | None = Field(
        None, max_length=8, description='the setting tried, e.g. {"lr": 0.01}'
    )

    def setting(self) -> dict[str, Any]:
        return self.hyperparameters or {}


class AblationProposal(Proposal):
    """Your plan, the experiment code, and the component it removes or replaces."""

    ablation: str | None = Field(
        None, max_length=60, description="short name of the component removed or replaced"
    )

    def ablated(self) -> str:
        return self.ablation or ""


class Judgement(BaseModel):
    """Your verdict on one experiment run."""

    is_buggy: bool = Field(description="true if the run failed, or its results cannot be trusted")
    reason: str = Field(min_length=1, max_length=REASON_CHARS, description="why, citing the output")
    summary: str = Field(
        min_length=1,
        max_length=400,
        description="1-3 sentences for the experimental journal: what was done, what came out",
    )
    converged: bool | None = Field(
        None, description="hyperparameter stage only: is further tuning unlikely to help?"
    )


class PlotCritique(BaseModel):
    """Your critique of the figures of one experiment."""

    acceptable: bool = Field(
        description="false if a figure is empty, unreadable, mislabelled or contradicts the metrics"
    )
    reason: str = Field(min_length=1, max_length=REASON_CHARS)
    suggestions: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=3)


class BestChoice(BaseModel):
    """Which candidate is the stage's best node."""

    node_id: str = Field(max_length=80)
    reason: str = Field(min_length=1, max_length=REASON_CHARS)
    metric_best_is_sane: bool = Field(
        description="false if the top node's metric looks invalid (a leak, a bug)"
    )


@dataclass(frozen=True)
class Accepted:
    """A proposal turned into files: the code to run and how it was obtained."""

    code: str
    plot_code: str
    change: str  # whole_file | diff | diff_failed_whole_file | plot_only
    diff_error: str = ""


def proposal_type(
    operator: str,
    parent_code: str,
    node_id: str,
    claims: ClaimBook | None,
) -> type[Proposal]:
    """A Proposal subclass whose validation knows this job: parent code, operator, claims. Its
    fields are the step's: only a hyperparameter step names a setting, only an ablation step a
    component (a first draft has neither to fill)."""
    # What the model has been shown as tried: its prompt's list, then every claim a re-ask lists;
    # and whether a re-ask has already told it that an answer of its was taken.
    seen = _Seen(set(claims.listed) if claims is not None else set())

    base: type[Proposal] = {"hyperparameter": SettingProposal, "ablation": AblationProposal}.get(
        operator, Proposal
    )

    class CheckedProposal(base):  # type: ignore[valid-type,misc]  # a base chosen per step
        __doc__ = base.__doc__
        model_config = ConfigDict(title="Proposal")

        @model_validator(mode="after")
        def _fits(self) -> CheckedProposal:
            accept(self, parent_code)  # raises ValueError with what to fix
            if operator == "hyperparameter":
                if not self.setting():
                    raise ValueError(
                        'set `hyperparameters` to the setting this step tries, e.g. {"lr": 0.01}'
                    )
                _claim(claims, canonical_setting(self.setting()), node_id, "setting", seen)
            if operator == "ablation":
                if not canonical_ablation(self.ablated()):
                    raise ValueError("set `ablation` to a short name of the component removed or replaced")
                _claim(claims, canonical_ablation(self.ablated()), node_id, "ablation", seen)
            return self

    CheckedProposal.__name__ = "Proposal"
    return CheckedProposal


# A proposal naming what the model was shown as tried: it has run out (`Proposed.exhausted`).
# Naming one that another node claimed after the prompt was written is a race, not a sign of that.
LISTED_AS_TRIED = "which you were shown as tried"


@dataclass
class _Seen:
    listed: set[str]
    told: bool = False


def _claim(claims: ClaimBook | None, key: str, node_id: str, what: str, seen: _Seen) -> None:
    if claims is None:
        return
    owner = claims.claim(key, node_id)
    if owner is None:
        return
    told, listed = seen.told, key in seen.listed
    seen.told = True
    # The re-ask shows every claim so far, so a model that names one of them next has run out
    # rather than raced, and its call ends there: parallel proposals that find every setting
    # taken end in two calls, not in all the re-asks.
    now = [k for _, k in claims.tried()]
    seen.listed.update(now)
    reason = (
        f"the {what} {key} was already tried by node {owner}, {LISTED_AS_TRIED}"
        if listed
        else f"the {what} {key} was already tried by node {owner} while this proposal was written"
    )
    message = f"{reason}; tried so far: {'; '.join(now)}. Propose one not in this list"
    raise FinalAnswer(message) if listed and told else ValueError(message)


def accept(p: Proposal, parent_code: str) -> Accepted:
    """The code a proposal stands for. A diff that does not apply falls back to `code`; with no
    `code` either, the error asks for the whole file."""
    if p.diff and parent_code:
        try:
            return Accepted(apply_unified_diff(parent_code, p.diff), p.plot_code or "", "diff")
        except DiffError as e:
            if p.code:
                return Accepted(p.code, p.plot_code or "", "diff_failed_whole_file", str(e))
            raise ValueError(
                f"the diff does not apply ({e}); send the whole experiment.py in `code` instead"
            ) from None
    if p.code and p.code.strip():
        return Accepted(p.code, p.plot_code or "", "whole_file")
    if p.plot_code and parent_code:
        return Accepted(parent_code, p.plot_code, "plot_only")  # a fix of the figures alone
    if p.diff:
        raise ValueError("there is no earlier experiment.py to diff against; send the whole file in `code`")
    raise ValueError("send the experiment as the whole file in `code` (or as `diff` against the shown file)")
