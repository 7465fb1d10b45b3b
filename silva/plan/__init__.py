"""`silva plan`: a whole run simulated before it is paid for (docs/plan.md).

The real driver (dispatch loop, strategy, allocation policy, budgets, phases after the search)
runs against `PlanExecutor` (`executor`), which runs no code: each job ends after a duration
drawn in virtual time from a `Source` (`source`): a previous run's journal (`--from`) or the
per-node-kind lognormals of `PlanSettings` (`settings`). The run directory is a temporary one
(`simulate`); the report (`report`) is what the run would give and cost: wall time, GPU-hours,
nodes, papers, slot utilization, each idea's share, and the budget that would stop it.
"""

from silva.plan.executor import PlanExecutor
from silva.plan.ideation import PlannedIdeas, PlannedIdeation
from silva.plan.report import PlanReport
from silva.plan.settings import (
    DEFAULT_DURATIONS,
    DEFAULT_ROLES,
    LLMRole,
    Lognormal,
    PlanSettings,
    assumptions,
    instant_scripted,
    scaled,
)
from silva.plan.simulate import plan, what_decides
from silva.plan.source import Seen, Source, check_source

__all__ = [
    "DEFAULT_DURATIONS",
    "DEFAULT_ROLES",
    "LLMRole",
    "Lognormal",
    "PlanExecutor",
    "PlanReport",
    "PlanSettings",
    "PlannedIdeas",
    "PlannedIdeation",
    "Seen",
    "Source",
    "assumptions",
    "check_source",
    "instant_scripted",
    "plan",
    "scaled",
    "what_decides",
]
