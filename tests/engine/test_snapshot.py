"""Driver scaling (docs/engine.md): journal snapshots, the file-backed event list, group commit."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import engine.eventlog as eventlog
from engine import events as ev
from engine.config import Resources
from engine.eventlog import EVENTS_FILE, SNAPSHOT_FILE, JournalDamaged
from engine.executor import Handle, Job, JobDone
from engine.groupcommit import GroupCommit
from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventlog, "SNAPSHOT_EVERY", 20)


def grow(run_dir: Path, nodes: int, start: int = 0) -> None:
    j = Journal.open(run_dir)
    if not j.nodes:
        j.record(ev.RunStarted(config={}, metrics=[MetricSpec(name="m", primary=True).model_dump()]))
        j.record(ev.StageStarted(idea="a", stage="s1", root=None))
    for k in range(start, start + nodes):
        node = j.add_node(
            Node(
                stage="s1",
                kind="draft",
                idea="a" if k % 2 else "b",
                plan=f"plan {k}",
                parent_id=f"n{k - 1:04d}" if k else None,
            )
        )
        j.attempt_started(node.id, 1)
        j.attempt_finished(
            node.id,
            1,
            AttemptResult(
                status="good" if k % 3 else "buggy",
                metrics=[MetricValue(name="m", value=k / 10)],
                execution=ExecSummary(stdout_tail=f"out {k}"),
                finished_at=float(k),
            ),
        )
    j.log.close()


def state(j: Journal) -> dict[str, Any]:
    return {
        "nodes": [n.model_dump(mode="json") for n in j.nodes.values()],
        "stages": (j.stage_started, j.stage_best, j.stage_ended),
        "sessions": j.sessions,
        "children": j._children,
        "by_stage": j._by_stage,
        "good": list(j._status[next(iter(j._status))]),
        "count": j.log.count,
        "best": best.id if (best := j.best_node()) else None,
    }


def full_replay(run_dir: Path) -> dict[str, Any]:
    snap = run_dir / SNAPSHOT_FILE
    kept = snap.read_bytes()
    snap.unlink()
    try:
        return state(Journal.open(run_dir, read_only=True))
    finally:
        snap.write_bytes(kept)


def test_snapshot_plus_tail_equals_a_full_replay(tmp_path: Path) -> None:
    grow(tmp_path, 12)  # 36 events and more: a snapshot was written on the way
    assert (tmp_path / SNAPSHOT_FILE).is_file()
    j = Journal.open(tmp_path, read_only=True)
    assert 0 < j.log.snapshot_count < j.log.count  # the snapshot, then the events after it
    assert state(j) == full_replay(tmp_path)
    grow(tmp_path, 5, start=12)  # a writer reopens from the snapshot and goes on
    again = Journal.open(tmp_path, read_only=True)
    assert again.log.snapshot_count > j.log.snapshot_count
    assert state(again) == full_replay(tmp_path) and len(again.nodes) == 17


def test_events_are_read_back_from_the_file(tmp_path: Path) -> None:
    grow(tmp_path, 6)
    j = Journal.open(tmp_path, read_only=True)
    lines = [ev.parse(json.loads(line)) for line in (tmp_path / EVENTS_FILE).read_bytes().splitlines()]
    assert list(j.log.events) == lines and len(j.log.events) == len(lines)
    assert j.log.events[3] == lines[3] and j.log.events[-1] == lines[-1] and j.log.events[2:5] == lines[2:5]
    assert list(j.log.read(ev.AttemptFinished, start=4)) == [
        e for e in lines[4:] if isinstance(e, ev.AttemptFinished)
    ]


def test_torn_tail_after_a_snapshot(tmp_path: Path) -> None:
    grow(tmp_path, 12)
    before = full_replay(tmp_path)
    with (tmp_path / EVENTS_FILE).open("ab") as f:
        f.write(b'{"seq": 99, "ts": 1.0, "type": "attempt_st')
    assert state(Journal.open(tmp_path, read_only=True)) == before  # a reader ignores it
    writer = Journal.open(tmp_path)
    assert writer.log.snapshot_count > 0 and state(writer) == before
    writer.log.close()
    assert (tmp_path / EVENTS_FILE).read_bytes().endswith(b"}\n")  # set aside by the writer
    assert next(tmp_path.glob(f"{EVENTS_FILE}.torn-*")).read_bytes().endswith(b"attempt_st")


def test_damaged_line_after_a_snapshot_is_reported(tmp_path: Path) -> None:
    grow(tmp_path, 12)
    lines = (tmp_path / EVENTS_FILE).read_bytes().count(b"\n")
    with (tmp_path / EVENTS_FILE).open("ab") as f:
        f.write(
            b"garbage\n" + b'{"seq": 1, "ts": 1.0, "type": "run_stopped", "reason": "x", "budget": null}\n'
        )
    with pytest.raises(JournalDamaged) as e:
        Journal.open(tmp_path, read_only=True)
    assert e.value.line == lines + 1 and "not JSON" in e.value.why


def test_damage_before_the_snapshot_offset_voids_it(tmp_path: Path) -> None:
    """A snapshot holds only for the exact bytes it was taken on: a line changed (or repaired
    away) before its offset makes the open replay the whole log, which reports the line."""
    grow(tmp_path, 12)
    data = bytearray((tmp_path / EVENTS_FILE).read_bytes())
    third = data.index(b"\n", data.index(b"\n") + 1) + 1  # start of line 3
    data[third] = ord("X")
    (tmp_path / EVENTS_FILE).write_bytes(bytes(data))
    with pytest.raises(JournalDamaged) as e:
        Journal.open(tmp_path, read_only=True)
    assert e.value.line == 3


def test_the_snapshot_is_written_beside_the_driver(tmp_path: Path) -> None:
    """The snapshot that falls due while the driver records is written by a forked child: the
    record returns at once, the events after it are not in it, and closing the log waits for it."""
    grow(tmp_path, 12)
    j = Journal.open(tmp_path)
    first = j.log.snapshot_count
    while j.log.count - j.log.snapshot_count < eventlog.SNAPSHOT_EVERY - 1:
        j.record(ev.StageStarted(idea="a", stage=f"s{j.log.count}", root=None))
    j.record(ev.StageStarted(idea="a", stage="due", root=None))  # the one that makes it due
    writer, taken = j.log._writer, j.log.snapshot_count
    assert writer is not None and writer != os.getpid() and taken == j.log.count > first
    j.record(ev.StageStarted(idea="a", stage="after", root=None))  # the driver goes on meanwhile
    j.log.close()
    assert j.log._writer is None  # waited for and collected
    again = Journal.open(tmp_path, read_only=True)
    assert again.log.snapshot_count == taken  # the state of the moment it was taken
    assert state(again) == full_replay(tmp_path) and ("a", "after") in again.stage_started


def test_a_failed_background_snapshot_keeps_the_previous_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    grow(tmp_path, 12)
    before = (tmp_path / SNAPSHOT_FILE).read_bytes()
    j = Journal.open(tmp_path)
    j.config = {"unpicklable": lambda: None}  # the child cannot pickle the state
    j.snapshot(background=True)
    j.record(ev.StageStarted(idea="a", stage="after", root=None))  # the driver is unaffected
    j.log.close()
    assert "the background snapshot failed" in caplog.text
    assert (tmp_path / SNAPSHOT_FILE).read_bytes() == before
    assert state(Journal.open(tmp_path, read_only=True)) == full_replay(tmp_path)


def test_a_snapshot_forked_from_a_driver_thread_is_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A driver may run in a thread other than the main one (a test's, an embedding program's)."""
    grow(tmp_path, 12)
    j = Journal.open(tmp_path)
    j.record(ev.StageStarted(idea="a", stage="more", root=None))
    thread = threading.Thread(target=lambda: j.snapshot(background=True))
    thread.start()
    thread.join()
    taken = j.log.snapshot_count
    j.log.close()
    assert "failed" not in caplog.text
    assert Journal.open(tmp_path, read_only=True).log.snapshot_count == taken == j.log.count


