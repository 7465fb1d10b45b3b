"""`silva discover DATA [--prior FILE] [--mode discoper|experigen]`: data-driven discovery on a table."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

# Without --config: the offline scripted analyst (search/discovery/scripted.py) stands in for the models.
OFFLINE_LLM: dict[str, Any] = {
    "providers": {"offline": {"kind": "scripted"}},
    "models": {"analyst": {"provider": "offline", "model": "scripted-analyst"}},
    "roles": {
        "code": {"model": "analyst", "max_tokens": 4096},
        "feedback": {"model": "analyst", "max_tokens": 2048},
    },
}
OFFLINE_FN = "search.discovery.scripted:respond"
STATEFUL_FN = "search.stateful.scripted:respond"  # the stateful mode's offline analyst


class ModeName(StrEnum):
    discoper = "discoper"
    experigen = "experigen"
    stateful = "stateful"


class GateName(StrEnum):
    two_split = "two_split"
    bonferroni = "bonferroni"
    bh = "bh"


def build_config(
    data: Path,
    prior: Path | None,
    mode: ModeName,
    gate: GateName | None,
    config: Path | None,
    max_hypotheses: int | None,
    output_dir: Path | None,
) -> Any:
    """The run config: --config's settings (budgets, executor, sandbox, llm) plus the `discovery:`
    section from the arguments; without --config, offline defaults."""
    from pydantic import ValidationError

    from engine.config import format_validation_error, load_yaml
    from engine.errors import ConfigError
    from silva.config import RunConfig

    base: dict[str, Any] = {"executor": {"kind": "inprocess", "max_in_flight": 4}}
    if config is not None:
        loaded = load_yaml(config)
        if not isinstance(loaded, dict):
            raise ConfigError(f"{config}: expected a mapping of settings at the top level")
        base = loaded
    for key in ("template", "idea", "ideas"):
        if key in base:
            raise ConfigError(f"{config}: `{key}` is set; `silva discover` runs discovery only — remove it")
    section = dict(base.get("discovery") or {})
    section.update(data=str(data.resolve()), mode=mode.value)
    if prior is not None:
        section["prior"] = str(prior.resolve())
    if gate is not None:
        section["gate"] = gate.value
    if max_hypotheses is not None:
        section["max_hypotheses"] = max_hypotheses
    cfg = {"name": data.stem.replace(" ", "_") or "discovery", **base, "discovery": section}
    if "llm" not in cfg:
        cfg.update(llm=OFFLINE_LLM, scripted_fn=STATEFUL_FN if mode == ModeName.stateful else OFFLINE_FN)
    elif config is not None and isinstance(cfg.get("scripted_fn"), str) and ".py:" in cfg["scripted_fn"]:
        file, _, fn = cfg["scripted_fn"].rpartition(":")
        cfg["scripted_fn"] = f"{(config.parent / file).resolve()}:{fn}"
    if output_dir is not None:
        cfg["output_dir"] = str(output_dir)
    try:
        run_cfg = RunConfig.model_validate(cfg)
    except ValidationError as e:
        raise ConfigError(format_validation_error(str(config or "silva discover"), e)) from None
    return run_cfg.model_copy(update={"output_dir": run_cfg.output_dir.resolve()})


def discover(
    data: Path = typer.Argument(..., help="table to discover in (CSV or Parquet)"),
    prior: Path | None = typer.Option(
        None, "--prior", help="prior information: text, or YAML with question/facts"
    ),
    mode: ModeName = typer.Option(ModeName.discoper, "--mode", help="discoper | experigen | stateful"),
    gate: GateName | None = typer.Option(
        None, "--gate", help="default: two_split (discoper), bonferroni (experigen)"
    ),
    config: Path | None = typer.Option(
        None, "--config", help="run config with llm, budgets, executor, sandbox"
    ),
    max_hypotheses: int | None = typer.Option(None, "--max-hypotheses", help="DiscoPER: hypotheses in all"),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", help="where the run directory goes (default runs/)"
    ),
) -> int:
    """Propose hypotheses as code, test them in the sandbox, keep those the gate accepts."""
    from search.discovery.claims import status_line
    from silva import lifecycle
    from silva.cli.run import report
    from silva.cli.session import SESSION
    from silva.llm_session import show_progress
    from silva.progress import Progress

    show_progress()  # one line per LLM call on stderr
    console = Console()
    cfg = build_config(data, prior, mode, gate, config, max_hypotheses, output_dir)
    if config is None:
        console.print(
            "no --config: the offline scripted analyst writes the hypotheses "
            "(give --config with an `llm:` section for real models)",
            highlight=False,
        )
    run_dir, journal = lifecycle.create_run(cfg)
    SESSION.attach(run_dir)  # RUN_DIR/silva.log: the terminal's lines and any trace
    console.print(f"run directory: {run_dir}", highlight=False)
    with Progress() as progress:
        outcome = lifecycle.execute(cfg, journal, progress.update)
    line = status_line(run_dir)
    if line:
        console.print(line, highlight=False)
    return report(console, run_dir, outcome)


def register(app: typer.Typer) -> None:
    app.command("discover")(discover)
