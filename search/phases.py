"""Phases after the search: work an idea tree does once every stage of its plan is complete
(held-out choice now; writing and reviewing the paper are phases too). Phases run in order;
each proposes its own nodes (in its own stage name) and says when it is done.

A search that stopped with no result (its first stage found no good node: the stage manager's
only `stopped` end) runs the phases marked `after_no_result` only: the writeup, which then
writes the failure report (docs/writeup.md, "Failure report")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engine.dispatch import Finish, Strategy
from engine.executor import Job
from engine.node import Node


class Phase(Protocol):
    stage: str  # the stage name its nodes carry (e.g. "heldout")
    after_no_result: bool  # whether it also runs after a search that stopped with no result

    def propose(self, slots: int) -> list[Node]:
        """Nodes still to run; once all are in, the phase records its result and proposes none."""

    def job_for(self, node: Node, attempt: int) -> Job: ...

    def done(self) -> bool: ...

    def summary(self) -> str:
        """One line for the run's finish message."""


def due(phases: Sequence[Phase], search: Finish | None) -> list[Phase] | None:
    """The phases a search that ended as `search` runs: all after a complete one, those marked
    `after_no_result` after a stopped one; None while the search goes on."""
    if search is None:
        return None
    return list(phases) if search.kind == "complete" else [p for p in phases if p.after_no_result]


def phase_nodes(phases: Sequence[Phase] | None, slots: int) -> list[Node]:
    """The first unfinished phase's nodes (phases run in order). A phase that ends in this very
    call (the held-out choice records its selection and proposes nothing) hands on to the next:
    else the run would find nothing to do, with nothing in flight, and end as stuck."""
    for phase in phases or ():
        if phase.done():
            continue
        nodes = phase.propose(slots)
        if nodes or not phase.done():
            return nodes
    return []


def phased_finish(phases: Sequence[Phase], search: Finish | None) -> Finish | None:
    """The search's end once its due phases are done, their summaries after its message."""
    ran = due(phases, search)
    if search is None or ran is None or not all(p.done() for p in ran):
        return None
    return Finish(search.kind, "; ".join([search.message, *(p.summary() for p in ran)]))


class PhasedTree:
    """A single tree's strategy (the template search) followed by its phases after the search."""

    def __init__(self, tree: Strategy, phases: list[Phase]) -> None:
        self.tree, self.phases = tree, phases

    def propose(self, slots: int) -> list[Node]:
        out = self.tree.propose(slots)
        return out or phase_nodes(due(self.phases, self.tree.finished()), slots)

    def job_for(self, node: Node, attempt: int) -> Job:
        phase = next((p for p in self.phases if p.stage == node.stage), None)
        return phase.job_for(node, attempt) if phase is not None else self.tree.job_for(node, attempt)

    def finished(self) -> Finish | None:
        return phased_finish(self.phases, self.tree.finished())
