"""Speculation at stage ends (docs/engine.md): while a stage's last search nodes run, free slots
take replicates of its provisional best and the next stage's first nodes grown from it; the
next stage keeps them if that node is decided best and discards them (no further step, left out
of every stage view, their claims void) if not."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node, NodeStatus, StepResult
from search.agentic.operators.claims import ClaimBook
from search.plan import StagePlan, StageSpec
from search.stages import StageManager

SPEC = MetricSpec(name="score", direction="maximize", primary=True)
PLAN = StagePlan(
    mode="test",
    stages=(StageSpec("a", grows="try", ends="budget"), StageSpec("b", grows="try", ends="budget")),
)


class Search:
    """Grows every node from the stage's root; never ends a stage early."""

    def propose(self, journal: Journal, stage: str, root: Node | None, slots: int) -> list[Node]:
        return [
            Node(stage=stage, kind="try", parent_id=root.id if root else None, plan=f"try {i}")
            for i in range(slots)
        ]

    def search_done(self, journal: Journal, stage: str, root: Node | None) -> str | None:
        return None

    def job_for(self, node: Node, attempt: int) -> Any:
        raise AssertionError("not run here")

    def label(self, node: Node) -> str:
        return node.plan


def manager(tmp: Path, speculate: bool = True) -> tuple[Journal, StageManager]:
    j = Journal.open(tmp)
    j.record(ev.RunStarted(config={}, metrics=[SPEC.model_dump()], stages=list(PLAN.names), format=2))
    cfg = SimpleNamespace(
        stages={"a": SimpleNamespace(max_nodes=2), "b": SimpleNamespace(max_nodes=2)},
        replicates=1,
        seed=0,
        search=SimpleNamespace(speculate=speculate),
    )
    return j, StageManager(cfg, j, Search(), PLAN, idea="default")


def add(j: Journal, nodes: list[Node]) -> list[Node]:
    return [j.add_node(n) for n in nodes]


def finish(j: Journal, node: Node, score: float) -> None:
    j.attempt_started(node.id, 1)
    now = time.time()
    j.attempt_finished(
        node.id,
        1,
        AttemptResult(
            status="good",
            metrics=[MetricValue(name="score", value=score, direction="maximize")],
            started_at=now,
            finished_at=now,
        ),
    )


def stage_a_with_one_node_running(tmp: Path) -> tuple[Journal, StageManager, Node, Node, list[Node]]:
    j, sm = manager(tmp)
    sm.cfg.stages["b"].max_nodes = 4  # half of stage a's contenders are in: half of b may grow
    first, second = add(j, sm.propose(2))
    finish(j, first, 0.5)
    j.attempt_started(second.id, 1)
    ahead = add(j, sm.propose(4))  # stage a's budget is spent and `second` still runs
    return j, sm, first, second, ahead


def test_free_slots_replicate_the_provisional_best_and_grow_the_next_stage_from_it(tmp_path: Path) -> None:
    j, sm, first, _, ahead = stage_a_with_one_node_running(tmp_path)
    assert [(n.stage, n.kind, n.parent_id) for n in ahead] == [
        ("a", "replication", first.id),
        ("b", "try", first.id),
        ("b", "try", first.id),
    ]
    assert all(n.origin.speculative for n in ahead)
    assert ("default", "b") not in j.stage_started  # the next stage has not started: its root is not decided
    assert sm.propose(4) == []  # the share of the next stage's budget it may take is used


def test_the_next_stage_keeps_its_speculative_nodes_when_their_premise_is_decided_best(
    tmp_path: Path,
) -> None:
    j, sm, first, second, ahead = stage_a_with_one_node_running(tmp_path)
    finish(j, second, 0.4)
    sm.propose(4)
    assert j.stage_best[("default", "a")].node_id == first.id
    assert j.stage_started[("default", "b")].root == first.id
    b_nodes = j.in_stage("b", idea="default")
    assert [n.id for n in b_nodes] == [n.id for n in ahead[1:]]  # kept, and the budget is theirs
    assert all(n.status != NodeStatus.DISCARDED for n in j)
    replicate = ahead[0]
    finish(j, replicate, 0.5)
    agg = [n for n in sm.propose(4) if n.kind == "aggregation"]
    assert agg and agg[0].refs == [first.id, replicate.id]  # the speculative replicate is the stage's


