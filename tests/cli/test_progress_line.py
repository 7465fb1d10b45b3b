"""The live progress line (silva/progress.py) of a forest with documents, failures and jobs in flight."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node, NodeStatus
from engine.summary import DOCUMENT_STAGES
from silva.progress import DOCUMENT_STATE, Progress


def forest(run_dir: Path) -> Journal:
    j = Journal.open(run_dir)
    j.record(
        ev.RunStarted(config={}, metrics=[MetricSpec(name="m", primary=True).model_dump()], stages=["s"])
    )
    for k in range(1, 25):
        idea = f"idea{k % 3}"
        if k % 6 == 0:
            stage = kind = "paper" if k % 12 else "review"
        else:
            stage, kind = "s", "draft"
            j.record(ev.StageStarted(idea=idea, stage=stage, root=None))
        node = j.add_node(Node(stage=stage, kind=kind, idea=idea))
        if k % 5 == 0:
            continue  # pending
        j.attempt_started(node.id, 1)
        if k % 7 == 0:
            continue  # running
        good = k % 4 != 0
        j.attempt_finished(
            node.id,
            1,
            AttemptResult(status="good" if good else "buggy", metrics=[MetricValue(name="m", value=k)]),
        )
        if k == 9:
            j.discard(node.id, "moot")
    j.record(ev.StageEnded(idea="idea1", stage="s", reason="done", best_node_id=None))
    return j


def scanned(journal: Journal) -> str:
    """The totals part of the line as a scan of every node makes it."""
    counts = {s: 0 for s in NodeStatus}
    documents = []
    for n in journal:
        if n.kind in DOCUMENT_STAGES:
            documents.append(f"{n.kind} {DOCUMENT_STATE.get(n.status, n.status.value)}")
        else:
            counts[n.status] += 1
    head = (
        f"{len(journal.nodes) - len(documents)} experiment nodes: {counts[NodeStatus.GOOD]} good, "
        f"{counts[NodeStatus.BUGGY]} buggy, {counts[NodeStatus.RUNNING]} running"
    )
    return " | ".join([head, *documents])


def test_the_line_is_made_from_the_journal_indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = forest(tmp_path)
    expected = scanned(j)
    assert "paper done | review failed | paper done | review failed" in expected
    monkeypatch.setattr(Journal, "__iter__", lambda self: pytest.fail("the line scanned every node"))
    line = Progress(interval_s=0).line(j)
    assert line.startswith(expected + " | ") and "idea0/s" in line and "idea1/s" in line
    j.log.close()
