"""`silva plan`: a whole run simulated before it is paid for (docs/plan.md).

The real driver (dispatch loop, strategy, allocation policy, budgets, phases after the search)
runs against `PlanExecutor`, which runs no code: each job ends after a duration drawn in
virtual time, from a previous run's journal (`--from`) or from the per-node-kind lognormals of
`PlanSettings`. The run directory is a temporary one; the report is what the run would give
and cost: wall time, GPU-hours, nodes, papers, slot utilization, each idea's share, and the
budget that would stop it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import random
import resource
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, field_validator

from engine.attempt import ExperimentJob
from engine.config import Budgets, Resources
from engine.dispatch import BudgetStop
from engine.errors import ConfigError
from engine.events import AttemptFinished, AttemptStarted, IdeaAdmitted, StepFinished
from engine.executor import Handle, Job, JobDone, holds_resources
from engine.journal import EVENTS_FILE, Journal
from engine.llm import LLM
from engine.llm.config import LLMConfig, Price, ProviderConfig
from engine.llm.ledger import read_records
from engine.llm.prices import resolve_model
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node, NodeStatus, StepResult
from search.agentic.operators.job import CycleJob, JudgeJob, Proposed, Ran, RunJob, ThinkJob
from search.agentic.operators.outcome import OperatorOutcome, operator_outcome
from search.agentic.operators.schemas import Judgement
from search.idea import Idea
from search.rolling import IdeaSupply, Offer
from search.selection import SelectionJob
from search.stages import Selection
from silva.config import RunConfig, load_config
from silva.paper_phases import ReviewJob
from silva.rolling import IdeationSection
from writeup.job import WriteupJob

LEDGER_FILE = "llm_ledger.jsonl"
PAPER, REVIEW = "paper", "review"  # the phases' node kinds (silva/paper_phases.py)
LLM_STEPS = ("think", "judge", "selection")  # jobs that wait on an LLM and hold no slot


class Lognormal(BaseModel):
    """A duration in seconds: lognormal with this median and log-space sigma."""

    median_s: float = Field(gt=0)
    sigma: float = Field(0.5, ge=0)

    def draw(self, rng: random.Random) -> float:
        return self.median_s * math.exp(self.sigma * rng.gauss(0.0, 1.0))


class LLMRole(BaseModel):
    """One LLM role's calls: latency, tokens, and how many calls one job makes."""

    model_config = {"extra": "forbid"}

    latency: Lognormal
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    calls: int = Field(1, ge=1, description="calls one job makes (a writeup: its sections and fixes)")


# Hosted models in late 2026 (docs/plan.md, "Defaults"): code-writing calls of 30-120 s and
# judgements of 5-20 s (5th to 95th percentile: a lognormal of sigma 0.42 about the median).
DEFAULT_ROLES = {
    "code": LLMRole(latency=Lognormal(median_s=60.0, sigma=0.42), input_tokens=8000, output_tokens=4000),
    "feedback": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=6000, output_tokens=600),
    "vision": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=3000, output_tokens=400),
    "selection": LLMRole(latency=Lognormal(median_s=10.0, sigma=0.42), input_tokens=4000, output_tokens=300),
    "writeup": LLMRole(
        latency=Lognormal(median_s=60.0, sigma=0.42), input_tokens=20000, output_tokens=3000, calls=25
    ),
    "review": LLMRole(
        latency=Lognormal(median_s=40.0, sigma=0.42), input_tokens=15000, output_tokens=2000, calls=6
    ),
    # One idea of a rolling forest: a draft, its reflections, its novelty rounds (`calls` is
    # replaced by the section's own count); made ahead of the slots, so only its price counts.
    "ideation": LLMRole(latency=Lognormal(median_s=30.0, sigma=0.42), input_tokens=4000, output_tokens=1500),
}


DEFAULT_DURATIONS = {
    "default": Lognormal(median_s=1200.0, sigma=0.75),  # an experiment: 20 min median
    "aggregation": Lognormal(median_s=5.0, sigma=0.3),
    "selection": Lognormal(median_s=10.0, sigma=0.42),
    PAPER: Lognormal(median_s=60.0, sigma=0.3),  # the offline results report
    REVIEW: Lognormal(median_s=120.0, sigma=0.42),
}


