"""`silva plan`: a whole run simulated before it is paid for (docs/plan.md).

The real driver (dispatch loop, strategy, allocation policy, budgets, phases after the search)
runs against `PlanExecutor`, which runs no code: each job ends after a duration drawn in
virtual time, from a previous run's journal (`--from`) or from the per-node-kind lognormals of
`PlanSettings`. The run directory is a temporary one; the report is what the run would give
and cost: wall time, GPU-hours, nodes, papers, slot utilization, each idea's share, and the
budget that would stop it.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import resource
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from engine.attempt import ExperimentJob
from engine.config import Resources
from engine.dispatch import BudgetStop
from engine.errors import ConfigError
from engine.executor import Handle, Job, JobDone, holds_resources
from engine.journal import EVENTS_FILE, Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, NodeStatus
from silva.config import RunConfig, load_config

LEDGER_FILE = "llm_ledger.jsonl"
PAPER, REVIEW = "paper", "review"  # the phases' node kinds (silva/paper_phases.py)


class Lognormal(BaseModel):
    """A duration in seconds: lognormal with this median and log-space sigma."""

    median_s: float = Field(gt=0)
    sigma: float = Field(0.5, ge=0)

    def draw(self, rng: random.Random) -> float:
        return self.median_s * math.exp(self.sigma * rng.gauss(0.0, 1.0))


class PlanSettings(BaseModel):
    """What a plan assumes where no previous run says otherwise (docs/plan.md, "Defaults")."""

    model_config = {"extra": "forbid"}

    durations: dict[str, Lognormal] = Field(
        default_factory=lambda: {
            "default": Lognormal(median_s=1200.0, sigma=0.75),  # an experiment: 20 min median
            "aggregation": Lognormal(median_s=5.0, sigma=0.3),
            "selection": Lognormal(median_s=10.0, sigma=0.42),
            PAPER: Lognormal(median_s=60.0, sigma=0.3),  # the offline results report
            REVIEW: Lognormal(median_s=120.0, sigma=0.42),
        },
        description="per node kind; `default` for experiment kinds not named",
    )
    buggy: dict[str, float] = Field(
        default_factory=dict, description="per node kind: the share of attempts that fail"
    )


class Source:
    """Durations, outcomes and metric values to draw from: a previous run's journal, or the
    settings' distributions."""

    def __init__(self, settings: PlanSettings, journal: Journal | None) -> None:
        self.settings = settings
        self.took: dict[str, list[float]] = defaultdict(list)
        self.failed: dict[str, list[bool]] = defaultdict(list)
        self.metrics: dict[str, list[list[MetricValue]]] = defaultdict(list)
        for n in journal or []:
            if not n.is_finished or n.status == NodeStatus.DISCARDED or not n.finished_at:
                continue
            # An experiment's own wall time; a job that runs no code (aggregation), its attempt.
            ran = n.execution.wall_s if n.execution is not None else 0.0
            span = ran or n.finished_at - (n.started_at or n.created_at)
            self.took[n.kind].append(max(0.0, span))
            self.failed[n.kind].append(n.status == NodeStatus.BUGGY)
            if n.status == NodeStatus.GOOD and n.metrics:
                self.metrics[n.kind].append(n.metrics)

    def duration(self, kind: str, rng: random.Random) -> float:
        if self.took.get(kind):
            return rng.choice(self.took[kind])
        d = self.settings.durations
        return (d.get(kind) or d["default"]).draw(rng)

    def buggy(self, kind: str, rng: random.Random) -> bool:
        if self.failed.get(kind):
            return rng.choice(self.failed[kind])
        return rng.random() < self.settings.buggy.get(kind, 0.0)

    def values(self, kind: str, specs: Sequence[MetricSpec], rng: random.Random) -> list[MetricValue]:
        seen = self.metrics.get(kind) or [ms for of_kind in self.metrics.values() for ms in of_kind]
        if seen:
            return [m.model_copy() for m in rng.choice(seen)]
        return [MetricValue(name=s.name, value=rng.gauss(0.0, 1.0), direction=s.direction) for s in specs]


