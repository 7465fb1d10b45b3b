"""The one place the view reads a node's payload: plan, code, typed outcome, origin, artifacts.

Outcomes are read through their JSON dump, by field name, so any family (operator, aggregate,
selection, families added later) shows without this module knowing it; the few fields the page
gives a place of its own (judgement, plot critique, plots, what a tuning or ablation step tried)
are picked out here. When the node model changes, this module changes and nothing else.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from engine.node import Node
from search.agentic.operators.outcome import variant as tried_variant

# Fields of an outcome shown in their own section of the details, not in the generic table.
SHOWN_APART = (
    "family",
    "judgement",
    "judgement_error",
    "plot_critique",
    "critique_error",
    "plots",
    "plot_code",
)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp")


class NodeFacts(BaseModel):
    """What the view shows of a node besides its status and metrics."""

    operator: str
    variant: str = ""  # the setting a tuning step tried, the ablation, or the origin's label
    origin: dict[str, Any] = Field(default_factory=dict)
    plan: str = ""
    code: str = ""
    plot_code: str = ""
    judgement: dict[str, Any] | None = None
    critique: dict[str, Any] | None = None
    plots: list[str] = Field(default_factory=list)  # run-dir-relative image paths
    outcome_family: str = ""
    outcome: dict[str, Any] = Field(default_factory=dict)  # the remaining outcome fields, verbatim


def _outcome(node: Node) -> dict[str, Any]:
    value = getattr(node, "outcome", None)
    if value is None:
        return {}
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)


def _origin(node: Node) -> dict[str, Any]:
    value = getattr(node, "origin", None)
    if value is None:
        return {}
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)
    return {k: v for k, v in data.items() if v not in (None, "", [], {})}


def facts(node: Node) -> NodeFacts:
    out = _outcome(node)
    origin = _origin(node)
    judgement = out.get("judgement") or (
        {"error": out["judgement_error"]} if out.get("judgement_error") else None
    )
    critique = out.get("plot_critique") or (
        {"error": out["critique_error"]} if out.get("critique_error") else None
    )
    plots = list(out.get("plots") or [])
    plots += [a for a in node.artifacts if a.lower().endswith(IMAGE_SUFFIXES) and a not in plots]
    variant = tried_variant(node) or origin.get("label") or ""  # a tuning setting, an ablation
    return NodeFacts(
        operator=str(out.get("operator") or node.kind),
        variant=str(variant),
        origin=origin,
        plan=node.plan,
        code=node.code,
        plot_code=str(out.get("plot_code") or ""),
        judgement=judgement,
        critique=critique,
        plots=plots,
        outcome_family=str(out.get("family") or ""),
        outcome={k: v for k, v in out.items() if k not in SHOWN_APART and v not in (None, "", [], {})},
    )


def summary(node: Node) -> str:
    """One line for a tooltip: the judgement's summary, else the node's status reason."""
    j = _outcome(node).get("judgement") or {}
    return str(j.get("summary") or node.reason or node.plan)
