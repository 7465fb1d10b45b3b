"""Read-only commands on a run directory: `silva status` and `silva export`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console


class ExportFormat(StrEnum):
    parquet = "parquet"


def status(run_dir: Path = typer.Argument(..., help="run directory")) -> int:
    """Tree summary, best node per stage, budgets, why the run stopped."""
    from silva import lifecycle
    from silva.status import print_status

    cfg, journal = lifecycle.open_run(run_dir, read_only=True)
    print_status(run_dir, cfg, journal, Console())
    return 0


def export(
    run_dir: Path = typer.Argument(..., help="run directory"),
    format: ExportFormat = typer.Option(ExportFormat.parquet, "--format", help="table format"),
    out: Path | None = typer.Option(None, "--out", help="output directory (default: RUN_DIR/export)"),
) -> int:
    """Write nodes and events as tables."""
    from engine.export import export_parquet
    from silva import lifecycle

    console = Console()
    _, journal = lifecycle.open_run(run_dir, read_only=True)
    for path in export_parquet(journal, out or run_dir / "export"):
        console.print(f"wrote {path}", highlight=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("export")(export)
