"""`silva writeup RUN_DIR [--idea NAME] [--template workshop|conference] [--offline]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


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
    from silva.cli.run import paper_kind
    from silva.llm_session import show_progress
    from writeup.config import WriteupConfig
    from writeup.paper import write_paper
    from writeup.preflight import preflight
    from writeup.run_reader import read_run

    show_progress()  # one line per LLM call and compile on stderr
    console = Console()
    run = read_run(run_dir)
    snapshot = run_dir / "config.yaml"
    cfg = None
    if snapshot.is_file():
        from silva.config import load_config

        cfg = load_config(snapshot)
    from writeup.findings import is_discovery_run, write_findings_paper

    if is_discovery_run(run_dir):  # its paper is the findings paper (docs/discovery.md)
        sandbox_options = dict(cfg.sandbox.options) if cfg else {}
        pdf = write_findings_paper(
            run_dir, sandbox=cfg.sandbox.provider if cfg else "local", sandbox_options=sandbox_options
        )
        console.print(f"findings paper: {pdf}", highlight=False)
        return 0
    wcfg: WriteupConfig = getattr(cfg, "writeup", None) or WriteupConfig()
    updates: dict[str, object] = {}
    if template is not None:
        if template not in ("workshop", "conference"):
            raise ConfigError(f"--template {template!r}: choose workshop or conference")
        updates["template"] = template
    if offline:
        updates["offline"] = True
    wcfg = wcfg.model_copy(update=updates)
    sandbox = cfg.sandbox.provider if cfg else "local"
    options = dict(cfg.sandbox.options) if cfg else {}
    use_llm = (
        wcfg.offline is not True and cfg is not None and cfg.llm is not None and "writeup" in cfg.llm.roles
    )
    if wcfg.offline is False and not use_llm:
        raise ConfigError("writeup.offline = false but the run config has no `writeup` role under llm.roles")
    preflight(wcfg, sandbox=sandbox, sandbox_options=options, llm_writer=use_llm)
    ideas = [idea] if idea else list(run.ideas)
    if not ideas:
        raise ConfigError(f"{run_dir}: no stage of the run has finished yet; nothing to write about")
    session = None
    if use_llm:
        import os

        from silva.llm_session import open_llm
        from writeup.literature import open_literature

        assert cfg is not None
        session = open_llm(
            cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"kind": "inprocess"})}),
            run_dir,
        )
        literature = (
            open_literature(wcfg.literature, os.environ) if wcfg.literature.provider != "none" else None
        )
    else:
        console.print("offline writer (no LLM): a results report from templates", highlight=False)
    try:
        for name in ideas:
            pdf = write_paper(
                run_dir,
                name,
                cfg=wcfg,
                llm=session.client if session else None,
                literature=literature if session else None,
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
