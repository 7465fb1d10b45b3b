"""`silva view RUN_DIR [--out DIR] [--serve]`: the run as an HTML page (RUN_DIR/view/index.html)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import typer
from rich.console import Console

READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def fallback_dir(run_dir: Path, what: str = "views") -> Path:
    """Where output for a run directory this user cannot write goes: the user's cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "silva" / what / run_dir.resolve().name


def view(
    run_dir: Path = typer.Argument(..., help="run directory"),
    serve: bool = typer.Option(False, "--serve", help="serve on 127.0.0.1 and refresh while the run goes on"),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, help="with --serve: the port (0 picks a free one)"
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="write the page here (default RUN_DIR/view; a read-only run directory falls back to "
        "~/.cache/silva/views/RUN_NAME, with a message)",
    ),
) -> int:
    """Write the run's page: the forest, each stage's decision, budgets and spend; click a node for its
    details."""
    from silva.view.build import build_view
    from silva.view.serve import ViewServer

    console = Console()
    if not serve:
        try:
            result = build_view(run_dir, out)
        except OSError as e:
            if out is not None or e.errno not in READ_ONLY:
                raise
            fallback = fallback_dir(run_dir)
            console.print(
                f"{run_dir} is not writable ({e.strerror}): writing the view to {fallback} instead "
                "(choose with --out DIR)",
                highlight=False,
                soft_wrap=True,
            )
            result = build_view(run_dir, fallback)
        console.print(
            f"wrote {result.index} ({result.nodes} nodes); open it in a browser",
            highlight=False,
            soft_wrap=True,
        )
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
