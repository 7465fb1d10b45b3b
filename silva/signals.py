"""SIGINT and SIGTERM stop a run cleanly, whoever sends them.

A terminal's Ctrl-C, `kill -INT`, Slurm's preemption and Kubernetes' pod termination (SIGTERM,
then SIGKILL after a grace period) all become `StopRequested` in the driver's dispatch loop: it
cancels what is in flight, journals the stop (`run_stopped` with the signal) and returns an
interrupted outcome; the CLI exits 130 (SIGINT) or 143 (SIGTERM) and names `silva resume`.

Installed explicitly because neither default is enough (LESSONS.md): `ray.init` replaces the
SIGTERM handler with one that exits 1 without a word, and a driver started in the background by a
non-interactive shell inherits SIGINT as ignored, so Python never turns `kill -INT` into
KeyboardInterrupt. Install these after connecting to Ray, or Ray's handler replaces them.

The handler only records the signal; `StopRequested` is raised at the loop's next `wait`, a safe
point. Raised from the handler itself it would surface inside Ray's compiled `ray.wait` (which
checks for signals while it blocks) as "SystemError: CoreWorker.wait returned a result with an
exception set" instead of a clean stop (measured with Ray 2.60). The loop waits at most
`engine.dispatch.POLL_S` at a time, so a stop begins within about half a second.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from engine.config import Resources
from engine.dispatch import StopRequested
from engine.executor import Executor, Handle, Job, capacity

if TYPE_CHECKING:
    from engine.executor import JobDone

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# What a shell reports for a process a signal ended (128 + number), kept for a clean stop too.
EXIT_CODES = {"SIGINT": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


class StopSignals:
    """The first stop signal received, if any."""

    def __init__(self) -> None:
        self.received: str | None = None

    def guard(self, executor: Executor) -> Executor:
        return _StopAtWait(executor, self)


class _StopAtWait:
    """The executor, unchanged, except that `wait` raises `StopRequested` once a signal came."""

    def __init__(self, inner: Executor, stop: StopSignals) -> None:
        self._inner, self._stop = inner, stop

    def submit(self, job: Job, resources: Resources) -> Handle:
        return self._inner.submit(job, resources)

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if self._stop.received is not None:
            raise StopRequested(self._stop.received)
        return self._inner.wait(handles, timeout)

    def cancel(self, handle: Handle) -> None:
        self._inner.cancel(handle)

    def capacity(self, resources: Resources) -> int | None:
        return capacity(self._inner, resources)

    def shutdown(self) -> None:
        self._inner.shutdown()


@contextmanager
def stop_on_signals() -> Iterator[StopSignals]:
    """While inside, SIGINT/SIGTERM are recorded for `StopSignals.guard`'s executor to raise; a
    repeat during the clean stop is acknowledged and ignored, so the stop gets journaled (SIGKILL
    still ends the process at once). Outside the main thread (no handlers can be set there) it
    records nothing."""
    stop = StopSignals()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.received is None:
            stop.received = name
        else:
            print(f"{name} received: already stopping after {stop.received}", file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