def test_the_next_stage_discards_them_when_another_node_is_decided_best(tmp_path: Path) -> None:
    j, sm, first, second, ahead = stage_a_with_one_node_running(tmp_path)
    finish(j, second, 0.9)
    fresh = add(j, sm.propose(4))
    assert j.stage_best[("default", "a")].node_id == second.id
    spec_b = [n.id for n in ahead if n.stage == "b"]
    assert all(j.nodes[i].status == NodeStatus.DISCARDED for i in spec_b)
    assert "but" in j.nodes[spec_b[0]].reason and second.id in j.nodes[spec_b[0]].reason
    assert j.unfinished_count() == len([n for n in j if n.status in (NodeStatus.PENDING, NodeStatus.RUNNING)])
    b_nodes = [n for n in fresh if n.stage == "b"]
    assert len(b_nodes) == 3 and all(n.parent_id == second.id and not n.origin.speculative for n in b_nodes)
    assert {n.id for n in j.in_stage("b", idea="default")} == {n.id for n in b_nodes}  # discarded left out
    assert set(spec_b) <= {n.id for n in j.in_stage("b", idea="default", discarded=True)}
    # The replicate of `first` stays in the journal, unused: `second` gets its own.
    assert [n.parent_id for n in fresh if n.kind == "replication"] == [second.id]
    # The discards and decisions survive a reopen exactly.
    j.log.close()
    again = Journal.open(tmp_path, read_only=True)
    assert {i for i in again.nodes if again.nodes[i].status == NodeStatus.DISCARDED} == set(spec_b)
    assert again.unfinished_count() == j.unfinished_count()


def test_a_better_provisional_best_replaces_the_speculative_set(tmp_path: Path) -> None:
    j, sm = manager(tmp_path)
    sm.cfg.stages["a"].max_nodes = 3
    first, second, third = add(j, sm.propose(3))
    finish(j, first, 0.5)
    for n in (second, third):
        j.attempt_started(n.id, 1)
    old = [n for n in add(j, sm.propose(4)) if n.stage == "b"]
    assert old and all(n.parent_id == first.id for n in old)
    finish(j, second, 0.8)  # `third` still runs: a new provisional best
    new = [n for n in add(j, sm.propose(4)) if n.stage == "b"]
    assert all(j.nodes[n.id].status == NodeStatus.DISCARDED for n in old)
    assert new and all(n.parent_id == second.id and n.origin.speculative for n in new)


class GrowsFromItsBest(Search):
    """Grows from the stage's best finished node once it has one (a tuning of a tuning)."""

    def propose(self, journal: Journal, stage: str, root: Node | None, slots: int) -> list[Node]:
        done = [n for n in journal.in_stage(stage, idea="default") if n.is_finished]
        parent = max(done, key=lambda n: n.metric("score") or 0.0) if done else root
        return super().propose(journal, stage, parent, slots)


@pytest.mark.parametrize("premise_wins", [True, False])
def test_speculative_nodes_grown_from_speculative_nodes_go_with_their_premise(
    tmp_path: Path, premise_wins: bool
) -> None:
    j, sm, first, second, ahead = stage_a_with_one_node_running(tmp_path)
    sm.search = GrowsFromItsBest()
    sm.cfg.stages["b"].max_nodes = 8
    b1 = next(n for n in ahead if n.stage == "b")
    finish(j, b1, 0.7)
    grandchildren = add(j, sm.propose(2))
    assert [n.parent_id for n in grandchildren] == [b1.id, b1.id]
    sm.propose(4)  # `first` is still the provisional best: nothing grown from it is discarded
    assert all(j.nodes[n.id].status != NodeStatus.DISCARDED for n in grandchildren)
    finish(j, second, 0.4 if premise_wins else 0.9)
    sm.propose(4)
    discarded = {n.id for n in j if n.status == NodeStatus.DISCARDED}
    line = {n.id for n in ahead if n.stage == "b"} | {n.id for n in grandchildren}
    assert discarded == (set() if premise_wins else line)
    if not premise_wins:
        assert all(f"grew from {first.id}, but" in j.nodes[i].reason for i in line)


def ran(j: Journal, node: Node, score: float | None, problem: str = "") -> None:
    """`node`'s run step is in (its metric known); its judgement is still out."""
    from search.agentic.operators.job import Ran

    now = time.time()
    metrics = [] if score is None else [MetricValue(name="score", value=score, direction="maximize")]
    j.step_finished(
        node.id,
        1,
        StepResult(
            step="run",
            started_at=now,
            finished_at=now,
            outcome=Ran(
                workspace="w", execution=ExecSummary(exit_code=0), metrics=metrics, run_problem=problem
            ),
        ),
    )


def test_a_stage_is_decided_without_waiting_for_judgements_that_cannot_make_a_best(tmp_path: Path) -> None:
    j, sm = manager(tmp_path, speculate=False)
    sm.cfg.stages["a"].max_nodes = 4
    best, worse, failed, thinking = add(j, sm.propose(4))
    for n in (worse, failed, thinking):
        j.attempt_started(n.id, 1, "think")
    finish(j, best, 0.5)
    ran(j, worse, 0.3)
    ran(j, failed, None, problem="exit code 1")
    assert sm.propose(4) == []  # `thinking` has no metric yet: it might still win
    ran(j, thinking, 0.49)
    out = sm.propose(4)
    decision = j.stage_best[("default", "a")]
    assert decision.node_id == best.id and out and out[0].kind == "replication"
    assert f"not waiting for the judgement of {worse.id}, {failed.id}, {thinking.id}" in decision.reason


