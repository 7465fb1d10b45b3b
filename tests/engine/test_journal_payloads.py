"""Large payloads (code, plans, output tails) in content-addressed blobs (docs/engine.md):
the event log carries references, every reader gets the text back."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from engine import blobs
from engine import events as ev
from engine.blobs import BLOBS_DIR, MARK, BlobMissing
from engine.eventlog import EVENTS_FILE
from engine.export import export_parquet
from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricSpec, MetricValue, Node
from silva.cli.main import main
from silva.notebook import RunView
from tests.helpers import make_config, make_template

CODE = "import math\n" + "".join(f"x{k} = math.sqrt({k})  # a line of generated code\n" for k in range(60))
PLAN = "Tune the learning rate on a log scale. " * 20
STDOUT = "".join(f"epoch {k:3d} loss {1 / (k + 1):.5f}\n" for k in range(200))


def write(run: Path) -> str:
    j = Journal.open(run)
    j.record(ev.RunStarted(config={}, metrics=[MetricSpec(name="m", primary=True).model_dump()]))
    small = j.add_node(Node(stage="s", kind="draft", plan="short plan", code="print(1)"))
    node = j.add_node(Node(stage="s", kind="draft", plan=PLAN, parent_id=small.id))
    j.attempt_started(node.id, 1)
    j.attempt_finished(
        node.id,
        1,
        AttemptResult(
            status="good",
            code=CODE,
            metrics=[MetricValue(name="m", value=1.0)],
            execution=ExecSummary(stdout_tail=STDOUT, stderr_tail="warning: small"),
        ),
    )
    j.log.close()
    return node.id


def check(j: Journal, node_id: str) -> None:
    node = j.nodes[node_id]
    assert (node.code, node.plan, node.execution.stdout_tail if node.execution else None) == (
        CODE,
        PLAN,
        STDOUT,
    )
    assert node.execution is not None and node.execution.stderr_tail == "warning: small"
    dumped = node.model_dump(mode="json")
    assert (dumped["code"], dumped["plan"], dumped["execution"]["stdout_tail"]) == (CODE, PLAN, STDOUT)
    assert json.loads(node.model_dump_json())["code"] == CODE


def test_large_payloads_live_in_blobs_and_read_back_everywhere(tmp_path: Path) -> None:
    run = tmp_path / "run"
    node_id = write(run)
    log = (run / EVENTS_FILE).read_text()
    assert CODE not in log and STDOUT not in log and PLAN not in log.replace("\\n", "\n")
    assert "short plan" in log and "print(1)" in log  # small ones stay in the event
    stored = sorted(p for p in (run / BLOBS_DIR).rglob("*") if p.is_file())
    assert {p.name for p in stored} == {hashlib.sha256(t.encode()).hexdigest() for t in (CODE, PLAN, STDOUT)}
    j = Journal.open(run, read_only=True)
    assert j.nodes[node_id].__dict__["code"].startswith(MARK)  # in memory: the reference only
    check(j, node_id)
    w = Journal.open(run)
    w.snapshot()
    w.log.close()
    check(Journal.open(run, read_only=True), node_id)  # from the snapshot
    export_parquet(Journal.open(run, read_only=True), tmp_path / "out")
    nodes = pd.read_parquet(tmp_path / "out" / "nodes.parquet").set_index("id")
    assert (nodes.loc[node_id, "code"], nodes.loc[node_id, "plan"]) == (CODE, PLAN)
    assert json.loads(str(nodes.loc[node_id, "execution"]))["stdout_tail"] == STDOUT
    data = [json.loads(d) for d in pd.read_parquet(tmp_path / "out" / "events.parquet")["data"]]
    assert MARK not in json.dumps(data) and data[-1]["result"]["code"] == CODE


def test_a_copied_run_reads_its_own_blobs_and_a_missing_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blobs, "_stores", [])  # only this test's runs: other tests stored the same texts
    node_id = write(tmp_path / "run")
    shutil.copytree(tmp_path / "run", tmp_path / "copy")
    shutil.rmtree(tmp_path / "run")
    blobs._load.cache_clear()
    check(Journal.open(tmp_path / "copy", read_only=True), node_id)
    shutil.rmtree(tmp_path / "copy" / BLOBS_DIR)
    blobs._load.cache_clear()
    j = Journal.open(tmp_path / "copy", read_only=True)  # opening reads no payload
    with pytest.raises(BlobMissing, match="none of the blob folders"):
        _ = j.nodes[node_id].code


def test_a_real_run_stores_long_output_as_blobs_and_runview_reads_it(tmp_path: Path) -> None:
    tpl = make_template(tmp_path / "tpl")
    (tpl / "experiment.py").write_text((tpl / "experiment.py").read_text() + "\nprint('x' * 900)\n")
    assert main(["run", str(make_config(tmp_path, tpl))]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    finished = [
        json.loads(line)
        for line in (run_dir / EVENTS_FILE).read_text().splitlines()
        if '"attempt_finished"' in line
    ]
    view = RunView.open(run_dir)
    ran = [e for e in finished if view.node(e["node_id"]).kind != "aggregation"]  # aggregations run nothing
    assert ran and all(e["result"]["execution"]["stdout_tail"].startswith(MARK) for e in ran)
    node = view.node(ran[0]["node_id"])
    assert node.execution is not None and "x" * 900 in node.execution.stdout_tail
    assert view.code(node.id) == node.code


def test_old_runs_with_inline_payloads_still_read(tmp_path: Path) -> None:
    """A run written before blobs (format 2, inline payloads) reads and resumes as before."""
    run = tmp_path / "run"
    run.mkdir()
    node = Node(id="n0000", stage="s", kind="draft", plan=PLAN, code=CODE)
    lines = [
        {
            "seq": 0,
            "ts": 1.0,
            "type": "run_started",
            "config": {},
            "metrics": [{"name": "m", "primary": True}],
        },
        {"seq": 1, "ts": 2.0, "type": "node_created", "node": node.model_dump(mode="json")},
    ]
    (run / EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in lines))
    j = Journal.open(run)
    assert (j.nodes["n0000"].code, j.nodes["n0000"].plan) == (CODE, PLAN)
    j.attempt_started("n0000", 1)
    j.attempt_finished("n0000", 1, AttemptResult(status="good", execution=ExecSummary(stdout_tail=STDOUT)))
    j.log.close()
    j = Journal.open(run, read_only=True)
    assert j.nodes["n0000"].execution is not None and j.nodes["n0000"].execution.stdout_tail == STDOUT
    assert j.nodes["n0000"].code == CODE
