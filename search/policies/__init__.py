"""Selection policies: which (parent, operator) to grow next in a stage. Chosen by `search.policy`."""

from __future__ import annotations

from search.policies.base import Policy
from search.policies.best_first import BestFirst
from search.policies.evolutionary import Evolutionary
from search.policies.greedy import Greedy
from search.policies.mcts import MCTS

POLICIES: dict[str, type] = {
    "best_first": BestFirst,
    "greedy": Greedy,
    "mcts": MCTS,
    "evolutionary": Evolutionary,
}


def get_policy(name: str) -> Policy:
    return POLICIES[name]()