class PlanSettings(BaseModel):
    """What a plan assumes where no previous run says otherwise (docs/plan.md, "Defaults")."""

    model_config = {"extra": "forbid"}

    durations: dict[str, Lognormal] = Field(
        default_factory=lambda: dict(DEFAULT_DURATIONS),
        description="per node kind; `default` for experiment kinds not named",
    )
    buggy: dict[str, float] = Field(
        default_factory=dict, description="per node kind: the share of attempts that fail"
    )
    llm: dict[str, LLMRole] = Field(
        default_factory=lambda: dict(DEFAULT_ROLES), description="per LLM role: latency and tokens a call"
    )

    # A file that names some kinds or roles overrides those: the others keep their defaults (a
    # file naming only `default` left aggregations at 20 minutes, holding 16% of the slots).
    @field_validator("durations", mode="after")
    @classmethod
    def _other_kinds_kept(cls, v: dict[str, Lognormal]) -> dict[str, Lognormal]:
        return {**DEFAULT_DURATIONS, **v}

    @field_validator("llm", mode="after")
    @classmethod
    def _other_roles_kept(cls, v: dict[str, LLMRole]) -> dict[str, LLMRole]:
        return {**DEFAULT_ROLES, **v}


class Seen(NamedTuple):
    """One finished node of the source run, as a replay hands it to its twin."""

    took: float
    buggy: bool
    metrics: list[MetricValue]
    proposal: tuple[bool, bool] = (False, False)  # its proposal failed; it had run out of variants
    converged: bool = False  # its judgement said tuning converged


