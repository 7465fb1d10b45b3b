"""The real-model example's node budget leaves room for its stages, its paper and the paper's
review: planned in virtual time (`silva plan`), the run ends with both, not stopped by
`max_nodes` after its second stage (each stage also runs a replicate, a selection and an
aggregation node, which the budget counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from silva.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ideas" / "local_llm.yaml"


@pytest.mark.slow  # 45 s at a load average of 36: most of it importing and starting the planner
def test_the_local_model_example_is_planned_to_a_reviewed_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(EXAMPLE), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["stopped_by"] != "max_nodes", report["message"]
    assert report["papers_written"] == 1 and report["papers_reviewed"] == 1, report["message"]
