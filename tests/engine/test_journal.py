"""The journal: append-only, fsynced, replayable, tolerant of a torn last line."""

from __future__ import annotations

from pathlib import Path

from engine import events as ev
from engine.journal import EVENTS_FILE, Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node, NodeStatus


def result(value: float, status: str = "good") -> AttemptResult:
    return AttemptResult(status=status, metrics=[MetricValue(name="acc", value=value, direction="maximize")])


def seeded(tmp_path: Path) -> Journal:
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}, metrics=[MetricSpec(name="acc", primary=True).model_dump()]))
    j.record(ev.SessionStarted(resumed=False))
    return j


def test_replay_rebuilds_tree_and_derived_views(tmp_path: Path) -> None:
    j = seeded(tmp_path)
    root = j.add_node(Node(stage="preliminary", kind="draft"))
    bug = j.add_node(Node(parent_id=root.id, stage="preliminary", kind="improve"))
    fix1 = j.add_node(Node(parent_id=bug.id, stage="preliminary", kind="debug"))
    fix2 = j.add_node(Node(parent_id=fix1.id, stage="preliminary", kind="debug"))
    for node, res in [
        (root, result(0.5)),
        (bug, result(0, "buggy")),
        (fix1, result(0, "buggy")),
        (fix2, result(0.7)),
    ]:
        j.attempt_started(node.id, 1)
        assert j.attempt_finished(node.id, 1, res)
    j.log.close()

    again = Journal.open(tmp_path)
    assert [n.id for n in again.children(root.id)] == [bug.id]
    assert [n.id for n in again.leaves] == [fix2.id]
    assert {n.id for n in again.buggy_nodes} == {bug.id, fix1.id}
    assert again.debug_depth(fix2.id) == 2 and again.debug_depth(root.id) == 0
    assert again.best_node().id == fix2.id  # type: ignore[union-attr]
    assert again.nodes[fix2.id].status == NodeStatus.GOOD and again.nodes[fix2.id].attempts == 1


def test_minimize_direction_and_second_result_ignored(tmp_path: Path) -> None:
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}, metrics=[{"name": "loss", "direction": "minimize", "primary": True}]))
    a, b = j.add_node(Node(stage="s", kind="k")), j.add_node(Node(stage="s", kind="k"))
    lo = AttemptResult(status="good", metrics=[MetricValue(name="loss", value=0.1, direction="minimize")])
    hi = AttemptResult(status="good", metrics=[MetricValue(name="loss", value=0.9, direction="minimize")])
    assert j.attempt_finished(a.id, 1, hi) and j.attempt_finished(b.id, 1, lo)
    assert j.best_node().id == b.id  # type: ignore[union-attr]
    assert not j.attempt_finished(b.id, 2, hi)  # a node never gets two results
    assert j.nodes[b.id].metric("loss") == 0.1
    assert sum(isinstance(e, ev.AttemptFinished) for e in j.log.events) == 2


def test_torn_last_line_is_dropped_and_log_stays_appendable(tmp_path: Path) -> None:
    j = seeded(tmp_path)
    node = j.add_node(Node(stage="s", kind="k"))
    j.log.close()
    with (tmp_path / EVENTS_FILE).open("ab") as f:
        f.write(b'{"seq": 3, "type": "attempt_sta')  # the driver died mid-write
    again = Journal.open(tmp_path)
    assert list(again.nodes) == [node.id] and len(again.log.events) == 3
    again.attempt_started(node.id, 1)
    again.log.close()
    lines = (tmp_path / EVENTS_FILE).read_text().splitlines()
    assert len(lines) == 4 and '"attempt_started"' in lines[-1]


def test_elapsed_sums_sessions(tmp_path: Path) -> None:
    j = seeded(tmp_path)
    j.sessions = [(100.0, 110.0), (200.0, 205.0)]
    assert j.elapsed_s() == 15.0
    assert j.elapsed_s(now=230.0) == 40.0


def test_lost_attempt_returns_node_to_pending(tmp_path: Path) -> None:
    j = seeded(tmp_path)
    node = j.add_node(Node(stage="s", kind="k"))
    j.attempt_started(node.id, 1)
    j.record(ev.AttemptLost(node_id=node.id, attempt=1, error="WorkerCrashedError"))
    assert j.nodes[node.id].status == NodeStatus.PENDING and j.nodes[node.id].lost_attempts == 1
    assert [n.id for n in j.unfinished] == [node.id]