@pytest.mark.parametrize("score", [0.9, 0.5])  # better, or a tie (awaited too)
def test_a_judgement_that_might_make_a_better_best_is_awaited(tmp_path: Path, score: float) -> None:
    j, sm = manager(tmp_path, speculate=False)
    first, second = add(j, sm.propose(2))
    finish(j, first, 0.5)
    j.attempt_started(second.id, 1, "think")
    ran(j, second, score)
    assert sm.propose(4) == [] and ("default", "a") not in j.stage_best


def test_without_speculate_the_stage_end_waits(tmp_path: Path) -> None:
    j, sm = manager(tmp_path, speculate=False)
    first, second = add(j, sm.propose(2))
    finish(j, first, 0.5)
    j.attempt_started(second.id, 1)
    assert sm.propose(4) == []


def test_the_next_stage_grows_as_the_leader_firms_up(tmp_path: Path) -> None:
    """Its share of the next stage's budget follows the share of contenders that cannot beat the
    stage's leader, and a run that beats it leads at once, before its judgement."""
    j, sm = manager(tmp_path)
    sm.cfg.stages["a"].max_nodes, sm.cfg.stages["b"].max_nodes = 4, 4
    first, second, third, fourth = add(j, sm.propose(4))
    for n in (second, third, fourth):
        j.attempt_started(n.id, 1, "think")
    finish(j, first, 0.5)

    def grown() -> list[Node]:
        return [n for n in add(j, sm.propose(8)) if n.stage == "b"]

    assert [n.parent_id for n in grown()] == [first.id]  # 1 of 4 in: a quarter of b
    finish(j, second, 0.3)
    assert [n.parent_id for n in grown()] == [first.id]  # 2 of 4: half of b, one more
    ran(j, third, 0.9)  # beats `first`; its judgement is still out, and it leads
    lead = grown()
    assert [n.parent_id for n in lead] == [third.id] * 3  # only `fourth` may beat it: three quarters
    assert len([n for n in j if n.status == NodeStatus.DISCARDED]) == 2  # the two grown from `first`
    ran(j, fourth, 0.2)
    assert [n.parent_id for n in grown()] == [third.id]  # none can beat it now: all of b
    assert ("default", "a") not in j.stage_best  # the decision still awaits its judgement
    finish(j, third, 0.9)
    assert grown() == []
    assert j.stage_best[("default", "a")].node_id == third.id  # `fourth` cannot win: decided
    assert {n.parent_id for n in j.in_stage("b", idea="default")} == {third.id}
    assert len(j.in_stage("b", idea="default")) == 4


def test_a_leader_judged_buggy_takes_its_line_with_it(tmp_path: Path) -> None:
    """The next stage grows from a run whose judgement is out; replicates, which hold slots,
    wait for a judged node. A judgement that rules the leader out discards what grew from it,
    and the next best leads."""
    j, sm = manager(tmp_path)
    first, second = add(j, sm.propose(2))
    finish(j, first, 0.5)
    j.attempt_started(second.id, 1, "think")
    now = time.time()
    ran(j, second, 0.9)
    ahead = add(j, sm.propose(4))
    assert [(n.stage, n.kind, n.parent_id) for n in ahead] == [
        ("a", "replication", first.id),
        ("b", "try", second.id),
        ("b", "try", second.id),
    ]
    j.attempt_finished(
        second.id,
        1,
        AttemptResult(
            status="buggy", reason="judged buggy: leaks the labels", started_at=now, finished_at=now
        ),
    )
    fresh = add(j, sm.propose(4))
    assert j.stage_best[("default", "a")].node_id == first.id
    assert all(j.nodes[n.id].status == NodeStatus.DISCARDED for n in ahead[1:])
    assert [n.parent_id for n in fresh if n.stage == "b"] == [first.id, first.id]
    assert not [n for n in fresh if n.kind == "replication"]  # `first` has its replicate already


def test_claims_of_discarded_nodes_are_void_and_listed_ones_are_told_apart(tmp_path: Path) -> None:
    book = ClaimBook(tmp_path, "idea", "ablation", "ablation")
    assert book.claim("no_filter", "n1") is None
    assert ClaimBook(tmp_path, "idea", "ablation", "ablation").claim("no_filter", "n2") == "n1"
    # n1 was discarded: its claim is void and n2 takes the ablation over.
    takeover = ClaimBook(tmp_path, "idea", "ablation", "ablation", void=frozenset({"n1"}))
    assert takeover.tried() == []
    assert takeover.claim("no_filter", "n2") is None
    assert book.tried() == [("n2", "no_filter")]
