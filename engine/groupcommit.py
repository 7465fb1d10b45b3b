"""Group commit for the driver: one fsync for many events, and still nothing acted on before
it is durable.

Inside `EventLog.group()` an appended event is written and flushed (a killed driver loses
nothing: the bytes are in the kernel) but fsynced later. `GroupCommit` wraps the executor so that
the fsync comes before anything leaves the driver: a job is handed to the executor only after
`log.sync()`, and completions that are ready together are taken together, so the events they
cause share that one fsync. A power loss can then drop only events nothing has acted on yet: the
last completions' results (their nodes are still in flight in the journal and run again on
resume, as they would had the driver died a moment before receiving them), never a node that
was started, a decision that a started node depends on, or a result a started node used
(docs/engine.md, "Driver scaling").
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import Any, cast

from engine.config import Resources
from engine.eventlog import EventLog
from engine.executor import Executor, Handle, Job, JobDone

MAX_BATCH = 64  # completions taken in one go (each further `wait(0)` costs the executor a scan)


class GroupCommit:
    """An executor that submits only durable work (see the module docstring)."""

    def __init__(self, inner: Executor, log: EventLog) -> None:
        self._inner, self._log = inner, log
        self._ids = itertools.count()
        self._queued: dict[Handle, tuple[Job, Resources]] = {}  # submitted, waiting for the fsync
        self._inner_of: dict[Handle, Handle] = {}
        self._outer_of: dict[Handle, Handle] = {}
        self._done: deque[JobDone] = deque()  # completions taken, not yet handed out

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = next(self._ids)
        self._queued[handle] = (job, resources)
        return handle

    def _start_queued(self) -> None:
        if not self._queued:
            return
        self._log.sync()
        for handle, (job, resources) in self._queued.items():
            inner = self._inner.submit(job, resources)
            self._inner_of[handle], self._outer_of[inner] = inner, handle
        self._queued.clear()

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if self._done:
            return self._done.popleft()
        self._start_queued()
        inner = self._inner_handles(handles)
        if not inner:
            return None
        first = self._inner.wait(list(inner), timeout)
        if first is None:
            return None
        self._done.append(self._outer(first))
        inner.pop(first.handle, None)  # (already gone when `inner` is `_outer_of`)
        while len(self._done) < MAX_BATCH:
            more = self._inner.wait(list(inner), 0)
            if more is None:
                break
            self._done.append(self._outer(more))
            inner.pop(more.handle, None)
        return self._done.popleft()

    def _inner_handles(self, handles: Sequence[Handle]) -> dict[Handle, Any]:
        """The inner handles of `handles` (a dict used as an ordered set). The dispatcher waits
        on every job it has in flight, in the order it submitted them: the jobs started here
        and not yet taken, in the same order. That list is recognised by one C-level comparison
        (its items are the very objects `submit` returned) and its inner handles are read off
        `_outer_of` as they are; only another list is mapped handle by handle (at 1,000 jobs in
        flight that map cost 0.3 ms per completion; at 10,000 it was the driver's largest cost)."""
        if len(handles) == len(self._inner_of) and list(self._inner_of) == handles:
            return self._outer_of
        found = dict.fromkeys(map(self._inner_of.get, handles))
        found.pop(None, None)  # not this executor's
        return cast(dict[Handle, Any], found)

    def _outer(self, done: JobDone) -> JobDone:
        outer = self._outer_of.pop(done.handle)
        del self._inner_of[outer]
        return JobDone(outer, done.result, done.lost)

    def cancel(self, handle: Handle) -> None:
        if self._queued.pop(handle, None) is not None:
            return  # never started
        inner = self._inner_of.pop(handle, None)
        if inner is not None:
            del self._outer_of[inner]
            self._inner.cancel(inner)
        self._done = deque(d for d in self._done if d.handle != handle)

    def shutdown(self) -> None:
        self._log.sync()
        self._inner.shutdown()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # e.g. a RayExecutor's `cluster`
