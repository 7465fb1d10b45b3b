"""Utilization counts only the steps that hold a slot: an LLM run's think and judge steps wait on
the model, and a run whose experiments never start used none of its slots."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from silva.cli.main import main
from silva.cost import open_read_only, throughput
from tests.search.agentic_helpers import agentic_config, start


def no_code(messages: Any) -> str:
    time.sleep(0.1)  # the model takes a while, as a real one does; the slots stay free
    return "I would rather not write any code."


def test_status_utilization_of_a_run_whose_experiments_never_start_is_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = agentic_config(
        tmp_path,
        replicates=1,
        stages={"preliminary": {"max_nodes": 2}, "hyperparameter": {"max_nodes": 1}},
        budgets={"wall_clock_s": 60, "node_timeout_s": 30, "max_nodes": 4},
    )
    outcome, journal = start(cfg, no_code)
    run_dir = journal.log.path.parent
    events = journal.log.events
    assert any(isinstance(e, ev.AttemptStarted) and e.step == "think" for e in events)
    assert not any(isinstance(e, ev.AttemptStarted) and e.step in ("run", "all") for e in events)
    _, journal, records = open_read_only(run_dir)
    t = throughput(cfg, journal, records)
    assert t.busy_s == 0 and t.utilization == 0, outcome.message
    assert main(["status", str(run_dir)]) == 0
    assert f"utilization 0% of {t.slots} slots" in capsys.readouterr().out
