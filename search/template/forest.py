"""A forest of template ideas: one tree per `variants:` entry of a template run (docs/budgets.md).

Each variant is the run's template with some parameters fixed (`fixed:` merged over the
template's own), grown through the template mode's `StagePlan` by its own `StageManager` and
`TemplateSearch`, under its own budgets, with the forest's allocation policy across variants
(which sets each variant's stage sizes: `Allocation.max_nodes`, read through `TreeSettings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.budgets import ComputeMeter
from engine.dispatch import Finish
from engine.events import IdeaStopped
from engine.executor import Job
from engine.journal import Journal
from engine.node import Node
from search.allocation import Allocation, IdeaInfo
from search.config import AllocationConfig, SearchSettings, TemplateVariant
from search.forest import Forest, TreeSettings
from search.stages import StageManager
from search.template.plan import PLAN
from search.template.search import TemplateSearch
from search.template.spec import Template


class TemplateTree:
    def __init__(
        self,
        cfg: SearchSettings,
        journal: Journal,
        template: Template,
        variant: TemplateVariant,
        allocation: Allocation,
    ) -> None:
        self.journal, self.variant = journal, variant
        spec = template.spec.model_copy(update={"fixed": {**template.spec.fixed, **variant.fixed}})
        self.search = TemplateSearch(
            cfg, Template(template.root, spec, template.files), journal, idea=variant.name
        )
        settings: Any = TreeSettings(cfg, allocation, variant.name)  # a SearchSettings by delegation
        self.stages = StageManager(settings, journal, self.search, PLAN, variant.name, spec=spec.primary)

    @property
    def name(self) -> str:
        return self.variant.name

    def inflight(self) -> int:
        return self.journal.unfinished_count(self.name)

    def _over_budget(self) -> str | None:
        limit = self.variant.max_nodes
        if limit is not None and self.journal.count(self.name) >= limit:
            return f"idea {self.name}: node budget of {limit} used up"
        return None

    def stopped(self) -> bool:
        stop = self._over_budget()
        if stop is not None and self.name not in self.journal.idea_stopped:
            self.journal.record(IdeaStopped(idea=self.name, reason=stop))
        return stop is not None

    def propose(self, slots: int) -> list[Node]:
        if self.stopped():
            return []
        if self.variant.max_nodes is not None:
            slots = min(slots, self.variant.max_nodes - self.journal.count(self.name))
        return self.stages.propose(slots)

    def job_for(self, node: Node, attempt: int) -> Job:
        return self.stages.job_for(node, attempt)

    def settle(self, node: Node) -> None:
        self.stages.settle(node)

    def finished(self) -> Finish | None:
        stop = self._over_budget()
        return Finish("stopped", stop) if stop is not None else self.stages.finished()


def build_template_forest(
    cfg: SearchSettings,
    journal: Journal,
    template: Template,
    variants: Sequence[TemplateVariant],
    allocation: AllocationConfig,
    meter: ComputeMeter | None = None,
) -> Forest:
    infos = [IdeaInfo(v.name, template.spec.primary, v) for v in variants]
    nodes = {s: cfg.stages[s].max_nodes for s in PLAN.names if s in cfg.stages}
    policy = Allocation(allocation, journal, PLAN, infos, meter, stage_nodes=nodes)
    trees = [TemplateTree(cfg, journal, template, v, policy) for v in variants]
    return Forest(trees, cfg.executor.max_in_flight or 1, policy)  # or: the dispatcher tells it the cluster's
