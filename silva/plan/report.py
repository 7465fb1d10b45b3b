"""What a plan reports: the run's figures from the virtual executor and the journal."""

from __future__ import annotations

import resource
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from engine.events import IdeaAdmitted
from engine.journal import Journal
from engine.node import NodeStatus
from silva.plan.executor import PlanExecutor
from silva.plan.settings import PAPER, REVIEW, SUPPORT


class PlanReport(BaseModel):
    """What the run would give and cost; the same for the same config, source and seed (but
    the `driver_` figures, which measure this machine)."""

    config: str
    source: str = Field(description="`defaults` or the run directory the figures come from")
    seed: int
    slots: int
    wall_s: float = Field(description="virtual wall time from start to stop")
    gpu_hours: float
    cpu_hours: float
    llm_dollars: float = Field(description="simulated LLM calls at their role model's price")
    llm_calls: dict[str, int] = Field(description="simulated LLM calls by role")
    dollars_per_paper: float | None = Field(description="LLM dollars / papers written")
    nodes: int
    nodes_by_kind: dict[str, int]
    papers_written: int
    papers_reviewed: int
    ideas_admitted: int = Field(0, description="a rolling forest's ideas (`ideation:`)")
    ideas_per_hour: float | None = Field(None, description="the idea supply rate the run took")
    utilization: float = Field(
        description="experiments' own time / (slots x wall time), as `silva status` counts it (the slot "
        "time they took, sandbox start and result collection included, is what wall_s is made of)"
    )
    share_by_idea: dict[str, float] = Field(description="each idea's share of the slot-seconds held")
    outcomes: str = Field("", description="how experiments' failures were drawn: per idea or per attempt")
    ideas: int = Field(0, description="ideas that made a search node")
    ideas_lost: int = Field(0, description="of those, the ideas none of whose search nodes was good")
    outcome: str
    stopped_by: str | None = Field(description="the budget that stopped the run, if one did")
    message: str
    completions: int
    driver_cpu_ms_per_completion: float
    driver_peak_rss_mb: float


def report(
    config: Path,
    from_dir: Path | None,
    seed: int,
    slots: int,
    journal: Journal,
    ex: PlanExecutor,
    outcome: Any,
    cpu_s: float,
) -> PlanReport:
    wall = ex.now - ex.start
    kinds = Counter(n.kind for n in journal if n.status != NodeStatus.DISCARDED)
    held = sum(ex.held_s.values())
    good = Counter(n.kind for n in journal if n.status == NodeStatus.GOOD)
    searched: dict[str, bool] = {}  # idea: whether one of its search nodes was good
    for n in journal:
        if n.kind not in SUPPORT and n.status in (NodeStatus.GOOD, NodeStatus.BUGGY):
            searched[n.idea] = searched.get(n.idea, False) or n.status == NodeStatus.GOOD
    return PlanReport(
        config=str(config),
        source=str(from_dir) if from_dir else "defaults",
        seed=seed,
        slots=slots,
        wall_s=round(wall, 3),
        gpu_hours=round(ex.gpu_s / 3600, 4),
        cpu_hours=round(ex.cpu_s / 3600, 4),
        llm_dollars=round(ex.dollars, 4),
        llm_calls=dict(sorted(ex.llm_calls.items())),
        dollars_per_paper=round(ex.dollars / good[PAPER], 4) if good[PAPER] else None,
        nodes=sum(kinds.values()),
        nodes_by_kind=dict(sorted(kinds.items())),
        papers_written=good[PAPER],
        papers_reviewed=good[REVIEW],
        ideas_admitted=(admitted := sum(1 for _ in journal.log.read(IdeaAdmitted))),
        ideas_per_hour=round(admitted / (wall / 3600), 3) if admitted and wall > 0 else None,
        utilization=round(ex.experiment_s * ex.source.own_share / (slots * wall), 4) if wall > 0 else 0.0,
        share_by_idea={k: round(v / held, 4) for k, v in sorted(ex.held_s.items())} if held else {},
        outcomes=ex.source.outcomes(),
        ideas=len(searched),
        ideas_lost=sum(1 for ok in searched.values() if not ok),
        outcome=outcome.status,
        stopped_by=outcome.budget,
        message=outcome.message,
        completions=ex.completions,
        driver_cpu_ms_per_completion=round(cpu_s / max(1, ex.completions) * 1e3, 3),
        driver_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
