"""The dispatch loop: keep every worker slot busy, consume completions one at a time.

Never waits on a batch: as soon as one attempt finishes, its result is journaled and the
strategy is asked for more work to fill the freed slot. Lost attempts (dead worker or node)
are retried on a fresh attempt, at most MAX_LOST times per node; a node gets one result only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.budgets import ComputeMeter
from engine.config import EngineSettings
from engine.executor import Executor, Handle, Job, JobDone
from engine.journal import Journal
from engine.node import AttemptResult, Node, NodeStatus

MAX_LOST = 3
POLL_S = 0.5  # how often budgets are re-checked while every slot is busy


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
class Outcome:
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
        self.compute = compute  # compute budgets and live budget changes (issue 18, engine/budgets.py)
        self.inflight: dict[Handle, tuple[str, int]] = {}
        # Nodes created but without a result: after a resume, or a lost attempt awaiting retry.
        self.backlog: list[str] = [n.id for n in journal.unfinished]

    def run(self) -> Outcome:
        try:
            while True:
                self._check_budgets()
                self._fill_slots()
                if not self.inflight:
                    finish = self.strategy.finished()
                    if finish is not None:
                        self.journal.record("run_finished", reason=finish.message, kind=finish.kind)
                        return Outcome("finished", finish.message)
                    self._check_node_budget()
                    self.journal.record("run_stopped", reason="the search proposed no further work", budget=None)
                    return Outcome("stuck", "the search proposed no further work")
                completion = self.executor.wait(list(self.inflight), timeout=POLL_S)
                if completion is not None:
                    self._consume(completion)
                    self.on_change()
        except BudgetStop as stop:
            self._cancel_inflight()
            self.journal.record("run_stopped", reason=stop.message, budget=stop.budget)
            return Outcome("budget", stop.message, stop.budget)
        except KeyboardInterrupt:
            return self._interrupted("interrupted by the user", "SIGINT")
        except StopRequested as stop:
            return self._interrupted(f"stopped by {stop.signal_name}", stop.signal_name)

    def _interrupted(self, reason: str, signal_name: str) -> Outcome:
        self._cancel_inflight()
        self.journal.record("run_stopped", reason=reason, budget=None, signal=signal_name)
        return Outcome("interrupted", reason, signal=signal_name)

    # -- budgets ------------------------------------------------------------------------
    def _check_budgets(self) -> None:
        b = self.cfg.budgets
        if self.compute is not None:  # issue 18: limits as `silva budget` changed them
            b = self.compute.poll()
            spent = self.compute.exhausted()
            if spent is not None and not self.inflight:  # running jobs finish and are counted first
                raise BudgetStop(*spent)
        if b.wall_clock_s is not None and self.journal.elapsed_s(now=time.time()) >= b.wall_clock_s:
            raise BudgetStop("wall_clock_s", f"wall-clock budget of {b.wall_clock_s:g} s used up")
        if b.dollars is not None and self.spent_usd() >= b.dollars:
            raise BudgetStop("dollars", f"LLM budget of ${b.dollars:.2f} used up (spent ${self.spent_usd():.2f})")

    def _node_budget_left(self) -> int | None:
        limit = self.cfg.budgets.max_nodes
        return None if limit is None else limit - len(self.journal.nodes)

    def _check_node_budget(self) -> None:
        """Called once nothing is in flight: out of nodes is then a stop, not a pause."""
        left = self._node_budget_left()
        if left is not None and left <= 0:
            raise BudgetStop("max_nodes", f"node budget of {self.cfg.budgets.max_nodes} node(s) used up")

    # -- submitting ---------------------------------------------------------------------
    def _fill_slots(self) -> None:
        if self.compute is not None and self.compute.exhausted() is not None:
            return  # issue 18: a compute budget is used up: nothing new starts
        slots = self.cfg.executor.max_in_flight - len(self.inflight)
        while slots > 0 and self.backlog:
            self._submit(self.journal.nodes[self.backlog.pop(0)])
            slots -= 1
        left = self._node_budget_left()
        if slots > 0 and (left is None or left > 0):
            proposed = self.strategy.propose(slots if left is None else min(slots, left))
            for node in proposed:
                self._submit(self.journal.add_node(node))
            if proposed:
                self.on_change()

    def _submit(self, node: Node) -> None:
        attempt = node.attempts + 1
        job = self.strategy.job_for(node, attempt)
        self.journal.attempt_started(node.id, attempt)
        handle = self.executor.submit(job, self.cfg.resources_for(node.kind))
        self.inflight[handle] = (node.id, attempt)

    # -- consuming ----------------------------------------------------------------------
    def _consume(self, c: JobDone) -> None:
        node_id, attempt = self.inflight.pop(c.handle)
        if c.result is not None:
            refusal = c.result.refusal
            if refusal is not None:  # the attempt was refused its LLM call: no result, re-run after a resume
                self.journal.record("attempt_cancelled", node_id=node_id, attempt=attempt)
                raise BudgetStop(refusal.budget, refusal.message)
            self.journal.attempt_finished(node_id, attempt, c.result)
            return
        self.journal.record("attempt_lost", node_id=node_id, attempt=attempt, error=c.lost)
        node = self.journal.nodes[node_id]
        if node.lost_attempts >= MAX_LOST:
            self.journal.attempt_finished(
                node_id, attempt,
                AttemptResult(status="buggy", reason=f"infrastructure: attempt lost {node.lost_attempts} times ({c.lost})"),
            )
        else:
            self.backlog.append(node_id)

    def _cancel_inflight(self) -> None:
        for handle, (node_id, attempt) in list(self.inflight.items()):
            self.executor.cancel(handle)
            if self.journal.nodes[node_id].status == NodeStatus.RUNNING:
                self.journal.record("attempt_cancelled", node_id=node_id, attempt=attempt)
        self.inflight.clear()
