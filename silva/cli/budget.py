"""`silva budget RUN_DIR --gpu-hours 500 --dollars 200`: raise or lower a run's budgets.

On a running run the driver (the journal's only writer) picks the change up within about a
second from a request file; on a stopped run the change is journaled now and `silva resume`
runs under it. Bad values change nothing and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from engine.events import BudgetChanged

if TYPE_CHECKING:
    from engine.journal import Journal

OPTIONS = {
    "gpu_hours": "--gpu-hours",
    "cpu_hours": "--cpu-hours",
    "dollars": "--dollars",
    "wall_clock_s": "--wall-clock-s",
}


def _used(run_dir: Path, journal: Journal) -> dict[str, float]:
    """What the run has used of each budget so far."""
    from engine.llm.ledger import LEDGER_FILE, read_records

    spend = journal.totals.spend
    return {
        "gpu_hours": spend.total.gpu_hours,
        "cpu_hours": spend.total.cpu_hours,
        "dollars": sum(r.dollars for r in read_records(run_dir / LEDGER_FILE)),
        "wall_clock_s": journal.elapsed_s(),
    }


def budget(
    run_dir: Path = typer.Argument(..., help="run directory"),
    gpu_hours: str | None = typer.Option(None, "--gpu-hours", help="new GPU-hour budget of the run"),
    cpu_hours: str | None = typer.Option(None, "--cpu-hours", help="new CPU-hour budget of the run"),
    dollars: str | None = typer.Option(None, "--dollars", help="new LLM dollar budget of the run"),
    wall_clock_s: str | None = typer.Option(None, "--wall-clock-s", help="new wall-clock budget in seconds"),
) -> int:
    """Raise or lower the budgets of a running or stopped run."""
    from engine.budgets import (
        check_change,
        effective_budgets,
        limit_of,
        parse_amount,
        write_request,
    )
    from engine.errors import ConfigError
    from engine.journal import Journal
    from engine.writerlock import RunLocked
    from silva import lifecycle

    given = {"gpu_hours": gpu_hours, "cpu_hours": cpu_hours, "dollars": dollars, "wall_clock_s": wall_clock_s}
    changes = {name: parse_amount(OPTIONS[name], raw) for name, raw in given.items() if raw is not None}
    if not changes:
        raise ConfigError(f"give at least one new budget: {', '.join(OPTIONS.values())}")
    cfg, journal = lifecycle.open_run(run_dir, read_only=True)
    if journal.finished is not None:
        raise ConfigError(
            f"{run_dir}: the run has finished ({journal.finished.reason}); a budget has nothing to continue"
        )
    check_change(changes, _used(run_dir, journal))
    console = Console()
    try:
        writer = Journal.open(run_dir)  # no driver holds the run: journal the change ourselves
    except RunLocked:
        path = write_request(run_dir, changes)
        console.print(
            f"the running driver applies it within seconds (request {path.name}); "
            f"`silva status {run_dir}` shows the new limits",
            highlight=False,
        )
        return 0
    try:
        current = effective_budgets(cfg.budgets, writer.totals.budget_changes)
        writer.record(
            BudgetChanged(
                changes=changes, previous={k: limit_of(current, k) for k in changes}, source="silva budget"
            )
        )
    finally:
        writer.log.close()
    shown = ", ".join(f"{k} = {v:g}" for k, v in changes.items())
    console.print(
        f"budgets changed: {shown}; continue with: silva resume {run_dir}", highlight=False, soft_wrap=True
    )
    return 0


def register(app: typer.Typer) -> None:
    app.command("budget")(budget)
