"""A run directory written by Silva before typed outcomes (event format 1: an untyped `extra`
dict on nodes and results) still opens: status, export, the notebook view and resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import silva
from search.agentic.operators.outcome import OperatorOutcome
from search.stages import Selection
from silva.cli.main import main

FIXTURE = Path(__file__).parent / "data" / "format1_run"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "ideas"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "label-noise-old"
    shutil.copytree(FIXTURE, run_dir)
    return run_dir


def test_status_and_export_of_a_format1_run(old_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (old_run / "events.jsonl").read_bytes()
    assert main(["status", str(old_run)]) == 0
    out = capsys.readouterr().out
    assert "finished: all four stages complete" in out and "held-out choice" in out
    assert main(["export", str(old_run), "--out", str(old_run.parent / "export")]) == 0
    assert (old_run / "events.jsonl").read_bytes() == before  # read-only commands write nothing


def test_format1_outcomes_are_read_as_typed_outcomes(old_run: Path) -> None:
    view = silva.open_run(old_run)
    j = view.journal
    assert j.event_format == 1
    drafts = [n for n in j if n.kind == "draft"]
    assert drafts and all(isinstance(n.outcome, OperatorOutcome) for n in drafts)
    good = [n for n in drafts if n.status.value == "good"]
    assert good and all(n.outcome.judgement is not None for n in good)  # type: ignore[union-attr]
    assert all(n.origin.policy == "best_first" for n in drafts)
    tuned = [n for n in j if n.kind == "hyperparameter" and n.is_finished]
    assert tuned and all(n.outcome.hyperparameters for n in tuned)  # type: ignore[union-attr]
    frame = view.nodes()
    assert len(frame) == len(j.nodes) and "metric.val_accuracy" in frame.columns
    assert set(view.best()["stage"]) == {"preliminary", "hyperparameter", "agenda", "ablation"}


def test_resume_continues_a_format1_run_with_todays_strategy(old_run: Path) -> None:
    # The run's idea and scripted function moved: point the snapshot at this checkout's copies,
    # and drop the finish event so that resume replays the whole tree with today's code.
    cfg = yaml.safe_load((old_run / "config.yaml").read_text())
    cfg.update(
        idea=str(EXAMPLES / "label_noise.yaml"),
        scripted_fn=f"{EXAMPLES / 'scripted_scientist.py'}:respond",
        output_dir=str(old_run.parent),
    )
    (old_run / "config.yaml").write_text(yaml.safe_dump(cfg))
    lines = (old_run / "events.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"run_finished"' in lines[-1]
    (old_run / "events.jsonl").write_bytes(b"".join(lines[:-1]))
    nodes_before = len(silva.open_run(old_run).journal.nodes)
    outcome = silva.resume(old_run)
    assert outcome.status == "finished" and outcome.message.startswith(
        "all four stages complete; held-out choice"
    )
    view = silva.open_run(old_run)
    assert len(view.journal.nodes) == nodes_before  # nothing is re-run or added
    assert all(n.kind != "selection" for n in view.journal)  # decisions already recorded are kept
    assert not any(isinstance(n.outcome, Selection) for n in view.journal)
