"""The run lifecycle: create a run directory, (re)start the dispatch loop, stop cleanly.

This module is the composition root: it is the one place in engine/ that picks concrete
strategies (search/) and executors (actors/), imported lazily so `import engine` stays light.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml

from engine.config import RunConfig, load_config
from engine.dispatch import Dispatcher, Outcome, Strategy
from engine.errors import ConfigError
from engine.executor import Executor, InProcessExecutor
from engine.journal import EVENTS_FILE, Journal
from sandbox.base import SandboxUnavailable, get_provider

CONFIG_SNAPSHOT = "config.yaml"


def check_sandbox(cfg: RunConfig) -> None:
    """Refuse to run when the chosen sandbox cannot isolate here (before any work is spent)."""
    try:
        get_provider(cfg.sandbox.provider, **cfg.sandbox.options).check()
    except SandboxUnavailable as e:
        raise ConfigError(
            f"sandbox {cfg.sandbox.provider!r} cannot run here: {e}\n"
            "Fix the sandbox, choose another (`sandbox: docker`), or run without isolation "
            "with `sandbox: none` (a warning is printed on every run)."
        ) from None


def build_strategy(cfg: RunConfig, journal: Journal) -> Strategy:
    from search.stages import StageManager
    from search.template import Template
    from search.template_search import TemplateSearch

    if cfg.template is None:
        raise ConfigError("this build runs templates only: set `template:` in the run config")
    template = Template.load(cfg.template)
    return StageManager(cfg, journal, TemplateSearch(cfg, template, journal))


def build_executor(cfg: RunConfig) -> Executor:
    if cfg.executor.kind == "inprocess":
        return InProcessExecutor(cfg.executor.max_in_flight)
    from actors.ray_executor import RayExecutor

    return RayExecutor(cfg.executor)


def create_run(cfg: RunConfig) -> tuple[Path, Journal]:
    """Validate everything that can be checked up front, then make the run directory."""
    metrics: list[dict[str, object]] = []
    if cfg.template is not None:
        from search.template import Template

        metrics = [m.model_dump() for m in Template.load(cfg.template).spec.metrics]
    check_sandbox(cfg)
    run_dir = cfg.output_dir / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = cfg.output_dir / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    run_dir.mkdir(parents=True)
    (run_dir / CONFIG_SNAPSHOT).write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    journal = Journal.open(run_dir)
    journal.record("run_started", config=cfg.model_dump(mode="json"), metrics=metrics)
    return run_dir, journal


def open_run(run_dir: Path) -> tuple[RunConfig, Journal]:
    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(f"{run_dir}: not a Silva run directory (no {EVENTS_FILE}); pass the directory `silva run` printed")
    cfg = load_config(run_dir / CONFIG_SNAPSHOT)
    return cfg, Journal.open(run_dir)


def execute(
    cfg: RunConfig,
    journal: Journal,
    on_change: Callable[[Journal], None] = lambda j: None,
    executor: Executor | None = None,
) -> Outcome:
    """Run (or continue) the dispatch loop until the search ends or a budget stops it."""
    journal.record("session_started", resumed=len(journal.sessions) > 0)
    strategy = build_strategy(cfg, journal)
    executor = executor or build_executor(cfg)
    try:
        return Dispatcher(cfg, journal, strategy, executor, on_change=lambda: on_change(journal)).run()
    finally:
        executor.shutdown()


def resume(run_dir: Path, on_change: Callable[[Journal], None] = lambda j: None) -> Outcome:
    cfg, journal = open_run(run_dir)
    if journal.finished is not None:
        return Outcome("finished", f"already finished: {journal.finished['reason']}")
    check_sandbox(cfg)
    return execute(cfg, journal, on_change)
