"""Stages as data: each search mode declares a `StagePlan`, the ordered stages of one tree.

The engine and `silva status` treat stage names as opaque strings; everything a stage means
(what grows it, when it ends, what its best node feeds) is declared here by the mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# A rule that ends a stage's search before its node budget, implemented by the mode's
# `search_done`: its first good node; the LLM's judgement that tuning converged.
EarlyEnd = Literal["first_good", "converged"]


@dataclass(frozen=True)
class StageSpec:
    name: str
    grows: str  # the node kind (template) or operator (agentic) that grows the stage
    ends: str  # when the stage's search ends, for people (the mode's `search_done` implements it)
    default_max_nodes: int = 4
    from_root_only: bool = False  # every node varies the stage's root (ablations), never each other
    final_candidate: bool = False  # its good nodes are candidates for the final held-out choice
    # The stage refines its root (tuning): the root competes for the stage's best, so a stage
    # whose nodes are all worse hands its root on, never a worse setting.
    keeps_root: bool = False
    ends_early: EarlyEnd | None = None


@dataclass(frozen=True)
class StagePlan:
    mode: str
    stages: tuple[StageSpec, ...]
    # How far an idea has come at a stage end, by name in search/allocation.py's PROGRESS_SCORES
    # (successive halving and the bandit compare ideas by it); None: the mode has no forest.
    progress: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def __getitem__(self, name: str) -> StageSpec:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"{self.mode} mode has no stage {name!r} (stages: {', '.join(self.names)})")

    def before(self, name: str) -> tuple[str, ...]:
        """The stages that come before `name`, in order."""
        return self.names[: self.names.index(name)]

    def after(self, name: str) -> str | None:
        """The stage that comes next after `name` (None after the last)."""
        i = self.names.index(name) + 1
        return self.names[i] if i < len(self.names) else None

    @property
    def first(self) -> str:
        return self.stages[0].name

    @property
    def last(self) -> str:
        return self.stages[-1].name
