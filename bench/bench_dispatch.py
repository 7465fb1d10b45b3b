"""Dispatch benchmark: worker utilization of Silva's asynchronous loop vs a batch barrier, and
the engine's per-node overhead with a no-op experiment. Writes bench/results/dispatch.json.

Same workload, same Ray cluster, same run: synthetic nodes whose durations are lognormal.
Utilization = busy time / (worker slots x makespan).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.events import RunStarted, SessionStarted

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # local cluster on 127.0.0.1
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import ray

from actors.ray_executor import RayExecutor
from engine.attempt import ExperimentJob
from engine.config import ExecutorConfig, Resources
from engine.dispatch import Dispatcher, Finish
from engine.executor import Job
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, Node
from sandbox.base import Limits
from silva.config import RunConfig

NODES = 600
CLUSTER_CPUS = 8  # each slot count gets the whole cluster: a task takes CLUSTER_CPUS/slots CPUs
PREFETCH = 2  # extra attempts queued in Ray beyond the slots
MEAN_S, SIGMA = 0.15, 0.8
SLOTS = (4, 8)
NOOP_NODES = 200
RESULTS = Path(__file__).parent / "results" / "dispatch.json"


@dataclass
class SleepJob:
    node_id: str
    attempt: int
    seconds: float

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        time.sleep(self.seconds)
        return AttemptResult(status="good")


class ListStrategy:
    def __init__(self, durations: list[float]) -> None:
        self.durations, self.next = durations, 0

    def propose(self, slots: int) -> list[Node]:
        take = self.durations[self.next : self.next + slots]
        self.next += len(take)
        return [Node(stage="bench", kind="synthetic", params={"s": d}) for d in take]

    def job_for(self, node: Node, attempt: int) -> Job:
        return SleepJob(node.id, attempt, node.params["s"])

    def finished(self) -> Finish | None:
        return Finish("complete", "done") if self.next == len(self.durations) else None


def config(slots: int, in_flight: int) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "bench",
            "template": "/unused",
            "budgets": {"wall_clock_s": None},
            "executor": {"kind": "ray", "max_in_flight": in_flight},
            "resources": {"default": {"num_cpus": CLUSTER_CPUS / slots}},
        }
    )


def fresh_journal(root: Path, name: str) -> Journal:
    j = Journal.open(root / name)
    j.record(RunStarted(config={}, metrics=[]))
    j.record(SessionStarted(resumed=False))
    return j


def silva_dispatch(durations: list[float], slots: int, in_flight: int, root: Path) -> float:
    journal = fresh_journal(root, f"silva-{slots}-{in_flight}")
    start = time.monotonic()
    Dispatcher(
        config(slots, in_flight), journal, ListStrategy(durations), RayExecutor(ExecutorConfig())
    ).run()
    return time.monotonic() - start


def barrier_dispatch(durations: list[float], slots: int) -> float:
    """What older systems do: start a batch of `slots` nodes, wait for all of them, repeat."""
    executor = RayExecutor(ExecutorConfig())
    start = time.monotonic()
    for i in range(0, len(durations), slots):
        handles = [
            executor.submit(SleepJob(f"b{i + k}", 1, d), Resources(num_cpus=CLUSTER_CPUS / slots))
            for k, d in enumerate(durations[i : i + slots])
        ]
        while handles:
            c = executor.wait(handles, timeout=10)
            if c is not None:
                handles.remove(c.handle)
    return time.monotonic() - start


class NoopStrategy(ListStrategy):
    """No-op experiments through the whole path: journal, fresh workspace, sandboxed process."""

    def __init__(self, n: int, run_dir: Path) -> None:
        super().__init__([0.0] * n)
        self.run_dir = run_dir

    def job_for(self, node: Node, attempt: int) -> Job:
        return ExperimentJob(
            node_id=node.id,
            attempt=attempt,
            run_dir=self.run_dir,
            files={},
            command=["true"],
            params={},
            seed=0,
            stage="bench",
            metrics=[MetricSpec(name="m")],
            limits=Limits(wall_s=30),
            sandbox="none",
        )


def noop_overhead(root: Path, slots: int) -> dict[str, float]:
    journal = fresh_journal(root, f"noop-{slots}")
    strategy = NoopStrategy(NOOP_NODES, journal.log.path.parent)
    start = time.monotonic()
    Dispatcher(config(CLUSTER_CPUS, slots), journal, strategy, RayExecutor(ExecutorConfig())).run()
    makespan = time.monotonic() - start
    process_s = float(np.mean([n.execution.wall_s for n in journal if n.execution]))
    per_node = makespan / NOOP_NODES * slots
    return {
        "slots": slots,
        "nodes": NOOP_NODES,
        "makespan_s": makespan,
        "per_node_ms": per_node * 1e3,
        "noop_process_ms": process_s * 1e3,
        "engine_overhead_ms": (per_node - process_s) * 1e3,
    }


def ideal_makespan(durations: list[float], slots: int) -> float:
    """Greedy list scheduling in the same order with zero overhead: the bound set by the tail."""
    free = [0.0] * slots
    for d in durations:
        i = int(np.argmin(free))
        free[i] += d
    return max(free)


def warm_up(slots: int) -> None:
    """Start every worker process first, so neither dispatcher pays Ray's worker start-up."""
    executor = RayExecutor(ExecutorConfig())
    handles = [executor.submit(SleepJob(f"w{i}", 1, 0.5), Resources(num_cpus=1)) for i in range(slots)]
    while handles:
        c = executor.wait(handles, timeout=30)
        if c is not None:
            handles.remove(c.handle)


