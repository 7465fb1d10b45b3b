"""Evolutionary search on islands: tournament selection, mutation by the stage's operator, and
crossover of two parents (a second parent from another island with the migration probability).

A node's island is stored in its origin at creation; a slot goes to the island with the least
work in flight, so islands evolve side by side. Crossover is used where the stage's operator is
a free-form improvement (stages 1 and 3); hyperparameter tuning and ablations only mutate.
"""

from __future__ import annotations

import random

from engine.node import Node
from search.policies.base import SlotPolicy, maybe_debug
from search.tree import Expansion, StageView


def island_of(node: Node) -> int:
    return node.origin.island or 0


class Evolutionary(SlotPolicy):
    name = "evolutionary"

    def choose(self, view: StageView, pending: list[Expansion], rng: random.Random) -> Expansion | None:
        cfg = view.cfg
        load = [0] * cfg.islands
        for n in view.nodes:
            if not n.is_finished:
                load[island_of(n) % cfg.islands] += 1
        for e in pending:
            load[(e.island or 0) % cfg.islands] += 1
        island = min(range(cfg.islands), key=lambda i: (load[i], i))
        if view.needs_draft(pending):
            return view.grow(None, island)
        debug = maybe_debug(view, pending, rng)
        if debug is not None:
            return Expansion(
                "debug", debug.parent, island=island_of(debug.parent) if debug.parent else island
            )
        if view.plan.from_root_only:  # ablations: each varies the root, never another node
            return view.fallback(island)
        population = [n for n in view.ranked() if island_of(n) % cfg.islands == island]
        if not population:
            return view.fallback(island)
        first = self._tournament(view, population, rng)
        # Crossover where the stage grows by improving (not tuning one setting, not ablating).
        if view.plan.grows == "improve" and rng.random() < cfg.crossover_rate:
            pool = [n for n in population if n.id != first.id]
            others = [n for n in view.ranked() if island_of(n) % cfg.islands != island]
            if others and (not pool or rng.random() < cfg.migration_prob):
                pool = others
            if pool:
                return Expansion("crossover", first, second=self._tournament(view, pool, rng), island=island)
        return view.grow(first, island)

    @staticmethod
    def _tournament(view: StageView, pool: list[Node], rng: random.Random) -> Node:
        entrants = rng.sample(pool, min(view.cfg.tournament, len(pool)))
        return max(entrants, key=lambda n: view.score(n))  # type: ignore[arg-type, return-value]
