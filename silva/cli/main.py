"""The `silva` command, on typer: every subcommand group lives in its own module and registers
itself on `app` through `register(app)`.

No stack trace for what the user or the machine can fix (docs/cli.md): bad input and usage
errors print one line and exit 2; a full or read-only disk, a denied path or a Ray cluster that did
not start print one line naming the path or cause and what to do, and exit 3 (a live run journals
its stop first and the resume command is printed). Traces go to RUN_DIR/silva.log, and to the
terminal with `-v`; only a bug (exit 1) shows one unasked.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import typer

from engine.errors import EnvironmentFailure, SilvaError
from silva.cli.session import SESSION
from silva.failures import environment_failure

# Subcommand groups, in the order `silva --help` lists them; each module has `register(app)`.
COMMAND_MODULES = (
    "init",
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
    "plan",
    "track",
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


def _show_version(value: bool) -> None:
    if value:
        print(f"silva {importlib.metadata.version('silva')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="print Silva's version and exit"
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="stack traces and info logs on the terminal too (always in RUN_DIR/silva.log)",
    ),
) -> None:
    SESSION.verbose = verbose
    if verbose:
        logging.getLogger().setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script and of tests: returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    logging.captureWarnings(True)  # Python warnings reach the run log too
    SESSION.start()
    try:
        result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except BaseException as e:  # every ending becomes an exit code here
        return _failed(e)
    finally:
        SESSION.detach()
    return result if isinstance(result, int) else 0


def _failed(e: BaseException) -> int:
    if isinstance(e, typer.Exit):
        return e.exit_code
    if isinstance(e, typer.Abort | KeyboardInterrupt):
        return 130
    if isinstance(e, typer.TyperException):  # click's usage errors, as typer vendors them
        return _usage_error(e)
    if isinstance(e, SystemExit):
        raise e
    failure = e if isinstance(e, SilvaError) else environment_failure(e, SESSION.run_dir)
    if failure is None:
        return _bug(e)
    _trace(e)
    print(f"error: {failure}", file=sys.stderr)
    if isinstance(failure, EnvironmentFailure) and SESSION.run_dir is not None:
        journaled = "stop journaled" if failure.journaled else "the stop could not be journaled"
        print(f"{journaled}; once fixed, continue with: silva resume {SESSION.run_dir}", file=sys.stderr)
    return failure.exit_code


def _usage_error(e: typer.TyperException) -> int:
    message = e.format_message()
    ctx = getattr(e, "ctx", None)
    if not message.strip() or "\n" in message:  # `silva` or a group without a command: its help
        print(message, file=sys.stderr, end="")
    elif ctx is not None and (several := _several_runs(ctx.params, message)):
        print(f"error: {ctx.command_path} takes one run directory; {several}", file=sys.stderr)
    else:
        where = ctx.command_path if ctx is not None else "silva"
        print(f"error: {message} (see: {where} --help)", file=sys.stderr)
    return 2


def _several_runs(params: dict[str, object], message: str) -> str | None:
    """What to say when a glob (`runs/label-noise-*`) gave several run directories: their names,
    and the one written to last."""
    from engine.eventlog import EVENTS_FILE

    extra = message.removeprefix("Got unexpected extra argument(s) (").removesuffix(")")
    if extra == message:
        return None
    given = [v for v in params.values() if isinstance(v, Path)] + [Path(a) for a in extra.split()]
    runs = [p for p in given if (p / EVENTS_FILE).is_file()]
    if len(runs) < 2:
        return None
    latest = max(runs, key=lambda p: (p / EVENTS_FILE).stat().st_mtime)
    return f"{len(runs)} were given ({', '.join(p.name for p in runs)}); pick one, e.g. the latest: {latest}"


def _trace(e: BaseException) -> None:
    """The stack trace: in the run log, and on the terminal with -v."""
    if SESSION.log is not None:
        SESSION.log.trace(e)
    if SESSION.verbose:
        traceback.print_exception(e)


def _bug(e: BaseException) -> int:
    if SESSION.log is not None:
        SESSION.log.trace(e)
        print(
            f"bug: {type(e).__name__}: {e} (trace in {SESSION.log.path}; please report it)", file=sys.stderr
        )
        if SESSION.verbose:
            traceback.print_exception(e)
    else:
        traceback.print_exception(e)
    return 1


if __name__ == "__main__":
    sys.exit(main())
