"""Every journal event, declared once: a pydantic model per `type`, in one discriminated union.

A writer builds a model and hands it to `Journal.record`; a reader gets models back (from the
journal's replay, `EventLog.read` and `EventLog.events`) and reads attributes, so a reader and
its writer agree on names that mypy checks. `seq` and `ts` are set by the log when it appends.

Runs written by earlier code still open: fields an event no longer declares are kept, not
refused (`extra="allow"`: nothing needs upgrading, and an export shows the line as written),
and a type no longer declared is read as an `UnknownEvent`. A writer may not add a field its
model does not declare: `Journal.record` refuses it (docs/architecture.md, "Journal events").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engine.node import AttemptResult, MetricSpec, Node, StepResult


class Event(BaseModel):
    """What every event has: its position in the log and when it was appended."""

    model_config = ConfigDict(extra="allow")

    seq: int = 0
    ts: float = 0.0
    type: str


# -- the run and its sessions ----------------------------------------------------------------
class RunStarted(Event):
    """A run's first event: its config, declared metrics and the search mode's stage names."""

    type: Literal["run_started"] = "run_started"
    config: dict[str, Any] = Field(default_factory=dict)
    metrics: list[MetricSpec] = Field(default_factory=list)
    stages: list[str] = Field(default_factory=list)
    format: int = 1  # engine/node.py EVENT_FORMAT; a run without one is format 1
    mode: str | None = None


class SessionStarted(Event):
    """A driver session began (the run's first, or a resume)."""

    type: Literal["session_started"] = "session_started"
    resumed: bool = False


class ClusterJoined(Event):
    """The Ray cluster this session's jobs run on (actors/ray_executor.py ClusterInfo)."""

    type: Literal["cluster_joined"] = "cluster_joined"
    kind: str
    address: str
    dashboard: str | None = None
    nodes: int
    cpus: float
    gpus: float
    ray_version: str


class SlotsChanged(Event):
    """The experiment slots the cluster holds changed (slots that follow the cluster)."""

    type: Literal["slots_changed"] = "slots_changed"
    slots: int


class RunStopped(Event):
    """The run stopped early (a budget, a signal, a broken environment); `silva resume` goes on."""

    type: Literal["run_stopped"] = "run_stopped"
    reason: str
    budget: str | None = None
    signal: str | None = None
    cause: str | None = None


class RunFinished(Event):
    """The search has no more work: `kind` is engine/dispatch.py Finish.kind."""

    type: Literal["run_finished"] = "run_finished"
    reason: str
    kind: str = ""


# -- nodes and attempts -----------------------------------------------------------------------
class NodeCreated(Event):
    """A node joined the tree (large payloads as blob references, engine/blobs.py)."""

    type: Literal["node_created"] = "node_created"
    node: Node


class AttemptStarted(Event):
    """A job for a node started: the whole attempt, or one `step` of a pipelined one."""

    type: Literal["attempt_started"] = "attempt_started"
    node_id: str
    attempt: int
    step: str = ""
    # False: the job only waits on an LLM (a stage's selection, a review) and takes no slot, so
    # its time is no slot time (`silva status` read 104% of 4 slots when it counted them).
    holds: bool = True


class StepFinished(Event):
    """An intermediate step of a pipelined attempt is in; its output waits for the next step."""

    type: Literal["step_finished"] = "step_finished"
    node_id: str
    attempt: int
    step: str
    result: StepResult


class AttemptFinished(Event):
    """A node's result: it is good or buggy from now on."""

    type: Literal["attempt_finished"] = "attempt_finished"
    node_id: str
    attempt: int
    result: AttemptResult


class AttemptLost(Event):
    """The job died with its worker; the node runs again."""

    type: Literal["attempt_lost"] = "attempt_lost"
    node_id: str
    attempt: int
    error: str = ""


class AttemptCancelled(Event):
    """The driver cancelled the job (a stop, a discard); the node runs again unless finished."""

    type: Literal["attempt_cancelled"] = "attempt_cancelled"
    node_id: str
    attempt: int


class NodeDiscarded(Event):
    """A node its strategy no longer needs: no further step, left out of its stage."""

    type: Literal["node_discarded"] = "node_discarded"
    node_id: str
    reason: str


# -- compute and budgets ----------------------------------------------------------------------
class ComputeUsed(Event):
    """Resource-seconds a job held, charged when it ended (engine/budgets.py ComputeMeter)."""

    type: Literal["compute_used"] = "compute_used"
    node_id: str
    attempt: int
    idea: str = "default"
    kind: str = ""
    how: str = ""  # finished, lost, cancelled, orphan
    step: str = ""
    num_gpus: float = 0.0
    num_cpus: float = 0.0
    seconds: float = 0.0
    gpu_s: float = 0.0
    cpu_s: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    orphan: bool = False  # a job a dead driver left running, charged at a later session's start


class BudgetChanged(Event):
    """Budget limits changed during the run (`silva budget`): the latest value of each counts."""

    type: Literal["budget_changed"] = "budget_changed"
    changes: dict[str, float | None]
    previous: dict[str, float | None] = Field(default_factory=dict)
    source: str = ""


class BudgetChangeRefused(Event):
    """A live budget request the driver could not apply, and why."""

    type: Literal["budget_change_refused"] = "budget_change_refused"
    request: str
    reason: str


# -- stages of a tree search (search/stages.py, search/heldout.py) ----------------------------
class StageStarted(Event):
    """An idea's stage began, from `root` (the previous stage's best) when it has one."""

    type: Literal["stage_started"] = "stage_started"
    idea: str
    stage: str
    root: str | None = None


class StageBest(Event):
    """The one recorded decision of a stage's best node (None: no usable node)."""

    type: Literal["stage_best"] = "stage_best"
    idea: str
    stage: str
    node_id: str | None = None
    metric: str | None = None
    value: float | None = None
    reason: str = ""
    selection: dict[str, Any] | None = None  # the selection job's decision, when one made it


class StageEnded(Event):
    """A stage is done: its best node and the aggregate of its replicates."""

    type: Literal["stage_ended"] = "stage_ended"
    idea: str
    stage: str
    best_node_id: str | None = None
    aggregate_node_id: str | None = None
    reason: str = ""


class HeldoutSelected(Event):
    """An idea's final choice among its candidates, by their held-out runs."""

    type: Literal["heldout_selected"] = "heldout_selected"
    idea: str
    metric: str
    node_id: str | None = None
    heldout_node_id: str | None = None
    heldout_value: float | None = None
    search_value: float | None = None
    search_best_id: str | None = None
    search_best_heldout_value: float | None = None
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    reason: str = ""


class IdeaStopped(Event):
    """An idea's tree stopped early (its own budget, no usable result, the allocation)."""

    type: Literal["idea_stopped"] = "idea_stopped"
    idea: str
    reason: str


class IdeaAdmitted(Event):
    """A rolling forest took a new idea from its idea source (`ideation:`): the idea file's
    fields, so a resumed run rebuilds the idea's tree without asking ideation again."""

    type: Literal["idea_admitted"] = "idea_admitted"
    idea: str
    spec: dict[str, Any] = Field(description="the idea file's fields, data paths absolute")
    budgets: dict[str, Any] = Field(default_factory=dict, description="the idea's own budgets")
    similarity: float | None = Field(None, description="cosine to the closest idea known before it")


class IdeaRejected(Event):
    """An idea the idea source made but the forest did not admit (a duplicate, not novel)."""

    type: Literal["idea_rejected"] = "idea_rejected"
    idea: str
    verdict: str
    reason: str


class IdeaPublished(Event):
    """An idea of a rolling forest finished its search and every phase after it (paper, review)."""

    type: Literal["idea_published"] = "idea_published"
    idea: str


class IdeationEnded(Event):
    """A rolling forest's idea source gives no more ideas, and why."""

    type: Literal["ideation_ended"] = "ideation_ended"
    reason: str


class AllocationDecided(Event):
    """A decision of the allocation across ideas (search/allocation.py), with the numbers behind it."""

    type: Literal["allocation"] = "allocation"
    decision: str  # policy, promoted, waiting, stopped, extended, bandit
    idea: str | None = None
    reason: str | None = None
    cause: str | None = None
    policy: str | None = None
    ideas: int | None = None
    eta: float | None = None
    min_ideas: int | None = None
    rungs: list[str] | None = None
    progress: str | None = None
    rung: int | None = None
    stage: str | None = None
    nodes: int | None = None
    score: float | None = None
    k: int | None = None
    threshold: float | None = None
    scores: dict[str, float | None] | None = None
    why: str | None = None
    gpu_hours: float | None = None
    returned_gpu_hours: float | None = None
    share_after: float | None = None
    max_nodes: int | None = None
    configured: int | None = None
    growth: float | None = None
    share: float | None = None
    equal_share: float | None = None
    first: str | None = None
    starving: list[str] | None = None
    arms: dict[str, dict[str, Any]] | None = None


# -- discovery (search/discovery/) ------------------------------------------------------------
class DiscoverySplit(Event):
    """The data set's train/held-out split, made once at the run's start."""

    type: Literal["discovery_split"] = "discovery_split"
    data: str
    sha256: str
    seed: int
    heldout_fraction: float
    rows: dict[str, int]
    columns: list[str]
    image_column: str | None = None
    group_column: str | None = None
    groups: int
    duplicate_rows: int
    heldout_duplicates_dropped: int
    warning: str | None = None


class DiscoveryEvaluated(Event):
    """A discovery node's outcome was taken into the strategy's state."""

    type: Literal["discovery_evaluated"] = "discovery_evaluated"
    node_id: str
    kind: str
    reason: str = ""


class GateDecided(Event):
    """A gate's decision on a hypothesis (search/discovery/gates.py GateDecision, as JSON)."""

    type: Literal["gate_decision"] = "gate_decision"
    node_id: str
    stage: str
    decision: dict[str, Any]


class ChainEnded(Event):
    """A chain of refinements ended, with its best step (None: none eligible)."""

    type: Literal["chain_ended"] = "chain_ended"
    chain: str
    steps: list[str]
    best: str | None = None


class BankUpdated(Event):
    """A hypothesis entered the bank, and what pruning it to capacity removed."""

    type: Literal["bank_updated"] = "bank_updated"
    added: str
    bank: list[str]
    pruned: list[str] = Field(default_factory=list)
    embedding_fallback: str | None = None


class DiscoveryFinished(Event):
    """Discovery is done, with the count of claims per verdict."""

    type: Literal["discovery_finished"] = "discovery_finished"
    reason: str
    counts: dict[str, int] = Field(default_factory=dict)


class StatefulOp(Event):
    """One whole change of the stateful discovery policy's state (search/stateful/model.py)."""

    type: Literal["stateful"] = "stateful"
    op: Literal["step", "evidence", "screen", "stop", "final"]
    node_id: str | None = None
    action: dict[str, Any] | None = None
    accepted: bool = False
    reason: str = ""
    investigation: str | None = None
    evidence: dict[str, Any] | None = None
    pattern: dict[str, Any] | None = None
    patterns: list[dict[str, Any]] = Field(default_factory=list)
    judgements: dict[str, Any] = Field(default_factory=dict)


# -- review (review/ensemble.py) --------------------------------------------------------------
class ReviewStarted(Event):
    """A review or meta-review job of a paper started."""

    type: Literal["review_started"] = "review_started"
    job: str
    idea: str | None = None  # a paper reviewed on its own belongs to no idea
    paper: str
    attempt: int


class ReviewFinished(Event):
    """A review or meta-review job ended."""

    type: Literal["review_finished"] = "review_finished"
    job: str
    idea: str | None = None  # a paper reviewed on its own belongs to no idea
    paper: str
    attempt: int
    status: str
    reason: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    worker: str = ""


class UnknownEvent(Event):
    """A line of a type no code declares any longer (an older run): kept as written, applied by no one."""


AnyEvent = Annotated[
    RunStarted
    | SessionStarted
    | ClusterJoined
    | SlotsChanged
    | RunStopped
    | RunFinished
    | NodeCreated
    | AttemptStarted
    | StepFinished
    | AttemptFinished
    | AttemptLost
    | AttemptCancelled
    | NodeDiscarded
    | ComputeUsed
    | BudgetChanged
    | BudgetChangeRefused
    | StageStarted
    | StageBest
    | StageEnded
    | HeldoutSelected
    | IdeaStopped
    | IdeaAdmitted
    | IdeaRejected
    | IdeaPublished
    | IdeationEnded
    | AllocationDecided
    | DiscoverySplit
    | DiscoveryEvaluated
    | GateDecided
    | ChainEnded
    | BankUpdated
    | DiscoveryFinished
    | StatefulOp
    | ReviewStarted
    | ReviewFinished,
    Field(discriminator="type"),
]
EVENTS: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)  # one validator for every line
E = TypeVar("E", bound=Event)


def type_of(cls: type[Event]) -> str:
    """The `type` a declared event class writes."""
    default = cls.model_fields["type"].default
    if not isinstance(default, str):
        raise TypeError(f"{cls.__name__} declares no event type")
    return default


DECLARED: dict[str, type[Event]] = {
    type_of(c): c for c in Event.__subclasses__() if c is not UnknownEvent
}  # type -> class


def parse(data: Mapping[str, Any]) -> Event:
    """An event read from the log: its declared model, validated once (ValidationError when its
    content does not fit), or an UnknownEvent for a type no code declares."""
    try:
        return EVENTS.validate_python(data)
    except ValidationError as e:
        if data.get("type") in DECLARED or e.errors()[0]["type"] != "union_tag_invalid":
            raise
        return UnknownEvent.model_validate(data)
