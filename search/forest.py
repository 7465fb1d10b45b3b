"""A forest: one tree per idea, grown concurrently on the same workers and LLM gateway.

Each `IdeaTree` is the stage manager over the agentic search of one idea, then its phases
after the search (the held-out selection when configured), within the idea's own node and dollar budgets. The
`Forest` is the dispatcher's strategy: the forest's allocation policy (search/allocation.py)
decides which trees get free slots, in which order, and how many search nodes each tree's
stages hold (`TreeSettings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from engine.dispatch import Finish
from engine.events import IdeaStopped
from engine.executor import Job
from engine.journal import Journal
from engine.llm import LLM
from engine.node import Node
from search.agentic.plan import PLAN
from search.agentic.strategy import AgenticSearch, has_vision
from search.allocation import Allocation
from search.config import IdeaSource, SearchConfig, SearchSettings, StageConfig
from search.heldout import HeldoutPhase
from search.idea import Idea
from search.notes import ExperimentNotes
from search.phases import Phase, due, phase_nodes, phased_finish
from search.selection import LLMChooser
from search.stages import StageManager
from search.template.seed import TemplateSeed


class TreeSettings:
    """The run's settings as one tree's stage manager reads them: each stage's search nodes as
    the allocation has them for this idea (configured, extended, or held at a rung inside the
    stage), everything else as is."""

    def __init__(self, cfg: SearchSettings, allocation: Allocation, idea: str) -> None:
        self._cfg, self._allocation, self._idea = cfg, allocation, idea

    @property
    def stages(self) -> dict[str, StageConfig]:
        out = {}
        for name, stage in self._cfg.stages.items():
            n = self._allocation.max_nodes(self._idea, name, stage.max_nodes)
            out[name] = stage if n == stage.max_nodes else stage.model_copy(update={"max_nodes": n})
        return out

    @property
    def search(self) -> SearchConfig:
        # Held at a rung inside a stage, the stage's leader is not the one it will
        # decide: replicating it speculatively would spend compute on a decision not yet due.
        search = self._cfg.search
        if search.speculate and self._allocation.held_at(self._idea) is not None:
            return search.model_copy(update={"speculate": False})
        return search

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cfg, name)


class IdeaTree:
    def __init__(
        self,
        cfg: SearchSettings,
        journal: Journal,
        idea: Idea,
        source: IdeaSource,
        llm: LLM,
        spent: Callable[[str], float],
        allocation: Allocation,
        more_phases: Callable[[str], list[Phase]] | None = None,
        template: TemplateSeed | None = None,
    ) -> None:
        self.cfg, self.journal, self.idea, self.source, self.spent = cfg, journal, idea, source, spent
        self.search = AgenticSearch(cfg, journal, idea, llm, vision=has_vision(cfg), template=template)
        assert cfg.llm is not None
        role = "selection" if "selection" in cfg.llm.roles else "feedback"
        chooser = LLMChooser(llm, idea, cfg.search.tie_tolerance, role)
        settings: Any = TreeSettings(cfg, allocation, idea.name)  # a SearchSettings by delegation
        self.stages = StageManager(
            settings, journal, self.search, PLAN, idea.name, spec=idea.primary, chooser=chooser
        )
        self.phases: list[Phase] = (
            [HeldoutPhase(cfg, journal, idea, self.search)] if cfg.search.heldout else []
        )
        self.phases += more_phases(idea.name) if more_phases is not None else []
        self.notes = ExperimentNotes(journal.log.path.parent, journal, idea, self.search.label)

    @property
    def name(self) -> str:
        return self.idea.name

    def inflight(self) -> int:
        return self.journal.unfinished_count(self.name)

    def _over_budget(self) -> str | None:
        """Why this idea's own budget is used up (checked live, so a resume re-checks it)."""
        used = self.journal.count(self.name)
        if self.source.max_nodes is not None and used >= self.source.max_nodes:
            return f"idea {self.name}: node budget of {self.source.max_nodes} used up"
        if self.source.dollars is not None and self.spent(self.name) >= self.source.dollars:
            return (
                f"idea {self.name}: LLM budget of ${self.source.dollars:.2f} used up (spent "
                f"${self.spent(self.name):.2f})"
            )
        return None

    def stopped(self) -> bool:
        """Whether the idea's budget is used up; the first time, that is journaled."""
        stop = self._over_budget()
        if stop is not None and self.name not in self.journal.idea_stopped:
            self.journal.record(IdeaStopped(idea=self.name, reason=stop))
            self.notes.refresh()
        return stop is not None

    def propose(self, slots: int) -> list[Node]:
        if self.stopped():
            return []
        if self.source.max_nodes is not None:
            slots = min(slots, self.source.max_nodes - self.journal.count(self.name))
        out = self.stages.propose(slots) or phase_nodes(due(self.phases, self.stages.finished()), slots)
        self.notes.refresh()
        return out

    def job_for(self, node: Node, attempt: int) -> Job:
        phase = next((p for p in self.phases if p.stage == node.stage), None)
        return phase.job_for(node, attempt) if phase is not None else self.stages.job_for(node, attempt)

    def settle(self, node: Node) -> None:
        self.stages.settle(node)

    def finished(self) -> Finish | None:
        stop = self._over_budget()
        if stop is not None:
            return Finish("stopped", stop)
        return phased_finish(self.phases, self.stages.finished())


