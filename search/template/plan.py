"""The offline template search's four stages (no LLM)."""

from __future__ import annotations

from search.plan import StagePlan, StageSpec

PLAN = StagePlan(
    "template",
    (
        StageSpec("preliminary", grows="baseline", ends="at the first good baseline", default_max_nodes=2),
        StageSpec(
            "hyperparameter",
            grows="hyperparameter",
            default_max_nodes=8,
            keeps_root=True,
            ends="node budget, or nothing left to tune",
        ),
        StageSpec("agenda", grows="method", ends="node budget", default_max_nodes=4),
        StageSpec(
            "ablation",
            grows="ablation",
            ends="every declared ablation run once",
            default_max_nodes=4,
            from_root_only=True,
        ),
    ),
    progress="best_so_far",
)
