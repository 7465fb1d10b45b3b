"""Phases after the search: work an idea tree does once every stage of its plan is complete
(held-out choice now; writing and reviewing the paper are phases too). Phases run in order;
each proposes its own nodes (in its own stage name) and says when it is done."""

from __future__ import annotations

from typing import Protocol

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
