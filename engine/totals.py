"""Running totals the journal keeps per event, so that views and a driver's session start read
them instead of the whole log: compute spent (`compute_used`), budget changes
(`budget_changed`), the time attempts held a worker, and the jobs a dead driver left running.

Each number has this one definition; `Journal` feeds every event it applies into a `Totals`,
which is part of its snapshot (engine/eventlog.py), so a big run's totals cost nothing to open.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from engine.events import (
    AttemptCancelled,
    AttemptFinished,
    AttemptLost,
    AttemptStarted,
    BudgetChanged,
    ComputeUsed,
    Event,
    SessionStarted,
    StepFinished,
)

ATTEMPT_ENDS = (AttemptFinished, AttemptLost, AttemptCancelled)
JOB_ENDS = (*ATTEMPT_ENDS, StepFinished)  # events that end a job (a step of an attempt or all of it)
_COUNTED = frozenset({*JOB_ENDS, AttemptStarted, SessionStarted, ComputeUsed, BudgetChanged})
_JOB_EVENTS = (*JOB_ENDS, ComputeUsed)
# Steps that hold the node's resources (search/agentic/operators/job.py: `holds_resources`); a job
# without steps journals none.
HOLDING_STEPS = ("", "all", "run")


class Usage(BaseModel):
    """Resource-seconds held; `gpu_hours`/`cpu_hours` for people."""

    seconds: float = 0.0  # wall time of the jobs that held anything
    gpu_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def gpu_hours(self) -> float:
        return self.gpu_s / 3600

    @property
    def cpu_hours(self) -> float:
        return self.cpu_s / 3600

    def add(self, other: Usage) -> None:
        self.seconds += other.seconds
        self.gpu_s += other.gpu_s
        self.cpu_s += other.cpu_s


def event_usage(e: ComputeUsed) -> Usage:
    return Usage(seconds=e.seconds, gpu_s=e.gpu_s, cpu_s=e.cpu_s)


@dataclass
class Spend:
    """Compute spent, from the journal's `compute_used` events: in total, per idea, over time."""

    total: Usage = field(default_factory=Usage)
    by_idea: defaultdict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))
    timeline: list[tuple[float, float, float]] = field(default_factory=list)  # (ts, cumulative GPU-s, CPU-s)

    def apply(self, e: ComputeUsed) -> None:
        u = event_usage(e)
        self.total.add(u)
        self.by_idea[e.idea].add(u)
        self.timeline.append((e.ts, self.total.gpu_s, self.total.cpu_s))

    @classmethod
    def replay(cls, events: Iterable[Event]) -> Spend:
        spend = cls()
        for e in events:
            if isinstance(e, ComputeUsed):
                spend.apply(e)
        return spend


@dataclass
class Busy:
    """Time jobs held a slot: from the `attempt_started` of a step that holds resources (a whole
    attempt, or its run step; not think or judge, nor a job journaled `holds: false`, which only
    wait on an LLM) to the event that ended that job."""

    ended_s: float = 0.0  # spans that ended
    running: dict[tuple[str, int], float] = field(default_factory=dict)  # (node, attempt) -> start

    def apply(self, e: Event) -> None:
        if isinstance(e, AttemptStarted) and e.holds and e.step in HOLDING_STEPS:
            self.running[(e.node_id, e.attempt)] = e.ts
        elif isinstance(e, JOB_ENDS):
            start = self.running.pop((e.node_id, e.attempt), None)
            if start is not None:
                self.ended_s += e.ts - start

    def seconds(self, now: float) -> float:
        """Ended spans plus the running ones up to `now`."""
        return self.ended_s + sum(max(0.0, now - start) for start in self.running.values())

    def close(self, last_ts: float) -> None:
        """A new session: what the dead driver left running held its slot until that session's last
        event, as far as the journal knows (it is charged the same way: `Held.until`)."""
        self.ended_s += sum(max(0.0, last_ts - start) for start in self.running.values())
        self.running.clear()


@dataclass
class Held:
    """A job that was running when its driver died: charged once, at a later session's start."""

    node_id: str
    attempt: int
    step: str
    since: float  # its attempt_started
    until: float  # that session's last event: the machine was held at least that long


@dataclass
class Jobs:
    """Jobs started in the current session and not yet ended or charged; at the next
    `session_started` they become orphans until a `compute_used` charges them."""

    running: dict[tuple[str, int], tuple[str, float]] = field(default_factory=dict)  # -> (step, started)
    orphans: dict[tuple[str, int, str], Held] = field(default_factory=dict)
    last_ts: float = 0.0

    def apply(self, e: Event) -> None:
        if isinstance(e, SessionStarted):
            for (node_id, attempt), (step, since) in self.running.items():
                self.orphans[(node_id, attempt, step)] = Held(node_id, attempt, step, since, self.last_ts)
            self.running.clear()
        elif isinstance(e, AttemptStarted):
            self.running[(e.node_id, e.attempt)] = (e.step, e.ts)
        elif isinstance(e, _JOB_EVENTS):
            self.running.pop((e.node_id, e.attempt), None)
            if isinstance(e, ComputeUsed):
                self.orphans.pop((e.node_id, e.attempt, e.step), None)
        self.last_ts = e.ts


@dataclass
class Totals:
    """Every running total, fed one event at a time by the journal."""

    spend: Spend = field(default_factory=Spend)
    busy: Busy = field(default_factory=Busy)
    jobs: Jobs = field(default_factory=Jobs)
    budget_changes: dict[str, float | None] = field(default_factory=dict)  # the latest of each

    def apply(self, e: Event) -> None:
        if type(e) not in _COUNTED:  # most events of a big run: only their time counts
            self.jobs.last_ts = e.ts
            return
        if isinstance(e, ComputeUsed):
            self.spend.apply(e)
        elif isinstance(e, BudgetChanged):
            self.budget_changes.update(e.changes)
        if isinstance(e, SessionStarted):
            self.busy.close(self.jobs.last_ts)
        self.busy.apply(e)
        self.jobs.apply(e)

    @classmethod
    def replay(cls, events: Iterable[Event]) -> Totals:
        """The totals of events read from a log (what the journal's own must equal)."""
        totals = cls()
        for e in events:
            totals.apply(e)
        return totals


CLASSES: tuple[type, ...] = (Usage, Spend, Busy, Held, Jobs, Totals)  # what a snapshot of them holds
