"""A rolling forest: a forest that grows as it runs, fed by an idea source (`ideation:`).

The forest keeps one idea made ahead: its idea source (bound in silva/, e.g. silva/rolling.py
over silva/ideation) makes it in the background, checks it for novelty against its archive and
the forest's ideas, and offers it; the forest admits it the moment the trees cannot fill the
free slots, under the limits below, journals the decision and asks for the next. The allocation policy
(search/allocation.py) treats an admitted idea like any other, so successive halving or the
bandit retires weak ones. Each idea's phases (paper, review) run when its search ends, as in
any forest, while the rest keeps running. Admissions are journaled with the idea itself, so a
resumed run rebuilds every admitted tree without asking ideation again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import Field

from engine.budgets import ComputeMeter
from engine.config import Strict
from engine.dispatch import Finish
from engine.events import Event, IdeaAdmitted, IdeaPublished, IdeaRejected, IdeationEnded
from engine.journal import Journal
from engine.llm import LLM
from engine.node import Node
from search.agentic.plan import PLAN
from search.allocation import Allocation, IdeaInfo
from search.config import AllocationConfig, IdeaSource, SearchSettings
from search.forest import Forest, GrowingTree, IdeaTree
from search.idea import Idea, load_ideas
from search.phases import Phase
from search.template.seed import TemplateSeed
from search.template.spec import Template


class IdeaLimits(Strict):
    """Each admitted idea's own budgets inside the run's (as an entry of `ideas:` has them)."""

    max_nodes: int | None = Field(None, ge=1, description="nodes of each new idea's tree, every kind")
    dollars: float | None = Field(None, ge=0, description="LLM spend of each new idea")
    gpu_hours: float | None = Field(None, gt=0, description="accelerator time of each new idea")
    cpu_hours: float | None = Field(None, gt=0, description="CPU time of each new idea")


class RollingSettings(Strict):
    """When a rolling forest asks for ideas, how many it admits, and when it stops."""

    batch: int = Field(1, ge=1, description="ideas asked for at a time when the slots are not full")
    max_ideas: int | None = Field(None, ge=1, description="ideas admitted over the run, at most")
    manuscripts: int | None = Field(
        None, ge=1, description="stop the run once this many ideas finished their search, paper and review"
    )
    admit_until_s: float | None = Field(
        None, gt=0, description="admit no new idea after this many seconds of the run (the rest finish)"
    )
    max_rejected: int = Field(
        5, ge=1, description="stop asking after this many ideas in a row were duplicates or not novel"
    )
    per_idea: IdeaLimits = Field(default_factory=IdeaLimits)


@dataclass(frozen=True)
class Offer:
    """One idea the source made: `admit` when it passed the source's novelty checks."""

    idea: Idea
    admit: bool
    verdict: str  # the source's: novel, unchecked, duplicate, not_novel, invalid
    reason: str = ""
    similarity: float | None = None


class IdeaSupply(Protocol):
    """An idea source as the rolling forest asks it; `ask` returns at once (ideas are made in
    the background, so the driver keeps consuming completions meanwhile)."""

    @property
    def settings(self) -> RollingSettings: ...

    def ask(self, n: int, known: Collection[Idea]) -> None: ...

    def busy(self) -> bool: ...

    def take(self, wait: bool) -> list[Offer]: ...


Grow = Callable[[Idea, IdeaSource], GrowingTree]


