"""`silva writeup RUN_DIR [--idea NAME] [--template workshop|conference] [--offline]`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from silva.config import RunConfig
    from silva.llm_session import LLMSession
    from writeup.config import WriteupConfig
    from writeup.literature import Literature


def _writeup_config(cfg: RunConfig | None, template: str | None, offline: bool) -> WriteupConfig:
    """The run's `writeup:` section (or the defaults) with the command's --template and --offline."""
    from engine.errors import ConfigError
    from writeup.config import WriteupConfig

    wcfg: WriteupConfig = getattr(cfg, "writeup", None) or WriteupConfig()
    updates: dict[str, object] = {}
    if template is not None:
        if template not in ("workshop", "conference"):
            raise ConfigError(f"--template {template!r}: choose workshop or conference")
        updates["template"] = template
    if offline:
        updates["offline"] = True
    return wcfg.model_copy(update=updates)


def _open_writer(
    cfg: RunConfig | None, wcfg: WriteupConfig, run_dir: Path
) -> tuple[LLMSession, Literature | None]:
    """The run's LLM (in this process) and its literature search, for the LLM writer."""
    import os

    from silva.llm_session import open_llm
    from writeup.literature import open_literature

    assert cfg is not None
    session = open_llm(
        cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"kind": "inprocess"})}), run_dir
    )
    literature = open_literature(wcfg.literature, os.environ) if wcfg.literature.provider != "none" else None
    return session, literature


def _snapshot(run_dir: Path) -> RunConfig | None:
    """The config the run wrote into its directory, if it did."""
    from silva.config import load_config

    snapshot = run_dir / "config.yaml"
    return load_config(snapshot) if snapshot.is_file() else None


def writeup(
    run_dir: Path = typer.Argument(..., help="run directory that `silva run` printed"),
    idea: str | None = typer.Option(
        None, "--idea", help="write only this idea's paper (default: every idea)"
    ),
    template: str | None = typer.Option(None, "--template", help="workshop (4 pages) | conference (8 pages)"),
    offline: bool = typer.Option(False, "--offline", help="template results report, no LLM"),
) -> int:
    """Write the paper of a finished run: RUN_DIR/paper/<idea>/paper.pdf."""
    from engine.errors import ConfigError
    from silva.llm_session import show_progress
    from writeup.files import paper_kind
    from writeup.paper import write_paper
    from writeup.preflight import preflight
    from writeup.run_reader import read_run

    show_progress()  # one line per LLM call and compile on stderr
    console = Console()
    run = read_run(run_dir)
    cfg = _snapshot(run_dir)
    from writeup.findings import is_discovery_run, write_findings_paper

    sandbox = cfg.sandbox.provider if cfg else "local"
    options = dict(cfg.sandbox.options) if cfg else {}
    if is_discovery_run(run_dir):  # its paper is the findings paper (docs/discovery.md)
        pdf = write_findings_paper(run_dir, sandbox=sandbox, sandbox_options=options)
        console.print(f"findings paper: {pdf}", highlight=False)
        return 0
    wcfg = _writeup_config(cfg, template, offline)
    use_llm = (
        wcfg.offline is not True and cfg is not None and cfg.llm is not None and "writeup" in cfg.llm.roles
    )
    if wcfg.offline is False and not use_llm:
        raise ConfigError("writeup.offline = false but the run config has no `writeup` role under llm.roles")
    preflight(wcfg, sandbox=sandbox, sandbox_options=options, llm_writer=use_llm)
    ideas = [idea] if idea else list(run.ideas)
    if not ideas:
        raise ConfigError(f"{run_dir}: no stage of the run has finished yet; nothing to write about")
    session, literature = _open_writer(cfg, wcfg, run_dir) if use_llm else (None, None)
    if session is None:
        console.print("offline writer (no LLM): a results report from templates", highlight=False)
    try:
        for name in ideas:
            pdf = write_paper(
                run_dir,
                name,
                cfg=wcfg,
                llm=session.client if session else None,
                literature=literature,
                sandbox=sandbox,
                sandbox_options=options,
            )
            console.print(f"{paper_kind(pdf)}: {pdf}", highlight=False, soft_wrap=True)
    finally:
        if session is not None:
            session.close()
    return 0


def register(app: typer.Typer) -> None:
    app.command("writeup")(writeup)
