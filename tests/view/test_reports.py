"""`silva cost`, the throughput lines of `silva status`, and the progress format for logs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from engine.errors import ConfigError
from engine.eventlog import EventLog
from engine.journal import EVENTS_FILE, Journal
from silva.cli.main import main
from silva.cost import open_read_only, spend, throughput
from silva.progress import Progress, interval_from_env
from tests.view.synth import make_run


def test_cost_breakdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha", "beta"), search_nodes=3, plots=False)
    assert main(["cost", str(run_dir)]) == 0
    out = capsys.readouterr().out
    for title in ("by role", "by model", "by stage", "by idea"):
        assert title in out
    assert "anthropic" not in out and "claude/claude-sonnet-4-5" in out
    assert "1 cache hits saved $0.0020" in out  # the hit saved what its first call cost
    assert main(["cost", str(run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    groups = data["spend"]["groups"]
    assert {r["key"] for r in groups["idea"]} == {"alpha", "beta"}
    assert sum(r["dollars"] for r in groups["role"]) == pytest.approx(data["spend"]["total"]["dollars"])
    assert data["throughput"]["dollars_per_node"] > 0


def test_spend_prices_a_hit_from_another_run_at_the_model_rate(tmp_path: Path) -> None:
    _, _, records = open_read_only(make_run(tmp_path, ideas=("alpha",), search_nodes=2, plots=False))
    foreign = records[0].model_copy(update={"cache_hit": True, "dollars": 0.0, "key": "paid-elsewhere"})
    s = spend([*records, foreign])
    assert s.saved_estimated == 1 and s.total.saved > 0.002


def test_status_has_throughput_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=3, running=1, plots=False)
    cfg, journal, records = open_read_only(run_dir)
    t = throughput(cfg, journal, records)
    assert t.nodes_per_hour and t.utilization is not None and 0 < t.utilization <= 1
    assert t.calls_per_node == pytest.approx(len(records) / t.finished_nodes)
    assert t.remaining_nodes > 0 and t.projected_dollars is not None and t.projected_dollars > t.dollars
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "throughput:" in out and "nodes/h" in out and "utilization" in out
    assert "LLM calls and $" in out and "per node" in out and "projected $" in out


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _journal(tmp_path: Path, search_nodes: int, writable: bool = False) -> Journal:
    run_dir = make_run(
        tmp_path,
        ideas=("alpha", "a_rather_long_idea_name_to_pass_eighty_columns"),
        search_nodes=search_nodes,
        running=1,
        plots=False,
    )
    return Journal(EventLog(run_dir / EVENTS_FILE, read_only=not writable))


def test_progress_in_a_pipe_one_unwrapped_line_per_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr("silva.progress.time.monotonic", clock)
    journal = _journal(tmp_path, 2, writable=True)
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80)
    with Progress(console, interval_s=10) as progress:
        progress.update(journal)
        progress.update(journal)  # no change: nothing printed
        journal.discard(next(iter(journal.nodes)), "moot")  # as the driver changes a node: an event
        clock.t += 1
        progress.update(journal)  # a change within the interval: held
        assert out.getvalue().count("\n") == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the held change was printed when the run ended
    assert all(len(line) > 80 for line in lines), "each line is whole, not wrapped at 80 columns"
    assert "a_rather_long_idea_name_to_pass_eighty_columns/ablation" in lines[0] and "nodes:" in lines[0]
    assert lines[0] != lines[1]
    journal.log.close()


def test_progress_interval_lets_changes_through_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr("silva.progress.time.monotonic", clock)
    journal = _journal(tmp_path, 1, writable=True)
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False), interval_s=5)
    with progress:
        ids = list(journal.nodes)
        for k in range(4):
            journal.discard(ids[k], "moot")
            clock.t += 6  # each change after the interval: printed at once
            progress.update(journal)
            assert out.getvalue().count("\n") == k + 1
    journal.log.close()


def test_progress_interval_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILVA_PROGRESS_INTERVAL", "30")
    assert interval_from_env() == 30.0
    monkeypatch.setenv("SILVA_PROGRESS_INTERVAL", "soon")
    with pytest.raises(ConfigError, match="SILVA_PROGRESS_INTERVAL"):
        interval_from_env()
