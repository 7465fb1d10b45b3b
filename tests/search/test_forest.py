"""A forest of ideas on shared workers and gateway; per-idea budgets; held-out selection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine import events as ev
from engine.executor import Job
from engine.journal import Journal
from engine.llm.ledger import summarize
from engine.node import Node, NodeStatus
from search.agentic.operators.outcome import operator_outcome
from search.allocation import Allocation, IdeaInfo
from search.config import AllocationConfig, IdeaBudgets
from search.forest import Forest
from search.template.plan import PLAN
from tests.search.agentic_helpers import agentic_config, idea_file, llm_nodes, responder, start

STAGES = PLAN.names


@pytest.mark.e2e
def test_two_ideas_grow_concurrently_within_their_budgets(tmp_path: Path) -> None:
    a = idea_file(tmp_path, "sym")
    b = idea_file(
        tmp_path, "asym", hypothesis="Under asymmetric noise a numpy logistic regression learns the flips."
    )
    cfg = agentic_config(
        tmp_path,
        ideas=[a, {"path": b, "max_nodes": 6}],
        replicates=1,
        executor={"kind": "inprocess", "max_in_flight": 4},
    )
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "finished"
    assert outcome.message == "sym: all four stages complete; asym: idea asym: node budget of 6 used up"
    sym = [n for n in j if n.idea == "sym"]
    asym = [n for n in j if n.idea == "asym"]
    assert len(asym) == 6 and j.idea_stopped["asym"].reason == "idea asym: node budget of 6 used up"
    assert all(("sym", s) in j.stage_ended for s in STAGES)
    # Both trees were in flight at once on the shared workers.
    assert any(x.started_at < y.finished_at and y.started_at < x.finished_at for x in sym for y in asym)  # type: ignore[operator]
    # One gateway and ledger for the forest, accounted per idea; each tree keeps to its own idea.
    ledger = summarize(j.log.path.parent)
    assert set(ledger["by_idea"]) >= {"sym", "asym"}
    assert all(j.nodes[n.parent_id].idea == n.idea for n in j if n.parent_id)
    assert all("noise_type': 'asymmetric'" in n.code for n in llm_nodes(j) if n.idea == "asym" and n.code)
    assert (j.log.path.parent / "notes" / "asym" / "journal.md").read_text().count("Stopped early") == 1


@pytest.mark.e2e
def test_heldout_selection_uses_data_the_search_never_saw(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text("x,y\n1,0\n")
    (tmp_path / "test.csv").write_text("x,y\n2,1\n")
    idea = idea_file(tmp_path, datasets=["train.csv"], heldout_data=["test.csv"])
    cfg = agentic_config(
        tmp_path, idea=str(idea), replicates=1, search={"heldout": True, "heldout_candidates": 2}
    )
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "finished" and "held-out choice" in outcome.message
    run_dir = j.log.path.parent
    for n in j:
        if n.kind in ("aggregation", "selection") or not n.execution:  # they run no code
            continue
        ws = run_dir / "nodes" / n.id / f"attempt-{n.attempts}"
        assert (ws / "data" / "train.csv").is_file()
        assert (ws / "data" / "heldout" / "test.csv").is_file() == (n.kind == "heldout"), n.id
        assert (operator_outcome(n).split == "heldout") == (n.kind == "heldout")
    runs = j.in_stage("heldout", "heldout")
    h = j.heldout["noise"]
    assert len(runs) == len(h.candidates) == 2 and all(r.status == NodeStatus.GOOD for r in runs)
    assert h.search_best_id == j.stage_ended[("noise", "agenda")].best_node_id
    best_run = max(runs, key=lambda r: r.metric("val_accuracy"))  # type: ignore[arg-type, return-value]
    assert (h.node_id, h.heldout_value) == (best_run.parent_id, best_run.metric("val_accuracy"))
    assert h.search_value == j.nodes[h.node_id or ""].metric("val_accuracy")
    assert "held-out selection" in (run_dir / "notes" / "noise" / "journal.md").read_text()


@pytest.mark.e2e
def test_agentic_forest_holds_ideas_at_rungs_and_extends_the_promoted_one(tmp_path: Path) -> None:
    """Successive halving with rungs inside stages on an agentic forest: each idea's agenda stage
    holds one search node until the first rung, the two ideas not in the top third stop there,
    and the budget they return extends the promoted idea's agenda stage (IdeaTree reads
    Allocation.max_nodes through TreeSettings, as the template forest does)."""
    ideas = [
        idea_file(tmp_path, "sym"),
        idea_file(
            tmp_path,
            "asym",
            hypothesis="Under asymmetric noise a numpy logistic regression learns the flips.",
        ),
        idea_file(
            tmp_path, "third", hypothesis="Label smoothing helps a numpy logistic regression under 30% noise."
        ),
    ]
    stages = {
        "preliminary": {"max_nodes": 2},
        "hyperparameter": {"max_nodes": 1},
        "agenda": {"max_nodes": 3},
        "ablation": {"max_nodes": 1},
    }
    cfg = agentic_config(
        tmp_path,
        ideas=ideas,
        replicates=1,
        stages=stages,
        allocation={"policy": "successive_halving", "rungs": "geometric"},
        budgets={"wall_clock_s": 300, "node_timeout_s": 30, "gpu_hours": 1.0},
        resources={"default": {"num_cpus": 1, "num_gpus": 0.25}},
    )
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "finished"
    events = [e for e in j.log.read(ev.AllocationDecided)]
    assert events[0].rungs == ["1 search node(s) of stage agenda"]
    decided = {e.idea or "": e for e in events if e.decision in ("promoted", "stopped")}
    winner = next(i for i, e in decided.items() if e.decision == "promoted")
    assert [e.decision for e in decided.values()].count("stopped") == 2
    assert all((e.rung, e.stage, e.nodes) == (1, "agenda", 1) for e in decided.values())
    extended = next(e for e in events if e.decision == "extended")
    assert extended.idea == winner and extended.stage == "agenda" and (extended.max_nodes or 0) > 3

    def searched(idea: str) -> int:
        return len(
            [
                n
                for n in j.in_stage("agenda", idea=idea)
                if n.kind not in ("replication", "aggregation", "selection")
            ]
        )

    assert searched(winner) == extended.max_nodes
    assert all(searched(i) == 1 for i in decided if i != winner)
    assert all((winner, s) in j.stage_ended for s in STAGES)


class Growing:
    """A tree that proposes all it is offered; its nodes stay in flight."""

    def __init__(self, name: str, inflight: int) -> None:
        self.name, self.n = name, inflight

    def inflight(self) -> int:
        return self.n

    def stopped(self) -> bool:
        return False

    def finished(self) -> None:
        return None

    def propose(self, slots: int) -> list[Node]:
        self.n += slots
        return [Node(stage=STAGES[0], kind="draft", idea=self.name) for _ in range(slots)]

    def job_for(self, node: Node, attempt: int) -> Job:
        raise AssertionError("not dispatched here")


def fair_forest(tmp_path: Path, inflight: list[int]) -> Forest:
    ideas = [IdeaInfo(f"i{k}", None, IdeaBudgets()) for k in range(len(inflight))]
    trees = [Growing(f"i{k}", n) for k, n in enumerate(inflight)]
    return Forest(trees, 4, Allocation(AllocationConfig(), Journal.open(tmp_path / "run"), PLAN, ideas))


def test_fair_shares_scale_to_the_look_ahead(tmp_path: Path) -> None:
    """Four ideas on four slots, each with a node thinking: the dispatcher asks for eight more
    (free slots plus look-ahead), and each idea gets two, not the last one asked all eight."""
    out = fair_forest(tmp_path, [1, 1, 1, 1]).propose(8)
    assert Counter(n.idea for n in out) == {"i0": 2, "i1": 2, "i2": 2, "i3": 2}


def test_fair_shares_without_look_ahead_are_of_the_slots(tmp_path: Path) -> None:
    assert Counter(n.idea for n in fair_forest(tmp_path / "a", [0, 0, 0, 0]).propose(4)) == {
        f"i{k}": 1 for k in range(4)
    }
    # Two ideas hold a slot each; the two free slots go to the two with nothing in flight.
    assert Counter(n.idea for n in fair_forest(tmp_path / "b", [1, 0, 1, 0]).propose(2)) == {"i1": 1, "i3": 1}
