"""Running totals kept by the journal (docs/engine.md): equal to a full replay's after a
resume and after a snapshot, and `silva status` reads the same with or without a snapshot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import engine.eventlog as eventlog
from engine import events as ev
from engine.budgets import ComputeMeter, orphans
from engine.config import Budgets, Resources
from engine.eventlog import SNAPSHOT_FILE
from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node
from engine.totals import Totals
from silva.cli.main import main
from tests.helpers import make_config, make_template

GPU = Resources(num_cpus=1, num_gpus=0.5)


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventlog, "SNAPSHOT_EVERY", 25)


def session(run_dir: Path, nodes: int, left_running: int, first: bool) -> None:
    """One driver session: nodes finished (every third lost once first), a budget change, and
    `left_running` attempts the driver dies with (no end, no charge)."""
    j = Journal.open(run_dir)
    if first:
        j.record(ev.RunStarted(config={}, metrics=[MetricSpec(name="m", primary=True).model_dump()]))
    j.record(ev.SessionStarted(resumed=not first))
    meter = ComputeMeter(j, Budgets())
    meter.start_session(lambda kind: GPU)  # charges what the previous session left running
    base = len(j.nodes)
    for k in range(base, base + nodes + left_running):
        node = j.add_node(Node(stage="s1", kind="draft", idea="ab"[k % 2], plan=f"plan {k}"))
        attempt = 1
        if k % 3 == 0:
            j.attempt_started(node.id, attempt)
            j.record(
                ev.ComputeUsed(
                    node_id=node.id,
                    attempt=attempt,
                    idea=node.idea,
                    kind="draft",
                    how="lost",
                    num_gpus=0.5,
                    num_cpus=1.0,
                    seconds=2.0,
                    gpu_s=1.0,
                    cpu_s=2.0,
                )
            )
            j.record(ev.AttemptLost(node_id=node.id, attempt=attempt, error="worker died"))
            attempt = 2
        j.attempt_started(node.id, attempt)
        if k >= base + nodes:
            continue  # running when the driver dies
        j.record(
            ev.ComputeUsed(
                node_id=node.id,
                attempt=attempt,
                idea=node.idea,
                kind="draft",
                how="finished",
                num_gpus=0.5,
                num_cpus=1.0,
                seconds=float(k),
                gpu_s=k / 2,
                cpu_s=float(k),
            )
        )
        j.attempt_finished(
            node.id,
            attempt,
            AttemptResult(
                status="good",
                metrics=[MetricValue(name="m", value=k)],
                execution=ExecSummary(stdout_tail=f"out {k}"),
            ),
        )
    j.record(ev.BudgetChanged(changes={"gpu_hours": 10.0 + base}, previous={"gpu_hours": None}))
    j.log.close()  # no run_stopped: as if killed


def check(j: Journal) -> None:
    replayed = Totals.replay(j.log.events)
    assert j.totals == replayed
    assert math.isclose(j.totals.spend.total.gpu_s, sum(e.gpu_s for e in j.log.read(ev.ComputeUsed)))


def test_totals_equal_a_full_replay_after_resumes_and_snapshots(tmp_path: Path) -> None:
    run = tmp_path / "run"
    session(run, nodes=12, left_running=2, first=True)
    session(run, nodes=9, left_running=1, first=False)  # charges the 2 orphans of the first
    j = Journal.open(run, read_only=True)
    assert (run / SNAPSHOT_FILE).is_file() and j.log.snapshot_count > 0
    check(j)
    # The two orphans were charged once, at the second session's start; the one left by the
    # second session is an orphan only once a next session starts.
    charged = [e for e in j.log.read(ev.ComputeUsed) if e.how == "orphan"]
    assert len(charged) == 2 and not orphans(j, lambda kind: GPU)
    last_start = j.log.events[-2]
    assert isinstance(last_start, ev.AttemptStarted)
    assert list(j.totals.jobs.running) == [(last_start.node_id, 1)]
    assert j.totals.budget_changes == {"gpu_hours": 24.0}
    assert ComputeMeter(j, Budgets(gpu_hours=1.0)).budgets.gpu_hours == 24.0
    assert j.totals.busy.running and j.totals.busy.ended_s > 0
    (run / SNAPSHOT_FILE).unlink()
    check(Journal.open(run, read_only=True))
    j = Journal.open(run)
    j.record(ev.SessionStarted(resumed=True))
    assert [h.node_id for h, _ in orphans(j, lambda kind: GPU)] == [list(j.nodes)[-1]]
    assert (
        orphans(j, lambda kind: Resources(num_cpus=0, num_gpus=0)) == []
    )  # it held nothing: nothing to charge
    j.log.close()
    session(run, nodes=3, left_running=0, first=False)
    j = Journal.open(run, read_only=True)
    check(j)
    assert not orphans(j, lambda kind: GPU)
    assert len([e for e in j.log.read(ev.ComputeUsed) if e.how == "orphan"]) == 3


def test_status_reads_the_same_with_and_without_a_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(make_config(tmp_path, make_template(tmp_path / "tpl")))]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    assert (run_dir / SNAPSHOT_FILE).is_file()
    capsys.readouterr()
    assert main(["status", str(run_dir)]) == 0
    with_snapshot = capsys.readouterr().out
    (run_dir / SNAPSHOT_FILE).unlink()
    assert main(["status", str(run_dir)]) == 0
    assert capsys.readouterr().out == with_snapshot
    assert "throughput:" in with_snapshot


def test_attempts_a_killed_driver_left_open_stop_counting_at_the_next_session() -> None:
    """Slot time of a job the dead driver never saw end runs to that session's last event, not on
    for ever: `silva status` after a resume read 815% of 2 slots."""
    t = Totals()
    for e in (
        ev.SessionStarted(resumed=False, ts=100.0),
        ev.AttemptStarted(node_id="n0001", attempt=1, ts=110.0),
        ev.AttemptStarted(node_id="n0002", attempt=1, ts=120.0),
        ev.NodeCreated(node=Node(id="n0003", stage="s1", kind="draft"), ts=150.0),  # the last word
        ev.SessionStarted(resumed=True, ts=1000.0),
    ):
        t.apply(e)
    assert t.busy.seconds(now=5000.0) == pytest.approx((150 - 110) + (150 - 120))


def test_a_job_that_holds_no_slot_is_no_slot_time() -> None:
    """A stage's selection or a review only waits on the LLM: counted as held, a rolling forest
    on 4 slots read 104% in `silva status`."""
    t = Totals()
    for e in (
        ev.SessionStarted(resumed=False, ts=100.0),
        ev.AttemptStarted(node_id="n0001", attempt=1, ts=110.0),
        ev.AttemptStarted(node_id="n0002", attempt=1, holds=False, ts=110.0),
        ev.AttemptFinished(node_id="n0001", attempt=1, result=AttemptResult(status="good"), ts=120.0),
        ev.AttemptFinished(node_id="n0002", attempt=1, result=AttemptResult(status="good"), ts=150.0),
    ):
        t.apply(e)
    assert t.busy.seconds(now=200.0) == pytest.approx(10.0)
