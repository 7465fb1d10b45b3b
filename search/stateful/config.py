"""The `stateful:` config section: budgets of the investigation loop and the ablation switches."""

from __future__ import annotations

from pydantic import Field

from engine.config import Strict


class StatefulConfig(Strict):
    max_steps: int = Field(30, ge=1, description="LLM steps (frontier actions) in all")
    max_investigations: int = Field(12, ge=1, description="investigations that may be created")
    max_evidence: int = Field(4, ge=1, description="analyses attached to one investigation")
    screen: int = Field(
        10, ge=0, description="patterns from the opening screen of the train part (strongest pairs)"
    )
    role: str = Field("code", description="LLM role that picks the actions")
    structured_hypotheses: bool = Field(
        True, description="claims carry variables and population; scope is checked"
    )
    local_adjudication: bool = Field(
        True,
        description="verdicts from in-scope evidence and one held-out check; "
        "off: any analysis passing the train gate makes a claim supported",
    )
    frontier_control: bool = Field(
        True,
        description="the LLM picks from the frontier over the structured state; "
        "off: every step creates and tests one claim from a plain history",
    )
