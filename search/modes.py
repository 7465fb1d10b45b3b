"""The search modes Silva knows: each registers, in one place, everything the run needs of it.

A `Mode` names its config section (if any), its `StagePlan` (whose `progress` names the score
the forest's allocation compares ideas by: a built-in one or one of the mode's own
`progress_scores`), how a config asks for it, the metrics a run of it records, and how its
strategy is built. `silva/config.py` and `silva/lifecycle.py` ask the
registry and never branch on a mode's name (docs/architecture.md, "Search modes").

Built-in modes live in their own subpackage (`search/<mode>/mode.py`); another package adds one
with an entry point in the `silva.search_modes` group naming its `Mode`, or by calling
`register_mode` before the config is loaded (the tests do).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import BaseModel

from search.allocation import ProgressScore, register_progress_score
from search.config import AllocationConfig, IdeaSource, SearchSettings, TemplateVariant
from search.plan import StagePlan

if TYPE_CHECKING:
    from engine.budgets import ComputeMeter
    from engine.dispatch import Strategy
    from engine.journal import Journal
    from engine.llm import LLM
    from engine.node import MetricSpec
    from search.phases import Phase
    from search.rolling import IdeaSupply

ENTRY_POINTS = "silva.search_modes"
BUILTIN = ("search.template.mode", "search.agentic.mode", "search.discovery.mode")


class ModeConfig(SearchSettings, Protocol):
    """The run config as a mode's hooks read it (silva.config.RunConfig implements it)."""

    template: Path | None
    idea: Path | None
    ideas: list[IdeaSource]
    variants: list[TemplateVariant]
    allocation: AllocationConfig
    ideation: Any  # a rolling forest's idea source section (silva/rolling.py), or None

    def section(self, key: str) -> Any:
        """The validated section `key` of a registered mode, or None when the config has none."""


@dataclass(frozen=True)
class BuildContext:
    """What the composition root hands a mode's strategy builder."""

    cfg: ModeConfig
    journal: Journal
    llm: LLM | None  # None for a mode with `needs_llm=False`
    spent_by: Callable[[str], float]  # dollars paid so far by one idea
    meter: ComputeMeter | None
    phases: Callable[[str], list[Phase]]  # the phases after the search (writeup, review) of one idea
    ideas: IdeaSupply | None = None  # an idea source that grows the forest as it runs (`ideation:`)


class StageLimit(NamedTuple):
    """What a mode's own setting limits in a stage: nodes of `kind`, at most `limit` (as shown)."""

    kind: str
    limit: str


@dataclass(frozen=True)
class Mode:
    name: str
    plan: StagePlan
    source: str  # how a config asks for the mode, for error messages ("`discovery` (data)")
    selected: Callable[[ModeConfig], bool]  # whether a config asks for this mode
    build: Callable[[BuildContext], Strategy]
    # The metrics every node reports, checked before the run directory exists (files read, ideas
    # parsed): the first place a bad input is found.
    metrics: Callable[[ModeConfig], list[MetricSpec]]
    section: str | None = None  # its top-level config key, e.g. "discovery"
    section_model: type[BaseModel] | None = None
    needs_llm: bool = True
    # Checks across the config (a ValueError with a fix), after the generic ones.
    check: Callable[[ModeConfig], None] | None = None
    # The section with its paths made relative to the config file's directory `base`.
    resolve: Callable[[Any, Path], Any] | None = None
    # Progress scores of its own, by the name its plan's `progress` may give (search/allocation.py).
    progress_scores: Mapping[str, ProgressScore] = field(default_factory=dict)
    # Lines of its own for `silva status`, read from the run directory (a discovery run's claim
    # counts): the status command shows any mode's without knowing its name.
    status_lines: Callable[[Path], list[str]] | None = None
    # A stage's limit where the mode's own settings set it rather than `stages.<name>.max_nodes`
    # (a discovery run's hypotheses): shown in `silva status`'s budget table in its place, with
    # the count of the node kind it limits.
    stage_limits: Callable[[ModeConfig], Mapping[str, StageLimit]] | None = None


_MODES: dict[str, Mode] = {}
_loaded = False


def _load() -> None:
    """The built-in modes, then those other packages name by entry point: once, before any other."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN:
        register_mode(importlib.import_module(module).MODE)
    for ep in entry_points(group=ENTRY_POINTS):
        register_mode(ep.load())


def register_mode(mode: Mode) -> Mode:
    """Add `mode` (a second mode of the same name or section replaces nothing: it is an error)."""
    _load()
    if mode.name in _MODES and _MODES[mode.name] is not mode:
        raise ValueError(f"search mode {mode.name!r} is already registered")
    if mode.section is not None and mode.section_model is None:
        raise ValueError(f"search mode {mode.name!r}: section {mode.section!r} needs a section_model")
    clash = next((m for m in _MODES.values() if mode.section and m.section == mode.section), None)
    if clash is not None and clash is not mode:
        raise ValueError(f"search modes {clash.name!r} and {mode.name!r} both claim section {mode.section!r}")
    for name, score in mode.progress_scores.items():
        register_progress_score(name, score)
    _MODES[mode.name] = mode
    return mode


def unregister_mode(name: str) -> None:
    """Remove a mode (tests that register one of their own)."""
    _MODES.pop(name, None)


def modes() -> list[Mode]:
    """Every registered mode, built-ins first, in registration order."""
    _load()
    return list(_MODES.values())


def sections() -> dict[str, type[BaseModel]]:
    """The config sections the registered modes own, by top-level key."""
    return {m.section: m.section_model for m in modes() if m.section and m.section_model}


def mode_of(cfg: ModeConfig) -> Mode:
    """The one mode a config asks for; a ValueError naming the choices when none or several do."""
    chosen = [m for m in modes() if m.selected(cfg)]
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise ValueError("set exactly one of " + ", ".join(m.source for m in modes()))
    raise ValueError(
        "these settings ask for more than one search mode: "
        + "; ".join(f"{m.name} by {m.source}" for m in chosen)
        + "; keep the settings of one"
    )
