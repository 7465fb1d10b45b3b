"""`silva repair RUN_DIR`: make a damaged journal replayable again without losing an event."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from engine.errors import ConfigError


def repair(
    run_dir: Path = typer.Argument(..., help="run directory whose events.jsonl is damaged"),
    yes: bool = typer.Option(False, "--yes", "-y", help="write without asking"),
) -> int:
    """Keep every good event, move bad lines to events.jsonl.bad-<time>; asks before writing."""
    from engine.eventlog import EVENTS_FILE
    from engine.repair import apply_repair, plan_repair
    from engine.writerlock import WriterLock

    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(f"{run_dir}: not a Silva run directory (no {EVENTS_FILE})")
    lock = WriterLock(run_dir)  # no run may append while the log is rewritten
    try:
        plan = plan_repair(run_dir)
        if not plan.needed:
            print(f"{plan.path}: every line is a valid event; nothing to repair")
            return 0
        print(plan.summary())
        print("the bad lines move to a side file next to it; nothing is deleted")
        if not yes:
            if not sys.stdin.isatty():
                raise ConfigError("repair asks before writing: run it in a terminal, or pass --yes")
            if not typer.confirm("write the repaired events.jsonl?", default=False):
                print("nothing changed")
                return 1
        for side in apply_repair(plan):
            print(f"kept the removed lines in {side}")
        print(f"repaired {plan.path}: {len(plan.keep)} events; continue with: silva resume {run_dir}")
        return 0
    finally:
        lock.release()


def register(app: typer.Typer) -> None:
    app.command("repair")(repair)
