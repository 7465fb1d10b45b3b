"""The experimental journal's files (search/notes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node
from search.idea import Idea
from search.notes import ExperimentNotes


def test_notes_are_strict_json_with_what_the_stage_tried(tmp_path: Path) -> None:
    """notes.json is read by strict parsers too: a NaN metric is null, text is kept as written."""
    j = Journal.open(tmp_path)
    acc = MetricSpec(name="acc", primary=True)
    j.record(ev.RunStarted(config={}, metrics=[acc.model_dump()], stages=["baseline"]))
    j.record(ev.StageStarted(idea="i", stage="baseline", root=None))
    for k, value in enumerate((0.5, float("nan"))):
        node = j.add_node(Node(stage="baseline", kind="draft", idea="i", plan=f"plan {k}: größer"))
        j.attempt_started(node.id, 1)
        j.attempt_finished(
            node.id, 1, AttemptResult(status="good", metrics=[MetricValue(name="acc", value=value)])
        )
    j.record(ev.StageEnded(idea="i", stage="baseline", reason="done", best_node_id="n0000"))
    idea = Idea(name="i", title="t", hypothesis="h", metrics=[acc])
    ExperimentNotes(tmp_path, j, idea, lambda n: n.kind).write()
    j.log.close()

    def refuse(token: str) -> None:
        pytest.fail(f"not strict JSON: {token}")

    notes = json.loads((tmp_path / "notes" / "i" / "notes.json").read_text(), parse_constant=refuse)
    tried = notes["stages"]["baseline"]["tried"]
    assert [t["metrics"]["acc"] for t in tried] == [0.5, None]
    assert tried[1]["plan"] == "plan 1: größer"
    assert notes["idea"] == {"name": "i", "title": "t", "hypothesis": "h"}