class Source:
    """Durations, outcomes, metric values and LLM calls to draw from: a previous run's journal
    and ledger, or the settings' distributions."""

    def __init__(
        self,
        settings: PlanSettings,
        journal: Journal | None,
        ledger: Path | None = None,
        replay: bool = False,
    ) -> None:
        self.settings, self.replay = settings, replay
        self.took: dict[str, list[float]] = defaultdict(list)
        self.failed: dict[str, list[bool]] = defaultdict(list)
        self.metrics: dict[str, list[list[MetricValue]]] = defaultdict(list)
        self.calls: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
        # Every experiment's time and outcome, whatever its kind: what an experiment of a kind the
        # run happened not to make (a debug node after one bug) takes here. Not the defaults'
        # 20-minute median: one such draw stopped a 2-minute run's plan at its 1-hour budget.
        self.experiments: list[float] = []
        self.experiment_failed: list[bool] = []
        # Each step's time as the driver saw it, from its submission to its result journaled: an
        # experiment's slot time with sandbox start, result collection and dispatch (8.9 s for
        # 5.5 s of its own on 2 cores); an LLM step's prompt, calls, re-asks and parsing (2.0 s
        # for 0.4 s of the call's own at load 20: a plan of the calls alone ran chains too fast).
        self.spans = _spans(journal)
        self.step_s: dict[str, list[float]] = defaultdict(list)
        self.ran_s = self.held_s = 0.0  # experiments' own time, and the slot time it took
        # Replay: each planned node takes its twin's figures, the source's node of its idea and
        # kind in the same place of their order (created there, first started here: the same
        # but for slot-holding jobs queued across kinds); what differs then is the model's.
        self.order: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.twins: dict[str, str | None] = {}
        self.by_node: dict[str, Seen] = {}
        # What ends an agentic stage before its node budget, as the run's model answered: the
        # n-th proposal of a kind in an idea's stage that named only variants already tried, the
        # n-th good judgement that said tuning converged (None: never), and other proposals that
        # failed. Never drawn, a plan ran every tuning and ablation stage to its budget: 8 nodes
        # where the run made 6 and 4. Drawn once per stage of the plan, counted as it goes.
        self.ends_at: dict[tuple[str, str], list[int | None]] = defaultdict(list)
        self.proposal_failed: dict[str, list[bool]] = defaultdict(list)
        self.limit: dict[tuple[str, ...], int | None] = {}
        self.count: Counter[tuple[str, ...]] = Counter()
        self.node_calls: dict[tuple[str, str], list[tuple[float, int, int]]] = defaultdict(list)
        for n in journal or []:
            self.order[(n.idea, n.kind)].append(n.id)
            if n.is_finished and n.status != NodeStatus.DISCARDED and n.finished_at:
                self._add(n, self.spans.get((n.id, "run")) or self.spans.get((n.id, "all")) or 0.0)
        self._stage_ends(journal)
        # A proposal that failed took its re-asks' time (9 s for 2 s at load 20): drawn from
        # those, the one that ran out of ablations ended its stage before the others thought.
        for (node_id, step), took in self.spans.items():
            if step in LLM_STEPS:
                seen = self.by_node.get(node_id)
                failed = step == "think" and seen is not None and seen.proposal[0]
                self.step_s[f"{step}_failed" if failed else step].append(took)
        for r in read_records(ledger) if ledger is not None and ledger.is_file() else []:
            if r.attempts and not r.error and not r.cache_hit:
                self.calls[r.role].append((r.latency_s, r.input_tokens, r.output_tokens))
                if r.node_id is not None:
                    self.node_calls[(r.node_id, r.role)].append(self.calls[r.role][-1])

    def _add(self, n: Node, held: float) -> None:
        """A finished node of the source run: its time, outcome and what its model answered."""
        buggy = n.status == NodeStatus.BUGGY
        out = n.outcome_as(OperatorOutcome)
        if out is not None and "think" in n.steps:
            self.proposal_failed[n.kind].append(out.status_rule == "proposal" and not out.exhausted)
            if out.status_rule == "proposal":  # it ran nothing: no experiment time to draw
                self.by_node[n.id] = Seen(0.0, True, [], (True, out.exhausted))
                return
        converged = out is not None and out.judgement is not None and bool(out.judgement.converged)
        # An experiment's slot time; a job that runs no code (aggregation), its attempt.
        ran = n.execution.wall_s if n.execution is not None else 0.0
        assert n.finished_at is not None
        span = max(0.0, max(ran, held) or n.finished_at - (n.started_at or n.created_at))
        self.took[n.kind].append(span)
        self.failed[n.kind].append(buggy)
        # A selection's or an aggregation's result has an empty execution: not an experiment (as
        # one, a forest's own share came out 0.85 for 0.97, and its plan's utilization with it).
        if n.execution is not None and ran > 0:
            self.ran_s, self.held_s = self.ran_s + ran, self.held_s + span
            self.experiments.append(span)
            self.experiment_failed.append(buggy)
        if n.status == NodeStatus.GOOD and n.metrics:
            self.metrics[n.kind].append(n.metrics)
        self.by_node[n.id] = Seen(span, buggy, n.metrics, converged=converged)

    def _stage_ends(self, journal: Journal | None) -> None:
        """`ends_at`: in each idea's stage, the place among its proposals of a kind of the first
        that ran out of variants, and among their good judgements of the first that converged."""
        groups: dict[tuple[str, str, str], list[Node]] = defaultdict(list)
        for n in journal or []:
            if n.is_finished and n.status != NodeStatus.DISCARDED and "think" in n.steps:
                groups[(n.idea, n.stage, n.kind)].append(n)
        for (_, _, kind), nodes in groups.items():
            outs = [operator_outcome(n) for n in nodes]
            self.ends_at[("exhausted", kind)].append(
                next((i for i, o in enumerate(outs) if o.exhausted), None)
            )
            judged = [o.judgement for n, o in zip(nodes, outs, strict=True) if n.status == NodeStatus.GOOD]
            if any(j is not None for j in judged):
                first = next((i for i, j in enumerate(judged) if j is not None and j.converged), None)
                self.ends_at[("converged", kind)].append(first)

    def _reached(self, what: str, node: Node, rng: random.Random) -> bool:
        """Whether `node`, the next of its kind in its idea's stage, is at or past where `what`
        (`exhausted`, `converged`) happens in that stage, a place drawn from the source run's."""
        key = (what, node.idea, node.stage, node.kind)
        if key not in self.limit:
            seen = self.ends_at.get((what, node.kind))
            self.limit[key] = rng.choice(seen) if seen else None
        place, self.count[key] = self.count[key], self.count[key] + 1
        limit = self.limit[key]
        return limit is not None and place >= limit

    @property
    def own_share(self) -> float:
        """The experiments' own time over the slot time they held (1 from the defaults)."""
        return self.ran_s / self.held_s if self.held_s > 0 else 1.0

    def twin(self, node: Node | None) -> str | None:
        """Replay: the source's node `node` replays (None: not replaying, or none left)."""
        if not self.replay or node is None:
            return None
        if node.id not in self.twins:
            left = self.order.get((node.idea, node.kind))
            self.twins[node.id] = left.pop(0) if left else None
        return self.twins[node.id]

    def replayed(self, node: Node | None) -> Seen | None:
        twin = self.twin(node)
        return self.by_node.get(twin) if twin is not None else None

    def duration(self, kind: str, rng: random.Random, node: Node | None = None) -> float:
        if (own := self.replayed(node)) is not None:
            return own.took
        if self.took.get(kind):
            return rng.choice(self.took[kind])
        d = self.settings.durations
        if kind not in d and self.experiments:
            return rng.choice(self.experiments)
        return (d.get(kind) or d["default"]).draw(rng)

    def buggy(self, kind: str, rng: random.Random, node: Node | None = None) -> bool:
        if (own := self.replayed(node)) is not None:
            return own.buggy
        if self.failed.get(kind):
            return rng.choice(self.failed[kind])
        if kind not in self.settings.buggy and self.experiment_failed:
            return rng.choice(self.experiment_failed)
        return rng.random() < self.settings.buggy.get(kind, 0.0)

    def values(
        self, kind: str, specs: Sequence[MetricSpec], rng: random.Random, node: Node | None = None
    ) -> list[MetricValue]:
        if (own := self.replayed(node)) is not None and own.metrics:
            return [m.model_copy() for m in own.metrics]
        seen = self.metrics.get(kind) or [ms for of_kind in self.metrics.values() for ms in of_kind]
        if seen:
            return [m.model_copy() for m in rng.choice(seen)]
        return [MetricValue(name=s.name, value=rng.gauss(0.0, 1.0), direction=s.direction) for s in specs]

    def proposal(self, kind: str, rng: random.Random, node: Node | None = None) -> tuple[bool, bool]:
        """Whether a think step's proposal fails, and whether it named only variants already
        tried (which ends the stage), as the source run's proposals of `kind` did."""
        if (own := self.replayed(node)) is not None:
            return own.proposal
        if node is not None and self._reached("exhausted", node, rng):
            return True, True
        seen = self.proposal_failed.get(kind)
        return (rng.choice(seen), False) if seen else (False, False)

    def converges(self, kind: str, rng: random.Random, node: Node | None = None) -> bool:
        """Whether a good run's judgement says tuning converged, as the source run's of `kind` did."""
        if (own := self.replayed(node)) is not None:
            return own.converged
        return node is not None and self._reached("converged", node, rng)

    def step_time(
        self, step: str, rng: random.Random, node: Node | None, calls_s: float, failed: bool = False
    ) -> float:
        """An LLM step's time (`LLM_STEPS`; a think step's whose proposal `failed`): as the source
        run's driver saw such steps (replayed, its twin's), else `calls_s`, its calls' latencies."""
        twin = self.twin(node)
        if twin is not None and (twin, step) in self.spans:
            return self.spans[(twin, step)]
        seen = (self.step_s.get(f"{step}_failed") if failed else None) or self.step_s.get(step)
        return rng.choice(seen) if seen else calls_s

    def call(self, role: str, rng: random.Random, node: Node | None = None) -> tuple[float, int, int]:
        """One call of `role`: (latency s, input tokens, output tokens); replayed, the twin's next."""
        twin = self.twin(node)
        if twin is not None and self.node_calls.get((twin, role)):
            return self.node_calls[(twin, role)].pop(0)
        if self.calls.get(role):
            return rng.choice(self.calls[role])
        r = self.settings.llm.get(role) or self.settings.llm["feedback"]
        return r.latency.draw(rng), r.input_tokens, r.output_tokens

    def calls_per_job(self, role: str) -> int:
        r = self.settings.llm.get(role)
        return r.calls if r is not None else 1


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

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self.ids)
        node = self.journal.nodes[job.node_id]
        took, result, dollars = self._draw(job, node)
        result.started_at, result.finished_at = self.now, self.now + took
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
        if self.budgets.dollars is not None and self.dollars >= self.budgets.dollars:
            raise BudgetStop("dollars", f"LLM budget of ${self.budgets.dollars:.2f} used up")
        return JobDone(handle, result)

    def _held_until_now(self) -> None:
        """The budget stops the run: the experiments in flight held their slots until now."""
        for start, end, job, res, _, _ in self.pending.values():
            if holds_resources(job) and start < self.now:
                self._charge(job, res, min(end, self.now) - start)

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
        took = self.source.duration(node.kind, self.rng, node)
        buggy = self.source.buggy(node.kind, self.rng, node)
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
        took = self.source.step_time("judge", self.rng, node, took)
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


