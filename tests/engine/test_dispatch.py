"""The dispatch loop with the in-process executor and synthetic jobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine import events as ev
from engine.aggregate import AggregationJob
from engine.config import Resources
from engine.dispatch import MAX_LOST, Dispatcher, Finish, Running, StepClock
from engine.executor import Handle, InProcessExecutor, Job, JobDone, cpu_pool, holds_resources
from engine.journal import Journal
from engine.node import AttemptResult, MetricValue, Node, NodeStatus, StepResult
from silva.config import RunConfig
from writeup.job import WriteupJob


@dataclass
class SleepJob:
    node_id: str
    attempt: int
    seconds: float
    log: list[tuple[str, float, float]]

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        start = time.monotonic()
        time.sleep(self.seconds)
        self.log.append((self.node_id, start, time.monotonic()))
        return AttemptResult(
            status="good", metrics=[MetricValue(name="m", value=self.seconds, direction="maximize")]
        )


@dataclass
class FixedStrategy:
    """Proposes `durations` one node each, in order, as slots free up."""

    durations: list[float]
    log: list[tuple[str, float, float]] = field(default_factory=list)
    proposed: int = 0

    def propose(self, slots: int) -> list[Node]:
        take = self.durations[self.proposed : self.proposed + slots]
        self.proposed += len(take)
        return [Node(stage="s", kind="k", params={"seconds": d}) for d in take]

    def job_for(self, node: Node, attempt: int) -> Job:
        return SleepJob(node.id, attempt, node.params["seconds"], self.log)

    def finished(self) -> Finish | None:
        return Finish("complete", "all proposed") if self.proposed == len(self.durations) else None


def config(**kw: object) -> RunConfig:
    base = {"name": "t", "template": "/x", "executor": {"kind": "inprocess", "max_in_flight": 3}}
    return RunConfig.model_validate({**base, **kw})


def journal(tmp_path: Path) -> Journal:
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}, metrics=[]))
    j.record(ev.SessionStarted(resumed=False))
    return j


def test_slot_refilled_as_soon_as_one_finishes(tmp_path: Path) -> None:
    # One long node and many short ones: short ones keep flowing past the long one.
    strategy = FixedStrategy([1.5] + [0.1] * 10)
    j = journal(tmp_path)
    outcome = Dispatcher(config(), j, strategy, InProcessExecutor(3)).run()
    assert outcome.status == "finished"
    spans = {nid: (s, e) for nid, s, e in strategy.log}
    long_end = spans["n0000"][1]
    started_before_long_ended = [nid for nid, (s, _) in spans.items() if nid != "n0000" and s < long_end]
    assert len(started_before_long_ended) == 10  # a batch barrier would allow only 2
    assert all(n.status == NodeStatus.GOOD for n in j)


def test_wall_clock_budget_stops_cleanly_and_names_it(tmp_path: Path) -> None:
    j = journal(tmp_path)
    outcome = Dispatcher(
        config(budgets={"wall_clock_s": 1.0}), j, FixedStrategy([0.4] * 50), InProcessExecutor(3)
    ).run()
    assert outcome.status == "budget" and outcome.budget == "wall_clock_s"
    assert j.stop is not None and j.stop.budget == "wall_clock_s"
    assert "wall-clock budget of 1 s used up" in j.stop.reason
    assert not any(n.status == NodeStatus.RUNNING for n in j)  # in-flight ones were cancelled
    assert 2 <= len(j.good_nodes) <= 12


def test_max_nodes_budget(tmp_path: Path) -> None:
    j = journal(tmp_path)
    outcome = Dispatcher(
        config(budgets={"max_nodes": 4}), j, FixedStrategy([0.01] * 10), InProcessExecutor(3)
    ).run()
    assert (outcome.status, outcome.budget) == ("budget", "max_nodes")
    assert len(j.nodes) == 4 and len(j.good_nodes) == 4


class FlakyExecutor(InProcessExecutor):
    """Loses the first `lose` attempts of every node, as a dead worker would."""

    def __init__(self, lose: int) -> None:
        super().__init__(2)
        self.lose = lose
        self.attempts: dict[Handle, Job] = {}
        self._lock = threading.Lock()

    def submit(self, job: Job, resources: object) -> Handle:
        handle = super().submit(job, resources)  # type: ignore[arg-type]
        self.attempts[handle] = job
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        c = super().wait(handles, timeout)
        if c is not None and self.attempts[c.handle].attempt <= self.lose:
            return JobDone(c.handle, None, lost="WorkerCrashedError: worker died")
        return c


def test_lost_attempts_retried_then_one_result(tmp_path: Path) -> None:
    j = journal(tmp_path)
    Dispatcher(config(), j, FixedStrategy([0.01, 0.01]), FlakyExecutor(lose=2)).run()
    for node in j:
        assert node.status == NodeStatus.GOOD and node.attempts == 3 and node.lost_attempts == 2
    assert sum(isinstance(e, ev.AttemptFinished) for e in j.log.events) == 2


def test_lost_too_often_becomes_buggy_not_a_crash(tmp_path: Path) -> None:
    j = journal(tmp_path)
    outcome = Dispatcher(config(), j, FixedStrategy([0.01]), FlakyExecutor(lose=99)).run()
    assert outcome.status == "finished"
    node = j.nodes["n0000"]
    assert node.status == NodeStatus.BUGGY and node.lost_attempts == MAX_LOST
    assert node.reason.startswith("infrastructure: attempt lost 3 times")


@dataclass
class RaisingJob:
    node_id: str
    attempt: int

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        raise RuntimeError("boom in operator")


def test_job_exception_is_a_buggy_node(tmp_path: Path) -> None:
    class S(FixedStrategy):
        def job_for(self, node: Node, attempt: int) -> Job:
            return RaisingJob(node.id, attempt)

    j = journal(tmp_path)
    assert Dispatcher(config(), j, S([0.0]), InProcessExecutor(1)).run().status == "finished"
    assert j.nodes["n0000"].status == NodeStatus.BUGGY and "boom in operator" in j.nodes["n0000"].reason


class GrowingCluster(InProcessExecutor):
    """An executor whose cluster holds one slot until `grow_at`, then three (a node joined)."""

    def __init__(self, grow_at: float) -> None:
        super().__init__(8)
        self.grow_at = grow_at

    def capacity(self, resources: object) -> int:
        return 1 if time.monotonic() < self.grow_at else 3


def test_without_max_in_flight_slots_follow_the_cluster(tmp_path: Path, monkeypatch: object) -> None:
    import engine.dispatch

    monkeypatch.setattr(engine.dispatch, "CAPACITY_POLL_S", 0.05)  # type: ignore[attr-defined]
    strategy = FixedStrategy([0.3] * 12)
    told: list[int] = []
    strategy.capacity_changed = told.append  # type: ignore[attr-defined]
    executor = GrowingCluster(grow_at=time.monotonic() + 1.0)
    j = journal(tmp_path)
    outcome = Dispatcher(config(executor={"kind": "inprocess"}), j, strategy, executor).run()
    assert outcome.status == "finished"
    assert [e.slots for e in j.log.read(ev.SlotsChanged)] == [1, 3] == told and j.slots == 3

    def most_at_once(until: float, after: float = 0.0) -> int:
        spans = [(s, e) for _, s, e in strategy.log if s < until and e > after]
        return max(sum(s <= t < e for s, e in spans) for t, _ in spans) if spans else 0

    assert most_at_once(executor.grow_at - 0.05) == 1  # one slot while the cluster had one
    assert most_at_once(float("inf"), after=executor.grow_at + 0.4) == 3  # three once it grew


def test_slots_for_counts_the_scarcer_resource() -> None:
    from engine.config import Resources
    from engine.executor import slots_for

    assert slots_for(16, 4, Resources(num_cpus=2, num_gpus=0.5)) == 8  # GPUs: 4 / 0.5
    assert slots_for(6, 4, Resources(num_cpus=2, num_gpus=1)) == 3  # CPUs: 6 / 2
    assert slots_for(6, None, Resources(num_cpus=1, num_gpus=1)) == 6  # GPUs not counted (in-process)
    assert slots_for(8, 0, Resources(num_cpus=1, num_gpus=1)) == 1  # none fit yet: one, so demand shows


@dataclass
class WaitJob(SleepJob):
    """A job that only waits on an LLM (a selection, a review): it takes no slot."""

    holds_resources: bool = False


@dataclass
class WaitingStrategy(FixedStrategy):
    def job_for(self, node: Node, attempt: int) -> Job:
        return WaitJob(node.id, attempt, node.params["seconds"], self.log)


def test_a_job_that_holds_no_slot_is_journaled_so_and_is_no_slot_time(tmp_path: Path) -> None:
    j = journal(tmp_path)
    outcome = Dispatcher(config(), j, WaitingStrategy([0.05, 0.05]), InProcessExecutor(3)).run()
    assert outcome.status == "finished"
    assert [e.holds for e in j.log.read(ev.AttemptStarted)] == [False, False]
    assert j.totals.busy.seconds(now=time.time()) == 0.0


@dataclass
class PaperJob:
    """A CPU-pool job (a paper's figures and LaTeX) that waits until an experiment has run beside
    it, or gives up after `patience` seconds (then it held the only slot meanwhile)."""

    node_id: str
    attempt: int
    experiment_ran: threading.Event
    log: list[tuple[str, float, float]]
    patience: float = 30.0
    holds_resources: bool = False
    cpu_pool: bool = True

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        start = time.monotonic()
        saw = self.experiment_ran.wait(self.patience)
        self.log.append((self.node_id, start, time.monotonic()))
        return AttemptResult(status="good", reason="beside an experiment" if saw else "alone")


@dataclass
class ExperimentJob(SleepJob):
    ran: threading.Event = field(default_factory=threading.Event)

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        self.ran.set()
        return super().run(gpu_ids)


@dataclass
class PapersFirst:
    """Proposes `papers` paper nodes, then `experiments` experiment nodes, as asked."""

    papers: int
    experiments: int
    patience: float = 30.0
    ran: threading.Event = field(default_factory=threading.Event)
    log: list[tuple[str, float, float]] = field(default_factory=list)
    proposed: int = 0

    def propose(self, slots: int) -> list[Node]:
        kinds = ["paper"] * self.papers + ["k"] * self.experiments
        take = kinds[self.proposed : self.proposed + slots]
        self.proposed += len(take)
        return [Node(stage="s", kind=kind) for kind in take]

    def job_for(self, node: Node, attempt: int) -> Job:
        if node.kind == "paper":
            return PaperJob(node.id, attempt, self.ran, self.log, self.patience)
        return ExperimentJob(node.id, attempt, 0.05, self.log, self.ran)

    def finished(self) -> Finish | None:
        done = self.proposed == self.papers + self.experiments
        return Finish("complete", "all proposed") if done else None


class RecordingExecutor(InProcessExecutor):
    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.asked: dict[str, Resources] = {}

    def submit(self, job: Job, resources: Resources) -> Handle:
        self.asked[job.node_id] = resources
        return super().submit(job, resources)


def test_a_paper_job_leaves_the_experiment_slot_free(tmp_path: Path) -> None:
    # One slot: a paper holding it would wait out its patience before the experiment could run.
    strategy = PapersFirst(papers=1, experiments=1)
    j = journal(tmp_path)
    gpu = {"resources": {"default": {"num_cpus": 4, "num_gpus": 1}}}
    executor = RecordingExecutor(4)
    cfg = config(executor={"kind": "inprocess", "max_in_flight": 1}, **gpu)
    outcome = Dispatcher(cfg, j, strategy, executor).run()
    assert outcome.status == "finished"
    paper, experiment = j.nodes["n0000"], j.nodes["n0001"]
    assert paper.reason == "beside an experiment"
    assert experiment.status == NodeStatus.GOOD
    # The paper asked for its kind's CPUs and no accelerator; it is journaled as holding no slot.
    assert executor.asked["n0000"].num_gpus == 0 and executor.asked["n0000"].num_cpus == 1
    assert executor.asked["n0001"].num_gpus == 1
    assert [e.holds for e in j.log.read(ev.AttemptStarted)] == [False, True]


def test_the_cpu_pool_runs_at_most_cpu_jobs_at_once(tmp_path: Path) -> None:
    strategy = PapersFirst(papers=3, experiments=0, patience=0.1)
    j = journal(tmp_path)
    cfg = config(executor={"kind": "inprocess", "max_in_flight": 3, "cpu_jobs": 1})
    assert Dispatcher(cfg, j, strategy, InProcessExecutor(4)).run().status == "finished"
    spans = sorted((s, e) for _, s, e in strategy.log)
    assert len(spans) == 3
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))


def test_papers_and_aggregations_run_in_the_cpu_pool(tmp_path: Path) -> None:
    paper = WriteupJob(node_id="n1", attempt=1, run_dir=tmp_path, idea="i")
    aggregation = AggregationJob(node_id="n2", attempt=1, run_dir=tmp_path, title="t", metrics=[], groups={})
    for job in (paper, aggregation):
        assert cpu_pool(job) and not holds_resources(job)


def _timed(clock: StepClock, step: str, holds: bool, seconds: float) -> None:
    result = StepResult(step=step or "all", started_at=100.0, finished_at=100.0 + seconds)
    clock.add(Running("n", 1, step, holds), result)


def test_the_lookahead_covers_the_llm_latency_tail_not_its_mean() -> None:
    clock = StepClock()
    assert clock.lookahead(4) == 0  # nothing measured yet
    for _ in range(10):
        _timed(clock, "", True, 2.0)  # experiments of 2 s
    for seconds in [1.0] * 17 + [5.0] * 3:  # thinking: mean 1.6 s, 90th percentile 5 s
        _timed(clock, "think", False, seconds)
    # On the mean, 4 x 1.6 / 2 = 3.2 nodes ahead; a freed slot then waits on each slow proposal.
    assert clock.lookahead(4) == 10  # 4 x 5 / 2
    for _ in range(StepClock.WINDOW):  # the tail is the recent one: the slow calls age out
        _timed(clock, "think", False, 1.0)
    assert clock.lookahead(4) == 2
    _timed(clock, "judge", False, 1000.0)
    assert clock.lookahead(4) == 32  # at most 8 per slot
