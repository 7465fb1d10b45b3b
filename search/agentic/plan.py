"""The agentic LLM search's four stages (AI-Scientist v2's stages)."""

from __future__ import annotations

from search.plan import StagePlan, StageSpec

PLAN = StagePlan(
    "agentic",
    (
        StageSpec(
            "preliminary",
            grows="improve",
            ends="at the first good node (drafts first)",
            default_max_nodes=2,
            ends_early="first_good",
        ),
        StageSpec(
            "hyperparameter",
            grows="hyperparameter",
            default_max_nodes=8,
            keeps_root=True,
            final_candidate=True,
            ends_early="converged",
            ends="the LLM judges tuning converged (after min_tuning_nodes), or node budget",
        ),
        StageSpec("agenda", grows="improve", ends="node budget", default_max_nodes=4, final_candidate=True),
        StageSpec("ablation", grows="ablation", ends="node budget", default_max_nodes=4, from_root_only=True),
    ),
    progress="best_over_baseline",
)