class PlanExecutor:
    """An executor in virtual time: a job's result comes back when its drawn duration is over;
    `wait` returns the next to end at once. It stops the run at the wall-clock budget of
    virtual time (the dispatcher's own check reads the real clock)."""

    def __init__(
        self, journal: Journal, source: Source, seed: int, wall_clock_s: float | None, slots: int
    ) -> None:
        self.journal, self.source, self.rng = journal, source, random.Random(seed)
        self.wall_clock_s, self.slots = wall_clock_s, slots
        self.start = self.now = time.time()
        self.pending: dict[Handle, tuple[float, float, Job, Resources]] = {}
        self.ids = itertools.count()
        self.held_s: Counter[str] = Counter()  # slot-seconds of experiments per idea
        self.gpu_s = self.cpu_s = 0.0
        self.completions = 0

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self.ids)
        kind = self.journal.nodes[job.node_id].kind
        self.pending[handle] = (self.now, self.now + self.source.duration(kind, self.rng), job, resources)
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if not handles:
            return None
        handle = min(handles, key=lambda h: (self.pending[h][1], h))
        start, end, job, res = self.pending[handle]
        if self.wall_clock_s is not None and end - self.start > self.wall_clock_s:
            self.now = self.start + self.wall_clock_s
            raise BudgetStop("wall_clock_s", f"wall-clock budget of {self.wall_clock_s:g} s used up")
        del self.pending[handle]
        self.now = max(self.now, end)
        self.completions += 1
        node = self.journal.nodes[job.node_id]
        if holds_resources(job):
            took = end - start
            self.held_s[node.idea] += took
            self.gpu_s += took * res.num_gpus
            self.cpu_s += took * res.num_cpus
        buggy = self.source.buggy(node.kind, self.rng)
        result = AttemptResult(
            status="buggy" if buggy else "good",
            reason="simulated failure" if buggy else "simulated",
            started_at=start,
            finished_at=end,
            worker="plan:0",
        )
        if isinstance(job, ExperimentJob) and not buggy:
            result.metrics = self.source.values(node.kind, job.metrics, self.rng)
        return JobDone(handle, result)

    def cancel(self, handle: Handle) -> None:
        self.pending.pop(handle, None)

    def shutdown(self) -> None:
        pass


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
    llm_dollars: float
    nodes: int
    nodes_by_kind: dict[str, int]
    papers_written: int
    papers_reviewed: int
    utilization: float = Field(description="slot-seconds held by experiments / (slots x wall time)")
    share_by_idea: dict[str, float] = Field(description="each idea's share of the slot-seconds held")
    outcome: str
    stopped_by: str | None = Field(description="the budget that stopped the run, if one did")
    message: str
    completions: int
    driver_cpu_ms_per_completion: float
    driver_peak_rss_mb: float


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


def plan(
    config: Path,
    *,
    slots: int | None = None,
    gpus: float | None = None,
    from_dir: Path | None = None,
    seed: int = 0,
    settings: PlanSettings | None = None,
) -> PlanReport:
    """Simulate the run `config` describes; see the module docstring."""
    from silva.lifecycle import create_run, execute

    if slots is not None and slots < 1:
        raise ConfigError(f"--slots {slots}: a run needs at least one slot")
    if gpus is not None and gpus <= 0:
        raise ConfigError(f"--gpus {gpus:g}: give a positive number of GPUs")
    cfg = load_config(config)
    if cfg.mode != "template":
        raise ConfigError(
            f"{config}: `silva plan` simulates template searches and template forests; the "
            f"{cfg.mode} search's LLM steps are not simulated yet (docs/plan.md)"
        )
    source = Source(settings or PlanSettings(), check_source(from_dir, cfg) if from_dir else None)
    per = cfg.resources_for("default")
    if gpus is not None:
        if per.num_gpus <= 0:
            raise ConfigError(f"--gpus: the config's default node kind uses no GPU ({config}); use --slots")
        slots = max(1, math.floor(gpus / per.num_gpus))
    slots = slots or cfg.executor.max_in_flight or 1
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
            }
        )
        _, journal = create_run(base.model_copy(update={"writeup": None}))
        executor = PlanExecutor(journal, source, seed, cfg.budgets.wall_clock_s, slots)
        cpu = time.process_time()
        outcome = execute(base, journal, executor=executor)
        cpu = time.process_time() - cpu
        return _report(config, from_dir, seed, slots, journal, executor, outcome, cpu)
    finally:
        quiet.setLevel(level)
        shutil.rmtree(work, ignore_errors=True)


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
        llm_dollars=0.0,  # template runs call no LLM (an offline writeup included)
        nodes=sum(kinds.values()),
        nodes_by_kind=dict(sorted(kinds.items())),
        papers_written=good[PAPER],
        papers_reviewed=good[REVIEW],
        utilization=round(held / (slots * wall), 4) if wall > 0 else 0.0,
        share_by_idea={k: round(v / held, 4) for k, v in sorted(ex.held_s.items())} if held else {},
        outcome=outcome.status,
        stopped_by=outcome.budget,
        message=outcome.message,
        completions=ex.completions,
        driver_cpu_ms_per_completion=round(cpu_s / max(1, ex.completions) * 1e3, 3),
        driver_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
