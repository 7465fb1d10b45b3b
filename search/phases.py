"""Phases after the search: work an idea tree does once every stage of its plan is complete
(held-out choice now; writing and reviewing the paper are phases too). Phases run in order;
each proposes its own nodes (in its own stage name) and says when it is done."""

from __future__ import annotations

from typing import Protocol

from engine.dispatch import Finish, Strategy
from engine.executor import Job
from engine.node import Node


class Phase(Protocol):
    stage: str  # the stage name its nodes carry (e.g. "heldout")

    def propose(self, slots: int) -> list[Node]:
        """Nodes still to run; once all are in, the phase records its result and proposes none."""

    def job_for(self, node: Node, attempt: int) -> Job: ...

    def done(self) -> bool: ...

    def summary(self) -> str:
        """One line for the run's finish message."""


class PhasedTree:
    """A single tree's strategy (the template search) followed by its phases after the search."""

    def __init__(self, tree: Strategy, phases: list[Phase]) -> None:
        self.tree, self.phases = tree, phases

    def propose(self, slots: int) -> list[Node]:
        out = self.tree.propose(slots)
        search = self.tree.finished()
        if not out and search is not None and search.kind == "complete":
            phase = next((p for p in self.phases if not p.done()), None)
            out = phase.propose(slots) if phase is not None else []
        return out

    def job_for(self, node: Node, attempt: int) -> Job:
        phase = next((p for p in self.phases if p.stage == node.stage), None)
        return phase.job_for(node, attempt) if phase is not None else self.tree.job_for(node, attempt)

    def finished(self) -> Finish | None:
        search = self.tree.finished()
        if search is None or search.kind != "complete":
            return search
        if not all(p.done() for p in self.phases):
            return None
        return Finish("complete", "; ".join([search.message, *(p.summary() for p in self.phases)]))
