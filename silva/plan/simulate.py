"""`plan`: the real driver run on the config against `PlanExecutor` in virtual time."""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.llm.config import LLMConfig, Price, ProviderConfig
from engine.llm.prices import resolve_model
from silva.config import RunConfig, load_config
from silva.plan.executor import PlanExecutor
from silva.plan.ideation import PlannedIdeation, charge_ideation
from silva.plan.report import PlanReport, report
from silva.plan.settings import LEDGER_FILE, PlanSettings, instant_scripted, scaled
from silva.plan.source import Source, check_source


def offline(llm: LLMConfig) -> LLMConfig:
    """The config's models on scripted providers, without the start-of-run probe: a plan needs
    no key and calls no model (no job calls the LLM; the gateway is only opened)."""
    scripted = {name: ProviderConfig(kind="scripted") for name in llm.providers}
    return llm.model_copy(update={"providers": scripted, "probe": False})


def prices(cfg: RunConfig) -> dict[str, Price]:
    """Each role's model's price (the config's, else the built-in table's)."""
    if cfg.llm is None:
        return {}
    out = {role: resolve_model(cfg.llm, rc.model).price for role, rc in cfg.llm.roles.items()}
    return {role: p for role, p in out.items() if p is not None}


def plan(
    config: Path,
    *,
    slots: int | None = None,
    gpus: float | None = None,
    from_dir: Path | None = None,
    seed: int = 0,
    settings: PlanSettings | None = None,
    replay: bool = False,
) -> PlanReport:
    """Simulate the run `config` describes (module docstring); `replay`: `Source.twin`."""
    from silva.lifecycle import create_run, execute

    if slots is not None and slots < 1:
        raise ConfigError(f"--slots {slots}: a run needs at least one slot")
    if replay and from_dir is None:
        raise ConfigError("--replay replays a run: pass the run directory with --from RUN_DIR")
    if gpus is not None and gpus <= 0:
        raise ConfigError(f"--gpus {gpus:g}: give a positive number of GPUs")
    cfg = load_config(config)
    if cfg.mode not in ("template", "agentic"):
        raise ConfigError(
            f"{config}: `silva plan` simulates template and agentic (idea) searches; the {cfg.mode} "
            "search's steps are not simulated yet (docs/plan.md)"
        )
    journal = check_source(from_dir, cfg) if from_dir else None
    settings = instant_scripted(cfg, settings or PlanSettings())
    source = Source(settings, journal, from_dir / LEDGER_FILE if from_dir else None, replay)
    slots = _slots(config, cfg, slots, gpus)
    work = Path(tempfile.mkdtemp(prefix="silva-plan-"))
    quiet = logging.getLogger("sandbox.none")  # its warning is for code that runs: none does here
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        # No code runs: no sandbox, no TeX. The writeup phase is built by `execute` from `cfg`.
        base = cfg.model_copy(
            update={
                "output_dir": work,
                "sandbox": cfg.sandbox.model_copy(update={"provider": "none", "options": {}}),
                "executor": cfg.executor.model_copy(update={"max_in_flight": slots, "kind": "inprocess"}),
                "llm": offline(cfg.llm) if cfg.llm is not None else None,
                "scripted_fn": None,
                "ideation": PlannedIdeation.model_validate(cfg.ideation.model_dump())
                if cfg.ideation is not None
                else None,
            }
        )
        _, journal = create_run(base.model_copy(update={"writeup": None}))
        executor = PlanExecutor(journal, source, seed, cfg.budgets, prices(cfg))
        cpu = time.process_time()
        outcome = execute(base, journal, executor=executor)
        cpu = time.process_time() - cpu
        if isinstance(base.ideation, PlannedIdeation):
            charge_ideation(executor, journal, base.ideation, prices(cfg))
        return report(config, from_dir, seed, slots, journal, executor, outcome, cpu)
    finally:
        quiet.setLevel(level)
        shutil.rmtree(work, ignore_errors=True)


def _slots(config: Path, cfg: RunConfig, slots: int | None, gpus: float | None) -> int:
    """--slots, or --gpus over the default node kind's GPUs, else the config's slots."""
    per = cfg.resources_for("default")
    if gpus is not None:
        if per.num_gpus <= 0:
            raise ConfigError(f"--gpus: the config's default node kind uses no GPU ({config}); use --slots")
        slots = max(1, math.floor(gpus / per.num_gpus))
    return slots or cfg.executor.max_in_flight or 1


def what_decides(config: Path, base: PlanReport, settings: PlanSettings, **kw: Any) -> list[str]:
    """Which assumptions decide the projection: the plan again with the experiment durations
    doubled, then with the LLM latencies doubled, each change in wall time and utilization."""
    out = []
    for name, factor in (("experiment durations", {"experiments": 2.0}), ("LLM latencies", {"llm": 2.0})):
        r = plan(config, settings=scaled(settings, **factor), **kw)
        change = r.wall_s / base.wall_s - 1 if base.wall_s > 0 else 0.0
        out.append(
            f"{name} doubled: wall time {change:+.0%} ({r.wall_s:,.0f} s), utilization "
            f"{r.utilization:.0%}, {r.nodes} nodes, stops: {r.outcome}"
            + (f" by {r.stopped_by}" if r.stopped_by else "")
        )
    return out
