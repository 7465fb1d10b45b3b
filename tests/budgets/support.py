"""A virtual-clock executor (no processes) and a small template forest for the budget tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.attempt import ExperimentJob
from engine.config import Resources
from engine.executor import Handle, Job, JobDone
from engine.node import AttemptResult, MetricValue
from tests.helpers import make_config, make_template


class VirtualClockExecutor:
    """No processes: a virtual clock; a job's result comes back when its duration is over.
    Subclasses say how long an experiment takes and what it scores."""

    support_s = 1.0  # virtual seconds of a job that is not an experiment (aggregation, selection)

    def __init__(self) -> None:
        self.now = 1.0e9  # virtual epoch seconds
        self.pending: dict[Handle, tuple[float, float, Job]] = {}
        self.ids = itertools.count()
        self.submitted: list[tuple[float, str]] = []  # (virtual time, node id)

    def duration_s(self, job: ExperimentJob) -> float:
        raise NotImplementedError

    def metrics(self, job: ExperimentJob) -> list[MetricValue]:
        raise NotImplementedError

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self.ids)
        took = self.duration_s(job) if isinstance(job, ExperimentJob) else self.support_s
        self.pending[handle] = (self.now, self.now + took, job)
        self.submitted.append((self.now, job.node_id))
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if not handles:
            return None
        handle = min(handles, key=lambda h: self.pending[h][1])
        start, end, job = self.pending.pop(handle)
        self.now = max(self.now, end)
        result = AttemptResult(status="good", started_at=start, finished_at=end)
        if isinstance(job, ExperimentJob):
            result.metrics = self.metrics(job)
        return JobDone(handle, result)

    def cancel(self, handle: Handle) -> None:
        self.pending.pop(handle, None)

    def shutdown(self) -> None:
        pass


class VirtualExecutor(VirtualClockExecutor):
    """Each experiment takes `hours` of virtual time; its score is the template's quadratic."""

    def __init__(self, hours: float = 1.0) -> None:
        super().__init__()
        self.hours = hours

    def duration_s(self, job: ExperimentJob) -> float:
        return self.hours * 3600

    def metrics(self, job: ExperimentJob) -> list[MetricValue]:
        p = job.params
        score = p.get("quality", 0.0) + 1.0 - (p["x"] - 0.3) ** 2 + (0.05 if p["method"] else 0.0)
        return [MetricValue(name="score", value=score), MetricValue(name="cost", value=1.0)]


def forest_config(tmp: Path, n: int = 4, **overrides: Any) -> Path:
    variants = [{"name": f"v{i}", "fixed": {"quality": 0.1 * i}} for i in range(n)]
    return make_config(
        tmp,
        make_template(tmp / "tpl"),
        variants=variants,
        replicates=1,
        resources={"default": {"num_cpus": 2, "num_gpus": 0.5}},
        **overrides,
    )
