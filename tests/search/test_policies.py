"""Policies on small hand-built journals: choices, in-flight awareness, determinism."""

from __future__ import annotations

from pathlib import Path

from engine import events as ev
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node, Origin
from search.config import SearchConfig
from search.policies import get_policy
from search.tree import StageView

SPEC = MetricSpec(name="acc", direction="maximize", primary=True)


class Tree:
    def __init__(self, tmp: Path) -> None:
        self.j = Journal.open(tmp)
        self.j.record(ev.RunStarted(config={}, metrics=[SPEC.model_dump()]))

    def add(
        self,
        kind: str,
        parent: Node | None = None,
        acc: float | None = None,
        *,
        stage: str = "agenda",
        status: str = "good",
        running: bool = False,
        island: int | None = None,
    ) -> Node:
        node = self.j.add_node(
            Node(
                parent_id=parent.id if parent else None,
                stage=stage,
                kind=kind,
                code="code",
                origin=Origin(island=island),
            )
        )
        self.j.attempt_started(node.id, 1)
        if not running:
            metrics = [MetricValue(name="acc", value=acc, direction="maximize")] if acc is not None else []
            self.j.attempt_finished(node.id, 1, AttemptResult(status=status, metrics=metrics))
        return self.j.nodes[node.id]

    def view(self, stage: str, root: Node | None, **cfg: object) -> StageView:
        return StageView(self.j, "default", stage, root, SPEC, SearchConfig(**{"debug_prob": 0.0, **cfg}), 0)


def parents(expansions: list) -> list[str | None]:
    return [e.parent.id if e.parent else None for e in expansions]


def test_stage_one_drafts_then_falls_back_to_drafts_without_good_nodes(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    out = get_policy("best_first").propose(t.view("preliminary", None, num_drafts=2), 3)
    assert [e.operator for e in out] == ["draft", "draft", "draft"]
    t.add("draft", stage="preliminary", status="buggy")
    out = get_policy("greedy").propose(t.view("preliminary", None, num_drafts=1, debug_prob=1.0), 2)
    assert [e.operator for e in out] == ["debug", "draft"]  # the one buggy leaf once, then a draft


def test_greedy_piles_onto_the_best_and_best_first_spreads(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    root = t.add("hyperparameter", acc=0.7, stage="hyperparameter")
    a = t.add("improve", root, 0.8)
    b = t.add("improve", root, 0.9)
    view = t.view("agenda", root)
    assert parents(get_policy("greedy").propose(view, 3)) == [b.id, b.id, b.id]
    assert parents(get_policy("best_first").propose(view, 3)) == [b.id, a.id, root.id]
    t.add("improve", b, running=True)  # b already has a child in flight: the next best goes first
    assert parents(get_policy("best_first").propose(t.view("agenda", root), 1)) == [a.id]


def test_debug_respects_depth_limit_and_leaves(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    root = t.add("hyperparameter", acc=0.7, stage="hyperparameter")
    x = t.add("improve", root, status="buggy")
    d1 = t.add("debug", x, status="buggy")
    d2 = t.add("debug", d1, status="buggy")
    view = t.view("agenda", root, debug_prob=1.0, max_debug_depth=2)
    assert view.debuggable([]) == []  # x and d1 have children; d2 is at depth 2
    view = t.view("agenda", root, debug_prob=1.0, max_debug_depth=3)
    assert [n.id for n in view.debuggable([])] == [d2.id]
    out = get_policy("greedy").propose(view, 2)
    assert [(e.operator, e.parent.id) for e in out] == [("debug", d2.id), ("improve", root.id)]  # type: ignore[union-attr]


def test_mcts_descends_by_uct_and_virtual_loss_moves_the_next_choice(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    root = t.add("hyperparameter", acc=0.6, stage="hyperparameter")
    a = t.add("improve", root, 0.9)
    t.add("improve", root, 0.5)
    c = t.add("improve", root, 0.8)
    view = t.view("agenda", root, mcts_exploration=0.0, mcts_widening=0.01)
    out = get_policy("mcts").propose(view, 2)
    # Pure exploitation: the best child first; its pending child halves its mean, so c is next.
    assert parents(out) == [a.id, c.id]
    assert parents(get_policy("mcts").propose(view, 2)) == [a.id, c.id]  # same journal, same choice
    t.add("improve", a, running=True)  # a real in-flight child is the same virtual loss
    assert parents(
        get_policy("mcts").propose(t.view("agenda", root, mcts_exploration=0.0, mcts_widening=0.01), 1)
    ) == [c.id]


def test_evolutionary_balances_islands_and_crosses_parents(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    root = t.add("hyperparameter", acc=0.6, stage="hyperparameter")
    out = get_policy("evolutionary").propose(t.view("agenda", root, islands=3), 4)
    assert [e.island for e in out] == [0, 1, 2, 0] and parents(out) == [root.id] * 4
    a = t.add("improve", root, 0.8, island=0)
    b = t.add("improve", root, 0.7, island=0)
    c = t.add("improve", root, 0.9, island=1)
    cfg = {"islands": 2, "crossover_rate": 1.0, "tournament": 2}
    (local,) = get_policy("evolutionary").propose(t.view("agenda", root, migration_prob=0.0, **cfg), 1)
    assert local.operator == "crossover" and {local.parent.id, local.second.id} == {a.id, b.id}  # type: ignore[union-attr]
    (migrant,) = get_policy("evolutionary").propose(t.view("agenda", root, migration_prob=1.0, **cfg), 1)
    assert migrant.operator == "crossover" and migrant.second.id == c.id and migrant.island == 0  # type: ignore[union-attr]
    (tuned,) = get_policy("evolutionary").propose(t.view("hyperparameter", root, **cfg), 1)
    assert tuned.operator == "hyperparameter"  # tuning only mutates


def test_ablations_always_start_from_the_root(tmp_path: Path) -> None:
    t = Tree(tmp_path)
    root = t.add("improve", acc=0.8, stage="agenda")
    t.add("ablation", root, 0.95, stage="ablation")
    for name in ("best_first", "greedy", "mcts", "evolutionary"):
        out = get_policy(name).propose(t.view("ablation", root), 2)
        assert [(e.operator, e.parent.id) for e in out] == [("ablation", root.id)] * 2, name  # type: ignore[union-attr]
