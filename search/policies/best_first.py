"""AI-Scientist-v2 best-first tree search: drafts, debugging with a probability and a maximum
depth, otherwise extend the best nodes, best first. Unlike greedy, a node that already has
children in flight yields to the next best, so parallel workers explore the top of the ranking
instead of all refining one node."""

from __future__ import annotations

import random

from search.policies.base import SlotPolicy
from search.tree import Expansion, StageView

FRONTIER = 3  # how far down the ranking in-flight work may push an expansion


class BestFirst(SlotPolicy):
    name = "best_first"

    def extend(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        parents = view.parents()[:FRONTIER]
        if not parents:
            return view.fallback()
        rank = {p.id: i for i, p in enumerate(parents)}
        best = min(parents, key=lambda p: (view.busy(p, pending), rank[p.id]))
        return view.grow(best)
