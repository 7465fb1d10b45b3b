"""The tree as an append-only event log: the single source of truth of a run.

Every state change is one JSON line, flushed and fsynced before the change is acted on. The
`Journal` is the replay of those events; everything else (best node, debug depth, leaves) is
derived, never stored. A torn last line (a crash mid-write) is dropped when the log is reopened.
Running totals (engine/totals.py) and indexes are kept per event; large payloads live in
content-addressed blobs (engine/blobs.py), and replayed nodes hold references to them.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine import events as ev
from engine.blobs import BlobWriter, raw
from engine.eventlog import EVENTS_FILE, EventLog, check_references
from engine.node import EVENT_FORMAT, AttemptResult, MetricSpec, Node, NodeStatus, StepResult, primary_of
from engine.totals import CLASSES as TOTALS_CLASSES
from engine.totals import Totals

__all__ = ["EVENTS_FILE", "EventLog", "Journal"]

NOT_STATE = ("log", "_blobs")  # what a snapshot leaves out
FREEZE_NODES = 10_000  # a replay this big moves its objects out of the cyclic collector's sight
_ALL_FIELDS: dict[type, set[str]] = {}
_APPLIED = frozenset(  # the events `Journal._apply` changes its state by (beside sessions and totals)
    {
        ev.AttemptStarted,
        ev.AttemptFinished,
        ev.NodeCreated,
        ev.StepFinished,
        ev.AttemptLost,
        ev.AttemptCancelled,
        ev.NodeDiscarded,
        ev.StageStarted,
        ev.StageBest,
        ev.StageEnded,
        ev.RunStarted,
        ev.SlotsChanged,
        ev.HeldoutSelected,
        ev.IdeaStopped,
        ev.RunStopped,
        ev.RunFinished,
    }
)


def _share_fields_set(model: BaseModel) -> None:
    """Give a model (and the models in it) that has every field set one set shared by its class.

    Pydantic keeps a set of the fields given per instance: a node and its parts would carry
    4 KB of identical sets (400 MB at 100k nodes). A set holding every field never changes
    (setting a field adds a name already in it), so one set can serve all such instances."""
    full = _ALL_FIELDS.get(type(model))
    if full is None:
        full = _ALL_FIELDS[type(model)] = set(type(model).model_fields)
    if model.__pydantic_fields_set__ is not full and model.__pydantic_fields_set__ == full:
        object.__setattr__(model, "__pydantic_fields_set__", full)
    for value in model.__dict__.values():
        if isinstance(value, BaseModel):
            _share_fields_set(value)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, BaseModel):
                    _share_fields_set(v)
        elif isinstance(value, dict):
            for v in value.values():
                if isinstance(v, BaseModel):
                    _share_fields_set(v)


def _model_classes(value: Any, into: set[type]) -> None:
    """The pydantic model classes inside a value (an outcome may nest models in lists and dicts)."""
    if isinstance(value, BaseModel):
        into.add(type(value))
        for v in value.__dict__.values():
            _model_classes(v, into)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _model_classes(v, into)
    elif isinstance(value, dict):
        for v in value.values():
            _model_classes(v, into)
    elif isinstance(value, Enum):
        into.add(type(value))


class Journal:
    """Nodes and run state rebuilt from events; `record_*` methods append and apply."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._blobs = BlobWriter(log.path.parent)  # also makes the run's blobs readable here
        self.nodes: dict[str, Node] = {}
        self.metric_specs: list[MetricSpec] = []
        # Keyed by (idea, stage): one tree per idea can share a journal (a forest).
        self.stage_started: dict[tuple[str, str], ev.StageStarted] = {}
        self.stage_best: dict[tuple[str, str], ev.StageBest] = {}  # the one recorded decision
        self.stage_ended: dict[tuple[str, str], ev.StageEnded] = {}
        self.heldout: dict[str, ev.HeldoutSelected] = {}  # idea -> the held-out selection, if made
        self.idea_stopped: dict[str, ev.IdeaStopped] = {}  # idea -> why its tree stopped early
        self.stop: ev.RunStopped | None = None
        self.finished: ev.RunFinished | None = None
        self.config: dict[str, Any] = {}
        self.plan_stages: list[str] = []  # the search mode's stage names, in order (opaque here)
        self.event_format = EVENT_FORMAT
        self.sessions: list[tuple[float, float]] = []  # (start ts, last ts) per driver session
        self.totals = Totals()  # compute spent, budget changes, attempt time, orphaned jobs
        # Incremental indexes, updated per event, so that no question the driver asks per
        # completion scans the whole run (dicts as insertion-ordered sets: creation order).
        self._children: dict[str | None, list[str]] = {}
        self._by_stage: dict[tuple[str | None, str], list[str]] = {}  # (idea or None, stage)
        self._by_idea: dict[str, list[str]] = {}
        self._unfinished: dict[str, None] = {}
        self._unfinished_by_idea: dict[str, int] = {}
        self._status: dict[NodeStatus, dict[str, None]] = {NodeStatus.GOOD: {}, NodeStatus.BUGGY: {}}
        self._stages: dict[str, None] = {}  # stages started or grown in, in the order first seen
        # Nodes of the node_discarded events so far, in order: the dispatcher cancels their jobs.
        self.discarded: list[str] = []
        # Per (idea, stage): a stage's view (search/stages.py) rebuilds only on its own discards.
        self.discards_in: dict[tuple[str, str], int] = {}
        self.slots: int | None = (
            None  # experiment slots the cluster held, when they follow it (`slots_changed`)
        )
        # Replay makes millions of objects and frees none: the cyclic collector would rescan
        # them again and again (3x the time of a 100k-node open), so it waits until the end.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._replay(log)
            if len(self.nodes) >= FREEZE_NODES:
                # They live as long as the journal: each full collection would rescan them all
                # (a second per collection at 100k nodes).
                gc.freeze()
        finally:
            if collecting:
                gc.enable()
        if log.snapshot_due():  # a big log that had none (or an old one): the next open is fast
            self.snapshot()

    def _replay(self, log: EventLog) -> None:
        state = log.load_snapshot([k for k in self.__dict__ if k not in NOT_STATE])
        if state is not None:
            self.__dict__.update(state)
        error: Exception | None = None
        for i, data in log.replay():
            if error is not None:
                continue  # read on: a line that is not an event, further down, is reported first
            try:
                event = ev.parse(data)  # each line validated once, into its model
                check_references(event, self.nodes)
                self._apply(event)
            except (KeyError, TypeError, ValueError) as e:  # a well-formed line with wrong content
                error = log.damaged(i, e)
        if error is not None:
            raise error

    @classmethod
    def open(cls, run_dir: Path, *, read_only: bool = False) -> Journal:
        """`read_only`: a view (status, export) that takes no lock and never writes."""
        log = EventLog(run_dir / EVENTS_FILE, read_only=read_only)
        try:
            return cls(log)
        except BaseException:
            log.close()
            raise

    # -- writing -------------------------------------------------------------------------
    def record(self, event: ev.E) -> ev.E:
        """Append an event (a model of engine/events.py) and apply it. Returns it as a replay
        reads it back: with its `seq` and `ts`, and large payloads as blob references."""
        if event.model_extra:
            raise TypeError(f"{type(event).__name__} declares no field {', '.join(event.model_extra)}")
        written = self.log.append(self._blobs.dump(event))  # large payloads stored as blobs
        stored = type(event).model_validate(written)
        self._apply(stored)
        if self.log.snapshot_due():
            self.snapshot(background=True)  # O(nodes): written beside the driver, not by it
        return stored

    def snapshot(self, *, background: bool = False) -> None:
        """Write the replayed state for the next open to start from (engine/eventlog.py);
        `background`: by a forked child, from an image of this moment (the driver goes on)."""
        self.log.write_snapshot(self._snapshot_state, background=background)

    def _snapshot_state(self) -> tuple[dict[str, Any], set[type]]:
        """The state a snapshot holds and the model classes in it (a walk of every node)."""
        state = {k: v for k, v in self.__dict__.items() if k not in NOT_STATE}
        classes: set[type] = {NodeStatus, MetricSpec, *TOTALS_CLASSES}
        for n in self.nodes.values():
            classes.add(type(n))
            classes.update(type(x) for x in (n.execution, n.origin, *n.metrics))
            for value in (n.outcome, *n.steps.values()):
                _model_classes(value, classes)
        for kept in (self.stage_started, self.stage_best, self.stage_ended, self.heldout, self.idea_stopped):
            _model_classes(kept, classes)  # events the journal holds on to
        _model_classes([self.stop, self.finished], classes)
        classes.discard(type(None))
        return state, classes

    def add_node(self, node: Node) -> Node:
        node.id = node.id or self.new_node_id()
        node.created_at = node.created_at or time.time()
        self.record(ev.NodeCreated(node=node))
        return self.nodes[node.id]

    def new_node_id(self) -> str:
        return f"n{len(self.nodes):04d}"

    def attempt_started(self, node_id: str, attempt: int, step: str = "", holds: bool = True) -> None:
        self.record(ev.AttemptStarted(node_id=node_id, attempt=attempt, step=step, holds=holds))

    def step_finished(self, node_id: str, attempt: int, result: StepResult) -> None:
        """An intermediate step of a pipelined attempt is in: its output waits for the next step."""
        if not self.nodes[node_id].is_finished:
            self.record(ev.StepFinished(node_id=node_id, attempt=attempt, step=result.step, result=result))

    def discard(self, node_id: str, reason: str) -> None:
        """Drop a node its strategy no longer needs (speculative work whose premise failed): it
        gets no further step, and stage views leave it out. Its results so far stay journaled."""
        if self.nodes[node_id].status != NodeStatus.DISCARDED:
            self.record(ev.NodeDiscarded(node_id=node_id, reason=reason))

    def attempt_finished(self, node_id: str, attempt: int, result: AttemptResult) -> bool:
        """Record a result; False (and nothing recorded) if the node already has one."""
        if self.nodes[node_id].is_finished:
            return False
        self.record(ev.AttemptFinished(node_id=node_id, attempt=attempt, result=result))
        return True

    # -- replay --------------------------------------------------------------------------
    def _apply(self, e: ev.Event) -> None:
        self.totals.apply(e)
        if isinstance(e, ev.SessionStarted):
            self.sessions.append((e.ts, e.ts))
            self.stop = None  # a resumed run is running again
        elif self.sessions:
            self.sessions[-1] = (self.sessions[-1][0], e.ts)
        if type(e) not in _APPLIED:  # most events of a big run change no node (compute_used)
            return
        match e:  # the frequent ones first: a replay tries the cases in order
            case ev.AttemptStarted():
                node = self.nodes[e.node_id]
                node.status = NodeStatus.RUNNING
                node.attempts = max(node.attempts, e.attempt)
                node.open_attempt = e.attempt
                node.started_at = node.started_at or e.ts
            case ev.AttemptFinished():
                self._apply_result(self.nodes[e.node_id], e.result)
            case ev.NodeCreated(node=node):
                _share_fields_set(node)
                self.nodes[node.id] = node
                self._index(node)
            case ev.StepFinished(result=step):
                node = self.nodes[e.node_id]
                node.steps[step.step] = step.outcome
                node.cost_usd += step.cost_usd
                node.status = NodeStatus.PENDING  # until its next step starts
            case ev.AttemptLost() | ev.AttemptCancelled():
                node = self.nodes[e.node_id]
                node.lost_attempts += isinstance(e, ev.AttemptLost)
                node.open_attempt = None  # the next step starts a fresh attempt (a fresh workspace)
                if not node.is_finished:
                    node.status = NodeStatus.PENDING
            case ev.NodeDiscarded():
                self._apply_discard(self.nodes[e.node_id], e.reason)
            case ev.StageStarted():
                self.stage_started[(e.idea, e.stage)] = e
                self._stages.setdefault(e.stage)
            case ev.StageBest():
                self.stage_best[(e.idea, e.stage)] = e
            case ev.StageEnded():
                self.stage_ended[(e.idea, e.stage)] = e
            case ev.RunStarted():
                self.config = e.config
                self.metric_specs = list(e.metrics)
                self.plan_stages = list(e.stages or e.config.get("stages") or [])
                self.event_format = e.format
            case ev.SlotsChanged():
                self.slots = e.slots
            case ev.HeldoutSelected():
                self.heldout[e.idea] = e
            case ev.IdeaStopped():
                self.idea_stopped[e.idea] = e
            case ev.RunStopped():
                self.stop = e
            case ev.RunFinished():
                self.finished = e

    def _index(self, node: Node) -> None:
        self._children.setdefault(node.parent_id, []).append(node.id)
        for key in ((node.idea, node.stage), (None, node.stage)):
            self._by_stage.setdefault(key, []).append(node.id)
        self._by_idea.setdefault(node.idea, []).append(node.id)
        self._stages.setdefault(node.stage)
        if not node.is_finished:
            self._unfinished[node.id] = None
            self._unfinished_by_idea[node.idea] = self._unfinished_by_idea.get(node.idea, 0) + 1
        elif node.status in self._status:
            self._status[node.status][node.id] = None

    def _apply_result(self, node: Node, r: AttemptResult) -> None:
        if node.is_finished:
            return
        self._unfinished.pop(node.id, None)
        self._unfinished_by_idea[node.idea] -= 1
        self._status[NodeStatus(r.status)][node.id] = None
        node.status = NodeStatus(r.status)
        node.reason = r.reason
        node.metrics = r.metrics
        node.execution = r.execution
        node.artifacts = r.artifacts
        # An LLM operator writes its node's plan and code on the worker: they arrive with the
        # result (as blob references when large: copied, not read).
        for name in ("code", "plan"):
            if raw(r, name):
                setattr(node, name, raw(r, name))
        node.outcome = r.outcome
        node.finished_at = r.finished_at
        node.cost_usd += r.cost_usd
        _share_fields_set(node)

    def _apply_discard(self, node: Node, reason: str) -> None:
        if node.is_finished:
            self._status.get(node.status, {}).pop(node.id, None)
        else:
            self._unfinished.pop(node.id, None)
            self._unfinished_by_idea[node.idea] -= 1
        node.status = NodeStatus.DISCARDED
        node.reason = reason
        node.open_attempt = None
        self.discarded.append(node.id)
        key = (node.idea, node.stage)
        self.discards_in[key] = self.discards_in.get(key, 0) + 1

    # -- derived views -------------------------------------------------------------------
    @property
    def discards(self) -> int:
        """node_discarded events so far."""
        return len(self.discarded)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def children(self, node_id: str | None) -> list[Node]:
        return [self.nodes[i] for i in self._children.get(node_id, [])]

    def in_stage(
        self, stage: str, *kinds: str, idea: str | None = None, discarded: bool = False
    ) -> list[Node]:
        """Nodes of a stage (of one idea), oldest first: cost grows with the stage, not the run.
        Discarded nodes are no part of their stage's work: left out unless `discarded`."""
        nodes = (self.nodes[i] for i in self._by_stage.get((idea, stage), []))
        return [
            n
            for n in nodes
            if (not kinds or n.kind in kinds) and (discarded or n.status != NodeStatus.DISCARDED)
        ]

    def stage_ids(self, stage: str, idea: str | None = None) -> Sequence[str]:
        """Ids of a stage's nodes (of one idea), oldest first, discarded ones included: the
        journal's own index, read-only, which only grows. For views kept incrementally
        (search/stages.py's StageNodes): each reads only the ids added since it last looked."""
        return self._by_stage.get((idea, stage), ())

    def of_idea(self, idea: str) -> list[Node]:
        return [self.nodes[i] for i in self._by_idea.get(idea, [])]

    def count(self, idea: str) -> int:
        """Nodes of one idea's tree, every kind."""
        return len(self._by_idea.get(idea, []))

    def status_count(self, status: NodeStatus) -> int:
        """Nodes with this status, every kind: good and buggy ones from their index, the others
        among the unfinished (in flight, not the run)."""
        if status in self._status:
            return len(self._status[status])
        return sum(self.nodes[i].status == status for i in self._unfinished)

    def unfinished_count(self, idea: str | None = None) -> int:
        return len(self._unfinished) if idea is None else self._unfinished_by_idea.get(idea, 0)

    @property
    def leaves(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.id not in self._children]

    @property
    def good_nodes(self) -> list[Node]:
        return [self.nodes[i] for i in self._status[NodeStatus.GOOD]]

    @property
    def buggy_nodes(self) -> list[Node]:
        return [self.nodes[i] for i in self._status[NodeStatus.BUGGY]]

    @property
    def unfinished(self) -> list[Node]:
        return [self.nodes[i] for i in self._unfinished]

    def debug_depth(self, node_id: str) -> int:
        """Consecutive debug steps ending at this node (0 for a node that is not a debug)."""
        depth, node = 0, self.nodes[node_id]
        while node.kind == "debug" and node.parent_id is not None:
            depth += 1
            node = self.nodes[node.parent_id]
        return depth

    @property
    def stage_names(self) -> list[str]:
        """Stages in the plan's order, then any others nodes were grown in (e.g. held-out)."""
        return list(dict.fromkeys([*self.plan_stages, *self._stages]))

    @property
    def ideas(self) -> list[str]:
        """Ideas with nodes or a started stage, in the order they first appeared."""
        return list(dict.fromkeys([*self._by_idea, *(idea for idea, _ in self.stage_started)]))

    @property
    def primary_metric(self) -> MetricSpec | None:
        return primary_of(self.metric_specs)

    def best_node(
        self, stage: str | None = None, kinds: tuple[str, ...] = (), idea: str | None = None
    ) -> Node | None:
        """Best good node by the primary metric (one declared metric, never a mean of unlike ones)."""
        spec = self.primary_metric
        if spec is None:
            return None
        if stage:  # the stage's nodes only: cost grows with the stage, not the run
            return spec.best(self.in_stage(stage, *kinds, idea=idea or None))
        return spec.best(
            n for n in self.good_nodes if (not kinds or n.kind in kinds) and (not idea or n.idea == idea)
        )

    def elapsed_s(self, now: float | None = None) -> float:
        """Wall clock the run has been active, summed over driver sessions (resumes).

        A past session counts until its last event; the live one until `now` when given.
        """
        spans = [last - start for start, last in self.sessions]
        if now is not None and self.sessions:
            spans[-1] = now - self.sessions[-1][0]
        return sum(spans)
