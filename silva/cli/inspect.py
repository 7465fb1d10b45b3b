"""Read-only commands on a run directory: `silva status` and `silva export`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console


class ExportFormat(StrEnum):
    parquet = "parquet"


def status(
    run_dir: Path = typer.Argument(..., help="run directory"),
    json_out: bool = typer.Option(
        False, "--json", help="one JSON object: state, node counts, result, stages (schema in docs/cli.md)"
    ),
) -> int:
    """Tree summary, best node per stage, budgets, why the run stopped."""
    from silva import lifecycle
    from silva.status import print_status
    from silva.status_json import status_report

    cfg, journal = lifecycle.open_run(run_dir, read_only=True)
    if json_out:
        print(status_report(run_dir, journal).model_dump_json())
        return 0
    print_status(run_dir, cfg, journal, Console())
    return 0


def export(
    run_dir: Path = typer.Argument(..., help="run directory"),
    format: ExportFormat = typer.Option(ExportFormat.parquet, "--format", help="table format"),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="output directory (default RUN_DIR/export; a read-only run directory falls back to "
        "~/.cache/silva/exports/RUN_NAME, with a message)",
    ),
) -> int:
    """Write nodes and events as Parquet tables (nothing is written when a payload is damaged)."""
    from engine.export import export_parquet
    from silva import lifecycle
    from silva.cli.view import READ_ONLY, fallback_dir

    console = Console()
    _, journal = lifecycle.open_run(run_dir, read_only=True)
    try:
        paths = export_parquet(journal, out or run_dir / "export")
    except OSError as e:
        if out is not None or e.errno not in READ_ONLY:
            raise
        fallback = fallback_dir(run_dir, "exports")
        console.print(
            f"{run_dir} is not writable ({e.strerror}): writing the tables to {fallback} instead "
            "(choose with --out DIR)",
            highlight=False,
            soft_wrap=True,
        )
        paths = export_parquet(journal, fallback)
    for path in paths:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    return 0


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("export")(export)
