"""`silva run CONFIG` and `silva resume RUN_DIR`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from engine.dispatch import RunOutcome
from engine.errors import ConfigError
from engine.journal import Journal
from silva.cli.session import SESSION
from silva.signals import EXIT_CODES as SIGNAL_EXIT_CODES
from silva.status_json import run_result
from writeup.files import paper_kind

# Exit codes a script can rely on (docs/cli.md; README "Exit codes"); 130/143 after SIGINT/SIGTERM.
EXIT_RESULT = 0  # finished with a result
EXIT_BAD_INPUT = 2  # config, template, idea or run directory: nothing was spent
EXIT_STOPPED = 3  # a budget or the machine stopped it: `silva resume` continues
EXIT_NO_RESULT = 4  # ended with no good node in some stage (or the search could not go on)
EXIT_CODES_HELP = (
    "Exit codes: 0 finished with a result (also when its writeup or review failed: the last lines say so); "
    "2 bad input; 3 stopped by a budget or the machine (resumable); 4 ended with no good node in some stage; "
    "130/143 stopped by SIGINT/SIGTERM; 1 a bug."
)


def report(console: Console, run_dir: Path, outcome: RunOutcome) -> int:
    # soft_wrap: paths stay on one line (copyable) in logs and narrow terminals.
    console.print(f"[bold]{outcome.status}[/bold]: {outcome.message}", soft_wrap=True)
    journal = Journal.open(run_dir, read_only=True)
    try:
        result = run_result(journal)
    finally:
        journal.log.close()
    console.print(result.text, highlight=False, soft_wrap=True)
    for paper in sorted(run_dir.glob("paper/*/paper.pdf")):
        console.print(f"{paper_kind(paper)}: {paper}", highlight=False, soft_wrap=True)
    for line in result.phases:  # a failed writeup or review: said as such, the result stands
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if outcome.status in ("interrupted", "budget"):
        console.print(
            f"results: {run_dir}\ncontinue with: silva resume {run_dir}", highlight=False, soft_wrap=True
        )
    else:
        console.print(
            f"results: {run_dir}   (inspect: silva status {run_dir})", highlight=False, soft_wrap=True
        )
    if outcome.signal:  # 130 after SIGINT, 143 after SIGTERM: what shells and schedulers expect
        return SIGNAL_EXIT_CODES[outcome.signal]
    if outcome.status == "budget":
        return EXIT_STOPPED
    return EXIT_RESULT if outcome.status == "finished" and result.has_result else EXIT_NO_RESULT


def run(
    config: Path = typer.Argument(..., help="run config (YAML)"),
    ideas: Path | None = typer.Option(
        None,
        "--ideas",
        help="an ideas.jsonl of `silva ideate`: run its kept ideas as a forest (from its template's code, if "
        "any)",
    ),
    top: int | None = typer.Option(None, "--top", min=1, help="with --ideas: only the best K by score"),
    view: bool = typer.Option(False, "--view", help="serve the live HTML view on 127.0.0.1 while it runs"),
) -> int:
    """Start a run from a YAML config."""
    from silva import lifecycle
    from silva.config import load_config
    from silva.progress import Progress

    console = Console()
    overrides = None
    template = None
    if ideas is not None:
        from silva.ideation.archive import ideas_template, top_ideas

        files = top_ideas(ideas, top)
        overrides = {"idea": None, "ideas": [str(f) for f in files]}
        template = ideas_template(ideas, files)  # ideas of `silva ideate --template` grow from its code
    elif top is not None:
        raise ConfigError("--top picks from an ideas archive: give it with --ideas ideas.jsonl")
    cfg = load_config(config, overrides=overrides)
    if template is not None and cfg.template is None:
        cfg = load_config(config, overrides={**(overrides or {}), "template": str(template)})
    elif template is not None and cfg.template is not None and cfg.template.resolve() != template.resolve():
        raise ConfigError(
            f"{config}: template = {str(cfg.template)!r}, but the ideas in {ideas} extend the template "
            f"{str(template)!r}; remove `template` from the run config or point it there"
        )
    run_dir, journal = lifecycle.create_run(cfg)
    SESSION.attach(run_dir)
    console.print(f"run directory: {run_dir}", highlight=False, soft_wrap=True)
    with _served(console, run_dir, view), Progress() as progress:
        outcome = lifecycle.execute(cfg, journal, progress.update)
    return report(console, run_dir, outcome)


@contextmanager
def _served(console: Console, run_dir: Path, view: bool) -> Iterator[None]:
    """With --view, the run's HTML view on 127.0.0.1, rebuilt while the run goes on."""
    if not view:
        yield
        return
    from silva.view.serve import ViewServer

    with ViewServer(run_dir) as server:
        console.print(f"live view: {server.url}", highlight=False, soft_wrap=True)
        yield


def resume(
    run_dir: Path = typer.Argument(..., help="run directory that `silva run` printed"),
    view: bool = typer.Option(False, "--view", help="serve the live HTML view on 127.0.0.1 while it runs"),
) -> int:
    """Continue a stopped or killed run (exit codes as for `silva run`)."""
    from silva import lifecycle
    from silva.progress import Progress

    console = Console()
    _, journal = lifecycle.open_run(run_dir, read_only=True)  # a damaged run is refused before any write
    journal.log.close()
    SESSION.attach(run_dir)
    console.print(f"resuming {run_dir}", highlight=False, soft_wrap=True)
    with _served(console, run_dir, view), Progress() as progress:
        outcome = lifecycle.resume(run_dir, progress.update)
    return report(console, run_dir, outcome)


def register(app: typer.Typer) -> None:
    app.command("run", help=f"Start a run from a YAML config.\n\n{EXIT_CODES_HELP}")(run)
    app.command("resume", help=f"Continue a stopped or killed run.\n\n{EXIT_CODES_HELP}")(resume)