class GrowingTree(Protocol):
    """One idea's tree as the forest drives it (IdeaTree; search/template/forest.py's TemplateTree)."""

    @property
    def name(self) -> str: ...

    def inflight(self) -> int: ...

    def stopped(self) -> bool: ...

    def propose(self, slots: int) -> list[Node]: ...

    def job_for(self, node: Node, attempt: int) -> Job: ...

    def finished(self) -> Finish | None: ...


class Forest:
    """Implements engine.dispatch.Strategy over one tree per idea; `allocation` (docs/budgets.md,
    search/allocation.py) decides which trees get free slots, in which order, and which stop.

    Only trees that can propose are asked (docs/engine.md, "Driver scaling"): a tree offered
    slots that proposes fewer is *idle* until an event can change that, namely a step or
    attempt of its own finishing (`settle`), a budget change or a change of slots. Its
    in-flight count cannot move meanwhile, so it is kept. A completion that frees a slot no
    tree can use then costs no proposal call and no scan of the forest. The allocation's
    decisions about an idea (promoted at a rung, its stage extended) wake its tree too."""

    def __init__(self, trees: Sequence[GrowingTree], max_in_flight: int, allocation: Allocation) -> None:
        self.trees, self.max_in_flight, self.allocation = list(trees), max_in_flight, allocation
        self.by_name = {t.name: t for t in trees}
        self.open_trees = {t.name: t for t in trees}  # may still grow (insertion order: the trees')
        self.awake = dict(self.open_trees)  # open trees that may propose
        self.idle: dict[str, int] = {}  # idle tree -> its in-flight count when it went idle
        self.idle_inflight = 0  # their sum
        self.asked = 0  # tree proposals asked for (tests and bench/bench_driver.py count them)
        self._budgets = self._budget_limits()

    def capacity_changed(self, slots: int) -> None:
        """The dispatcher's slots followed the cluster: shares are of the new number."""
        self.max_in_flight = slots
        self._wake_all()

    def propose(self, slots: int) -> list[Node]:
        if self._budget_limits() is not self._budgets:  # `silva budget` changed a limit
            self._budgets = self._budget_limits()
            self._wake_all()
        if not self.awake:
            if self.allocation.journal.unfinished_count():
                return []  # every tree waits on a result still in flight
            self._wake_all()  # nothing in flight to wake them: ask each once more before "stuck"
        active = self.allocation.live(self._candidates())
        for name in self.allocation.decided:  # promoted, extended, stopped: asked again
            self._wake(name)
        self.allocation.decided.clear()
        if not active:
            return []
        # Each tree is asked once per round (its proposals enter the journal only afterwards).
        out: list[Node] = []
        carry = 0
        order = self.allocation.plan(active, self.max_in_flight, among=len(self.open_trees))
        # Shares are of the slots, but a tree's in-flight nodes include those in their think or
        # judge step, which hold none: with look-ahead the dispatcher keeps more nodes in flight
        # than slots. Each share scales to that pipeline; unscaled, only the last tree asked
        # could look ahead (seen: 4 ideas on 4 slots at utilization 0.67, at most 1.00).
        asking = [t for t, _ in order if t.name not in self.idle]
        inflight = sum(t.inflight() for t in asking) + self.idle_inflight
        scale = max(1.0, (slots + inflight) / self.max_in_flight)
        last = asking[-1].name if asking else None
        for tree, share in order:
            remaining = slots - len(out)
            if remaining <= 0:
                break
            if tree.name in self.idle:
                continue  # its share passes on, as if asked
            cap = (
                remaining
                if tree.name == last
                else min(remaining, max(0, math.ceil(share * scale) - tree.inflight()) + carry)
            )
            got = self._ask(tree, cap) if cap > 0 else []
            carry = cap - len(got)
            out += got
        return out

    def _ask(self, tree: GrowingTree, cap: int) -> list[Node]:
        self.asked += 1
        got = tree.propose(cap)
        # Fewer than offered: the tree could not use more (its budget, or a stage waiting on
        # results); its new nodes are in flight and will wake it.
        if len(got) < cap and tree.name in self.awake:
            n = tree.inflight()
            del self.awake[tree.name]
            self.idle[tree.name] = n
            self.idle_inflight += n
        return got

    def _wake(self, name: str) -> None:
        if name in self.idle:
            self.idle_inflight -= self.idle.pop(name)
            if name in self.open_trees:
                self.awake[name] = self.open_trees[name]

    def _wake_all(self) -> None:
        self.idle.clear()
        self.idle_inflight = 0
        self.awake = dict(self.open_trees)

    def _budget_limits(self) -> object:
        meter = self.allocation.meter
        return meter.budgets if meter is not None else None

    def _candidates(self) -> list[GrowingTree]:
        """The trees the allocation chooses among: under `fair`, the awake open ones (an idle
        tree takes no slot); the other policies compare every open idea at each round."""
        self._close()
        if self.allocation.cfg.policy == "fair":
            return list(self.awake.values())
        return list(self.open_trees.values())

    def _close(self) -> None:
        """Drop the trees that stopped or finished: they never grow again (budgets and the
        journal only move forward), so a forest of thousands of ideas is not scanned whole at
        every completion. Only awake trees can have changed since the last look."""
        for name, t in list(self.awake.items()):
            if t.stopped() or t.finished() is not None or self.allocation.ended(name) is not None:
                del self.open_trees[name], self.awake[name]

    def job_for(self, node: Node, attempt: int) -> Job:
        return self.by_name[node.idea].job_for(node, attempt)

    def settle(self, node: Node) -> None:
        """engine.dispatch: `node` finished a step or its attempt; only its own tree is told, and
        it may propose again."""
        self._wake(node.idea)
        tree = self.by_name.get(node.idea)
        settle = getattr(tree, "settle", None)
        if settle is not None:
            settle(node)

    def finished(self) -> Finish | None:
        ends = [self.allocation.ended(t.name) or t.finished() for t in self.trees]
        if any(e is None for e in ends):
            return None
        done = [e for e in ends if e is not None]
        if len(self.trees) == 1:
            return done[0]
        kind: Literal["complete", "stopped"] = (
            "complete" if all(e.kind == "complete" for e in done) else "stopped"
        )
        return Finish(kind, "; ".join(f"{t.name}: {e.message}" for t, e in zip(self.trees, done)))
