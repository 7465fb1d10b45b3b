"""What a policy sees of one stage of one tree, all derived from the journal.

Nothing here is stored: scores, debuggable leaves, in-flight children (virtual loss) and the
random stream are recomputed from the nodes on every call, so a resumed run makes the same
choices the killed one would have.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from engine.journal import Journal
from engine.node import MetricSpec, Node, NodeStatus
from search.agentic.plan import PLAN
from search.config import SearchConfig
from search.plan import StageSpec

SUPPORT_KINDS = ("replication", "aggregation", "selection", "heldout")


@dataclass(frozen=True)
class Expansion:
    """A new node to grow: `operator` applied to `parent` (None: a draft from nothing)."""

    operator: str
    parent: Node | None
    second: Node | None = None  # crossover's other parent
    island: int | None = None


@dataclass
class StageView:
    journal: Journal
    idea: str
    stage: str
    root: Node | None  # the previous stage's best; None in stage 1
    spec: MetricSpec
    cfg: SearchConfig
    seed: int
    nodes: list[Node] = field(default_factory=list)  # this stage's search nodes, oldest first

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = [
                n for n in self.journal.in_stage(self.stage, idea=self.idea) if n.kind not in SUPPORT_KINDS
            ]
        self._ids = {n.id for n in self.nodes}

    @property
    def plan(self) -> StageSpec:
        """What the stage is, as its mode's plan declares it (policies never compare its name)."""
        return PLAN[self.stage]

    @property
    def first(self) -> bool:
        """The plan's first stage: it grows from drafts, with no root."""
        return self.stage == PLAN.first

    # -- values ---------------------------------------------------------------------------------
    def score(self, n: Node | None) -> float | None:
        """The primary metric oriented so that larger is better; None unless good with a value."""
        return None if n is None else self.spec.score(n)

    def ranked(self) -> list[Node]:
        return self.spec.ranked(self.nodes)

    def parents(self) -> list[Node]:
        """Nodes the stage's grow operator may extend, best first. Ablations always start from
        the root (they take apart the final method); other stages may also extend their own."""
        if self.plan.from_root_only:
            return [self.root] if self.root is not None else []
        pool = self.ranked() + (
            [self.root] if self.root is not None and self.score(self.root) is not None else []
        )
        return sorted(pool, key=lambda n: -self.score(n))  # type: ignore[operator]

    # -- structure ------------------------------------------------------------------------------
    def in_stage(self, node_id: str) -> bool:
        return node_id in self._ids

    def children(self, node_id: str | None) -> list[Node]:
        """Stage nodes under `node_id`; None: those that start the stage (drafts, root children)."""
        if node_id is None:
            return [n for n in self.nodes if n.parent_id is None or not self.in_stage(n.parent_id)]
        return [n for n in self.nodes if n.parent_id == node_id]

    def busy(self, node: Node | None, pending: list[Expansion]) -> int:
        """Children of `node` in flight or chosen earlier in this batch: the virtual loss."""
        pid = node.id if node is not None else None
        running = sum(not c.is_finished for c in self.nodes if c.parent_id == pid)
        return running + sum((e.parent.id if e.parent else None) == pid for e in pending)

    def debuggable(self, pending: list[Expansion]) -> list[Node]:
        """Buggy leaves (no child yet, none chosen in this batch) within the debug depth limit."""
        taken = {e.parent.id for e in pending if e.parent is not None and e.operator == "debug"}
        parents = {n.parent_id for n in self.nodes}
        return [
            n
            for n in self.nodes
            if n.status == NodeStatus.BUGGY
            and n.id not in parents
            and n.id not in taken
            and n.code
            and self.journal.debug_depth(n.id) < self.cfg.max_debug_depth
        ]

    def drafts(self, pending: list[Expansion]) -> int:
        return sum(n.kind == "draft" for n in self.nodes) + sum(e.operator == "draft" for e in pending)

    def needs_draft(self, pending: list[Expansion]) -> bool:
        return self.first and self.drafts(pending) < self.cfg.num_drafts

    # -- choices --------------------------------------------------------------------------------
    def grow(self, parent: Node | None, island: int | None = None) -> Expansion:
        if parent is None:
            return Expansion("draft", None, island=island)
        return Expansion(self.plan.grows, parent, island=island)

    def fallback(self, island: int | None = None) -> Expansion | None:
        """When nothing good exists to extend: a new draft in stage 1, else grow the root."""
        if self.first:
            return self.grow(None, island)
        return self.grow(self.root, island) if self.root is not None else None

    def rng(self, slot: int) -> random.Random:
        """A random stream fixed by the tree's state, so a resume repeats the same choices."""
        key = f"{self.seed}|{self.idea}|{self.stage}|{len(self.nodes)}|{slot}"
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