def rewrite_snapshot(run_dir: Path, body: bytes, **head: Any) -> None:
    path = run_dir / SNAPSHOT_FILE
    raw = path.read_bytes()
    old = json.loads(raw.split(b"\n", 1)[0])
    new = {**old, **head, "payload_sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(json.dumps(new).encode() + b"\n" + body)


def test_snapshot_of_other_code_or_with_foreign_objects_is_not_loaded(tmp_path: Path) -> None:
    grow(tmp_path, 12)
    expected = full_replay(tmp_path)
    payload = (tmp_path / SNAPSHOT_FILE).read_bytes().split(b"\n", 1)[1]
    rewrite_snapshot(tmp_path, payload, classes={"engine.node.Node": "0000"})  # a Node of another shape
    j = Journal.open(tmp_path, read_only=True)
    assert j.log.snapshot_count == 0 and state(j) == expected
    evil = pickle.dumps({"state": os.system, "offsets": b""})  # would name a function outside our packages
    rewrite_snapshot(tmp_path, evil)
    j = Journal.open(tmp_path, read_only=True)
    assert j.log.snapshot_count == 0 and state(j) == expected


class Recorder:
    """An inner executor that notes whether the journal had unsynced events at each submit."""

    def __init__(self, log: eventlog.EventLog) -> None:
        self.log, self.unsynced_at_submit, self.pending = log, [], []  # type: ignore[var-annotated]

    def submit(self, job: Job, resources: Resources) -> Handle:
        self.unsynced_at_submit.append(self.log._unsynced)
        self.pending.append(len(self.pending))
        return self.pending[-1]

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        ready = [h for h in handles if h in self.pending]
        if not ready:
            return None
        self.pending.remove(ready[0])
        return JobDone(ready[0], AttemptResult(status="good"))

    def cancel(self, handle: Handle) -> None:
        self.pending.remove(handle)

    def shutdown(self) -> None:
        pass


def test_group_commit_syncs_before_any_job_starts(tmp_path: Path) -> None:
    j = Journal.open(tmp_path)
    inner = Recorder(j.log)
    executor = GroupCommit(inner, j.log)
    job = Node(stage="s", kind="k")
    with j.log.group():
        j.record(ev.RunStarted(config={}, metrics=[]))
        handles = []
        for _ in range(3):
            node = j.add_node(job.model_copy())
            j.attempt_started(node.id, 1)
            handles.append(executor.submit(node, Resources()))  # type: ignore[arg-type]
        assert j.log._unsynced and inner.unsynced_at_submit == []  # nothing has left the driver yet
        done = [executor.wait(handles, 0) for _ in range(3)]
        assert inner.unsynced_at_submit == [False, False, False]  # one fsync, then all three started
        assert sorted(d.handle for d in done if d is not None) == sorted(handles)
        j.record(ev.RunFinished(reason="done", kind="complete"))
    assert not j.log._unsynced
    j.log.close()
    assert Journal.open(tmp_path, read_only=True).finished is not None


class Watched(list[Handle]):
    """Handles whose every iteration in Python is counted."""

    iterations = 0

    def __iter__(self) -> Iterator[Handle]:
        Watched.iterations += 1
        return super().__iter__()


def test_group_commit_waits_on_every_job_in_flight_without_mapping_each(tmp_path: Path) -> None:
    """The dispatcher waits on all its jobs in flight, in submission order: that list is the
    group commit's own, taken as it is; a subset, or a list with another's handle, is mapped."""
    j = Journal.open(tmp_path)
    j.record(ev.RunStarted(config={}, metrics=[]))
    nodes = [j.add_node(Node(stage="s", kind="k")) for _ in range(4)]
    executor = GroupCommit(Recorder(j.log), j.log)
    handles = [executor.submit(n, Resources()) for n in nodes]  # type: ignore[arg-type]
    executor.cancel(handles.pop(1))
    Watched.iterations = 0
    first = executor.wait(Watched(handles), 0)
    assert first is not None and first.handle == handles[0] and Watched.iterations == 0
    other = GroupCommit(Recorder(j.log), j.log)
    mine = [other.submit(n, Resources()) for n in nodes]  # type: ignore[arg-type]
    done = other.wait(Watched([mine[2], 10_000, mine[3], 10_001]), 0)  # two of its own, two unknown
    assert done is not None and done.handle == mine[2] and Watched.iterations == 1
    assert sorted(d.handle for d in [other.wait([mine[3]], 0)] if d) == [mine[3]]
    j.log.close()
