"""The policy protocol and what every policy shares: slot-by-slot filling and the debug step."""

from __future__ import annotations

import random
from typing import Protocol

from search.tree import Expansion, StageView


class Policy(Protocol):
    name: str

    def propose(self, view: StageView, slots: int) -> list[Expansion]:
        """Up to `slots` expansions; fewer (or none) when the tree has nothing sensible to try."""


class SlotPolicy:
    """Fills slots one at a time; each choice sees the ones before it as in-flight children, so
    one batch spreads over the tree instead of piling onto one node."""

    name = "slot"

    def propose(self, view: StageView, slots: int) -> list[Expansion]:
        chosen: list[Expansion] = []
        for slot in range(slots):
            expansion = self.choose(view, chosen, view.rng(slot))
            if expansion is None:
                break
            chosen.append(expansion)
        return chosen

    def choose(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        """Drafts until the stage has enough, then a debug with probability debug_prob, else `extend`."""
        if view.needs_draft(pending):
            return view.grow(None)
        return maybe_debug(view, pending, rng) or self.extend(view, pending, rng)

    def extend(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        """The policy's own choice of a node to grow."""
        raise NotImplementedError


def maybe_debug(view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
    """With probability debug_prob, debug a random buggy leaf within the depth limit."""
    candidates = view.debuggable(pending)
    if candidates and rng.random() < view.cfg.debug_prob:
        return Expansion("debug", rng.choice(candidates))
    return None
