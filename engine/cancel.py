"""Cooperative cancellation of jobs on threads (the in-process executor).

A thread cannot be interrupted, so a cancelled job of a discarded node would go on paying for
its LLM calls, re-asks included, and hold the run's shutdown until they answer (traced: 35 s
after a run's last event, for thinks discarded a minute before). The executor binds a token to
the thread running the job; what the job waits on, an LLM call through the gateway, polls it
and gives up when it is cancelled. Ray tasks are interrupted by `ray.cancel` instead.
"""

from __future__ import annotations

import threading

POLL_S = 0.2  # how often a waiting call looks at its job's token


class JobCancelled(BaseException):
    """The job's node no longer needs it. A BaseException, like KeyboardInterrupt, so a job's
    own `except Exception` (a failed call recorded as the node's problem) lets it through."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_local = threading.local()


def bind(token: CancelToken | None) -> None:
    """Make `token` the current thread's job's token (None: no job)."""
    _local.token = token


def current() -> CancelToken | None:
    """The token of the job this thread runs, if an executor bound one."""
    token: CancelToken | None = getattr(_local, "token", None)
    return token
