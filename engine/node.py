"""A node of the experiment tree and the result of one attempt at it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.blobs import Text, lazy_text
from engine.outcome import NodeOutcome, OutcomeField, legacy_outcome

if TYPE_CHECKING:
    from collections.abc import Sequence

Direction = Literal["maximize", "minimize"]
OutcomeT = TypeVar("OutcomeT", bound=NodeOutcome)
EVENT_FORMAT = 2  # 1: outcomes in an untyped `extra` dict; 2: typed outcomes and node origins


class NodeStatus(StrEnum):
    PENDING = "pending"  # created, no attempt running (new, cancelled, or awaiting re-run)
    RUNNING = "running"
    BUGGY = "buggy"
    GOOD = "good"
    DISCARDED = "discarded"  # speculative work its strategy no longer needs: no further step, not searched


class MetricSpec(BaseModel):
    """A declared metric that knows its direction: the one place values are compared."""

    model_config = ConfigDict(frozen=True)

    name: str
    direction: Direction = "maximize"
    primary: bool = False

    def oriented(self, value: float | None) -> float | None:
        """`value` turned so that larger is better; None for a missing or non-finite value."""
        if value is None or not math.isfinite(value):
            return None
        return value if self.direction == "maximize" else -value

    def better(self, a: float, b: float) -> bool:
        return a > b if self.direction == "maximize" else a < b

    def score(self, node: Node) -> float | None:
        """A good node's oriented value of this metric; None for any other node."""
        return self.oriented(node.metric(self.name)) if node.status == NodeStatus.GOOD else None

    def ranked(self, nodes: Iterable[Node]) -> list[Node]:
        """Good nodes with a value, best first; ties keep the given (creation) order."""
        scored = [(s, n) for n in nodes if (s := self.score(n)) is not None]
        return [n for _, n in sorted(scored, key=lambda sn: -sn[0])]

    def best(self, nodes: Iterable[Node]) -> Node | None:
        ranked = self.ranked(nodes)
        return ranked[0] if ranked else None


def primary_of(specs: Sequence[MetricSpec]) -> MetricSpec | None:
    return next((m for m in specs if m.primary), specs[0] if specs else None)


class MetricValue(BaseModel):
    name: str
    value: float
    direction: Direction | None = None  # None: reported but not declared, so it has no direction


class ExecSummary(BaseModel):
    """What running the attempt looked like, kept small enough to live in the journal."""

    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stdout_tail: Text = ""
    stderr_tail: Text = ""


class BudgetRefusal(BaseModel):
    """An attempt refused its LLM call by a budget: no result; the run stops and the node re-runs on
    resume."""

    budget: str
    message: str


class MachineFault(BaseModel):
    """The machine failed an attempt while staging or collecting its files (a full disk, an I/O
    error): no verdict on the experiment; the run stops and the node re-runs on resume."""

    errno: int
    strerror: str
    filename: str | None = None


class Origin(BaseModel):
    """How the strategy came to create a node (set on the driver, never by the attempt)."""

    model_config = ConfigDict(extra="forbid")

    label: str = ""  # how tables name the node's variant; replicates carry their original's
    policy: str = ""  # the search policy that chose the expansion
    island: int | None = None  # evolutionary policy's sub-population
    ablation: str = ""  # the ablation a template node switches on
    speculative: bool = False  # started before the decision it depends on (a stage's best) was made


def _from_format_1(data: Any, keep: tuple[str, ...]) -> Any:
    """An event-format-1 object: `extra` becomes the typed fields of format 2."""
    if not isinstance(data, dict) or "extra" not in data:
        return data
    data = dict(data)
    extra = dict(data.pop("extra") or {})
    for key in keep:
        if extra.get(key):
            data[key] = extra.pop(key)
    stop = extra.pop("budget_stop", None)
    if stop and "refusal" in keep:
        data["refusal"] = {"budget": stop.get("budget", "dollars"), "message": stop.get("message", "")}
    if extra or "outcome" in keep:
        data["outcome"] = legacy_outcome(extra)
    return data


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
    code: Text | None = Field(None, description="the node's code, when the attempt wrote it (LLM operators)")
    plan: Text | None = Field(None, description="the node's plan, when the attempt wrote it")
    refusal: BudgetRefusal | None = None
    fault: MachineFault | None = None
    outcome: OutcomeField = None

    @model_validator(mode="before")
    @classmethod
    def _format_1(cls, data: Any) -> Any:
        return _from_format_1(data, ("code", "plan", "refusal", "outcome"))


class StepResult(BaseModel):
    """What an intermediate step of a pipelined attempt (think, run) hands on: its typed output,
    journaled so the node's next step picks up from it, also after a resume."""

    step: str
    outcome: OutcomeField = None
    cost_usd: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0
    worker: str = ""
    refusal: BudgetRefusal | None = None


class Node(BaseModel):
    id: str = ""  # assigned by Journal.add_node
    parent_id: str | None = None
    stage: str
    kind: str  # baseline, hyperparameter, method, ablation, replication, aggregation, draft, debug, ...
    idea: str = "default"
    plan: Text = ""
    code: Text = ""
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    status: NodeStatus = NodeStatus.PENDING
    reason: str = ""
    metrics: list[MetricValue] = Field(default_factory=list)
    execution: ExecSummary | None = None
    artifacts: list[str] = Field(default_factory=list)
    origin: Origin = Field(default_factory=Origin)
    outcome: OutcomeField = None
    steps: dict[str, OutcomeField] = Field(
        default_factory=dict, description="finished steps of a pipelined attempt"
    )
    open_attempt: int | None = Field(
        None, description="the attempt whose steps are under way (None: next step starts a new one)"
    )
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    lost_attempts: int = 0
    cost_usd: float = 0.0
    refs: list[str] = Field(default_factory=list, description="other nodes this one uses (replicates)")

    @model_validator(mode="before")
    @classmethod
    def _format_1(cls, data: Any) -> Any:
        if isinstance(data, dict) and "extra" in data:
            extra = dict(data.get("extra") or {})
            origin = {k: extra.pop(k) for k in Origin.model_fields if k in extra}  # same names in format 1
            data = {**data, "extra": extra, "origin": origin}
            # A format-1 node's outcome was merged into its extra: read it as an outcome.
            return _from_format_1(data, ())
        return data

    @property
    def next_attempt(self) -> int:
        """The attempt number of the node's next job: a pipelined attempt's steps share one."""
        return self.open_attempt if self.open_attempt is not None and self.steps else self.attempts + 1

    @property
    def is_finished(self) -> bool:
        return self.status in (NodeStatus.GOOD, NodeStatus.BUGGY, NodeStatus.DISCARDED)

    def metric(self, name: str) -> float | None:
        for m in self.metrics:
            if m.name == name:
                return m.value if math.isfinite(m.value) else None
        return None

    def outcome_as(self, cls: type[OutcomeT]) -> OutcomeT | None:
        """The node's outcome if it is of family `cls`, else None."""
        return self.outcome if isinstance(self.outcome, cls) else None


# Payloads: stored as content-addressed blobs when large, read back when used (engine/blobs.py).
lazy_text(ExecSummary, "stdout_tail", "stderr_tail")
lazy_text(AttemptResult, "code", "plan")
lazy_text(Node, "plan", "code")
