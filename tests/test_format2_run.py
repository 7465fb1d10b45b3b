"""A run directory written before journal events were typed models (event format 2: a discovery
run of examples/discovery with max_hypotheses 4, made by the code before engine/events.py)
still opens: the journal and a mode's own replay read its lines as typed events, and status and
export work on it. The format-1 run (tests/test_format1_run.py) is the older shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.node import EVENT_FORMAT
from search.discovery.state import DiscoveryState
from silva.cli.main import main

FIXTURE = Path(__file__).parent / "data" / "format2_run"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "cohort-old"
    shutil.copytree(FIXTURE, run_dir)
    return run_dir


def test_a_format2_run_replays_into_typed_events(old_run: Path) -> None:
    j = Journal.open(old_run, read_only=True)
    assert j.event_format == EVENT_FORMAT == 2 and len(j.nodes) == 4
    assert j.finished is not None and j.finished.kind == "complete"
    assert all(n.is_finished for n in j) and j.totals.spend.total.seconds > 0
    assert {type(e) for e in j.log.events} >= {ev.NodeCreated, ev.ComputeUsed, ev.GateDecided}
    assert not any(isinstance(e, ev.UnknownEvent) for e in j.log.events)
    state = DiscoveryState(j)
    assert state.split is not None and state.split.rows["train"] + state.split.rows["heldout"] == 400
    assert state.finished is not None and len(state.records) == 4
    assert all(r.decisions for r in state.records.values())


def test_status_and_export_of_a_format2_run(old_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (old_run / "events.jsonl").read_bytes()
    assert main(["status", str(old_run)]) == 0
    assert "finished:" in capsys.readouterr().out
    assert main(["export", str(old_run), "--out", str(old_run.parent / "export")]) == 0
    assert (old_run / "events.jsonl").read_bytes() == before  # read-only commands write nothing
