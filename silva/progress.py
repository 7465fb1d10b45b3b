"""Live progress of a run: a rich table on a terminal; on anything else (CI, Slurm, `| tee`) one
plain line per change, written as is (never wrapped or cut at 80 columns) and at most one line
every `interval_s` seconds: a change inside the interval is held and printed when the interval
has passed (or when the run ends), so a log shows the latest state without flooding.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from engine.errors import ConfigError
from engine.journal import Journal
from engine.node import NodeStatus
from engine.summary import DOCUMENT_STAGES, fmt, stage_rows

MIN_INTERVAL_S = 0.2  # terminal redraws
INTERVAL_ENV = "SILVA_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 5.0  # log lines
DOCUMENT_STATE = {NodeStatus.GOOD: "done", NodeStatus.BUGGY: "failed", NodeStatus.RUNNING: "running"}


def interval_from_env() -> float:
    raw = os.environ.get(INTERVAL_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ConfigError(
            f"{INTERVAL_ENV}={raw!r}: expected a number of seconds >= 0 (0 prints every change)"
        )
    return value


class Progress:
    def __init__(self, console: Console | None = None, interval_s: float | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.interval_s = interval_from_env() if interval_s is None else interval_s
        self.live: Live | None = None
        self._last_line = ""
        self._last_check = float("-inf")  # when a line was last made (printed if it changed)
        self._held: Journal | None = None  # changed within the interval: its line waits for the interval
        self._next_render = 0.0

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.live.__exit__(t, e, tb)
        elif self._held is not None:
            self._emit(self._held, time.monotonic())  # the final state always reaches the log

    def update(self, journal: Journal) -> None:
        """Called by the driver after every change: what it costs is paid only when a line or a
        redraw is due, so the driver's cost per completion does not grow with the run."""
        now = time.monotonic()
        if self.live is not None:
            if now >= self._next_render:
                start = time.perf_counter()
                self.live.update(self.table(journal))
                # A big run's table takes longer to build: redraws stay under 5% of the driver's time.
                self._next_render = now + max(MIN_INTERVAL_S, 20 * (time.perf_counter() - start))
            return
        if now - self._last_check < self.interval_s:
            self._held = journal  # its line is made when the interval has passed, or at the end
            return
        self._held = None
        self._emit(journal, now)

    def _emit(self, journal: Journal, now: float) -> None:
        self._last_check = now
        line = self.line(journal)
        if line == self._last_line:  # elapsed time alone is no news
            return
        self._last_line = line
        self._write(f"[{journal.elapsed_s(now=time.time()):6.0f}s] {line}")

    def _write(self, line: str) -> None:
        # Straight to the stream: rich would wrap (or crop) at its guessed width of 80 columns.
        out: IO[str] = self.console.file
        out.write(line + "\n")
        out.flush()

    def table(self, journal: Journal) -> Table:
        spec = journal.primary_metric
        t = Table(title=f"Silva · {journal.elapsed_s(now=time.time()):.0f} s elapsed", title_justify="left")
        for col in (
            "idea",
            "stage",
            "done",
            "running",
            "buggy",
            f"best {spec.name if spec else ''} (one seed)",
            "state",
        ):
            t.add_column(col)
        for r in stage_rows(journal):
            t.add_row(
                r.idea,
                r.stage,
                str(r.done),
                str(r.running),
                str(r.buggy),
                f"{fmt(r.best_value)} ({r.best_node})" if r.best_node else "-",
                "ended" if r.ended else "active",
            )
        return t

    def line(self, journal: Journal) -> str:
        """Run totals, then each active stage (prefixed by its idea in a forest). Made from the
        journal's indexes: its cost is that of the documents, the jobs in flight and the open
        stages, not of every node of the run (a run of 10,000 slots redraws it every 5 s)."""
        documents = [  # papers and reviews: documents, never counted as good or buggy experiments
            journal.nodes[i]
            for i in sorted(
                (i for stage in DOCUMENT_STAGES for i in journal.stage_ids(stage)),
                key=lambda i: (len(i), i),  # creation order ("n0999" before "n1000")
            )
        ]
        documents = [n for n in documents if n.kind in DOCUMENT_STAGES]
        counts = {
            s: journal.status_count(s) - sum(n.status == s for n in documents)
            for s in (NodeStatus.GOOD, NodeStatus.BUGGY, NodeStatus.RUNNING)
        }
        rows = stage_rows(journal, open_only=True)
        forest = len(journal.ideas) > 1
        parts = [
            f"{len(journal.nodes) - len(documents)} experiment nodes: {counts[NodeStatus.GOOD]} good, "
            f"{counts[NodeStatus.BUGGY]} buggy, {counts[NodeStatus.RUNNING]} running"
        ]
        parts += [f"{n.kind} {DOCUMENT_STATE.get(n.status, n.status.value)}" for n in documents]
        parts += [
            f"{r.idea + '/' if forest else ''}{r.stage} {r.done} done {r.running} running {r.buggy} buggy "
            f"best (one seed)={fmt(r.best_value)}"
            for r in rows
            if not r.ended or r.running
        ]
        return " | ".join(parts) if journal.nodes else "starting"
