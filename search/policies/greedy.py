"""AIDE-style greedy: drafts first, sometimes a debug, otherwise extend the single best node."""

from __future__ import annotations

import random

from search.policies.base import SlotPolicy, maybe_debug
from search.tree import Expansion, StageView


class Greedy(SlotPolicy):
    name = "greedy"

    def choose(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        if view.needs_draft(pending):
            return view.grow(None)
        debug = maybe_debug(view, pending, rng)
        if debug is not None:
            return debug
        parents = view.parents()
        return view.grow(parents[0]) if parents else view.fallback()
