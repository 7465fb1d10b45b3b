"""Monte Carlo tree search with UCT, progressive widening and virtual loss.

Statistics are recomputed from the journal on every call: a finished good node's reward is its
primary metric min-max normalised over the stage (root included), a buggy node's is 0, and a
node in flight (or chosen earlier in the same batch) counts as a visit with reward 0: the
virtual loss that steers parallel workers away from a subtree that is already being explored.
The top of the tree is the stage's start: the root (stages 2-4) or nothing (drafts, stage 1).
"""

from __future__ import annotations

import math
import random

from engine.node import Node, NodeStatus
from search.policies.base import SlotPolicy
from search.tree import Expansion, StageView

TOP = "<top>"


class _Stats:
    def __init__(self, view: StageView, pending: list[Expansion]) -> None:
        self.view = view
        values = [s for s in (view.score(n) for n in [*view.nodes, view.root]) if s is not None]
        self.lo, self.hi = (min(values), max(values)) if values else (0.0, 0.0)
        self.kids: dict[str, list[str]] = {TOP: []}
        self.nodes: dict[str, Node] = {n.id: n for n in view.nodes}
        for n in view.nodes:
            self.kids.setdefault(n.id, [])
            parent = n.parent_id if n.parent_id in self.nodes else TOP
            self.kids.setdefault(parent, []).append(n.id)
        # Batch choices are virtual children: counted as visits with reward 0 (virtual loss).
        self.extra_visits: dict[str, int] = {}
        for e in pending:
            key = e.parent.id if e.parent is not None and e.parent.id in self.nodes else TOP
            self.extra_visits[key] = self.extra_visits.get(key, 0) + 1
        self.n: dict[str, float] = {}
        self.w: dict[str, float] = {}
        self._total(TOP)

    def reward(self, node_id: str) -> float:
        if node_id == TOP:
            return self._norm(self.view.score(self.view.root)) if self.view.root is not None else 0.0
        node = self.nodes[node_id]
        return self._norm(self.view.score(node)) if node.status == NodeStatus.GOOD else 0.0

    def _norm(self, s: float | None) -> float:
        if s is None:
            return 0.0
        return 0.5 if self.hi == self.lo else (s - self.lo) / (self.hi - self.lo)

    def _total(self, node_id: str) -> None:
        n, w = 1.0 + self.extra_visits.get(node_id, 0), self.reward(node_id)
        for kid in self.kids[node_id]:
            self._total(kid)
            n += self.n[kid]
            w += self.w[kid]
        self.n[node_id], self.w[node_id] = n, w


class MCTS(SlotPolicy):
    name = "mcts"

    def extend(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        stats = _Stats(view, pending)
        debuggable = {n.id for n in view.debuggable(pending)}
        node_id = TOP
        while True:
            here = self._expansion(view, stats, node_id, debuggable)
            kids = [k for k in stats.kids[node_id] if self._open(view, stats, k, debuggable)]
            limit = math.ceil(2 * stats.n[node_id] ** view.cfg.mcts_widening)
            width = len(stats.kids[node_id]) + stats.extra_visits.get(node_id, 0)
            if here is not None and (width < limit or not kids):
                return here
            if not kids:
                return None if node_id != TOP else view.fallback()
            c, log_n = view.cfg.mcts_exploration, math.log(stats.n[node_id])
            node_id = max(kids, key=lambda k: stats.w[k] / stats.n[k] + c * math.sqrt(log_n / stats.n[k]))

    @staticmethod
    def _expansion(view: StageView, stats: _Stats, node_id: str, debuggable: set[str]) -> Expansion | None:
        """The expansion that adds a child right here, if this node can have one."""
        if node_id == TOP:
            return view.grow(None) if view.first else view.fallback()
        node = stats.nodes[node_id]
        if node.status == NodeStatus.GOOD and not view.plan.from_root_only and view.score(node) is not None:
            return view.grow(node)
        if node_id in debuggable:
            return Expansion("debug", node)
        return None

    def _open(self, view: StageView, stats: _Stats, node_id: str, debuggable: set[str]) -> bool:
        """Whether the subtree under this node has anywhere left to expand."""
        if self._expansion(view, stats, node_id, debuggable) is not None:
            return True
        return any(self._open(view, stats, k, debuggable) for k in stats.kids[node_id])