class PlannedIdeas:
    """The idea source of a planned rolling forest (search/rolling.py `IdeaSupply`): every idea
    asked for is admitted at once, with the section's metrics: the plan assumes ideation keeps
    ahead of the slots and reports the supply rate that takes (ideas admitted per hour)."""

    def __init__(self, section: IdeationSection) -> None:
        self.settings, self.made, self.ready = section, 0, list[Offer]()

    def ask(self, n: int, known: Collection[Idea]) -> None:
        for _ in range(n):
            self.made += 1
            idea = Idea(
                name=f"planned_{self.made}",
                title=f"planned idea {self.made}",
                hypothesis="simulated by silva plan",
                metrics=self.settings.metrics,
            )
            self.ready.append(Offer(idea, True, "novel"))

    def busy(self) -> bool:
        return False

    def take(self, wait: bool) -> list[Offer]:
        out, self.ready = self.ready, []
        return out


class PlannedIdeation(IdeationSection):
    """A run's `ideation:` section as `silva plan` binds it: to `PlannedIdeas`, no model called."""

    def supply(self, llm_cfg: LLMConfig, template: Path | None, llm: LLM, journal: Journal) -> IdeaSupply:
        return PlannedIdeas(self)

    def calls_per_idea(self) -> int:
        return 2 + self.reflections + self.novelty_rounds  # a draft, reflections, rounds and a decision


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
    outcome: str
    stopped_by: str | None = Field(description="the budget that stopped the run, if one did")
    message: str
    completions: int
    driver_cpu_ms_per_completion: float
    driver_peak_rss_mb: float


