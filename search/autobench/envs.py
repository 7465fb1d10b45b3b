"""The interactive oracles: a hidden graph that answers interventions with observations.

Chemistry (directed): a hidden DAG over n chemicals, each coloured with one of K colours.
Intervening on a chemical re-draws the colour of every descendant (never the chemical itself);
with `forced_change` a re-drawn colour always differs from the old one, so one intervention
reveals the whole descendant set and 2n cycles are enough; without it a re-draw may repeat the
old colour (probability 1/K) and hide a descendant.

Social network (undirected): a hidden friendship graph over n people, each with a count.
Intervening on a person adds 1 to them and to each of their friends.

Every draw (graph, initial state, re-draws) comes from a `random.Random` seeded by the spec.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, Field

from search.autobench import graphs
from search.autobench.graphs import Kind, Matrix

EnvName = Literal["chemistry", "social"]


class EnvSpec(BaseModel):
    """One oracle instance: enough to rebuild it exactly on any worker."""

    env: EnvName = "chemistry"
    n: int = Field(ge=2, le=60)
    seed: int = 0
    colours: int = Field(4, ge=2, description="chemistry: K colours")
    edge_prob: float = Field(0.3, gt=0, lt=1)
    forced_change: bool = Field(True, description="chemistry: a re-drawn colour always changes")
    success: Literal["reachability", "adjacency"] | None = Field(
        None,
        description="what a right hypothesis must match; default reachability (chemistry), adjacency "
        "(social)",
    )

    @property
    def kind(self) -> Kind:
        return "directed" if self.env == "chemistry" else "undirected"

    @property
    def success_rule(self) -> Literal["reachability", "adjacency"]:
        # An undirected graph's reachability is only its connected components: "all connected"
        # would already be right for most social graphs, so social asks for the adjacency itself.
        return self.success or ("reachability" if self.env == "chemistry" else "adjacency")

    @property
    def max_cycles(self) -> int:
        return 2 * self.n


class Observation(BaseModel):
    """What an intervention shows: the state before and after, and which nodes changed."""

    node: int
    before: list[int]
    after: list[int]

    @property
    def changed(self) -> list[int]:
        return [i for i, (a, b) in enumerate(zip(self.before, self.after, strict=True)) if a != b]


class Oracle:
    """A hidden graph and a state; `intervene` is the only way to learn about the graph."""

    def __init__(self, spec: EnvSpec) -> None:
        self.spec = spec
        self.n = spec.n
        self.kind: Kind = spec.kind
        self._rng = random.Random(f"autobench/{spec.env}/{spec.n}/{spec.seed}")
        if spec.env == "chemistry":
            self.truth: Matrix = graphs.random_dag(spec.n, spec.edge_prob, self._rng)
            self.state = [self._rng.randrange(spec.colours) for _ in range(spec.n)]
        else:
            self.truth = graphs.random_undirected(spec.n, spec.edge_prob, self._rng)
            self.state = [self._rng.randrange(10) for _ in range(spec.n)]
        self.truth_reach = graphs.reachability(self.truth)

    def intervene(self, node: int) -> Observation:
        if not 0 <= node < self.n:
            raise ValueError(f"node {node} out of range 0..{self.n - 1}")
        before = list(self.state)
        if self.spec.env == "chemistry":
            for j in sorted(graphs.descendants(self.truth, node)):
                self.state[j] = self._redraw(self.state[j])
        else:
            for j in (node, *sorted(graphs.neighbours(self.truth, node))):
                self.state[j] += 1
        return Observation(node=node, before=before, after=list(self.state))

    def _redraw(self, colour: int) -> int:
        if not self.spec.forced_change:
            return self._rng.randrange(self.spec.colours)
        new = self._rng.randrange(self.spec.colours - 1)
        return new + (new >= colour)  # uniform over the K - 1 other colours

    def is_right(self, hypothesis: Matrix) -> bool:
        if self.spec.success_rule == "adjacency":
            return graphs.off_diagonal(hypothesis) == graphs.off_diagonal(self.truth)
        return graphs.off_diagonal(graphs.reachability(hypothesis)) == graphs.off_diagonal(self.truth_reach)

    def rules(self) -> str:
        """The environment's rules in words, for an agent's prompt (nothing about the hidden graph)."""
        n = self.n
        if self.spec.env == "chemistry":
            redraw = (
                "always changes to a different colour"
                if self.spec.forced_change
                else "is re-drawn at random and may stay the same"
            )
            return (
                f"Chemistry: {n} chemicals 0..{n - 1} linked by a hidden directed acyclic graph; each has "
                f"one of {self.spec.colours} colours (0..{self.spec.colours - 1}). Intervening on a chemical "
                f"leaves it unchanged, and the colour of every chemical downstream of it (its descendants, "
                f"through any number of links) {redraw}; nothing else changes. Give the hypothesis as an "
                f"{n}x{n} 0/1 adjacency matrix A with A[i][j] = 1 for a link i -> j; it must be acyclic with "
                f"a zero diagonal. It is right when it reaches the same chemicals from each chemical as the "
                f"hidden graph."
            )
        return (
            f"Social network: {n} people 0..{n - 1} linked by hidden undirected friendships; each has a "
            f"count. Intervening on a person adds 1 to their count and to the count of each friend; "
            f"nothing else changes. Give the hypothesis as an {n}x{n} symmetric 0/1 adjacency matrix with a "
            f"zero diagonal (A[i][j] = A[j][i] = 1 for friends). It is right when it equals the hidden "
            f"friendships"
            + (" up to who can reach whom." if self.spec.success_rule == "reachability" else ".")
        )
