"""The run lifecycle: create a run directory, (re)start the dispatch loop, stop cleanly.

This is the composition root: the one place that picks concrete strategies (search/) and
executors (actors/), imported lazily so that `silva status` never loads Ray.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from engine.budgets import ComputeMeter
from engine.dispatch import Dispatcher, RunOutcome, Strategy
from engine.errors import ConfigError
from engine.events import ClusterJoined, RunStarted, SessionStarted
from engine.executor import Executor, InProcessExecutor, slots_for
from engine.groupcommit import GroupCommit
from engine.journal import EVENTS_FILE, Journal
from engine.node import EVENT_FORMAT
from sandbox.base import SandboxUnavailable, get_provider
from silva.config import RunConfig, load_config
from silva.failures import SpaceReserve, environment_failure, journal_stop
from silva.signals import stop_on_signals
from silva.tracking.process import start_tracker

if TYPE_CHECKING:
    from engine.llm.probe import ProbeResult
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
    """The config's search mode builds its strategy (search/modes.py); writeup and review, bound
    here, are the phases after the search that it runs per idea."""
    from search.modes import BuildContext
    from silva.paper_phases import paper_phases
    from silva.rolling import idea_supply

    mode = cfg.search_mode
    if mode.needs_llm and llm is None:
        raise ConfigError(f"{mode.name} mode needs the LLM gateway: set `llm:` in the run config")
    client = llm.client if llm is not None else None
    return mode.build(
        BuildContext(
            cfg=cfg,
            journal=journal,
            llm=client,
            spent_by=llm.ledger.spent_by if llm is not None else lambda idea: 0.0,
            meter=meter,
            phases=paper_phases(cfg, journal, client),
            ideas=idea_supply(cfg.ideation, cfg.llm, cfg.template, client, journal),
        )
    )


def build_executor(cfg: RunConfig) -> Executor:
    if cfg.executor.kind == "inprocess":
        # Threads for the slots, the CPU pool and steps that only wait on an LLM (those take no slot).
        slots = cfg.executor.max_in_flight or slots_for(
            os.cpu_count() or 1, None, cfg.resources_for("default")
        )
        return InProcessExecutor(slots + (cfg.executor.cpu_jobs or slots) + cfg.executor.max_llm_steps)
    from actors.ray_executor import RayExecutor

    return RayExecutor(cfg.executor)


def create_run(cfg: RunConfig) -> tuple[Path, Journal]:
    """Validate everything that can be checked up front, then make the run directory."""
    mode = cfg.search_mode
    metrics = [m.model_dump() for m in mode.metrics(cfg)]
    probes: list[ProbeResult] = []
    if mode.needs_llm:
        from silva.llm_session import check_llm

        probes = check_llm(cfg)
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
        RunStarted(
            config=cfg.model_dump(mode="json"),
            metrics=metrics,
            stages=list(cfg.plan.names),
            format=EVENT_FORMAT,
        )
    )
    if probes:  # made before the run directory existed: into its ledger now
        from silva.llm_session import record_probes

        record_probes(run_dir, probes)
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
    run_dir = journal.log.path.parent
    reserve = SpaceReserve(run_dir)
    # Before the session is journaled: a tracker that cannot start (its package missing) is bad
    # input, refused with nothing recorded. It reads the journal in its own process (docs/tracking.md).
    tracker = start_tracker(cfg, run_dir)
    journal.record(SessionStarted(resumed=len(journal.sessions) > 0))
    try:
        return _execute(cfg, journal, on_change, executor, providers)
    except Exception as e:  # the machine failed (silva/failures.py): journal the stop, then say so
        failure = environment_failure(e, run_dir)
        if failure is None:
            raise
        reserve.release()
        failure.journaled = journal_stop(journal, failure)
        if failure is e:
            raise
        raise failure from e
    finally:
        if tracker is not None:
            tracker.stop()


def _execute(
    cfg: RunConfig,
    journal: Journal,
    on_change: Callable[[Journal], None],
    executor: Executor | None,
    providers: Mapping[str, Provider] | None,
) -> RunOutcome:
    llm: LLMSession | None = None
    # Compute budgets (docs/budgets.md, engine/budgets.py): charge jobs a dead driver left running, then
    # run under the budgets as `silva budget` changed them (the gateway gets the new dollar limit).
    meter = ComputeMeter(
        journal, cfg.budgets, used_dollars=lambda: llm.ledger.spent() if llm is not None else 0.0
    )
    meter.start_session(cfg.resources_for)
    cfg = cfg.model_copy(update={"budgets": meter.budgets})
    if cfg.search_mode.needs_llm:
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
            journal.record(ClusterJoined(**cluster.model_dump()))
        # The handlers stay over the executor's shutdown: a signal there still ends the run as a
        # stop (exit 130/143, the lock released), never by the default handler.
        with stop_on_signals() as stop:
            try:
                # Group commit (engine/groupcommit.py): events fsynced in batches, each before any job starts.
                with journal.log.group():
                    outcome = Dispatcher(
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
        return outcome if outcome.signal or not stop.received else replace(outcome, signal=stop.received)
    finally:
        if llm is not None:
            llm.close()


def resume(run_dir: Path, on_change: Callable[[Journal], None] = lambda j: None) -> RunOutcome:
    cfg, journal = open_run(run_dir)
    if journal.finished is not None:
        return RunOutcome("finished", f"already finished: {journal.finished.reason}")
    check_sandbox(cfg)
    if cfg.search_mode.needs_llm:
        from silva.llm_session import check_llm, record_probes

        record_probes(run_dir, check_llm(cfg, run_dir))
    check_writeup(cfg)
    return execute(cfg, journal, on_change)