def _spans(journal: Journal | None) -> dict[tuple[str, str], float]:
    """Each finished step's span in the run, from the driver's submission to its result
    journaled, by (node, step); a one-job attempt's step is its node kind (a selection)."""
    out: dict[tuple[str, str], float] = {}
    if journal is None:
        return out
    began: dict[tuple[str, int], tuple[float, str]] = {}
    for e in journal.log.read(AttemptStarted, StepFinished, AttemptFinished):
        assert isinstance(e, AttemptStarted | StepFinished | AttemptFinished)
        key = (e.node_id, e.attempt)
        if isinstance(e, AttemptStarted):
            began[key] = (e.ts, e.step or journal.nodes[e.node_id].kind)
        elif key in began:
            t0, step = began.pop(key)
            out[(e.node_id, step)] = max(0.0, e.ts - t0)
    return out


def check_source(from_dir: Path, cfg: RunConfig) -> Journal:
    """The previous run to draw from: a Silva run directory, with its LLM ledger when the
    planned run calls an LLM."""
    if not (from_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"--from {from_dir}: not a Silva run directory (no {EVENTS_FILE}); pass a directory "
            "`silva run` made, or leave --from out to plan from the documented defaults"
        )
    if cfg.llm is not None and not (from_dir / LEDGER_FILE).is_file():
        raise ConfigError(
            f"--from {from_dir}: no {LEDGER_FILE}, so no LLM latencies or tokens to plan from; pass "
            "a run that called an LLM, or leave --from out to plan from the documented defaults"
        )
    return Journal.open(from_dir, read_only=True)


