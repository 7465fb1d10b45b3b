"""The dispatch loop: keep every worker slot busy, consume completions one at a time.

Never waits on a batch: as soon as one job finishes, its result is journaled and the strategy
is asked for more work to fill the freed slot. Lost attempts (dead worker or node) are retried
on a fresh attempt, at most MAX_LOST times per node; a node gets one result only.

Jobs that hold experiment resources (a sandboxed run) take one of the slots (`max_in_flight`, or the
cluster's capacity: `_follow_cluster`); jobs
that only wait on an LLM (a pipelined attempt's think and judge steps, a selection) take none
and run beside them, and so do jobs of the CPU pool (an aggregation, a paper's figures and LaTeX:
`cpu_jobs` at once, on their kind's CPUs, never an accelerator). Look-ahead keeps proposals thinking ahead of
free slots, so a freed slot starts an experiment at once: `ready` holds nodes whose next step
waits for a slot, `cpu_ready` those waiting for the CPU pool.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.budgets import ComputeMeter
from engine.config import EngineSettings, Resources
from engine.events import AttemptCancelled, AttemptLost, RunFinished, RunStopped, SlotsChanged
from engine.executor import (
    NO_RESOURCES,
    Executor,
    Handle,
    Job,
    JobDone,
    capacity,
    cpu_pool,
    holds_resources,
    step_of,
)
from engine.journal import Journal
from engine.node import AttemptResult, Node, NodeStatus, StepResult

MAX_LOST = 3
POLL_S = 0.5  # how often budgets are re-checked while every slot is busy
CAPACITY_POLL_S = 5.0  # how often slots follow the cluster when `max_in_flight` is not set


@dataclass(frozen=True)
class Finish:
    """Why a strategy has no more work: `complete` (every stage and phase done) or `stopped`
    (it ended early: no usable result, or its own budget)."""

    kind: Literal["complete", "stopped"]
    message: str


class Strategy(Protocol):
    def propose(self, slots: int) -> list[Node]: ...

    def job_for(self, node: Node, attempt: int) -> Job: ...

    def finished(self) -> Finish | None: ...


@dataclass(frozen=True)
class RunOutcome:
    status: str  # finished | budget | interrupted | stuck
    message: str
    budget: str | None = None
    signal: str | None = None  # SIGINT / SIGTERM when interrupted


class StopRequested(BaseException):
    """Raised in the driver by a signal handler (SIGINT, SIGTERM): stop cleanly, journal it."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class BudgetStop(Exception):
    """Raised by a job-side check (e.g. the LLM dollar budget) or the loop to stop the run."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget, self.message = budget, message


@dataclass(frozen=True)
class Running:
    node_id: str
    attempt: int
    step: str
    holds: bool  # takes a worker slot (experiment resources)
    cpu: bool = False  # runs in the CPU pool


class StepClock:
    """Durations, measured in this session, of a node's LLM steps (think and judge: steps that
    hold no slot) and of its slot-holding steps (experiments): the look-ahead they call for."""

    TAIL = 0.9  # the quantile of each LLM step's time that the look-ahead covers
    WINDOW = 256  # the latest durations of each LLM step that the quantile is taken over

    def __init__(self) -> None:
        self.llm: dict[str, deque[float]] = {}  # step -> its latest durations
        self.run = [0.0, 0]  # [total seconds, count] of the experiments
        self._llm_tail: float | None = None  # the sum of the steps' tails, until the next sample

    def add(self, running: Running, result: AttemptResult | StepResult) -> None:
        took = max(0.0, result.finished_at - result.started_at)
        if running.holds:
            self.run[0] += took
            self.run[1] += 1
        elif running.step:
            self.llm.setdefault(running.step, deque(maxlen=self.WINDOW)).append(took)
            self._llm_tail = None

    def llm_tail(self) -> float:
        """A node's LLM time at its steps' TAIL quantiles (sorted once per new sample)."""
        if self._llm_tail is None:
            self._llm_tail = sum(
                sorted(times)[min(len(times) - 1, int(self.TAIL * len(times)))] for times in self.llm.values()
            )
        return self._llm_tail

    def lookahead(self, slots: int) -> int:
        """Nodes to keep in their LLM steps beside the slots: Little's law (slots x LLM time per
        node / experiment time, rounded up) on the LLM time's tail, not its mean: an LLM's latency
        is heavy-tailed (lognormal), and with the mean a freed slot waited on a late proposal
        (7-11% of slot time idle on 4 slots). None until measured (a proposal made ahead sees an
        older tree), never more than 8 per slot."""
        if not self.run[1] or not self.llm:
            return 0
        return min(8 * slots, math.ceil(slots * self.llm_tail() / max(self.run[0] / self.run[1], 1e-3)))


class Dispatcher:
    def __init__(
        self,
        cfg: EngineSettings,
        journal: Journal,
        strategy: Strategy,
        executor: Executor,
        on_change: Callable[[], None] = lambda: None,
        spent_usd: Callable[[], float] = lambda: 0.0,
        compute: ComputeMeter | None = None,
    ) -> None:
        self.cfg, self.journal, self.strategy, self.executor = cfg, journal, strategy, executor
        self.on_change, self.spent_usd = on_change, spent_usd
        self.compute = compute  # compute budgets and live budget changes (docs/budgets.md, engine/budgets.py)
        self.inflight: dict[Handle, Running] = {}
        # Jobs in flight that hold a slot, and those in an LLM step: counted as they come and go
        # (summed over `inflight` they cost O(slots) per completion: 2 ms at 1,000 slots).
        self.holding = self.in_llm = self.computing = 0  # `computing`: jobs of the CPU pool
        self.ready: deque[tuple[Node, Job]] = deque()  # next step needs a slot
        self.cpu_ready: deque[tuple[Node, Job]] = deque()  # next job waits for the CPU pool
        self.clock = StepClock()
        # Nodes created but without a result: after a resume they continue from their last step.
        self.backlog: list[str] = [n.id for n in journal.unfinished]
        self.discards = journal.discards
        # In-flight node -> (its place in submission order, its job's handle): a discard cancels
        # its node's job without a scan of every slot.
        self.handle_of: dict[str, tuple[int, Handle]] = {}
        self._submitted = 0
        # Experiment slots: the config's, or what the cluster holds (followed as it changes).
        self.slots = cfg.executor.max_in_flight or journal.slots or 1
        self._capacity_at = -CAPACITY_POLL_S

    def run(self) -> RunOutcome:
        try:
            while True:
                self._check_budgets()
                self._follow_cluster()
                self._fill_slots()
                if not self.inflight and not self.ready and not self.cpu_ready:
                    finish = self.strategy.finished()
                    if finish is not None:
                        self.journal.record(RunFinished(reason=finish.message, kind=finish.kind))
                        return RunOutcome("finished", finish.message)
                    self._check_node_budget()
                    self.journal.record(RunStopped(reason="the search proposed no further work"))
                    return RunOutcome("stuck", "the search proposed no further work")
                completion = self.executor.wait(list(self.inflight), timeout=POLL_S)
                if completion is not None:
                    self._consume(completion)
                    self.on_change()
        except BudgetStop as stop:
            self._cancel_inflight()
            self.journal.record(RunStopped(reason=stop.message, budget=stop.budget))
            return RunOutcome("budget", stop.message, stop.budget)
        except KeyboardInterrupt:
            return self._interrupted("interrupted by the user", "SIGINT")
        except StopRequested as stop:
            return self._interrupted(f"stopped by {stop.signal_name}", stop.signal_name)

    def _interrupted(self, reason: str, signal_name: str) -> RunOutcome:
        self._cancel_inflight()
        self.journal.record(RunStopped(reason=reason, signal=signal_name))
        return RunOutcome("interrupted", reason, signal=signal_name)

    # -- budgets ------------------------------------------------------------------------
    def _check_budgets(self) -> None:
        b = self.cfg.budgets
        if self.compute is not None:  # limits as `silva budget` changed them
            b = self.compute.poll()
            spent = self.compute.exhausted()
            if spent is not None and not self.inflight:  # running jobs finish and are counted first
                raise BudgetStop(*spent)
        if b.wall_clock_s is not None and self.journal.elapsed_s(now=time.time()) >= b.wall_clock_s:
            raise BudgetStop("wall_clock_s", f"wall-clock budget of {b.wall_clock_s:g} s used up")
        if b.dollars is not None and self.spent_usd() >= b.dollars:
            raise BudgetStop(
                "dollars", f"LLM budget of ${b.dollars:.2f} used up (spent ${self.spent_usd():.2f})"
            )

    def _node_budget_left(self) -> int | None:
        limit = self.cfg.budgets.max_nodes
        return None if limit is None else limit - len(self.journal.nodes)

    def _check_node_budget(self) -> None:
        """Called once nothing is in flight: out of nodes is then a stop, not a pause."""
        left = self._node_budget_left()
        if left is not None and left <= 0:
            raise BudgetStop("max_nodes", f"node budget of {self.cfg.budgets.max_nodes} node(s) used up")

    def _follow_cluster(self) -> None:
        """Without `max_in_flight`, slots are the jobs of the default node kind the cluster holds:
        re-read every CAPACITY_POLL_S, journaled when they change, told to the strategy (a
        forest's shares are of the slots)."""
        now = time.monotonic()
        if self.cfg.executor.max_in_flight is not None or now - self._capacity_at < CAPACITY_POLL_S:
            return
        self._capacity_at = now
        slots = capacity(self.executor, self.cfg.resources_for("default"))
        if slots is None or (slots == self.slots and self.journal.slots == slots):
            return
        self.slots = slots
        self.journal.record(SlotsChanged(slots=slots))
        changed = getattr(self.strategy, "capacity_changed", None)
        if changed is not None:
            changed(slots)

    # -- submitting ---------------------------------------------------------------------
    @property
    def lookahead(self) -> int:
        fixed = self.cfg.executor.lookahead
        return fixed if fixed is not None else self.clock.lookahead(self.slots)

    def _free_slots(self) -> int:
        return self.slots - self.holding

    def _running(self, handle: Handle, running: Running | None) -> Running:
        """Add `running` under `handle` (None: remove it), keeping the counts."""
        sign, r = (1, running) if running is not None else (-1, self.inflight.pop(handle))
        if running is not None:
            self.inflight[handle] = running
            self.handle_of[r.node_id] = (self._submitted, handle)
            self._submitted += 1
        elif self.handle_of.get(r.node_id, (0, None))[1] == handle:
            del self.handle_of[r.node_id]
        self.holding += sign * r.holds
        self.in_llm += sign * (not r.holds and not r.cpu and bool(r.step))
        self.computing += sign * r.cpu
        return r

    def _fill_slots(self) -> None:
        if self.compute is not None and self.compute.exhausted() is not None:
            return  # a compute budget is used up: nothing new starts
        while self.backlog:
            self._route(self.journal.nodes[self.backlog.pop(0)])
        self._start_ready()
        # A node in its think or judge step keeps its place: without look-ahead the pipeline
        # proposes exactly when the single-job loop would, so it grows the same tree.
        want = self._free_slots() + self.lookahead - len(self.ready) - self.in_llm
        left = self._node_budget_left()
        if want > 0 and (left is None or left > 0):
            proposed = self.strategy.propose(want if left is None else min(want, left))
            self._drop_discarded()
            for node in proposed:
                self._route(self.journal.add_node(node))
            self._start_ready()
            if proposed:
                self.on_change()

    def _settle(self, node: Node) -> None:
        """A strategy may have an optional `settle(node)`, told of every step or attempt that
        finishes: there it discards work the result made moot (speculation grown from a stage
        leader that was just overtaken), at once rather than when a slot next frees, so no
        queued or running job of it holds a slot meanwhile."""
        settle = getattr(self.strategy, "settle", None)
        if settle is not None:
            settle(node)
            self._drop_discarded()

    def _drop_discarded(self) -> None:
        """Jobs of nodes the strategy discarded meanwhile (speculative work whose premise failed)
        are cancelled: their slots go to work that is still wanted."""
        if self.journal.discards == self.discards:
            return
        new = self.journal.discarded[self.discards :]
        self.discards = self.journal.discards
        if any(node_id not in self.handle_of for node_id in new):  # one may wait for a slot
            self.ready = deque((n, job) for n, job in self.ready if not n.is_finished)
            self.cpu_ready = deque((n, job) for n, job in self.cpu_ready if not n.is_finished)
        # Cancelled in the order they were submitted, as a scan of `inflight` would.
        for _, handle in sorted(self.handle_of[i] for i in set(new) if i in self.handle_of):
            self.executor.cancel(handle)
            running = self._running(handle, None)
            self.journal.record(AttemptCancelled(node_id=running.node_id, attempt=running.attempt))

    def _route(self, node: Node) -> None:
        """The node's next job: queued for a free slot if it holds one, for the CPU pool if it
        runs there, else started now."""
        job = self.strategy.job_for(node, node.next_attempt)
        if holds_resources(job):
            self.ready.append((node, job))
        elif cpu_pool(job):
            self.cpu_ready.append((node, job))
        else:
            self._submit(node, job)

    def _start_ready(self) -> None:
        free = self._free_slots()
        while free > 0 and self.ready:
            self._submit(*self.ready.popleft())
            free -= 1
        while self.computing < (self.cfg.executor.cpu_jobs or self.slots) and self.cpu_ready:
            self._submit(*self.cpu_ready.popleft())

    def _resources(self, node: Node, job: Job) -> Resources:
        if holds_resources(job):
            return self.cfg.resources_for(node.kind)
        if cpu_pool(job):  # CPUs only: a paper never waits for, or holds, an accelerator
            return self.cfg.resources_for(node.kind).model_copy(update={"num_gpus": 0.0})
        return NO_RESOURCES

    def _submit(self, node: Node, job: Job) -> None:
        step, holds = step_of(job), holds_resources(job)
        self.journal.attempt_started(node.id, job.attempt, step, holds)
        handle = self.executor.submit(job, self._resources(node, job))
        self._running(handle, Running(node.id, job.attempt, step, holds, cpu_pool(job)))

    # -- consuming ----------------------------------------------------------------------
    def _consume(self, c: JobDone) -> None:
        running = self._running(c.handle, None)
        node_id, attempt = running.node_id, running.attempt
        if c.result is not None:
            refusal = c.result.refusal
            if refusal is not None:  # the attempt was refused its LLM call: no result, re-run after a resume
                self.journal.record(AttemptCancelled(node_id=node_id, attempt=attempt))
                raise BudgetStop(refusal.budget, refusal.message)
            fault = c.result.fault if isinstance(c.result, AttemptResult) else None
            if fault is not None:  # the machine failed, not the experiment: no verdict, re-run after a resume
                self.journal.record(AttemptCancelled(node_id=node_id, attempt=attempt))
                raise OSError(fault.errno, fault.strerror, fault.filename)
            self.clock.add(running, c.result)
            if isinstance(c.result, StepResult):
                self.journal.step_finished(node_id, attempt, c.result)
            else:
                self.journal.attempt_finished(node_id, attempt, c.result)
            self._settle(self.journal.nodes[node_id])
            if (
                isinstance(c.result, StepResult) and not self.journal.nodes[node_id].is_finished
            ):  # else discarded
                self._route(self.journal.nodes[node_id])
            return
        self.journal.record(AttemptLost(node_id=node_id, attempt=attempt, error=c.lost))
        node = self.journal.nodes[node_id]
        if node.lost_attempts >= MAX_LOST:
            self.journal.attempt_finished(
                node_id,
                attempt,
                AttemptResult(
                    status="buggy",
                    reason=f"infrastructure: attempt lost {node.lost_attempts} times ({c.lost})",
                ),
            )
            self._settle(self.journal.nodes[node_id])
        else:
            self.backlog.append(node_id)

    def _cancel_inflight(self) -> None:
        for handle, running in list(self.inflight.items()):
            self.executor.cancel(handle)
            if self.journal.nodes[running.node_id].status == NodeStatus.RUNNING:
                self.journal.record(AttemptCancelled(node_id=running.node_id, attempt=running.attempt))
        self.inflight.clear()
        self.holding = self.in_llm = self.computing = 0
        self.ready.clear()  # queued nodes are pending in the journal: a resume routes them again
        self.cpu_ready.clear()
