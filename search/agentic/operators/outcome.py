"""The typed outcome of an LLM operator's attempt (draft, debug, improve, hyperparameter,
ablation, crossover) and of a re-run of known code (replication, held-out)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from engine.node import Node
from engine.outcome import NodeOutcome
from search.agentic.operators.schemas import Judgement, PlotCritique

StatusRule = Literal["proposal", "execution", "judgement", "plots", "ok"]
CodeChange = Literal["whole_file", "diff", "diff_failed_whole_file", "plot_only", "rerun"]


class OperatorOutcome(NodeOutcome):
    family: str = "operator"
    operator: str
    plot_code: str = ""
    code_change: CodeChange = "rerun"
    diff_error: str = ""
    hyperparameters: dict[str, Any] = Field(
        default_factory=dict, description="the setting a tuning step tried"
    )
    ablation: str = ""
    exhausted: bool = Field(
        False, description="the proposal failed: every setting or ablation it named was already tried"
    )
    judgement: Judgement | None = None
    judgement_error: str = ""
    plot_critique: PlotCritique | None = None
    critique_error: str = ""
    plots: list[str] = Field(default_factory=list, description="run-dir-relative PNGs the plot script wrote")
    results_notes: str = ""
    status_rule: StatusRule = "ok"
    llm_calls: int = 0
    split: Literal["search", "heldout"] = "search"

    @classmethod
    def from_legacy(cls, extra: dict[str, Any]) -> OperatorOutcome | None:
        if "operator" not in extra:
            return None
        judgement, critique = dict(extra.get("judgement") or {}), dict(extra.get("plot_critique") or {})
        return cls(
            operator=extra["operator"],
            plot_code=extra.get("plot_code", ""),
            code_change=extra.get("code_change", "rerun"),
            diff_error=extra.get("diff_error", ""),
            hyperparameters=extra.get("hyperparameters") or {},
            ablation=extra.get("ablation") or "",
            judgement=Judgement.model_validate(judgement) if "is_buggy" in judgement else None,
            judgement_error=judgement.get("error", ""),
            plot_critique=PlotCritique.model_validate(critique) if "acceptable" in critique else None,
            critique_error=critique.get("error", ""),
            plots=extra.get("plots", []),
            results_notes=extra.get("results_notes", ""),
            status_rule=extra.get("status_rule", "ok"),
            llm_calls=extra.get("llm_calls", 0),
            split=extra.get("split", "search"),
        )


def operator_outcome(n: Node) -> OperatorOutcome:
    """The node's operator outcome; an empty one for a node without (pending, lost, other family)."""
    return n.outcome_as(OperatorOutcome) or OperatorOutcome(operator=n.kind)


def variant(n: Node) -> str:
    """What a tuning or ablation node tried, for prompts and reports ('' for other nodes)."""
    out = operator_outcome(n)
    if out.hyperparameters:
        return ", ".join(f"{k}={v}" for k, v in out.hyperparameters.items())
    return out.ablation or n.origin.ablation


def summary(n: Node) -> str:
    """The judgement's one-line summary, else the status reason."""
    j = operator_outcome(n).judgement
    return (j.summary if j else "") or n.reason