def offline(llm: LLMConfig) -> LLMConfig:
    """The config's models on scripted providers, without the start-of-run probe: a plan needs
    no key and calls no model (no job calls the LLM; the gateway is only opened)."""
    scripted = {name: ProviderConfig(kind="scripted") for name in llm.providers}
    return llm.model_copy(update={"providers": scripted, "probe": False})


def instant_scripted(cfg: RunConfig, settings: PlanSettings) -> PlanSettings:
    """Roles a scripted provider answers (the offline examples) take no time: a fact of the
    config, where the defaults assume a hosted model's latency."""
    if cfg.llm is None:
        return settings
    roles = dict(settings.llm)
    for role, rc in cfg.llm.roles.items():
        if cfg.llm.providers[resolve_model(cfg.llm, rc.model).provider].kind == "scripted":
            r = roles.get(role) or roles["feedback"]
            roles[role] = r.model_copy(update={"latency": Lognormal(median_s=1e-3, sigma=0.0)})
    return settings.model_copy(update={"llm": roles})


def prices(cfg: RunConfig) -> dict[str, Price]:
    """Each role's model's price (the config's, else the built-in table's)."""
    if cfg.llm is None:
        return {}
    out = {role: resolve_model(cfg.llm, rc.model).price for role, rc in cfg.llm.roles.items()}
    return {role: p for role, p in out.items() if p is not None}


def plan(
    config: Path,
    *,
    slots: int | None = None,
    gpus: float | None = None,
    from_dir: Path | None = None,
    seed: int = 0,
    settings: PlanSettings | None = None,
    replay: bool = False,
) -> PlanReport:
    """Simulate the run `config` describes (module docstring); `replay`: `Source.twin`."""
    from silva.lifecycle import create_run, execute

    if slots is not None and slots < 1:
        raise ConfigError(f"--slots {slots}: a run needs at least one slot")
    if gpus is not None and gpus <= 0:
        raise ConfigError(f"--gpus {gpus:g}: give a positive number of GPUs")
    cfg = load_config(config)
    if cfg.mode not in ("template", "agentic"):
        raise ConfigError(
            f"{config}: `silva plan` simulates template and agentic (idea) searches; the {cfg.mode} "
            "search's steps are not simulated yet (docs/plan.md)"
        )
    journal = check_source(from_dir, cfg) if from_dir else None
    settings = instant_scripted(cfg, settings or PlanSettings())
    source = Source(settings, journal, from_dir / LEDGER_FILE if from_dir else None, replay)
    slots = _slots(config, cfg, slots, gpus)
    work = Path(tempfile.mkdtemp(prefix="silva-plan-"))
    quiet = logging.getLogger("sandbox.none")  # its warning is for code that runs: none does here
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        # No code runs: no sandbox, no TeX. The writeup phase is built by `execute` from `cfg`.
        base = cfg.model_copy(
            update={
                "output_dir": work,
                "sandbox": cfg.sandbox.model_copy(update={"provider": "none", "options": {}}),
                "executor": cfg.executor.model_copy(update={"max_in_flight": slots, "kind": "inprocess"}),
                "llm": offline(cfg.llm) if cfg.llm is not None else None,
                "scripted_fn": None,
                "ideation": PlannedIdeation.model_validate(cfg.ideation.model_dump())
                if cfg.ideation is not None
                else None,
            }
        )
        _, journal = create_run(base.model_copy(update={"writeup": None}))
        executor = PlanExecutor(journal, source, seed, cfg.budgets, prices(cfg))
        cpu = time.process_time()
        outcome = execute(base, journal, executor=executor)
        cpu = time.process_time() - cpu
        if isinstance(base.ideation, PlannedIdeation):
            _charge_ideation(executor, journal, base.ideation, prices(cfg))
        return _report(config, from_dir, seed, slots, journal, executor, outcome, cpu)
    finally:
        quiet.setLevel(level)
        shutil.rmtree(work, ignore_errors=True)


