"""Compute budgets: GPU-hours and CPU-hours spent by a run, journaled where they are spent.

What counts: every job the executor ran, charged its measured duration (the result's
`finished_at - started_at`; with the pipelined attempt that is the step's own timing) times the
resources it held while it ran (the `Resources` it was submitted with: a job that only waits on
an LLM holds none; a fraction of a GPU counts as that fraction). A lost or cancelled job is
charged from its submission to the moment the driver learned of its end.

Every charge is one `compute_used` event, written by the driver just before the event that ends
the job (attempt_finished, step_finished, attempt_lost, attempt_cancelled), so the totals are a
sum over the journal and survive any crash and resume exactly. Jobs that were running when a
driver died are charged once, at the next session's start, up to that driver's last event
(`orphan: true`): the machine was held at least that long.

Limits are the run config's `budgets:`, changed by `budget_changed` events (`silva budget`). The
live driver is the journal's only writer: `silva budget` on a running run drops a request file
in `budget-requests/`, which the driver validates and journals within about a second.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.config import Budgets, Resources
from engine.errors import ConfigError
from engine.events import BudgetChanged, BudgetChangeRefused, ComputeUsed
from engine.executor import Executor, Handle, Job, JobDone
from engine.journal import Journal
from engine.totals import HOLDING_STEPS, Spend, Usage

__all__ = [
    "ComputeMeter",
    "Spend",
    "Usage",
    "budget_lines",
    "effective_budgets",
]

log = logging.getLogger(__name__)

REQUESTS_DIR = "budget-requests"
CHANGEABLE = ("gpu_hours", "cpu_hours", "dollars", "wall_clock_s")
UNITS = {
    "gpu_hours": "GPU-hours",
    "cpu_hours": "CPU-hours",
    "dollars": "dollars",
    "wall_clock_s": "seconds of wall clock",
}
POLL_S = 1.0  # how often the live driver looks for budget requests


def charge(seconds: float, resources: Resources) -> Usage:
    seconds = max(0.0, seconds)
    return Usage(seconds=seconds, gpu_s=seconds * resources.num_gpus, cpu_s=seconds * resources.num_cpus)


def holds_any(resources: Resources) -> bool:
    return resources.num_gpus > 0 or resources.num_cpus > 0


def effective_budgets(base: Budgets, changes: Mapping[str, float | None]) -> Budgets:
    """The config's budgets with the journaled changes (`journal.totals.budget_changes`) applied."""
    return base.model_copy(update=dict(changes)) if changes else base


def limit_of(budgets: Budgets, name: str) -> float | None:
    value: float | None = getattr(budgets, name)
    return value


# -- validating a change ---------------------------------------------------------------------
def parse_amount(option: str, raw: str) -> float:
    """A budget amount from the command line: a finite number above zero."""
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(
            f"{option} = {raw!r}: not a number; give the new budget as a positive number"
        ) from None
    if not math.isfinite(value):
        raise ConfigError(
            f"{option} = {raw!r}: not a finite number; give the new budget as a positive number"
        )
    if value <= 0:
        raise ConfigError(
            f"{option} = {raw}: a budget must be above zero; to stop a run, stop it (Ctrl-C or SIGTERM) "
            "instead"
        )
    return value


def check_change(changes: Mapping[str, float], used: Mapping[str, float]) -> None:
    """ConfigError if a new limit is not above what is already used (the run could not go on)."""
    for name, value in changes.items():
        if name not in CHANGEABLE:
            raise ConfigError(
                f"{name}: not a budget that can be changed (choose from {', '.join(CHANGEABLE)})"
            )
        spent = used.get(name, 0.0)
        if value <= spent:
            raise ConfigError(
                f"{name} = {value:g}: not above what the run has already used ({spent:.4g} {UNITS[name]}); "
                "give a larger budget"
            )


def write_request(run_dir: Path, changes: Mapping[str, float]) -> Path:
    """Ask the live driver for a change: one file, written whole then renamed into place."""
    folder = run_dir / REQUESTS_DIR
    folder.mkdir(exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}.json"
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps({"changes": dict(changes), "requested_at": time.time()}))
    path = folder / name
    os.replace(tmp, path)
    return path


def pending_requests(run_dir: Path) -> list[Path]:
    folder = run_dir / REQUESTS_DIR
    return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []


# -- the driver's meter ----------------------------------------------------------------------
@dataclass
class _Held:
    node_id: str
    attempt: int
    step: str
    idea: str
    kind: str
    resources: Resources
    since: float


