"""The executor in virtual time: each job's duration and result drawn from a `Source`."""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from engine.attempt import ExperimentJob
from engine.config import Budgets, Resources
from engine.dispatch import BudgetStop
from engine.executor import Handle, Job, JobDone, cpu_pool, holds_resources, step_of
from engine.journal import Journal
from engine.llm.config import Price
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node, StepResult
from search.agentic.operators.job import CycleJob, JudgeJob, Proposed, Ran, RunJob, ThinkJob
from search.agentic.operators.outcome import OperatorOutcome
from search.agentic.operators.schemas import Judgement
from search.selection import SelectionJob
from search.stages import Selection
from silva.paper_phases import ReviewJob
from silva.plan.source import Source
from writeup.job import WriteupJob


class PlanExecutor:
    """An executor in virtual time: each job's result is drawn when it is submitted and comes
    back when its duration is over; `wait` returns the next to end at once. No code runs and no
    LLM is called: an LLM step takes its role's latency and is charged its tokens at the role
    model's price. It stops the run at the wall-clock and dollar budgets in virtual time (the
    dispatcher's own checks read the real clock and the real ledger)."""

    def __init__(
        self,
        journal: Journal,
        source: Source,
        seed: int,
        budgets: Budgets,
        prices: dict[str, Price],
    ) -> None:
        self.journal, self.source, self.rng = journal, source, random.Random(seed)
        self.budgets, self.prices = budgets, prices
        self.start = self.now = time.time()
        self.pending: dict[Handle, tuple[float, float, Job, Resources, Any, float]] = {}
        self.ends: list[tuple[float, Handle]] = []  # (end, handle), a heap; cancelled ones left in
        self.ids = itertools.count()
        self.held_s: defaultdict[str, float] = defaultdict(float)  # experiments' slot-seconds per idea
        self.gpu_s = self.cpu_s = self.dollars = self.experiment_s = 0.0
        self.llm_calls: Counter[str] = Counter()
        self.completions = 0
        self.grown = 0  # nodes created and discarded when `wait` was last called

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self.ids)
        node = self.journal.nodes[job.node_id]
        took, result, dollars = self._draw(job, node)
        # Ended when the driver journals it; begun, as its result says, its own time before: the
        # driver's look-ahead is measured on those (replayed, the twin's own: on the spans, a
        # forest's replay thought one node more ahead 3 s before its run did).
        own = self.source.own_time(node, step_of(job) or node.kind)
        result.finished_at = self.now + took
        result.started_at = result.finished_at - (took if own is None else own)
        result.cost_usd = dollars
        self.pending[handle] = (self.now, self.now + took, job, resources, result, dollars)
        heapq.heappush(self.ends, (self.now + took, handle))
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if not handles:
            return None
        # The dispatcher waits on every job in flight: the first to end is the heap's first
        # still pending (a min over them cost O(jobs in flight) a completion).
        while self.ends[0][1] not in self.pending:
            heapq.heappop(self.ends)
        handle = self.ends[0][1]
        start, end, job, res, result, dollars = self.pending[handle]
        # No wait (GroupCommit takes the completions that are ready together): only a job that
        # has ended by now. Jumping to the next end here moved the clock to the last of up to 64
        # jobs in flight before the driver saw the first: plans 43-100% longer than the run.
        if timeout <= 0 and end > self.now:
            return None
        # The driver proposes again after `timeout` with nothing done: a round that grew the tree
        # may give more then (a stage's selection holds no slot and is no thinking node, so 0.5 s
        # after it started, a forest's run proposed the stage's speculative replicate; the
        # replay proposed it 3 s later, at the next completion: +7% wall). A round that changed
        # nothing would give nothing: the clock moves on to the next end.
        grown, self.grown = self.grown, len(self.journal.nodes) + self.journal.discards
        if timeout > 0 and grown != self.grown and end > self.now + timeout:
            self.now += timeout
            return None
        wall = self.budgets.wall_clock_s
        if wall is not None and end - self.start > wall:
            self.now = self.start + wall
            self._held_until_now()
            raise BudgetStop("wall_clock_s", f"wall-clock budget of {wall:g} s used up")
        del self.pending[handle]
        heapq.heappop(self.ends)
        self.now = max(self.now, end)
        self.completions += 1
        self.dollars += dollars
        if holds_resources(job):
            self._charge(job, res, end - start)
        elif cpu_pool(job):  # a paper beside the slots, as the run's: CPU time, no slot time
            self.cpu_s += (end - start) * res.num_cpus
        if self.budgets.dollars is not None and self.dollars >= self.budgets.dollars:
            raise BudgetStop("dollars", f"LLM budget of ${self.budgets.dollars:.2f} used up")
        return JobDone(handle, result)

    def _held_until_now(self) -> None:
        """The budget stops the run: the experiments in flight held their slots until now, and
        the papers in the CPU pool spent its CPUs until now."""
        for start, end, job, res, _, _ in self.pending.values():
            if start >= self.now:
                continue
            if holds_resources(job):
                self._charge(job, res, min(end, self.now) - start)
            elif cpu_pool(job):
                self.cpu_s += (min(end, self.now) - start) * res.num_cpus

    def _charge(self, job: Job, res: Resources, took: float) -> None:
        """A slot-holding job's time: its idea's share, GPU and CPU time, and, an experiment's,
        utilization (an aggregation holds a slot but is no experiment, as `silva status` counts)."""
        self.held_s[self.journal.nodes[job.node_id].idea] += took
        self.gpu_s += took * res.num_gpus
        self.cpu_s += took * res.num_cpus
        if isinstance(job, RunJob | CycleJob | ExperimentJob):
            self.experiment_s += took

    def cancel(self, handle: Handle) -> None:
        self.pending.pop(handle, None)

    def shutdown(self) -> None:
        pass

    # -- drawing a job's outcome ----------------------------------------------------------------
    def _llm(self, role: str, calls: int = 1, node: Node | None = None) -> tuple[float, float]:
        """`calls` sequential calls of `role` for `node`: (seconds, dollars)."""
        took = dollars = 0.0
        price = self.prices.get(role) or self.prices.get("code")  # a role not configured: the code model
        for _ in range(calls):
            latency, tokens_in, tokens_out = self.source.call(role, self.rng, node)
            took += latency
            dollars += price.dollars(tokens_in, tokens_out, 0) if price is not None else 0.0
            self.llm_calls[role] += 1
        return took, dollars

    def _experiment(self, node: Node, specs: Sequence[MetricSpec]) -> tuple[float, bool, list[MetricValue]]:
        took, buggy = self.source.experiment(node.kind, self.rng, node)
        return took, buggy, [] if buggy else self.source.values(node.kind, specs, self.rng, node)

    def _draw(self, job: Job, node: Node) -> tuple[float, AttemptResult | StepResult, float]:
        """How long `job` takes, its result and its LLM dollars."""
        if isinstance(job, ThinkJob):
            return self._draw_think(job, node)
        if isinstance(job, RunJob):
            took, buggy, metrics = self._experiment(node, job.a.metrics)
            ran = Ran(
                workspace="",
                execution=ExecSummary(exit_code=1 if buggy else 0, wall_s=took),
                metrics=metrics,
                run_problem="simulated failure" if buggy else "",
            )
            return took, StepResult(step="run", outcome=ran), 0.0
        if isinstance(job, JudgeJob):
            return self._draw_judge(job, node)
        if isinstance(job, CycleJob):
            took, buggy, metrics = self._experiment(node, job.a.metrics)
            dollars = 0.0
            if job.llm is not None:  # the pipeline off: think and judge in the same job
                for role in ("code", "feedback"):
                    t, d = self._llm(role, 1, node)
                    took, dollars = took + t, dollars + d
            return took, self._operator(node, not buggy, metrics, None, split=job.a.split), dollars
        if isinstance(job, SelectionJob):
            took, dollars = self._llm(job.role, 1, node)
            took = self.source.step_time("selection", self.rng, node, took)
            top = job.ranked[0].id
            choice = Selection(
                node_id=top, by="metric (simulated)", metric_best=top, candidates=[n.id for n in job.ranked]
            )
            return took, AttemptResult(status="good", reason="simulated", outcome=choice), dollars
        if isinstance(job, WriteupJob) and job.llm is not None:
            took, dollars = self._llm("writeup", self.source.calls_per_job("writeup"), node)
            return took, AttemptResult(status="good", reason="simulated"), dollars
        if isinstance(job, ReviewJob):
            took, dollars = self._llm("review", self.source.calls_per_job("review"), node)
            return took, AttemptResult(status="good", reason="simulated"), dollars
        if isinstance(job, ExperimentJob):
            took, buggy, metrics = self._experiment(node, job.metrics)
            status = "buggy" if buggy else "good"
            return took, AttemptResult(status=status, reason="simulated", metrics=metrics), 0.0
        # Aggregation, an offline writeup: no LLM, a duration of their kind.
        return (
            self.source.duration(node.kind, self.rng, node),
            AttemptResult(status="good", reason="simulated"),
            0.0,
        )

    def _draw_think(self, job: ThinkJob, node: Node) -> tuple[float, StepResult, float]:
        """A think step: one code-model call and a proposal of `node`'s kind, or a failed one."""
        took, dollars = self._llm("code", 1, node)
        failed, exhausted = self.source.proposal(node.kind, self.rng, node)
        took = self.source.step_time("think", self.rng, node, took, failed)
        if failed:
            proposed = Proposed(proposal_error="simulated failure", exhausted=exhausted, llm_calls=1)
            return took, StepResult(step="think", outcome=proposed), dollars
        proposed = Proposed(
            code="# simulated by silva plan\n",
            plan=f"simulated {node.kind}",
            # A tuning or an ablation (the kinds whose proposals claim a variant: the ask
            # carries their claims) names a new one; kind names stay the mode's own.
            hyperparameters={"setting": node.id} if job.ask.claims is not None else {},
            ablation=f"variant {node.id}" if job.ask.claims is not None else "",
            llm_calls=1,
        )
        return took, StepResult(step="think", outcome=proposed), dollars

    def _draw_judge(self, job: JudgeJob, node: Node) -> tuple[float, AttemptResult, float]:
        """A judge step: a feedback call, a vision call when the run has a vision model, and the
        operator's verdict on what the run step left (a failed proposal ran nothing: no call)."""
        took = dollars = 0.0
        if job.ran is not None:
            took, dollars = self._llm("feedback", 1, node)
        if job.ran is not None and job.a.vision:
            seen, paid = self._llm("vision", 1, node)
            took, dollars = took + seen, dollars + paid
        took = self.source.step_time("judge", self.rng, node, took, failed=job.ran is None)
        ok = job.ran is not None and not job.ran.run_problem
        result = self._operator(node, ok, job.ran.metrics if ok and job.ran else [], job.proposed)
        if ok and self.source.converges(node.kind, self.rng, node):
            assert isinstance(result.outcome, OperatorOutcome)
            result.outcome.judgement = Judgement(
                is_buggy=False, reason="simulated", summary="simulated", converged=True
            )
        return took, result, dollars

    @staticmethod
    def _operator(
        node: Node, ok: bool, metrics: list[MetricValue], proposed: Proposed | None, split: str = "search"
    ) -> AttemptResult:
        failed = proposed is not None and bool(proposed.proposal_error)
        outcome = OperatorOutcome(
            operator=node.kind,
            hyperparameters=proposed.hyperparameters if proposed else {},
            ablation=proposed.ablation if proposed else "",
            exhausted=proposed.exhausted if proposed else False,
            status_rule="ok" if ok else "proposal" if failed else "execution",
            split="heldout" if split == "heldout" else "search",
        )
        return AttemptResult(
            status="good" if ok else "buggy",
            reason="simulated" if ok else "simulated failure",
            metrics=metrics,
            outcome=outcome,
            code=proposed.code if proposed else None,
            plan=proposed.plan if proposed else None,
        )
