from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from engine.journal import Journal
from silva.cli.main import main
from tests.helpers import make_config, make_template


def test_export_parquet_round_trips(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, make_template(tmp_path / "tpl"))
    assert main(["run", str(cfg)]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    assert main(["export", str(run_dir), "--format", "parquet", "--out", str(tmp_path / "out")]) == 0
    journal = Journal.open(run_dir)
    nodes = pd.read_parquet(tmp_path / "out" / "nodes.parquet")
    events = pd.read_parquet(tmp_path / "out" / "events.parquet")
    assert sorted(nodes["id"]) == sorted(journal.nodes)
    assert len(events) == len(journal.log.events)
    for _, row in nodes.iterrows():
        node = journal.nodes[row["id"]]
        assert row["status"] == node.status.value and row["kind"] == node.kind
        assert json.loads(row["params"]) == node.params
        if node.metric("score") is not None:
            assert row["metric.score"] == node.metric("score")
    assert set(events["type"]) >= {
        "run_started",
        "node_created",
        "attempt_finished",
        "stage_ended",
        "run_finished",
    }
