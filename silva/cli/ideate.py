"""`silva ideate TOPIC_FILE [--template DIR]`: grow an archive of novel research ideas."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from silva.ideation.config import TopicConfig
    from writeup.literature import Literature


def _literature(cfg: TopicConfig, console: Console) -> tuple[Literature | None, str]:
    """The literature search for novelty checks, or None and why (the ideas are then unchecked)."""
    from writeup.literature import LiteratureError, open_literature

    try:
        return open_literature(cfg.literature), ""
    except LiteratureError as e:
        console.print(
            f"warning: no literature check ({e}); ideas are archived as `unchecked`", highlight=False
        )
        return None, str(e)


def ideate(
    topic_file: Path = typer.Argument(
        ..., help="topic file (YAML): topic, llm, literature, numbers of ideas and rounds"
    ),
    template: Path | None = typer.Option(
        None, "--template", help="extend this template's experiment (AI Scientist v1 mode)"
    ),
    out: Path | None = typer.Option(
        None, "--out", help="archive directory (default: ideas/ next to the topic file)"
    ),
    num: int | None = typer.Option(
        None, "--num", min=1, help="ideas to add (default: the topic file's num_ideas)"
    ),
) -> int:
    """Generate ideas by LLM mutation of the archive, reflect on them, drop duplicates, check novelty."""
    from engine.llm import build_gateway, resolve_keys
    from silva.ideation.archive import Archive, summary_line
    from silva.ideation.config import load_topic
    from silva.ideation.ideate import Ideator
    from silva.llm_session import probe_llm, scripted_providers, show_progress

    show_progress()  # one line per LLM call on stderr
    console = Console()
    cfg = load_topic(topic_file, template)
    if num is not None:
        cfg = cfg.model_copy(update={"num_ideas": num})
    directory = out or topic_file.parent / "ideas"
    probe_llm(cfg.llm, directory)  # printed, and paid into the archive's ledger
    providers = scripted_providers(cfg.llm, cfg.scripted_fn)
    literature, why = _literature(cfg, console)
    archive = Archive(directory)
    before = len(archive.records)
    gateway = build_gateway(cfg.llm, directory, None, resolve_keys(cfg.llm, os.environ), providers=providers)
    failed: list[str] = []

    def on_failure(why: str) -> None:
        failed.append(why)
        console.print(f"idea {len(failed)} not made: {why}", highlight=False)

    try:
        made = Ideator(cfg, gateway.client(), literature, archive, why).run(
            on_idea=lambda r: console.print(summary_line(r), highlight=False), on_failure=on_failure
        )
    finally:
        gateway.close()
    kept = sum(r.kept for r in made)
    not_made = f"; {len(failed)} not made (the model's answers did not validate)" if failed else ""
    console.print(
        f"{kept} of {len(made)} new ideas kept{not_made} ({len(archive.records)} in the archive, "
        f"{before} before): {archive.path}",
        highlight=False,
    )
    if not made:
        return 4  # finished without a result, as `silva run` with no good node
    console.print(f"run the best: silva run RUN_CONFIG --ideas {archive.path} --top 3", highlight=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command("ideate")(ideate)
