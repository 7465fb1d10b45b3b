"""The `silva` command, on typer: every subcommand group lives in its own module and registers
itself on `app` through `register(app)`.

Bad input (config, template, run directory) prints what is wrong and where, and exits 2.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Sequence

import click
import typer

from engine.errors import SilvaError

# Subcommand groups, in the order `silva --help` lists them; each module has `register(app)`.
COMMAND_MODULES = (
    "run",
    "inspect",
    "repair",
    "cost",
    "bench",
    "view",
    "discover",
    "review",
    "writeup",
    "cluster",
    "ideate",
    "budget",
    "report",
)

app = typer.Typer(
    name="silva",
    help="Grow trees of experiments on a cluster, write them up, review them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"silva.cli.{_name}").register(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script and of tests: returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except SilvaError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:  # usage errors: unknown option, missing argument
        e.show()
        return 2
    except click.exceptions.Abort:
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