class ComputeMeter:
    """The driver's account of compute: charges jobs as they end, knows the effective limits,
    and says when a limit is reached. One per driver session; built after `session_started`."""

    def __init__(
        self,
        journal: Journal,
        budgets: Budgets,
        used_dollars: Callable[[], float] = lambda: 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.journal, self.base, self.used_dollars, self.clock = journal, budgets, used_dollars, clock
        self.run_dir = journal.log.path.parent
        self.spend = journal.totals.spend  # kept by the journal as it records each charge
        self.budgets = effective_budgets(budgets, journal.totals.budget_changes)
        self.held: dict[Handle, _Held] = {}
        self._polled = 0.0

    # -- session start -------------------------------------------------------------------
    def start_session(self, resources_for: Callable[[str], Resources]) -> None:
        """Charge jobs a dead driver left running (once), then apply pending budget requests."""
        for held, until in orphans(self.journal, resources_for):
            self._record(held, charge(until - held.since, held.resources), "orphan", orphan=True)
        self.poll(force=True)

    # -- charging ------------------------------------------------------------------------
    def started(self, handle: Handle, job: Job, resources: Resources) -> None:
        if not holds_any(resources):
            return  # an LLM-only step: no compute to charge
        node = self.journal.nodes[job.node_id]
        self.held[handle] = _Held(
            job.node_id,
            job.attempt,
            str(getattr(job, "step", "")),
            node.idea,
            node.kind,
            resources,
            self.clock(),
        )

    def ended(self, done: JobDone) -> None:
        held = self.held.pop(done.handle, None)
        if held is None:
            return
        result = done.result
        if result is not None and result.finished_at > 0 and result.started_at > 0:
            self._record(
                held,
                charge(result.finished_at - result.started_at, held.resources),
                "finished",
                started_at=result.started_at,
                finished_at=result.finished_at,
            )
        else:
            self._record(held, charge(self.clock() - held.since, held.resources), "lost", error=done.lost)

    def cancelled(self, handle: Handle) -> None:
        held = self.held.pop(handle, None)
        if held is not None:
            self._record(held, charge(self.clock() - held.since, held.resources), "cancelled")

    def _record(
        self,
        held: _Held,
        usage: Usage,
        how: str,
        *,
        orphan: bool = False,
        error: str | None = None,
        started_at: float | None = None,
        finished_at: float | None = None,
    ) -> None:
        self.journal.record(  # the journal adds it to its totals, `self.spend`
            ComputeUsed(
                node_id=held.node_id,
                attempt=held.attempt,
                idea=held.idea,
                kind=held.kind,
                how=how,
                num_gpus=held.resources.num_gpus,
                num_cpus=held.resources.num_cpus,
                step=held.step,
                seconds=usage.seconds,
                gpu_s=usage.gpu_s,
                cpu_s=usage.cpu_s,
                orphan=orphan,
                error=error,
                started_at=started_at,
                finished_at=finished_at,
            )
        )

    def watch(self, executor: Executor) -> Executor:
        """The executor, charging every job that holds resources as it ends."""
        return MeteredExecutor(executor, self)

    # -- limits --------------------------------------------------------------------------
    def accrued(self) -> Usage:
        """Spent plus what the jobs running now have held so far."""
        now = self.clock()
        out = self.spend.total.model_copy()
        for h in self.held.values():
            out.add(charge(now - h.since, h.resources))
        return out

    def exhausted(self) -> tuple[str, str] | None:
        """(budget, message) once a compute limit is reached, counting running jobs so far."""
        if limit_of(self.budgets, "gpu_hours") is None and limit_of(self.budgets, "cpu_hours") is None:
            return None  # asked every loop: with no limit, no need to add up a thousand running jobs
        used = self.accrued()
        for name, hours, what in (("gpu_hours", used.gpu_hours, "GPU"), ("cpu_hours", used.cpu_hours, "CPU")):
            limit = limit_of(self.budgets, name)
            if limit is not None and hours >= limit:
                return name, f"{what}-hour budget of {limit:g} used up ({hours:.3f} {what}-hours spent)"
        return None

    def used(self) -> dict[str, float]:
        """What each changeable budget has used, for validating a change."""
        return {
            "gpu_hours": self.spend.total.gpu_hours,
            "cpu_hours": self.spend.total.cpu_hours,
            "dollars": self.used_dollars(),
            "wall_clock_s": self.journal.elapsed_s(now=self.clock()),
        }

    def poll(self, force: bool = False) -> Budgets:
        """The effective budgets, after journaling any `silva budget` request (about once a second)."""
        now = time.monotonic()
        if force or now - self._polled >= POLL_S:
            self._polled = now
            for path in pending_requests(self.run_dir):
                self._apply_request(path)
        return self.budgets

    def _apply_request(self, path: Path) -> None:
        try:
            request = json.loads(path.read_text())
            changes = {str(k): float(v) for k, v in request["changes"].items()}
            check_change(changes, self.used())
        except (ValueError, KeyError, TypeError, AttributeError, ConfigError) as e:
            self.journal.record(BudgetChangeRefused(request=path.name, reason=str(e)[:500]))
            log.warning("budget request %s refused: %s", path.name, e)
        else:
            previous = {k: limit_of(self.budgets, k) for k in changes}
            self.journal.record(
                BudgetChanged(changes=changes, previous=previous, source="silva budget (live)")
            )
            self.budgets = self.budgets.model_copy(update=changes)
        self.journal.log.sync()  # under group commit: the request is journaled for good before it is deleted
        path.unlink(missing_ok=True)


class MeteredExecutor:
    """An executor that tells the meter when a job starts and ends (the driver's thread only)."""

    def __init__(self, inner: Executor, meter: ComputeMeter) -> None:
        self._inner, self._meter = inner, meter

    def submit(self, job: Job, resources: Resources) -> Handle:
        handle = self._inner.submit(job, resources)
        self._meter.started(handle, job, resources)
        return handle

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        done = self._inner.wait(handles, timeout)
        if done is not None:
            self._meter.ended(done)  # journaled before the dispatcher journals the job's end
        return done

    def cancel(self, handle: Handle) -> None:
        self._inner.cancel(handle)
        self._meter.cancelled(handle)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # e.g. a RayExecutor's `cluster`


def orphans(journal: Journal, resources_for: Callable[[str], Resources]) -> list[tuple[_Held, float]]:
    """Jobs that held resources, started in a session that ended (the driver died) before their
    end was journaled and not charged since, each with the last timestamp of that session."""
    out: list[tuple[_Held, float]] = []
    for h in journal.totals.jobs.orphans.values():
        node = journal.nodes[h.node_id]
        res = resources_for(node.kind)
        # A pipelined LLM step holds nothing; only a whole attempt or its run step holds resources.
        if holds_any(res) and h.step in HOLDING_STEPS:
            out.append((_Held(h.node_id, h.attempt, h.step, node.idea, node.kind, res, h.since), h.until))
    return out


# -- views: status and reports --------------------------------------------------------------
class BudgetLine(BaseModel):
    name: str
    used: float
    limit: float | None
    rate_per_h: float | None  # use per wall-clock hour over the recent window
    eta_s: float | None  # projected wall-clock seconds until the limit at that rate


def budget_lines(
    journal: Journal,
    base: Budgets,
    dollar_points: Sequence[tuple[float, float]],
    now: float | None = None,
    window_s: float = 1800.0,
) -> list[BudgetLine]:
    """Use, limit, recent rate and projected time to exhaustion of each budget.

    `dollar_points` are (ts, dollars) of LLM calls. The rate is taken over the last `window_s`
    of the run's activity (wall clock while it ran), so a stopped run's projection is what it
    would be on resume."""
    budgets = effective_budgets(base, journal.totals.budget_changes)
    spend = journal.totals.spend
    live = journal.finished is None and journal.stop is None
    end = (now or time.time()) if live else journal.totals.jobs.last_ts
    elapsed = journal.elapsed_s(now=end if live else None)
    active_window = min(window_s, elapsed)

    def rate(points: Sequence[tuple[float, float]]) -> float | None:
        if active_window <= 0:
            return None
        start = end - active_window
        before = next((v for ts, v in reversed(points) if ts < start), 0.0)
        latest = points[-1][1] if points else 0.0
        return (latest - before) / active_window * 3600

    cum_dollars, total = [], 0.0
    for ts, d in sorted(dollar_points):
        total += d
        cum_dollars.append((ts, total))
    series = {
        "gpu_hours": (spend.total.gpu_hours, [(t, g / 3600) for t, g, _ in spend.timeline]),
        "cpu_hours": (spend.total.cpu_hours, [(t, c / 3600) for t, _, c in spend.timeline]),
        "dollars": (total, cum_dollars),
    }
    out = []
    for name, (used, points) in series.items():
        limit = limit_of(budgets, name)
        r = rate(points)
        eta = (limit - used) / r * 3600 if limit is not None and r and used < limit else None
        out.append(BudgetLine(name=name, used=used, limit=limit, rate_per_h=r, eta_s=eta))
    wall = limit_of(budgets, "wall_clock_s")
    out.append(
        BudgetLine(
            name="wall_clock_s",
            used=elapsed,
            limit=wall,
            rate_per_h=3600.0,
            eta_s=max(0.0, wall - elapsed) if wall is not None else None,
        )
    )
    return out
