"""The Ray `Executor`: each attempt is one Ray task with the node kind's CPUs and GPUs.

Ray's own task retries are off (max_retries=0): a lost attempt comes back to the dispatch
loop as `Completion(lost=...)`, which journals it and submits a fresh attempt, so every retry
is visible in the journal and a node can never receive two results.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import ray
from ray.exceptions import (
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayTaskError,
    TaskCancelledError,
    WorkerCrashedError,
)

from engine.config import ExecutorConfig, Resources
from engine.executor import Completion, Handle, Job, run_job
from engine.node import AttemptResult

LOST = (WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError)


@ray.remote(max_retries=0)
def _attempt(job: Job) -> AttemptResult:
    gpu_ids = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
    return run_job(job, [int(g) for g in gpu_ids])


def connect(cfg: ExecutorConfig) -> None:
    """Join the configured cluster, or start a local one, unless this process is already in one."""
    if not ray.is_initialized():
        ray.init(
            address=cfg.address,
            num_cpus=cfg.num_cpus if cfg.address is None else None,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )


class RayExecutor:
    def __init__(self, cfg: ExecutorConfig) -> None:
        connect(cfg)
        self._refs: dict[Handle, ray.ObjectRef] = {}
        self._ids = itertools.count()

    def submit(self, job: Job, resources: Resources) -> Handle:
        ref = _attempt.options(num_cpus=resources.num_cpus, num_gpus=resources.num_gpus).remote(job)
        handle = next(self._ids)
        self._refs[handle] = ref
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> Completion | None:
        by_ref = {self._refs[h]: h for h in handles}
        ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=timeout)
        if not ready:
            return None
        handle = by_ref[ready[0]]
        ref = self._refs.pop(handle)
        try:
            return Completion(handle, ray.get(ref))
        except LOST as e:
            return Completion(handle, None, lost=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        except TaskCancelledError:
            return Completion(handle, None, lost="cancelled")
        except RayTaskError as e:  # run_job catches job errors; this is a failure to unpickle or similar
            return Completion(handle, AttemptResult(status="buggy", reason=f"task error: {str(e)[:2000]}"))

    def cancel(self, handle: Handle) -> None:
        ref = self._refs.pop(handle, None)
        if ref is not None:
            ray.cancel(ref, force=True)

    def shutdown(self) -> None:
        for ref in self._refs.values():
            ray.cancel(ref, force=True)
        self._refs.clear()