def main() -> None:
    ray.init(address="local", num_cpus=CLUSTER_CPUS, include_dashboard=False, log_to_driver=False)
    warm_up(CLUSTER_CPUS)
    rng = np.random.default_rng(0)
    mu = np.log(MEAN_S) - SIGMA**2 / 2  # lognormal with the given mean
    durations = [float(d) for d in rng.lognormal(mu, SIGMA, NODES)]
    busy = sum(durations)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for slots in SLOTS:
            silva = silva_dispatch(durations, slots, slots, root)
            prefetch = silva_dispatch(durations, slots, slots + PREFETCH, root)
            barrier = barrier_dispatch(durations, slots)
            ideal = ideal_makespan(durations, slots)
            rows.append(
                {
                    "slots": slots,
                    "silva_makespan_s": silva,
                    "silva_prefetch_makespan_s": prefetch,
                    "barrier_makespan_s": barrier,
                    "ideal_makespan_s": ideal,
                    "silva_utilization": busy / (slots * silva),
                    "silva_prefetch_utilization": busy / (slots * prefetch),
                    "barrier_utilization": busy / (slots * barrier),
                    "ideal_utilization": busy / (slots * ideal),
                }
            )
        overhead = [noop_overhead(root, 1), noop_overhead(root, 4)]
    ray.shutdown()
    result = {
        "workload": {"nodes": NODES, "lognormal_mean_s": MEAN_S, "sigma": SIGMA, "busy_s": busy},
        "utilization": rows,
        "noop_overhead": overhead,
        "prefetch": PREFETCH,
        "targets": {"utilization_at_4plus_slots": 0.95, "overhead_ms_per_node": 50},
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(f"{'slots':>5} {'silva':>7} {'silva+prefetch':>14} {'barrier':>8} {'ideal':>6}   (utilization)")
    for r in rows:
        print(
            f"{r['slots']:>5} {r['silva_utilization']:>7.3f} {r['silva_prefetch_utilization']:>14.3f} "
            f"{r['barrier_utilization']:>8.3f} {r['ideal_utilization']:>6.3f}"
        )
    for o in overhead:
        print(
            f"no-op node, {o['slots']} slot(s): {o['per_node_ms']:.1f} ms per node, "
            f"engine overhead {o['engine_overhead_ms']:.1f} ms (process itself {o['noop_process_ms']:.1f} ms)"
        )


if __name__ == "__main__":
    main()
