"""Journal events (engine/events.py): every declared type is written through its model and read
back as that model; a line that does not fit its model is damage; older lines still open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from engine import events as ev
from engine.eventlog import EVENTS_FILE, JournalDamaged
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node, StepResult


def one_of_each(node_id: str) -> list[ev.Event]:
    """An event of every declared type (those naming a node name `node_id`)."""
    return [
        ev.RunStarted(
            config={"name": "x"}, metrics=[MetricSpec(name="m", primary=True)], stages=["s"], format=2
        ),
        ev.SessionStarted(resumed=False),
        ev.ClusterJoined(
            kind="private", address="h:1", dashboard=None, nodes=1, cpus=4.0, gpus=0.0, ray_version="2"
        ),
        ev.SlotsChanged(slots=3),
        ev.NodeCreated(node=Node(id=node_id, stage="s", kind="draft", code="print(1)")),
        ev.AttemptStarted(node_id=node_id, attempt=1, step="think"),
        ev.StepFinished(
            node_id=node_id, attempt=1, step="think", result=StepResult(step="think", cost_usd=0.5)
        ),
        ev.AttemptLost(node_id=node_id, attempt=1, error="worker died"),
        ev.AttemptCancelled(node_id=node_id, attempt=2),
        ev.ComputeUsed(node_id=node_id, attempt=2, how="cancelled", num_gpus=1.0, seconds=2.0, gpu_s=2.0),
        ev.AttemptFinished(
            node_id=node_id,
            attempt=3,
            result=AttemptResult(status="good", metrics=[MetricValue(name="m", value=0.5)], code="x" * 600),
        ),
        ev.NodeDiscarded(node_id=node_id, reason="premise failed"),
        ev.BudgetChanged(changes={"gpu_hours": 2.0}, previous={"gpu_hours": None}, source="test"),
        ev.BudgetChangeRefused(request="r.json", reason="not a number"),
        ev.StageStarted(idea="default", stage="s", root=None),
        ev.StageBest(idea="default", stage="s", node_id=node_id, metric="m", value=0.5, reason="best"),
        ev.StageEnded(idea="default", stage="s", best_node_id=node_id, reason="done"),
        ev.HeldoutSelected(idea="default", metric="m", node_id=node_id, heldout_value=0.4, reason="best"),
        ev.IdeaStopped(idea="default", reason="budget"),
        ev.IdeaAdmitted(idea="new", spec={"title": "t"}, budgets={"max_nodes": 9}, similarity=0.2),
        ev.IdeaRejected(idea="twin", verdict="duplicate", reason="similarity 0.95 to new"),
        ev.IdeaPublished(idea="new"),
        ev.IdeationEnded(reason="10 ideas admitted"),
        ev.AllocationDecided(decision="stopped", idea="default", reason="budget", scores={"default": None}),
        ev.DiscoverySplit(
            data="t.csv",
            sha256="0" * 64,
            seed=1,
            heldout_fraction=0.3,
            rows={"train": 7, "heldout": 3},
            columns=["a"],
            groups=10,
            duplicate_rows=0,
            heldout_duplicates_dropped=0,
        ),
        ev.DiscoveryEvaluated(node_id=node_id, kind="hypothesis", reason=""),
        ev.GateDecided(node_id=node_id, stage="train", decision={"passed": True}),
        ev.ChainEnded(chain=node_id, steps=[node_id], best=node_id),
        ev.BankUpdated(added=node_id, bank=[node_id]),
        ev.DiscoveryFinished(reason="done", counts={"accepted": 1}),
        ev.StatefulOp(op="stop", reason="step budget used"),
        ev.ReviewStarted(job="r1", idea="default", paper="p", attempt=1),
        ev.ReviewFinished(job="r1", idea="default", paper="p", attempt=1, status="good"),
        ev.RunStopped(reason="interrupted", signal="SIGINT"),
        ev.RunFinished(reason="all stages complete", kind="complete"),
    ]


def test_every_declared_event_is_written_through_its_model_and_read_back(tmp_path: Path) -> None:
    written = one_of_each("n0000")
    assert {e.type for e in written} == set(ev.DECLARED)  # a new event type gets a line above
    j = Journal.open(tmp_path)
    recorded = [j.record(e) for e in written]
    j.log.close()
    assert [e.seq for e in recorded] == list(range(len(written)))
    back = Journal.open(tmp_path, read_only=True)
    events = list(back.log.events)
    assert [type(e) for e in events] == [type(e) for e in written]
    assert [(e.seq, e.ts) for e in events] == [(e.seq, e.ts) for e in recorded]
    for before, after in zip(written, events, strict=True):
        assert after.model_dump(exclude={"seq", "ts"}) == before.model_dump(exclude={"seq", "ts"})
    # The readers of the replay see models: the journal's own views, and a typed read.
    assert back.stop is not None and back.stop.signal == "SIGINT"
    assert back.finished is not None and back.finished.kind == "complete"
    assert back.stage_best[("default", "s")].value == 0.5 and back.slots == 3
    assert back.nodes["n0000"].code == "x" * 600  # stored as a blob, read back as its text
    (lost,) = back.log.read(ev.AttemptLost)
    assert lost.error == "worker died"


def test_the_union_refuses_a_line_without_a_required_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="attempt"):
        ev.parse({"seq": 0, "ts": 1.0, "type": "attempt_started", "node_id": "n0000"})
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}))
    j.add_node(Node(stage="s", kind="draft"))
    j.log.close()
    with (tmp_path / EVENTS_FILE).open("a") as f:  # a reader that wrote `nodeid` would be caught too
        f.write(json.dumps({"seq": 2, "ts": 1.0, "type": "attempt_started", "nodeid": "n0000", "attempt": 1}))
        f.write("\n")
    with pytest.raises(JournalDamaged, match="line 3.*wrong content at attempt_started.node_id"):
        Journal.open(tmp_path, read_only=True)


def test_a_writer_cannot_add_an_undeclared_field(tmp_path: Path) -> None:
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}))
    node = j.add_node(Node(stage="s", kind="draft"))
    with pytest.raises(TypeError, match="declares no field eror"):
        j.record(ev.AttemptLost(node_id=node.id, attempt=1, eror="typo"))
    assert j.log.count == 2  # nothing written
    with pytest.raises(ValueError, match="not declared"):
        j.log.append({"seq": 0, "ts": 0.0, "type": "made_up"})
    j.log.close()


def test_older_lines_open_with_their_extra_fields_and_retired_types(tmp_path: Path) -> None:
    lines = [
        {"seq": 0, "ts": 1.0, "type": "run_started", "config": {}, "metrics": [], "retired_field": 1},
        {"seq": 1, "ts": 2.0, "type": "a_type_since_retired", "what": "kept"},
        {"seq": 2, "ts": 3.0, "type": "session_started", "resumed": False},
    ]
    (tmp_path / EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in lines))
    j = Journal.open(tmp_path, read_only=True)
    started, retired, session = j.log.events
    assert isinstance(started, ev.RunStarted) and started.model_extra == {"retired_field": 1}
    assert isinstance(retired, ev.UnknownEvent) and retired.type == "a_type_since_retired"
    assert retired.model_extra == {"what": "kept"} and isinstance(session, ev.SessionStarted)
    assert j.event_format == 1 and len(j.sessions) == 1
