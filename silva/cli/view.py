"""`silva view RUN_DIR [--serve]`: the run as an HTML page (RUN_DIR/view/index.html)."""

from __future__ import annotations

import threading
from pathlib import Path

import typer
from rich.console import Console


def view(
    run_dir: Path = typer.Argument(..., help="run directory"),
    serve: bool = typer.Option(False, "--serve", help="serve on 127.0.0.1 and refresh while the run goes on"),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, help="with --serve: the port (0 picks a free one)"
    ),
) -> int:
    """Write the run's page: the forest, each stage's decision, budgets and spend; click a node for its
    details."""
    from silva.view.build import build_view
    from silva.view.serve import ViewServer

    console = Console()
    if not serve:
        result = build_view(run_dir)
        console.print(f"wrote {result.index} ({result.nodes} nodes); open it in a browser", highlight=False)
        return 0
    with ViewServer(run_dir, port=port) as server:
        console.print(f"serving {server.url}  (Ctrl-C to stop)", highlight=False)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


def register(app: typer.Typer) -> None:
    app.command("view")(view)
