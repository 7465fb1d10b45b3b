"""The Ray `Executor`: each attempt is one Ray task with the node kind's CPUs and GPUs.

Ray's own task retries are off (max_retries=0): a lost attempt comes back to the dispatch
loop as `JobDone(lost=...)`, which journals it and submits a fresh attempt, so every retry
is visible in the journal and a node can never receive two results.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

import ray
from pydantic import BaseModel
from ray.exceptions import (
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayTaskError,
    TaskCancelledError,
    WorkerCrashedError,
)

from engine.config import ExecutorConfig, Resources
from engine.errors import EnvironmentFailure
from engine.executor import Handle, Job, JobDone, run_job, slots_for
from engine.node import AttemptResult, StepResult

T = TypeVar("T")
LOST = (WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError)


@ray.remote(max_retries=0)
def _attempt(job: Job) -> AttemptResult | StepResult:
    gpu_ids = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
    return run_job(job, [int(g) for g in gpu_ids])


class ClusterInfo(BaseModel):
    """Which Ray cluster this driver is in: printed at start and journaled (`cluster_joined`)."""

    kind: Literal["private", "joined", "existing"]  # started here | `address` joined | already connected
    address: str  # the GCS address, host:port
    dashboard: str | None  # http://host:port when the cluster runs Ray's dashboard
    nodes: int
    cpus: float
    gpus: float
    ray_version: str

    def describe(self) -> str:
        where = {
            "private": "started a private local Ray cluster",
            "joined": "joined the Ray cluster",
            "existing": "using the Ray cluster this process is connected to",
        }[self.kind]
        text = f"{where} at {self.address}: {self.nodes} node(s), {self.cpus:g} CPU, {self.gpus:g} GPU"
        return text + (f"; dashboard {self.dashboard}" if self.dashboard else "")


def connect(cfg: ExecutorConfig) -> ClusterInfo:
    """Join the configured cluster, or start a private local one, unless this process is already in one.

    `address: null` passes Ray's "local", so a cluster that `ray start` left on this machine (or
    RAY_ADDRESS) is never joined by accident; `auto` is Ray's resolution order (RAY_ADDRESS, then
    the latest `ray start` cluster here); host:port or ray://host:port name one.
    """
    if ray.is_initialized():
        return _cluster_info("existing", _dashboard_url())
    if not cfg.ray_output:
        # Ray's startup warnings (token auth, /dev/shm size...) go to its log files, not the terminal.
        logging.getLogger("ray").setLevel(logging.ERROR)
    private = cfg.address is None
    context = start(
        lambda: ray.init(
            address="local" if private else cfg.address,
            log_to_driver=cfg.ray_output,
            configure_logging=False,
            # Joining a cluster takes its resources as they are (None: Ray's defaults).
            num_cpus=cfg.num_cpus if private else None,
            include_dashboard=cfg.dashboard if private else None,
        ),
        attempts=cfg.start_attempts if private else 1,
    )
    return _cluster_info("private" if private else "joined", context.dashboard_url)


class RayStartError(EnvironmentFailure):
    """Ray did not start (or could not be joined): nothing ran; the run can be resumed."""


def start_wait_s(attempt: int, load_per_cpu: float) -> float:
    """Seconds before start attempt `attempt + 1`: longer on a loaded host, whose raylet may need
    more than the 30 s Ray waits for it (LESSONS.md: 10 of 17 starts failed at load 25-60)."""
    return min(60.0, 5.0 * attempt * max(1.0, load_per_cpu))


def start(init: Callable[[], T], attempts: int, sleep: Callable[[float], None] = time.sleep) -> T:
    """`init()`, tried `attempts` times while it fails by timing out; any other failure, or the
    last timeout, is a `RayStartError` naming the cause."""
    for attempt in range(1, attempts + 1):
        try:
            return init()
        except Exception as e:  # Ray raises a bare Exception when its raylet does not register in time
            _clean_up_failed_start(e)
            timed_out = isinstance(e, ConnectionError | TimeoutError) or "timed out" in str(e)
            if not timed_out or attempt == attempts:
                tries = f" after {attempt} tries" if attempt > 1 else ""
                raise RayStartError(
                    f"Ray did not start{tries}: {e} (on a loaded host raise `executor.start_attempts`; "
                    "see Ray's logs under /tmp/ray/session_latest/logs)"
                ) from e
            load = os.getloadavg()[0] / (os.cpu_count() or 1)
            logging.getLogger(__name__).warning(
                "Ray did not start (%s); trying again (%d of %d)", e, attempt + 1, attempts
            )
            sleep(start_wait_s(attempt, load))
    raise AssertionError("unreachable: attempts >= 1")


def _clean_up_failed_start(e: BaseException) -> None:
    """Stop the processes a failed `ray.init` started: its half-built Node is only reachable from
    the traceback, and would otherwise hold ports and CPU until this driver exits."""
    from ray._private.node import Node

    tb = e.__traceback__
    while tb is not None:
        node = tb.tb_frame.f_locals.get("self")
        if isinstance(node, Node):
            node.kill_all_processes(check_alive=False, allow_graceful=False)
            break
        tb = tb.tb_next
    ray.shutdown()


def _dashboard_url() -> str | None:
    # The address the dashboard registered in the cluster's KV store (None when it runs none).
    from ray._private.worker import get_dashboard_url

    return get_dashboard_url() or None


def _cluster_info(kind: Literal["private", "joined", "existing"], dashboard: str | None) -> ClusterInfo:
    total = ray.cluster_resources()
    return ClusterInfo(
        kind=kind,
        address=ray.get_runtime_context().gcs_address,
        dashboard=f"http://{dashboard}" if dashboard and "://" not in dashboard else dashboard,
        nodes=sum(1 for n in ray.nodes() if n["Alive"]),
        cpus=total.get("CPU", 0.0),
        gpus=total.get("GPU", 0.0),
        ray_version=ray.__version__,
    )


def task_options(resources: Resources) -> dict[str, float | int]:
    """What Ray reserves for one attempt: the node kind's CPUs, GPUs (fractions share a device)
    and memory. A CPU-only kind asks for 0 GPUs, so Ray gives its task no GPU id at all."""
    return {
        "num_cpus": resources.num_cpus,
        "num_gpus": resources.num_gpus,
        "memory": resources.memory_mb * 2**20,
    }


class RayExecutor:
    def __init__(self, cfg: ExecutorConfig) -> None:
        self.cluster = connect(cfg)
        self._refs: dict[Handle, ray.ObjectRef] = {}
        self._ids = itertools.count()

    def submit(self, job: Job, resources: Resources) -> Handle:
        ref = _attempt.options(**task_options(resources)).remote(job)
        handle = next(self._ids)
        self._refs[handle] = ref
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        by_ref = {self._refs[h]: h for h in handles}
        ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=timeout)
        if not ready:
            return None
        handle = by_ref[ready[0]]
        ref = self._refs.pop(handle)
        try:
            return JobDone(handle, ray.get(ref))
        except LOST as e:
            return JobDone(handle, None, lost=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        except TaskCancelledError:
            return JobDone(handle, None, lost="cancelled")
        except RayTaskError as e:  # run_job catches job errors; this is a failure to unpickle or similar
            return JobDone(handle, AttemptResult(status="buggy", reason=f"task error: {str(e)[:2000]}"))

    def capacity(self, resources: Resources) -> int:
        """Jobs of this shape the cluster's resources hold now: nodes joining or leaving (the
        autoscaler, `ray start` by hand) change it."""
        total = ray.cluster_resources()
        return slots_for(total.get("CPU", 0.0), total.get("GPU", 0.0), resources)

    def cancel(self, handle: Handle) -> None:
        ref = self._refs.pop(handle, None)
        if ref is not None:
            ray.cancel(ref, force=True)

    def shutdown(self) -> None:
        for ref in self._refs.values():
            ray.cancel(ref, force=True)
        self._refs.clear()
