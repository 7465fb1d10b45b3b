"""The stateful mode's interaction follow-up: once two claims stand on train with main effects on
one outcome, the state view suggests their interaction as a ready-made `create` (claim and
analysis). The LLM still picks every action; the suggestion is judged, held out and confirmed like
any claim. Built from train standings only, so the view stays free of held-out numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from search.discovery.interactions import follow_ups, statement
from search.stateful.adjudicate import Thresholds, train_status
from search.stateful.model import State

MAIN_TOOLS = ("correlation", "regression", "compare_groups")
PROMISING = "promising on train"


@dataclass(frozen=True)
class Interactions:
    numeric: set[str]
    quantities: set[str]  # numeric columns with more than a few levels: fit for an outcome
    limit: int  # interaction investigations in a run, the LLM's own included

    def suggested(self, state: State, t: Thresholds, *, check_scope: bool) -> list[dict[str, Any]]:
        established: dict[frozenset[str], str] = {}
        asked: set[frozenset[str]] = set()
        for inv in state.investigations.values():
            main = next((e for e in inv.of("train") if e.role == "primary"), None)
            if main is None:
                continue
            a = main.analysis
            if a.tool == "interaction" and a.moderator:
                asked.add(frozenset((a.outcome, a.predictor, a.moderator)))
            elif (
                a.tool in MAIN_TOOLS
                and not a.population
                and train_status(inv, t, check_scope=check_scope) == PROMISING
            ):
                established.setdefault(frozenset((a.outcome, a.predictor)), inv.id)
        room = self.limit - len(asked)
        return [
            _create(triple, ids)
            for triple, ids in follow_ups(established, self.numeric, self.quantities, asked)[: max(room, 0)]
        ]


def _create(triple: tuple[str, str, str], ids: list[str]) -> dict[str, Any]:
    a, b, y = triple
    return {
        "claim": {
            "statement": statement(a, b, y),
            "variables": [a, b, y],
            "population": [],
            "expected_sign": 0,
        },
        "analysis": {"tool": "interaction", "outcome": y, "predictor": a, "moderator": b, "population": []},
        "why": f"{' and '.join(ids)} stand on train: main effects of {a} and of {b} on {y}",
    }
