"""`silva status` and `silva resume` as a person sees them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.journal import Journal
from search.template.plan import PLAN
from silva.cli.main import main
from tests.helpers import make_config, make_template

STAGES = PLAN.names


def test_status_of_a_finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(make_config(tmp_path, make_template(tmp_path / "tpl")))]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    capsys.readouterr()
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    j = Journal.open(run_dir)
    assert "state: finished: all four stages complete" in out
    assert "primary metric: score (maximize)" in out
    for stage in STAGES:
        best = j.stage_ended[("default", stage)].best_node_id
        row = next(line for line in out.splitlines() if f" {stage} " in line and "│" in line)
        assert best is not None and best in row and f"{j.nodes[best].metric('score'):.4g}" in row
        assert f"default/{stage} ended: " in out
    assert "hyperparameter search nodes │ 3      │ 3" in out
    assert "per-node timeout (s)" in out


def test_budget_stop_is_named_and_resume_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tpl = make_template(tmp_path / "tpl")
    assert main(["run", str(make_config(tmp_path, tpl, budgets={"max_nodes": 3}))]) == 3  # resumable
    run_dir = next((tmp_path / "runs").iterdir())
    assert "budget: node budget of 3 node(s) used up" in capsys.readouterr().out
    main(["status", str(run_dir)])
    assert (
        "state: stopped: node budget of 3 node(s) used up (budget: max_nodes); continue with `silva resume`"
        in capsys.readouterr().out
    )

    # Scaling a stopped run up: raise the budget in the run's config snapshot, then resume.
    snapshot = run_dir / "config.yaml"
    cfg = yaml.safe_load(snapshot.read_text())
    cfg["budgets"]["max_nodes"] = None
    snapshot.write_text(yaml.safe_dump(cfg))
    assert main(["resume", str(run_dir)]) == 0
    assert "finished: all four stages complete" in capsys.readouterr().out
    j = Journal.open(run_dir)
    assert j.finished is not None and len(j.sessions) == 2
    assert main(["resume", str(run_dir)]) == 0
    assert "already finished" in capsys.readouterr().out
