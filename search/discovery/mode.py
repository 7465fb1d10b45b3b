"""Data-driven discovery as a registered mode (search/modes.py): the `discovery:` section names
a table; DiscoPER, ExperiGen or the stateful investigation (search/stateful/) grows one tree of
hypotheses (docs/discovery.md)."""

from __future__ import annotations

from pathlib import Path

from engine.dispatch import Strategy
from engine.node import MetricSpec
from search.discovery.config import DiscoveryConfig
from search.discovery.plan import PLAN
from search.modes import BuildContext, Mode, ModeConfig, StageLimit

SECTION = "discovery"


def _section(cfg: ModeConfig) -> DiscoveryConfig:
    dcfg = cfg.section(SECTION)
    assert isinstance(dcfg, DiscoveryConfig)  # the mode is selected by its section
    return dcfg


def _metrics(cfg: ModeConfig) -> list[MetricSpec]:
    from search.discovery.strategy import check_discovery

    return [MetricSpec.model_validate(m) for m in check_discovery(_section(cfg))]


def _build(ctx: BuildContext) -> Strategy:
    dcfg = _section(ctx.cfg)
    assert ctx.llm is not None  # needs_llm
    if dcfg.mode == "stateful":
        from search.stateful.strategy import build_stateful

        return build_stateful(dcfg, dcfg.stateful, ctx.cfg.seed, ctx.journal, ctx.llm)
    from search.discovery.strategy import build_discovery_strategy

    return build_discovery_strategy(ctx.cfg, dcfg, ctx.journal, ctx.llm)


def _resolve(dcfg: DiscoveryConfig, base: Path) -> DiscoveryConfig:
    from search.discovery.strategy import resolve_paths

    return resolve_paths(dcfg, base)


def _status_lines(run_dir: Path) -> list[str]:
    from search.discovery.claims import status_line  # loads pandas: only for a discovery run

    line = status_line(run_dir)
    return [line] if line else []


def _stage_limits(cfg: ModeConfig) -> dict[str, StageLimit]:
    """The hypotheses stage ends on the discovery section's own limit, never on `max_nodes`; Silva's
    checks, Reflect and held-out reads are nodes of the stage that the limit does not count."""
    dcfg = _section(cfg)
    if dcfg.mode == "experigen":
        limit = StageLimit("seed", f"{dcfg.max_chains} chains of {dcfg.chain_steps} (discovery.max_chains)")
    elif dcfg.mode == "stateful":
        limit = StageLimit("step", f"{dcfg.stateful.max_steps} steps (discovery.stateful.max_steps)")
    else:
        limit = StageLimit("hypothesis", f"{dcfg.max_hypotheses} (discovery.max_hypotheses)")
    return {"hypotheses": limit}


MODE = Mode(
    name="discovery",
    plan=PLAN,
    source="`discovery` (data)",
    selected=lambda cfg: cfg.section(SECTION) is not None,
    build=_build,
    metrics=_metrics,
    section=SECTION,
    section_model=DiscoveryConfig,
    resolve=_resolve,
    status_lines=_status_lines,
    stage_limits=_stage_limits,
)
