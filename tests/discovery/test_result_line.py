"""The result line of a discovery run that has not finished a hypothesis yet."""

from __future__ import annotations

from pathlib import Path

from engine import events as ev
from engine.journal import Journal
from engine.node import Node
from silva.status_json import run_result


def test_a_discovery_run_with_no_finished_node_says_so(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    journal.record(ev.RunStarted(config={"discovery": {"data": "table.csv"}}, metrics=[]))
    journal.record(ev.SessionStarted(resumed=False))
    journal.add_node(Node(stage="hypotheses", kind="draft"))  # proposed, still running

    result = run_result(journal)

    assert result.text == "result: none yet: no hypothesis node has finished"
    assert not result.has_result
