"""`silva report scaling RUN_DIR`: how results grew with the compute spent (docs/budgets.md)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

report_app = typer.Typer(help="Reports on a run directory.", no_args_is_help=True)


@report_app.command("scaling")
def scaling(
    run_dir: Path = typer.Argument(..., help="run directory"),
    out: Path | None = typer.Option(
        None, "--out", help="output directory (default: RUN_DIR/reports/scaling)"
    ),
) -> int:
    """Best metric against cumulative GPU-hours and dollars, per idea and for the forest (table + PNGs)."""
    from silva import lifecycle
    from silva.report.scaling import write_report

    _, journal = lifecycle.open_run(run_dir, read_only=True)
    sc, paths = write_report(run_dir, journal, out or run_dir / "reports" / "scaling")
    console = Console()
    if not console.is_terminal:
        console = Console(file=console.file, width=max(console.width, 140))
    table = Table(title=f"compute scaling ({sc.metric})", title_justify="left")
    for col in (
        "idea",
        "GPU-h",
        "dollars",
        "best (validation)",
        "held-out",
        "gain per extra GPU-h",
        "stopped",
    ):
        table.add_column(col, justify="left" if col in ("idea", "stopped") else "right")
    for r in sc.table.to_dict("records"):
        stopped = f"{r['stopped_by']} at {r['stopped_at_stage']}" if r["stopped_by"] else ""
        table.add_row(
            r["idea"],
            f"{r['gpu_hours']:.2f}",
            f"{r['dollars']:.4f}",
            fmt(r["best_validation"]),
            fmt(r["heldout"]),
            fmt(r["marginal_per_gpu_hour"]),
            stopped,
        )
    console.print(table)
    for p in paths:
        console.print(f"wrote {p}", highlight=False, soft_wrap=True)
    return 0


def fmt(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.4g}"  # None or NaN: no value


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