def _slots(config: Path, cfg: RunConfig, slots: int | None, gpus: float | None) -> int:
    """--slots, or --gpus over the default node kind's GPUs, else the config's slots."""
    per = cfg.resources_for("default")
    if gpus is not None:
        if per.num_gpus <= 0:
            raise ConfigError(f"--gpus: the config's default node kind uses no GPU ({config}); use --slots")
        slots = max(1, math.floor(gpus / per.num_gpus))
    return slots or cfg.executor.max_in_flight or 1


def _charge_ideation(
    ex: PlanExecutor, journal: Journal, section: PlannedIdeation, price: dict[str, Price]
) -> None:
    """Each admitted idea's ideation calls at the ideation role's model's price (else code's)."""
    admitted = sum(1 for _ in journal.log.read(IdeaAdmitted))
    role = ex.source.settings.llm.get("ideation") or DEFAULT_ROLES["ideation"]
    model = price.get("ideation") or price.get("code")
    calls = admitted * section.calls_per_idea()
    ex.llm_calls["ideation"] += calls
    if model is not None:
        ex.dollars += calls * model.dollars(role.input_tokens, role.output_tokens, 0)


def _report(
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
        outcome=outcome.status,
        stopped_by=outcome.budget,
        message=outcome.message,
        completions=ex.completions,
        driver_cpu_ms_per_completion=round(cpu_s / max(1, ex.completions) * 1e3, 3),
        driver_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )


def scaled(settings: PlanSettings, experiments: float = 1.0, llm: float = 1.0) -> PlanSettings:
    """The settings with every experiment duration (not aggregation, selection, paper, review)
    and every LLM latency multiplied."""
    support = {"aggregation", "selection", PAPER, REVIEW}
    durations = {
        k: d if k in support else d.model_copy(update={"median_s": d.median_s * experiments})
        for k, d in settings.durations.items()
    }
    roles = {
        k: r.model_copy(
            update={"latency": r.latency.model_copy(update={"median_s": r.latency.median_s * llm})}
        )
        for k, r in settings.llm.items()
    }
    return settings.model_copy(update={"durations": durations, "llm": roles})


def assumptions(settings: PlanSettings) -> list[str]:
    """What a plan without --from assumed, one line each."""
    lines = [
        f"{kind} duration: lognormal, median {d.median_s:g} s, sigma {d.sigma:g}"
        for kind, d in settings.durations.items()
    ]
    lines += [f"{kind} attempts failing: {share:.0%}" for kind, share in settings.buggy.items()]
    lines += [
        f"LLM {role}: {r.calls} call(s) a job, latency median {r.latency.median_s:g} s (sigma "
        f"{r.latency.sigma:g}), {r.input_tokens} tokens in, {r.output_tokens} out"
        for role, r in settings.llm.items()
    ]
    return lines


def what_decides(config: Path, base: PlanReport, settings: PlanSettings, **kw: Any) -> list[str]:
    """Which assumptions decide the projection: the plan again with the experiment durations
    doubled, then with the LLM latencies doubled, each change in wall time and utilization."""
    out = []
    for name, factor in (("experiment durations", {"experiments": 2.0}), ("LLM latencies", {"llm": 2.0})):
        r = plan(config, settings=scaled(settings, **factor), **kw)
        change = r.wall_s / base.wall_s - 1 if base.wall_s > 0 else 0.0
        out.append(
            f"{name} doubled: wall time {change:+.0%} ({r.wall_s:,.0f} s), utilization "
            f"{r.utilization:.0%}, {r.nodes} nodes, stops: {r.outcome}"
            + (f" by {r.stopped_by}" if r.stopped_by else "")
        )
    return out
