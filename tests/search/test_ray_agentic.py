"""The agentic search through Ray: tasks on workers, the LLM gateway as an actor."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.llm.ledger import summarize
from search.agentic.operators.outcome import operator_outcome
from silva import lifecycle as run
from tests.search.agentic_helpers import SCIENTIST, agentic_config, llm_nodes

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_agentic_run_on_ray_with_the_gateway_actor(tmp_path: Path) -> None:
    cfg = agentic_config(
        tmp_path,
        replicates=1,
        executor={"kind": "ray", "max_in_flight": 3},
        stages={
            "preliminary": {"max_nodes": 2},
            "hyperparameter": {"max_nodes": 2},
            "agenda": {"max_nodes": 2},
            "ablation": {"max_nodes": 1},
        },
        scripted_fn=f"{SCIENTIST}:respond",  # loaded by file, sent to the actor by value
    )
    run_dir, journal = run.create_run(cfg)
    outcome = run.execute(cfg, journal)
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    j = Journal.open(run_dir)
    assert all(n.is_finished for n in j)
    markers = list((run_dir / "nodes").glob("*/attempt-*.worker.json"))
    pids = {json.loads(m.read_text())["pid"] for m in markers}
    # Every attempt ran in a Ray worker. A selection only asks the LLM, and speculation discarded
    # before its run step never had a workspace (so neither has a marker).
    marked = {m.parent.name for m in markers}
    kept = {n.id for n in j if n.kind != "selection" and n.status.value != "discarded"}
    assert kept <= marked <= {n.id for n in j if n.kind != "selection"} and os.getpid() not in pids
    workers = [e.result.worker for e in j.log.read(ev.AttemptFinished)]
    assert all(not w.endswith(f":{os.getpid()}") for w in workers)  # selections too
    ledger = summarize(run_dir)["run"]
    assert ledger["calls"] >= 3 * len([n for n in llm_nodes(j) if n.status.value == "good"]) - 1
    critiques = [operator_outcome(n).plot_critique for n in llm_nodes(j) if n.status.value == "good"]
    assert all(c is not None and c.acceptable for c in critiques)
