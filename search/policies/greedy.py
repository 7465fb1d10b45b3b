"""AIDE-style greedy: drafts first, sometimes a debug, otherwise extend the single best node."""

from __future__ import annotations

import random

from search.policies.base import SlotPolicy
from search.tree import Expansion, StageView


class Greedy(SlotPolicy):
    name = "greedy"

    def extend(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        parents = view.parents()
        return view.grow(parents[0]) if parents else view.fallback()
