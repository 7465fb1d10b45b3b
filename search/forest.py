"""A forest: one tree per idea, grown concurrently on the same workers and LLM gateway.

Each `IdeaTree` is the four-stage manager over the agentic search of one idea, then (when
configured) the held-out selection, within the idea's own node and dollar budgets. The
`Forest` is the dispatcher's strategy: free slots go first to the tree with the least work in
flight, each tree capped at its fair share unless the others leave slots unused.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from search.config import IdeaSource, SearchSettings
from engine.executor import Job
from engine.journal import Journal
from engine.llm import LLM
from engine.node import Node
from search.agentic import AgenticSearch, has_vision
from search.agentic_plan import PLAN
from search.heldout import HeldoutPhase
from search.idea import Idea, load_ideas
from search.notes import ExperimentNotes
from search.selection import LLMChooser
from search.stages import StageManager

ALL_STAGES_DONE = "all four stages complete"


class IdeaTree:
    def __init__(
        self, cfg: SearchSettings, journal: Journal, idea: Idea, source: IdeaSource, llm: LLM,
        spent: Callable[[str], float],
    ) -> None:
        self.cfg, self.journal, self.idea, self.source, self.spent = cfg, journal, idea, source, spent
        self.search = AgenticSearch(cfg, journal, idea, llm, vision=has_vision(cfg))
        assert cfg.llm is not None
        role = "selection" if "selection" in cfg.llm.roles else "feedback"
        chooser = LLMChooser(llm, idea, cfg.search.tie_tolerance, role)
        self.stages = StageManager(cfg, journal, self.search, PLAN, idea.name, spec=idea.primary, chooser=chooser)
        self.heldout = HeldoutPhase(cfg, journal, idea) if cfg.search.heldout else None
        self.notes = ExperimentNotes(journal.log.path.parent, journal, idea, self.search.label)

    @property
    def name(self) -> str:
        return self.idea.name

    def nodes(self) -> list[Node]:
        return [n for n in self.journal if n.idea == self.name]

    def inflight(self) -> int:
        return sum(not n.is_finished for n in self.nodes())

    def _over_budget(self) -> str | None:
        """Why this idea's own budget is used up (checked live, so a resume re-checks it)."""
        used = len(self.nodes())
        if self.source.max_nodes is not None and used >= self.source.max_nodes:
            return f"idea {self.name}: node budget of {self.source.max_nodes} used up"
        if self.source.dollars is not None and self.spent(self.name) >= self.source.dollars:
            return f"idea {self.name}: LLM budget of ${self.source.dollars:.2f} used up (spent ${self.spent(self.name):.2f})"
        return None

    def stopped(self) -> bool:
        """Whether the idea's budget is used up; the first time, that is journaled."""
        stop = self._over_budget()
        if stop is not None and self.name not in self.journal.idea_stopped:
            self.journal.record("idea_stopped", idea=self.name, reason=stop)
            self.notes.refresh()
        return stop is not None

    def propose(self, slots: int) -> list[Node]:
        if self.stopped():
            return []
        if self.source.max_nodes is not None:
            slots = min(slots, self.source.max_nodes - len(self.nodes()))
        out = self.stages.propose(slots)
        if not out and self.heldout is not None and self.stages.finished() == ALL_STAGES_DONE:
            out = self.heldout.propose(slots)
        self.notes.refresh()
        return out

    def job_for(self, node: Node, attempt: int) -> Job:
        return self.stages.job_for(node, attempt)

    def finished(self) -> str | None:
        stop = self._over_budget()
        if stop is not None:
            return stop
        reason = self.stages.finished()
        if reason == ALL_STAGES_DONE and self.heldout is not None:
            if not self.heldout.done():
                return None
            h = self.journal.heldout[self.name]
            return f"{reason}; held-out choice {h['node_id']} ({h['reason']})"
        return reason


class Forest:
    """Implements engine.dispatch.Strategy over one tree per idea."""

    def __init__(self, trees: list[IdeaTree], max_in_flight: int) -> None:
        self.trees, self.max_in_flight = trees, max_in_flight
        self.by_name = {t.name: t for t in trees}

    def propose(self, slots: int) -> list[Node]:
        active = [t for t in self.trees if not t.stopped() and t.finished() is None]
        if not active:
            return []
        # Each tree is asked once per round (its proposals enter the journal only afterwards).
        order = sorted(active, key=lambda t: (t.inflight(), self.trees.index(t)))
        fair = math.ceil(self.max_in_flight / len(active))
        out: list[Node] = []
        carry = 0
        for k, tree in enumerate(order):
            remaining = slots - len(out)
            if remaining <= 0:
                break
            last = k == len(order) - 1
            cap = remaining if last else min(remaining, max(0, fair - tree.inflight()) + carry)
            got = tree.propose(cap) if cap > 0 else []
            carry = cap - len(got)
            out += got
        return out

    def job_for(self, node: Node, attempt: int) -> Job:
        return self.by_name[node.idea].job_for(node, attempt)

    def finished(self) -> str | None:
        reasons = [t.finished() for t in self.trees]
        if any(r is None for r in reasons):
            return None
        if len(self.trees) == 1:
            return reasons[0]
        return "; ".join(f"{t.name}: {r}" for t, r in zip(self.trees, reasons))


def build_forest(cfg: SearchSettings, journal: Journal, llm: LLM, spent: Callable[[str], float]) -> Forest:
    sources = cfg.idea_sources()
    ideas = load_ideas(sources)
    trees = [IdeaTree(cfg, journal, idea, src, llm, spent) for idea, src in zip(ideas, sources)]
    return Forest(trees, cfg.executor.max_in_flight)
