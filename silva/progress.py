"""Live progress of a run: a rich table on a terminal, one line per change otherwise (CI, logs)."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from engine.journal import Journal
from engine.summary import fmt, stage_rows

MIN_INTERVAL_S = 0.2


class Progress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.live: Live | None = None
        self._last_line = ""
        self._last_render = 0.0

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.__exit__(t, e, tb)

    def update(self, journal: Journal) -> None:
        now = time.monotonic()
        if self.live is not None:
            if now - self._last_render >= MIN_INTERVAL_S:
                self.live.update(self.table(journal))
                self._last_render = now
            return
        line = self.line(journal)
        if line != self._last_line:  # elapsed time alone is no news
            self.console.print(f"[{journal.elapsed_s(now=time.time()):5.0f}s] {line}", highlight=False)
            self._last_line = line

    def table(self, journal: Journal) -> Table:
        spec = journal.primary_metric
        t = Table(title=f"Silva · {journal.elapsed_s(now=time.time()):.0f} s elapsed", title_justify="left")
        for col in ("idea", "stage", "done", "running", "buggy", f"best {spec.name if spec else ''}", "state"):
            t.add_column(col)
        for r in stage_rows(journal):
            t.add_row(r.idea, r.stage, str(r.done), str(r.running), str(r.buggy),
                      f"{fmt(r.best_value)} ({r.best_node})" if r.best_node else "-", "ended" if r.ended else "active")
        return t

    def line(self, journal: Journal) -> str:
        parts = [
            f"{r.stage}: {r.done} done/{r.running} running/{r.buggy} buggy best={fmt(r.best_value)}"
            for r in stage_rows(journal) if not r.ended or r.running
        ]
        return "; ".join(parts) or "starting"
