"""A node of the experiment tree and the result of one attempt at it."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Direction = Literal["maximize", "minimize"]


class NodeStatus(StrEnum):
    PENDING = "pending"  # created, no attempt running (new, cancelled, or awaiting re-run)
    RUNNING = "running"
    BUGGY = "buggy"
    GOOD = "good"


class MetricSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    direction: Direction = "maximize"
    primary: bool = False

    def better(self, a: float, b: float) -> bool:
        return a > b if self.direction == "maximize" else a < b


class MetricValue(BaseModel):
    name: str
    value: float
    direction: Direction


class ExecSummary(BaseModel):
    """What running the attempt looked like, kept small enough to live in the journal."""

    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""


class AttemptResult(BaseModel):
    """What a finished attempt reports back to the driver (the only journal writer)."""

    status: Literal["good", "buggy"]
    reason: str = Field("", description="why buggy, or a note on a good result")
    metrics: list[MetricValue] = Field(default_factory=list)
    execution: ExecSummary = Field(default_factory=ExecSummary)
    artifacts: list[str] = Field(default_factory=list, description="paths relative to the run dir")
    workspace: str = ""
    worker: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    cost_usd: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict, description="operator-specific outputs")


class Node(BaseModel):
    id: str = ""  # assigned by Journal.add_node
    parent_id: str | None = None
    stage: str
    kind: str  # baseline, hyperparameter, method, ablation, replication, aggregation, draft, debug, ...
    idea: str = "default"
    plan: str = ""
    code: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    status: NodeStatus = NodeStatus.PENDING
    reason: str = ""
    metrics: list[MetricValue] = Field(default_factory=list)
    execution: ExecSummary | None = None
    artifacts: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    lost_attempts: int = 0
    cost_usd: float = 0.0
    refs: list[str] = Field(default_factory=list, description="other nodes this one uses (replicates)")

    @property
    def is_finished(self) -> bool:
        return self.status in (NodeStatus.GOOD, NodeStatus.BUGGY)

    def metric(self, name: str) -> float | None:
        for m in self.metrics:
            if m.name == name:
                return m.value if math.isfinite(m.value) else None
        return None
