"""Successive halving over a rolling forest: an idea ideation admitted competes at the rungs like a
configured one, and the weak one is retired: journaled, grown no further, and shown as retired by
`silva status`, its --json and the view."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from engine import events as ev
from engine.journal import Journal
from silva import lifecycle as run
from silva.cli.main import main
from silva.config import load_config
from silva.rolling import ideation_line
from silva.status import print_status
from silva.status_json import status_report
from silva.view.data import _run_facts
from tests.ideation.fake_literature import fake_literature
from tests.search.agentic_helpers import providers
from tests.search.test_rolling import Scientist, rolling_config

# A rung after the first search node of the agenda stage (as in test_forest's halving test).
STAGES = {
    "preliminary": {"max_nodes": 2},
    "hyperparameter": {"max_nodes": 1},
    "agenda": {"max_nodes": 3},
    "ablation": {"max_nodes": 1},
}


@pytest.mark.e2e
def test_successive_halving_retires_the_weak_idea_of_a_rolling_forest(tmp_path: Path) -> None:
    with fake_literature() as (url, _):
        rolling_config(tmp_path, url, max_ideas=2)
        path = tmp_path / "run.yaml"
        spec = yaml.safe_load(path.read_text())
        allocation = {"policy": "successive_halving", "rungs": "geometric"}
        path.write_text(yaml.safe_dump({**spec, "stages": STAGES, "allocation": allocation}))
        cfg = load_config(path)
        run_dir, journal = run.create_run(cfg)
        outcome = run.execute(cfg, journal, providers=providers(Scientist()))
    assert outcome.status == "finished", outcome.message
    j = Journal.open(run_dir, read_only=True)
    admitted = [e.idea for e in j.log.read(ev.IdeaAdmitted)]
    assert admitted == ["smooth_asym", "loss_curriculum"]
    decided = [e for e in j.log.read(ev.AllocationDecided) if e.decision in ("promoted", "stopped")]
    (stop,) = [e for e in decided if e.decision == "stopped"]
    loser = stop.idea or ""
    (winner,) = set(admitted) - {loser}
    assert (stop.rung, stop.stage, stop.nodes) == (1, "agenda", 1)
    assert stop.reason is not None and stop.reason.startswith("stopped by successive halving")
    assert stop.score is not None and stop.threshold is not None and stop.score < stop.threshold
    assert j.idea_stopped[loser].reason == stop.reason
    # Retired: no node of it is created after the decision, and it writes no paper.
    events = list(j.log.read(ev.AllocationDecided, ev.NodeCreated))
    at = next(k for k, e in enumerate(events) if e == stop)
    assert not [e for e in events[at:] if isinstance(e, ev.NodeCreated) and e.node.idea == stop.idea]
    assert [e.idea for e in j.log.read(ev.IdeaPublished)] == [winner]
    # Where the ideas stand: status, status --json and the view.
    line = ideation_line(j)
    assert line is not None
    assert f"2 admitted: 0 running or waiting, 1 retired ({stop.idea}), 1 published;" in line
    out = StringIO()
    print_status(run_dir, cfg, j, Console(file=out, width=400))
    assert line in out.getvalue()
    ideas = status_report(run_dir, j).ideas
    assert ideas is not None
    assert (ideas.admitted, ideas.running) == (admitted, [])
    assert (ideas.retired, ideas.published) == ([stop.idea], [winner])
    assert _run_facts(run_dir, cfg, j, {})["ideation"] == line
    assert main(["view", str(run_dir)]) == 0
    page = json.loads((run_dir / "view" / "forest.json").read_text())
    assert page["idea_published"] == [winner] and page["idea_stopped"][loser] == stop.reason
