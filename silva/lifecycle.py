"""The run lifecycle: create a run directory, (re)start the dispatch loop, stop cleanly.

This is the composition root: the one place that picks concrete strategies (search/) and
executors (actors/), imported lazily so that `silva status` never loads Ray.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from engine.budgets import ComputeMeter
from engine.dispatch import Dispatcher, RunOutcome, Strategy
from engine.errors import ConfigError
from engine.executor import Executor, InProcessExecutor, slots_for
from engine.groupcommit import GroupCommit
from engine.journal import EVENTS_FILE, Journal
from engine.node import EVENT_FORMAT
from sandbox.base import SandboxUnavailable, get_provider
from silva.config import RunConfig, load_config
from silva.signals import stop_on_signals

if TYPE_CHECKING:
    from engine.llm.providers.base import Provider
    from silva.llm_session import LLMSession

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


def check_writeup(cfg: RunConfig) -> None:
    """A run that will write a paper checks TeX, latexmk and the literature client before any
    LLM spend: earlier systems found a missing pdflatex only after paying for the whole run."""
    if cfg.writeup is None:
        return
    from writeup.preflight import preflight

    preflight(
        cfg.writeup,
        sandbox=cfg.sandbox.provider,
        sandbox_options=cfg.sandbox.options,
        llm_writer=cfg.writeup.offline is not True and cfg.llm is not None and "writeup" in cfg.llm.roles,
    )


def build_strategy(
    cfg: RunConfig,
    journal: Journal,
    llm: LLMSession | None = None,
    meter: ComputeMeter | None = None,
) -> Strategy:
    from search.phases import PhasedTree
    from search.stages import StageManager
    from search.template.search import TemplateSearch
    from search.template.spec import Template
    from silva.paper_phases import paper_phases

    if cfg.discovery is not None and llm is not None and cfg.discovery.mode == "stateful":
        from search.stateful.strategy import build_stateful

        return build_stateful(cfg.discovery, cfg.discovery.stateful, cfg.seed, journal, llm.client)
    if cfg.discovery is not None and llm is not None:
        from search.discovery.strategy import build_discovery_strategy

        return build_discovery_strategy(cfg, journal, llm.client)
    if cfg.mode == "agentic":
        from search.forest import build_forest

        if llm is None:
            raise ConfigError("idea mode needs the LLM gateway: set `llm:` in the run config")
        return build_forest(
            cfg,
            journal,
            llm.client,
            llm.ledger.spent_by,
            cfg.allocation,
            meter,
            more_phases=paper_phases(cfg, journal, llm.client),
            template=Template.load(cfg.template) if cfg.template is not None else None,
        )
    assert cfg.template is not None
    template = Template.load(cfg.template)
    if cfg.variants:  # a template forest (docs/budgets.md)
        from search.template.forest import build_template_forest

        return build_template_forest(cfg, journal, template, cfg.variants, cfg.allocation, meter)
    tree = StageManager(cfg, journal, TemplateSearch(cfg, template, journal), cfg.plan)
    phases = paper_phases(cfg, journal, llm.client if llm else None)("default")
    return PhasedTree(tree, phases) if phases else tree


def build_executor(cfg: RunConfig) -> Executor:
    if cfg.executor.kind == "inprocess":
        # Threads for the slots plus for steps that only wait on an LLM (they take no slot).
        slots = cfg.executor.max_in_flight or slots_for(
            os.cpu_count() or 1, None, cfg.resources_for("default")
        )
        return InProcessExecutor(slots + cfg.executor.max_llm_steps)
    from actors.ray_executor import RayExecutor

    return RayExecutor(cfg.executor)


def create_run(cfg: RunConfig) -> tuple[Path, Journal]:
    """Validate everything that can be checked up front, then make the run directory."""
    metrics: list[dict[str, object]] = []
    if cfg.mode == "template":
        from search.template.spec import Template

        assert cfg.template is not None
        metrics = [m.model_dump() for m in Template.load(cfg.template).spec.metrics]
    elif cfg.discovery is not None:
        from search.discovery.strategy import check_discovery
        from silva.llm_session import check_llm

        metrics = check_discovery(cfg.discovery)
        check_llm(cfg)
    else:
        from search.idea import load_ideas, run_metrics
        from silva.llm_session import check_llm

        ideas = load_ideas(cfg.idea_sources())
        if cfg.template is not None:  # template-based ideas: the template's code, metrics and settings
            from search.template.seed import TemplateSeed
            from search.template.spec import Template

            seed = TemplateSeed.from_template(Template.load(cfg.template))
            ideas = [seed.adapt(i) for i in ideas]
        metrics = [m.model_dump() for m in run_metrics(ideas)]
        check_llm(cfg)
    check_sandbox(cfg)
    check_writeup(cfg)
    run_dir = cfg.output_dir / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = cfg.output_dir / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    run_dir.mkdir(parents=True)
    (run_dir / CONFIG_SNAPSHOT).write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    journal = Journal.open(run_dir)
    journal.record(
        "run_started",
        config=cfg.model_dump(mode="json"),
        metrics=metrics,
        stages=list(cfg.plan.names),
        format=EVENT_FORMAT,
    )
    return run_dir, journal


def open_run(run_dir: Path, *, read_only: bool = False) -> tuple[RunConfig, Journal]:
    """`read_only`: for views (status, export): no lock taken, nothing in run_dir written."""
    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir}: not a Silva run directory (no {EVENTS_FILE}); pass the directory `silva run` printed"
        )
    cfg = load_config(run_dir / CONFIG_SNAPSHOT, check_files=not read_only)
    return cfg, Journal.open(run_dir, read_only=read_only)


def execute(
    cfg: RunConfig,
    journal: Journal,
    on_change: Callable[[Journal], None] = lambda j: None,
    executor: Executor | None = None,
    providers: Mapping[str, Provider] | None = None,
) -> RunOutcome:
    """Run (or continue) the dispatch loop until the search ends or a budget stops it.

    `providers` replaces configured LLM providers by name (tests, benchmarks)."""
    journal.record("session_started", resumed=len(journal.sessions) > 0)
    llm: LLMSession | None = None
    # Compute budgets (docs/budgets.md, engine/budgets.py): charge jobs a dead driver left running, then
    # run under the budgets as `silva budget` changed them (the gateway gets the new dollar limit).
    meter = ComputeMeter(
        journal, cfg.budgets, used_dollars=lambda: llm.ledger.spent() if llm is not None else 0.0
    )
    meter.start_session(cfg.resources_for)
    cfg = cfg.model_copy(update={"budgets": meter.budgets})
    if cfg.mode != "template":
        from silva.llm_session import open_llm

        # Before the executor: on Ray, keys must leave the environment before ray.init.
        llm = open_llm(cfg, journal.log.path.parent, providers)
    try:
        strategy = build_strategy(cfg, journal, llm, meter)
        executor = executor or build_executor(cfg)
        # Cluster scale (docs/cluster.md): say which cluster; signals after ray.init, which sets its own.
        cluster = getattr(executor, "cluster", None)  # a RayExecutor's ClusterInfo
        if cluster is not None:
            print(cluster.describe(), flush=True)
            journal.record("cluster_joined", **cluster.model_dump())
        try:
            # Group commit (engine/groupcommit.py): events are fsynced in batches, each before any job starts.
            with stop_on_signals() as stop, journal.log.group():
                return Dispatcher(
                    cfg,
                    journal,
                    strategy,
                    stop.guard(meter.watch(GroupCommit(executor, journal.log))),
                    on_change=lambda: on_change(journal),
                    spent_usd=llm.ledger.spent if llm else lambda: 0.0,
                    compute=meter,
                ).run()
        finally:
            executor.shutdown()
    finally:
        if llm is not None:
            llm.close()


def resume(run_dir: Path, on_change: Callable[[Journal], None] = lambda j: None) -> RunOutcome:
    cfg, journal = open_run(run_dir)
    if journal.finished is not None:
        return RunOutcome("finished", f"already finished: {journal.finished['reason']}")
    check_sandbox(cfg)
    if cfg.mode != "template":
        from silva.llm_session import check_llm

        check_llm(cfg)
    check_writeup(cfg)
    return execute(cfg, journal, on_change)
