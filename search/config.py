"""The search's config sections (search settings, stage limits, idea sources) and the
`SearchSettings` protocol through which search code reads the assembled run config."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field

from engine.config import Budgets, ExecutorConfig, Resources, Strict
from engine.llm.config import LLMConfig
from sandbox.config import SandboxConfig


class StageConfig(Strict):
    max_nodes: int = Field(4, ge=1, description="search nodes in this stage (replicates excluded)")


class SearchConfig(Strict):
    """The LLM tree search (idea mode): policy and its knobs, judgements, held-out selection."""

    policy: Literal["best_first", "greedy", "mcts", "evolutionary"] = "best_first"
    speculate: bool = Field(
        True,
        description="while a stage's last nodes run, free slots replicate its leader (its best node so far, "
        "a run not yet judged included) and grow the next stage from it, a share of that stage's budget as "
        "large as the share of nodes that can no longer beat it (faster stage ends; work from a node not "
        "decided best is spent compute)",
    )
    pipeline: bool = Field(
        True,
        description="an LLM node is three steps (think, run, judge); only run holds the node's CPUs/GPUs",
    )
    num_drafts: int = Field(3, ge=1, description="stage 1: independent drafts before refining")
    debug_prob: float = Field(0.5, ge=0, le=1, description="chance a free slot debugs a buggy leaf")
    max_debug_depth: int = Field(3, ge=0, description="consecutive debug steps on one line of nodes")
    mcts_exploration: float = Field(1.0, ge=0, description="UCT exploration constant c")
    mcts_widening: float = Field(0.5, gt=0, le=1, description="progressive widening: children <= ceil(2 N^a)")
    islands: int = Field(2, ge=1, description="evolutionary: sub-populations")
    crossover_rate: float = Field(0.3, ge=0, le=1, description="evolutionary: chance of a two-parent child")
    migration_prob: float = Field(
        0.2, ge=0, le=1, description="evolutionary: second parent from another island"
    )
    tournament: int = Field(2, ge=1, description="evolutionary: tournament size")
    min_tuning_nodes: int = Field(
        2, ge=1, description="tuning stage ends on convergence only after this many"
    )
    tie_tolerance: float = Field(0.0, ge=0, description="primary-metric gap within which the LLM breaks ties")
    plots_gate: bool = Field(True, description="plots that fail to render or fail critique make a node buggy")
    max_plots: int = Field(4, ge=0, description="plots shown to the vision critique")
    heldout: bool = Field(False, description="choose the final best node on a held-out split")
    heldout_candidates: int = Field(3, ge=1, description="top nodes re-run on the held-out split")


class IdeaBudgets(Strict):
    """An idea's own limits inside the run's, and whether the allocation may stop it (docs/budgets.md)."""

    max_nodes: int | None = Field(None, ge=1, description="nodes of this idea's tree, every kind")
    gpu_hours: float | None = Field(None, gt=0, description="accelerator time of this idea")
    cpu_hours: float | None = Field(None, gt=0, description="CPU time of this idea")
    pinned: bool = Field(
        False, description="never stopped by the allocation policy (its own budgets still apply)"
    )


class IdeaSource(IdeaBudgets):
    """One idea of a forest, with its own budgets inside the run's."""

    path: Path
    dollars: float | None = Field(None, ge=0, description="LLM spend of this idea")


class TemplateVariant(IdeaBudgets):
    """One idea of a template forest: the template with some parameters fixed (docs/budgets.md)."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    fixed: dict[str, Any] = Field(default_factory=dict, description="merged over the template's own `fixed`")


class AllocationConfig(Strict):
    """How a forest's slots and compute go to its ideas (search/allocation.py, docs/budgets.md)."""

    policy: Literal["fair", "successive_halving", "bandit"] = "fair"
    eta: float = Field(
        3.0, gt=1, description="successive halving: an idea goes on if in the top 1/eta at a rung"
    )
    min_ideas: int = Field(1, ge=1, description="successive halving never stops ideas below this many")
    rungs: Literal["stage_ends", "geometric", "geometric_and_stage_ends"] = Field(
        "stage_ends",
        description="successive halving: where ideas are compared: at each stage's end; inside each search "
        "stage after min_rung_nodes, x eta, x eta^2 ... of its search nodes (ASHA's resource levels); or "
        "both",
    )
    min_rung_nodes: int = Field(
        1,
        ge=1,
        description="successive halving, geometric rungs: a stage's search nodes at its first rung inside it",
    )
    progress: Literal["best_over_baseline", "best_so_far"] | None = Field(
        None,
        description="successive halving: what ideas are compared on at a rung; null: the search mode's own "
        "(template: best_so_far, the variants share one task; agentic: best_over_baseline, each idea its own "
        "experiment)",
    )
    exploration: float = Field(1.0, ge=0, description="bandit: weight of the upper-confidence term")
    min_share: float = Field(
        0.2,
        ge=0,
        le=1,
        description="bandit: each live idea gets at least this fraction of an equal share of GPU time",
    )


class SearchSettings(Protocol):
    """What search modes read of the run config (silva.config.RunConfig implements it)."""

    search: SearchConfig
    llm: LLMConfig | None
    seed: int
    replicates: int
    proposer: Literal["sobol", "model"]
    stages: dict[str, StageConfig]
    budgets: Budgets
    executor: ExecutorConfig
    sandbox: SandboxConfig

    def resources_for(self, kind: str) -> Resources: ...

    def idea_sources(self) -> list[IdeaSource]: ...

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...
