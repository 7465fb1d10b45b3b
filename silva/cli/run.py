"""`silva run CONFIG` and `silva resume RUN_DIR`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from engine.dispatch import Outcome
from silva.signals import EXIT_CODES as SIGNAL_EXIT_CODES

EXIT_CODES = {"finished": 0, "budget": 0, "stuck": 1, "interrupted": 130}


def report(console: Console, run_dir: Path, outcome: Outcome) -> int:
    console.print(f"[bold]{outcome.status}[/bold]: {outcome.message}")
    if outcome.status in ("interrupted", "budget", "stuck"):
        # soft_wrap: a long run directory stays on one line (copyable) in logs and narrow terminals.
        console.print(f"results: {run_dir}\ncontinue with: silva resume {run_dir}", highlight=False, soft_wrap=True)
    else:
        console.print(f"results: {run_dir}   (inspect: silva status {run_dir})", highlight=False)
    # 130 after SIGINT, 143 after SIGTERM: what shells and schedulers expect of a stopped job.
    return SIGNAL_EXIT_CODES.get(outcome.signal or "", EXIT_CODES[outcome.status])


def run(config: Path = typer.Argument(..., help="run config (YAML)")) -> int:
    """Start a run from a YAML config."""
    from silva import lifecycle
    from silva.config import load_config
    from silva.progress import Progress

    console = Console()
    cfg = load_config(config)
    run_dir, journal = lifecycle.create_run(cfg)
    console.print(f"run directory: {run_dir}", highlight=False, soft_wrap=True)
    with Progress() as progress:
        outcome = lifecycle.execute(cfg, journal, progress.update)
    return report(console, run_dir, outcome)


def resume(run_dir: Path = typer.Argument(..., help="run directory that `silva run` printed")) -> int:
    """Continue a stopped or killed run."""
    from silva import lifecycle
    from silva.progress import Progress

    console = Console()
    console.print(f"resuming {run_dir}", highlight=False, soft_wrap=True)
    with Progress() as progress:
        outcome = lifecycle.resume(run_dir, progress.update)
    return report(console, run_dir, outcome)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("resume")(resume)