class RollingForest(Forest):
    def __init__(
        self,
        trees: Sequence[GrowingTree],
        ideas: Sequence[Idea],
        max_in_flight: int,
        allocation: Allocation,
        supply: IdeaSupply,
        grow: Grow,
    ) -> None:
        super().__init__(trees, max_in_flight, allocation)
        self.journal: Journal = allocation.journal
        self.supply, self.grow, self.limits = supply, grow, supply.settings
        self.ideas = {i.name: i for i in ideas}  # every idea of the forest, for novelty checks
        self.admitted = self.rejected_in_a_row = 0
        self.published: set[str] = set()
        self.ended: str | None = None
        # Ideas made ahead: admitted the moment the trees run short, so that the slots do not wait
        # for ideation's several LLM calls (idle 193 of 4,800 slot-seconds on 4 slots in 20 min).
        self.reserve: list[Offer] = []
        self.short = False  # the trees proposed fewer nodes than asked for in the last round
        for e in self.journal.log.read(IdeaAdmitted, IdeaRejected, IdeaPublished, IdeationEnded):
            self._replay(e)

    def _replay(self, e: Event) -> None:
        if isinstance(e, IdeaAdmitted):
            self._add(Idea.model_validate(e.spec), _source(e.idea, e.budgets))
            self.admitted += 1
            self.rejected_in_a_row = 0
        elif isinstance(e, IdeaRejected):
            self.rejected_in_a_row += 1
        elif isinstance(e, IdeaPublished):
            self.published.add(e.idea)
        elif isinstance(e, IdeationEnded):
            self.ended = e.reason

    # -- admission ------------------------------------------------------------------------------
    def _add(self, idea: Idea, source: IdeaSource) -> None:
        tree = self.grow(idea, source)
        self.allocation.add(IdeaInfo(idea.name, idea.primary, source))
        self.ideas[idea.name] = idea
        self.trees.append(tree)
        self.by_name[tree.name] = self.open_trees[tree.name] = self.awake[tree.name] = tree

    def _admit(self, offer: Offer) -> None:
        idea, k = offer.idea, 1
        while idea.name in self.ideas:  # a name the forest already has (a configured idea's)
            k += 1
            idea = offer.idea.model_copy(update={"name": f"{offer.idea.name}_{k}"})
        stop = None if not offer.admit else self._why_stop()
        if not offer.admit or stop is not None:
            self.rejected_in_a_row += offer.admit is False
            self.journal.record(
                IdeaRejected(
                    idea=idea.name,
                    verdict=offer.verdict if not offer.admit else "not_needed",
                    reason=offer.reason if not offer.admit else f"ideation ended: {stop}",
                )
            )
            return
        budgets = self.limits.per_idea.model_dump(exclude_none=True)
        self.journal.record(
            IdeaAdmitted(
                idea=idea.name,
                spec=idea.model_dump(mode="json", exclude_defaults=True),
                budgets=budgets,
                similarity=offer.similarity,
            )
        )
        self.admitted += 1
        self.rejected_in_a_row = 0
        self._add(idea, _source(idea.name, budgets))

    def _take(self, wait: bool) -> None:
        """Offers made meanwhile: a rejected one is journaled now, a novel one waits in reserve."""
        for offer in self.supply.take(wait):
            if offer.admit:
                self.reserve.append(offer)
            else:
                self._admit(offer)

    def _ask_ideas(self) -> None:
        """Ask for the next ideas unless they are being made, or one waits in reserve."""
        s = self.limits
        wanted = s.max_ideas is None or self.admitted + len(self.reserve) < s.max_ideas
        if not self.reserve and wanted and not self.supply.busy() and self._may_ask():
            self.supply.ask(s.batch, self.ideas.values())

    def _why_stop(self) -> str | None:
        """Why no more ideas are asked for (None: they may be)."""
        s = self.limits
        if s.manuscripts is not None and len(self.published) >= s.manuscripts:
            return f"{len(self.published)} idea(s) published, the `manuscripts` target"
        if s.max_ideas is not None and self.admitted >= s.max_ideas:
            return f"{self.admitted} idea(s) admitted, the `max_ideas` limit"
        if s.admit_until_s is not None and self.journal.elapsed_s(now=time.time()) >= s.admit_until_s:
            return f"no admissions after {s.admit_until_s:g} s of the run (`admit_until_s`)"
        if self.rejected_in_a_row >= s.max_rejected:
            return f"the last {self.rejected_in_a_row} ideas were duplicates, not novel or invalid"
        return None

    def _may_ask(self) -> bool:
        if self.ended is None:
            why = self._why_stop()
            if why is not None:
                self.ended = why
                self.journal.record(IdeationEnded(reason=why))
        return self.ended is None

    # -- the dispatcher's strategy -------------------------------------------------------------
    def _done(self) -> bool:
        """The `manuscripts` target is met: nothing new starts, what runs finishes."""
        target = self.limits.manuscripts
        return target is not None and len(self.published) >= target

    def propose(self, slots: int) -> list[Node]:
        self._take(wait=False)
        if self._done():
            return []
        if self.short and self.reserve:  # the trees ran short last round: the idea made ahead joins
            self._admit(self.reserve.pop(0))
        out = super().propose(slots)
        while len(out) < slots and (self.reserve or self._may_ask()):
            self._ask_ideas()
            if out or self.journal.unfinished_count():
                break  # the rest runs meanwhile: new ideas join at a later round
            self._take(wait=not self.reserve)  # nothing runs: ideation is the only way on
            if self.reserve:
                self._admit(self.reserve.pop(0))
            out = super().propose(slots)
        self.short = len(out) < slots
        self._ask_ideas()  # the next idea is made while the trees still fill the slots
        return out

    def _close(self) -> None:
        awake = list(self.awake.values())  # only these can close: what the forest scans anyway
        super()._close()
        for tree in awake:
            if tree.name not in self.open_trees:
                self._publish(tree)

    def _publish(self, tree: GrowingTree) -> None:
        end = self.allocation.ended(tree.name) or tree.finished()
        if tree.name not in self.published and end is not None and end.kind == "complete":
            self.published.add(tree.name)
            self.journal.record(IdeaPublished(idea=tree.name))

    def finished(self) -> Finish | None:
        for tree in self.trees:  # asked only with nothing in flight: a tree's last step may be its decision
            self._publish(tree)
        if not self._done():
            if self.reserve or self.supply.busy() or self._may_ask():
                return None
            if any((self.allocation.ended(t.name) or t.finished()) is None for t in self.trees):
                return None
        ends = [self.allocation.ended(t.name) or t.finished() for t in self.trees]
        stopped = sum(1 for e in ends if e is not None and e.kind == "stopped")
        left = sum(1 for e in ends if e is None)
        kind: Literal["complete", "stopped"] = (
            "complete" if self._done() or (stopped == 0 and left == 0) else "stopped"
        )
        return Finish(
            kind,
            f"{len(self.trees)} idea(s): {len(self.published)} published, {stopped} stopped early, "
            f"{left} left unfinished; ideation ended: {self.ended}",
        )


