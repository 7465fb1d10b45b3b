"""`silva init [--example digits|ideas|discovery] DIR`: a runnable example from the installed
package (silva/examples, shipped in the wheel), so a new user needs no checkout (docs/cli.md)."""

from __future__ import annotations

from enum import StrEnum
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import typer
from rich.console import Console

from engine.errors import ConfigError


class Example(StrEnum):
    digits = "digits"  # the offline template search of `make demo`
    ideas = "ideas"  # the offline LLM search: a scripted scientist grows experiments from an idea
    discovery = "discovery"  # data-driven discovery on a bundled table, offline


FOLDERS = {Example.digits: "digits_rff", Example.ideas: "ideas", Example.discovery: "discovery"}
SKIPPED = ("__pycache__",)


def _copy(source: Traversable, target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    for item in source.iterdir():
        if item.name in SKIPPED or item.name.endswith(".pyc"):
            continue
        if item.is_dir():
            count += _copy(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())
            count += 1
    return count


def init(
    directory: Path = typer.Argument(..., help="where to write the example (a new or empty directory)"),
    example: Example = typer.Option(Example.digits, "--example", help="digits | ideas | discovery"),
) -> int:
    """Write a runnable example (run config, template, idea or table); then `silva run DIR/run.yaml`."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ConfigError(f"{directory}: exists and is not an empty directory; choose a new one")
    count = _copy(files("silva") / "examples" / FOLDERS[example], directory)
    console = Console()
    console.print(f"wrote the {example.value} example to {directory} ({count} files)", highlight=False)
    console.print(f"next: silva run {directory / 'run.yaml'}", highlight=False, soft_wrap=True)
    return 0


def register(app: typer.Typer) -> None:
    app.command("init")(init)
