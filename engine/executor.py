"""Where attempts run: the `Executor` protocol and an in-process implementation for unit tests.

The Ray implementation lives in actors/ray_executor.py. An executor reports two kinds of
outcome: an `AttemptResult` (the job ran; the experiment may still be buggy) or a lost attempt
(an infrastructure fault: dead worker or node), which the dispatch loop retries elsewhere.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine import cancel
from engine.cancel import CancelToken, JobCancelled
from engine.config import Resources
from engine.errors import MACHINE_FAULT_ERRNOS
from engine.node import AttemptResult, MachineFault, StepResult


@runtime_checkable
class Job(Protocol):
    """One attempt at one node, or one step of it; picklable so it can travel to a Ray worker.

    A pipelined attempt is several jobs: each but the last returns a `StepResult`. A job may set
    `step` (its name, journaled) and `holds_resources = False` (it takes no experiment slot: it
    only waits on an LLM and runs with no CPUs or GPUs reserved, or, with `cpu_pool = True`, it
    computes on its kind's CPUs in the CPU pool, never on an accelerator)."""

    @property
    def node_id(self) -> str: ...

    @property
    def attempt(self) -> int: ...

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult | StepResult: ...


def step_of(job: Job) -> str:
    return str(getattr(job, "step", ""))


def holds_resources(job: Job) -> bool:
    """The job takes an experiment slot."""
    return bool(getattr(job, "holds_resources", True))


def cpu_pool(job: Job) -> bool:
    """The job computes but is no experiment (an aggregation's means and plot, a paper's figures
    and LaTeX): it runs in the CPU pool, `executor.cpu_jobs` at once, beside the experiment slots
    and never in one."""
    return not holds_resources(job) and bool(getattr(job, "cpu_pool", False))


# What a job that holds no experiment resources reserves (Ray needs a memory figure).
NO_RESOURCES = Resources(num_cpus=0, num_gpus=0, memory_mb=64)


Handle = int


@dataclass(frozen=True)
class JobDone:
    handle: Handle
    result: AttemptResult | StepResult | None  # None when the attempt was lost
    lost: str = ""  # what killed it (dead worker, dead node), when lost


class Executor(Protocol):
    def submit(self, job: Job, resources: Resources) -> Handle: ...

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        """The first of `handles` to finish, or None after `timeout` seconds. Never a batch."""

    def cancel(self, handle: Handle) -> None: ...

    def shutdown(self) -> None: ...


def slots_for(cpus: float, gpus: float | None, resources: Resources) -> int:
    """Experiment jobs of one node kind's shape that fit in `cpus` and `gpus` (None: GPUs not
    counted): the fewer of GPUs / the kind's GPUs and CPUs / its CPUs, at least one."""
    fits = [
        math.floor(have / need + 1e-9)
        for have, need in ((gpus, resources.num_gpus), (cpus, resources.num_cpus))
        if have is not None and need > 0
    ]
    return max(1, min(fits) if fits else math.floor(cpus))


def capacity(executor: Executor, resources: Resources) -> int | None:
    """Experiment slots the executor's cluster holds now for jobs of `resources` (None: it cannot tell)."""
    ask = getattr(executor, "capacity", None)
    return ask(resources) if ask is not None else None


def run_job(job: Job, gpu_ids: Sequence[int] = ()) -> AttemptResult | StepResult:
    """Run a job on a worker. A job's own exception is a buggy result, never a crash of the run."""
    started = time.time()
    result: AttemptResult | StepResult
    try:
        result = job.run(gpu_ids)
    except JobCancelled:  # nobody waits for this result any more
        result = AttemptResult(status="buggy", reason="cancelled: its node no longer needs it")
    except Exception as e:  # anything else a job raises is that node's failure, unless the machine's
        if isinstance(e, OSError) and e.errno in MACHINE_FAULT_ERRNOS:
            fault = MachineFault(errno=e.errno, strerror=e.strerror or str(e), filename=e.filename)
            result = AttemptResult(status="buggy", reason=f"machine fault: {fault.strerror}", fault=fault)
        else:
            result = AttemptResult(
                status="buggy", reason="internal error in the attempt:\n" + traceback.format_exc(limit=8)
            )
    result.started_at = result.started_at or started
    result.finished_at = result.finished_at or time.time()
    result.worker = result.worker or f"{socket.gethostname()}:{os.getpid()}"
    return result


class InProcessExecutor:
    """Threads in the driver process. Resources are ignored beyond the worker count."""

    def __init__(self, max_workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="silva-job")
        self._futures: dict[Handle, Future[AttemptResult | StepResult]] = {}
        self._tokens: dict[Handle, CancelToken] = {}  # a thread cannot be interrupted: its job polls this
        self._ids = itertools.count()

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self._ids)
        self._tokens[handle] = CancelToken()
        self._futures[handle] = self._pool.submit(_run_bound, job, self._tokens[handle])
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        futures = {self._futures[h]: h for h in handles}
        done, _ = futures_wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
        if not done:
            return None
        future = next(iter(done))
        handle = futures[future]
        del self._futures[handle]
        self._tokens.pop(handle, None)
        if future.cancelled():
            return JobDone(handle, None, lost="cancelled")
        return JobDone(handle, future.result())

    def capacity(self, resources: Resources) -> int:
        """This machine's CPUs over the kind's (the threads ignore GPUs)."""
        return slots_for(os.cpu_count() or 1, None, resources)

    def cancel(self, handle: Handle) -> None:
        future = self._futures.pop(handle, None)
        token = self._tokens.pop(handle, None)
        if token is not None:
            token.cancel()  # a running job's LLM call gives up (engine/cancel.py)
        if future is not None:
            future.cancel()

    def shutdown(self) -> None:
        for token in self._tokens.values():  # results nobody will read: do not wait for their calls
            token.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _run_bound(job: Job, token: CancelToken) -> AttemptResult | StepResult:
    cancel.bind(token)
    try:
        return run_job(job)
    finally:
        cancel.bind(None)
