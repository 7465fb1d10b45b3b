"""The `silva` command: run, resume, status, export.

Bad input (config, template, run directory) prints what is wrong and where, and exits 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from engine.dispatch import Outcome
from engine.errors import SilvaError

EXIT_CODES = {"finished": 0, "budget": 0, "stuck": 1, "interrupted": 130}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="silva", description="Grow trees of experiments on a cluster.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start a run from a YAML config")
    run.add_argument("config", type=Path)
    res = sub.add_parser("resume", help="continue a stopped or killed run")
    res.add_argument("run_dir", type=Path)
    st = sub.add_parser("status", help="tree summary, best nodes, budgets, why it stopped")
    st.add_argument("run_dir", type=Path)
    ex = sub.add_parser("export", help="write nodes and events as tables")
    ex.add_argument("run_dir", type=Path)
    ex.add_argument("--format", choices=["parquet"], default="parquet")
    ex.add_argument("--out", type=Path, default=None, help="output directory (default: RUN_DIR/export)")
    return p


def _report(console: Console, run_dir: Path, outcome: Outcome) -> int:
    console.print(f"[bold]{outcome.status}[/bold]: {outcome.message}")
    console.print(f"results: {run_dir}   (inspect: silva status {run_dir})")
    return EXIT_CODES[outcome.status]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        return _dispatch(args, console)
    except SilvaError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


def _dispatch(args: argparse.Namespace, console: Console) -> int:
    from engine import run
    from engine.progress import Progress

    if args.command == "run":
        from engine.config import load_config

        cfg = load_config(args.config)
        run_dir, journal = run.create_run(cfg)
        console.print(f"run directory: {run_dir}")
        with Progress() as progress:
            outcome = run.execute(cfg, journal, progress.update)
        return _report(console, run_dir, outcome)
    if args.command == "resume":
        console.print(f"resuming {args.run_dir}")
        with Progress() as progress:
            outcome = run.resume(args.run_dir, progress.update)
        return _report(console, args.run_dir, outcome)
    if args.command == "status":
        from engine.status import print_status

        cfg, journal = run.open_run(args.run_dir)
        print_status(args.run_dir, cfg, journal, console)
        return 0
    if args.command == "export":
        from engine.export import export_parquet

        _, journal = run.open_run(args.run_dir)
        for path in export_parquet(journal, args.out or args.run_dir / "export"):
            console.print(f"wrote {path}")
        return 0
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
