"""The search modes Silva knows, by name, each with its declared `StagePlan`.

A new mode adds one line here and declares its plan in its own module; nothing in engine/ or
in the other modes changes.
"""

from __future__ import annotations

import importlib

from search.plan import StagePlan

# mode -> "module:ATTRIBUTE" of its StagePlan (imported lazily: plans are cheap, modes are not)
PLANS = {
    "template": "search.template.plan:PLAN",
    "agentic": "search.agentic.plan:PLAN",
    "discovery": "search.discovery.plan:PLAN",
}


def plan_for(mode: str) -> StagePlan:
    module, _, attr = PLANS[mode].partition(":")
    plan: StagePlan = getattr(importlib.import_module(module), attr)
    return plan
