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


def test_the_budget_table_gives_the_hypotheses_limit_discovery_applies(tmp_path: Path) -> None:
    """The hypotheses stage ends on `discovery.max_hypotheses` (or chains, or steps), never on the
    stage's `max_nodes`: the table shows that limit, not the stage default of 30, beside the count
    of the nodes it limits (not Reflect's or Silva's checks)."""
    from rich.console import Console

    from silva.config import RunConfig
    from silva.status import budgets_table

    journal = Journal.open(tmp_path)
    journal.record(ev.RunStarted(config={}, metrics=[]))
    for kind in ("hypothesis", "hypothesis", "reflect", "control"):
        journal.add_node(Node(stage="hypotheses", kind=kind, idea="discovery"))
    llm = {
        "providers": {"offline": {"kind": "scripted"}},
        "models": {"analyst": {"provider": "offline", "model": "scripted-analyst"}},
        "roles": {"code": {"model": "analyst"}, "feedback": {"model": "analyst"}},
    }
    shown = {}
    for mode, settings in [("discoper", {"max_hypotheses": 3}), ("experigen", {"max_chains": 2})]:
        section = {"data": "t.csv", "mode": mode, **settings}
        cfg = RunConfig.model_validate({"name": "t", "llm": llm, "discovery": section})
        console = Console(width=200, record=True)
        console.print(budgets_table(cfg, journal, None))
        shown[mode] = next(line for line in console.export_text().splitlines() if "hypotheses" in line)
    assert "3 (discovery.max_hypotheses)" in shown["discoper"] and " 30 " not in shown["discoper"]
    assert "2 chains of 4 (discovery.max_chains)" in shown["experigen"]
    assert shown["discoper"].split("│")[2].strip() == "2"  # the two hypotheses, not all four nodes
