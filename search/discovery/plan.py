"""The data-driven discovery mode's plan: one stage of hypotheses (docs/discovery.md)."""

from __future__ import annotations

from search.plan import StagePlan, StageSpec

IDEA = "discovery"  # the tree every discovery node belongs to

PLAN = StagePlan(
    "discovery",
    (
        StageSpec(
            "hypotheses",
            grows="hypothesis",
            default_max_nodes=30,
            ends="discovery.max_hypotheses proposed (DiscoPER) or discovery.max_chains chains (ExperiGen), "
            "every held-out evaluation made",
        ),
    ),
)