def _source(name: str, budgets: dict[str, object]) -> IdeaSource:
    # An admitted idea has no file of its own in the run: it lives in its IdeaAdmitted event.
    return IdeaSource.model_validate({"path": Path(f"ideation/{name}"), **budgets})


def build_forest(
    cfg: SearchSettings,
    journal: Journal,
    llm: LLM,
    spent: Callable[[str], float],
    allocation: AllocationConfig | None = None,
    meter: ComputeMeter | None = None,
    more_phases: Callable[[str], list[Phase]] | None = None,
    template: Template | None = None,
    supply: IdeaSupply | None = None,
) -> Forest:
    """`more_phases(idea)`: phases after the held-out choice (writeup, review), built in silva/.
    `template`: every idea grows from the template's code (search/template/seed.py).
    `supply`: an idea source (`ideation:`) that grows the forest as it runs (search/rolling.py)."""
    sources = cfg.idea_sources()
    seed = TemplateSeed.from_template(template) if template is not None else None
    ideas = [seed.adapt(i) if seed else i for i in load_ideas(sources)]
    infos = [IdeaInfo(idea.name, idea.primary, src) for idea, src in zip(ideas, sources)]
    nodes = {s: cfg.stages[s].max_nodes for s in PLAN.names if s in cfg.stages}
    policy = Allocation(allocation or AllocationConfig(), journal, PLAN, infos, meter, stage_nodes=nodes)
    trees = [
        IdeaTree(cfg, journal, idea, src, llm, spent, policy, more_phases, seed)
        for idea, src in zip(ideas, sources)
    ]
    slots = cfg.executor.max_in_flight or 1  # or: the dispatcher tells it the cluster's
    if supply is None:
        return Forest(trees, slots, policy)

    def grow(idea: Idea, src: IdeaSource) -> GrowingTree:
        return IdeaTree(
            cfg, journal, seed.adapt(idea) if seed else idea, src, llm, spent, policy, more_phases, seed
        )

    return RollingForest(trees, ideas, slots, policy, supply, grow)
