"""`silva run --view` (the live view of a run in progress, left on disk at the end) and
`silva run --ideas ideas.jsonl --top K` (from an ideation archive straight to a forest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.eventlog import EventLog
from engine.journal import EVENTS_FILE, Journal
from silva.cli.main import main
from tests.helpers import make_config, make_template, write_config
from tests.ideation.fake_literature import fake_literature
from tests.ideation.test_ideate import write_topic
from tests.search.agentic_helpers import LLM, SCIENTIST


def _run_dir(out: str) -> Path:
    line = next(ln for ln in out.splitlines() if ln.startswith("run directory: "))
    return Path(line.removeprefix("run directory: ").strip())


def test_run_with_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, make_template(tmp_path / "tpl"), replicates=1)
    cfg = yaml.safe_load(config.read_text())
    # One short stage: the view needs a finished run, not the whole plan.
    config.write_text(yaml.safe_dump({**cfg, "stages": {"preliminary": {"max_nodes": 2}}}))
    assert main(["run", str(config), "--view"]) == 0
    out = capsys.readouterr().out
    assert "live view: http://127.0.0.1:" in out
    run_dir = _run_dir(out)
    forest = json.loads((run_dir / "view" / "forest.json").read_text())
    journal = Journal(EventLog(run_dir / EVENTS_FILE, read_only=True))
    assert len(forest["nodes"]["id"]) == len(journal.nodes) > 0  # the last state, built at the end
    assert forest["run"]["state"].startswith("finished")


def test_run_from_an_ideas_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with fake_literature() as (url, _):
        assert main(["ideate", str(write_topic(tmp_path, url)), "--out", str(tmp_path / "ideas")]) == 0
    archive = tmp_path / "ideas" / "ideas.jsonl"
    config = write_config(
        tmp_path,
        {
            "name": "from-ideas",
            "output_dir": str(tmp_path / "runs"),
            "llm": LLM,
            "scripted_fn": f"{SCIENTIST}:respond",
            "sandbox": "none",
            "executor": {"kind": "inprocess", "max_in_flight": 1},
            "budgets": {"wall_clock_s": 120, "node_timeout_s": 30, "max_nodes": 1},
        },
        {},
    )
    capsys.readouterr()
    assert main(["run", str(config), "--ideas", str(archive), "--top", "1"]) == 3  # max_nodes: 1 stops it
    run_dir = _run_dir(capsys.readouterr().out)
    journal = Journal(EventLog(run_dir / EVENTS_FILE, read_only=True))
    chosen = [Path(i["path"]).name for i in journal.config["ideas"]]
    assert len(chosen) == 1 and chosen[0] in ("smooth_asym.yaml", "loss_curriculum.yaml")  # kept, best score
    assert {n.idea for n in journal} <= {"smooth_asym", "loss_curriculum"}


def test_top_needs_ideas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, make_template(tmp_path / "tpl"))
    assert main(["run", str(config), "--top", "2"]) == 2
    assert "--ideas" in capsys.readouterr().err
