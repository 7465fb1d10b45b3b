"""One agentic run of a few nodes against the real model (examples/ideas/local_llm.yaml, what
`make demo-llm` runs), with its results report and review. A 135M model seldom writes a working
experiment: whatever its nodes do, the run must end and say how; with a good node, the report is
written and reviewed; with none, the paper is the failure report (docs/writeup.md), not reviewed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records
from silva.cli.main import main
from tests.realmodel.llama_server import LocalServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ideas" / "local_llm.yaml"


@pytest.mark.e2e
@pytest.mark.timeout(1800)  # minutes on an idle host; a loaded one wrote 2-5 tokens/s (8 minutes here)
def test_an_agentic_run_ends_honestly(
    local_model: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["idea"] = str(EXAMPLE.parent / cfg["idea"])
    cfg["output_dir"] = str(tmp_path / "runs")
    cfg["llm"]["providers"]["local"]["base_url"] = local_model.url
    # One node a stage: a 135M model's first draft is the run's fate either way (a second draft
    # cost a code call and two judgements, a minute and a half at load 30).
    cfg["stages"] = {"preliminary": {"max_nodes": 1}, "hyperparameter": {"max_nodes": 1}}
    cfg["budgets"] = {**cfg["budgets"], "max_nodes": 4}
    for role, tokens in {"code": 384, "feedback": 96, "selection": 48, "review": 256}.items():
        cfg["llm"]["roles"][role]["max_tokens"] = tokens
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = main(["run", str(path)])
    out = capsys.readouterr().out
    assert code in (0, 3, 4), out  # finished, stopped by a budget, or finished with no good node
    (run_dir,) = (tmp_path / "runs").iterdir()
    journal = Journal.open(run_dir, read_only=True)
    assert journal.finished is not None or journal.stop is not None, out
    ending = journal.finished.reason if journal.finished else journal.stop.reason if journal.stop else ""
    assert ending and ending in out  # how it ended, in its own words, on the terminal
    assert "probe local/smol" in out  # the start-of-run probe's line
    ledger = read_records(run_dir / LEDGER_FILE)
    assert ledger and {"code"} <= {r.role for r in ledger}
    assert all(r.attempts >= 1 or r.cache_hit or r.error for r in ledger)
    if journal.finished is None:
        return  # stopped by a budget: no phase after the search ran
    (paper,) = (run_dir / "paper").glob("*/paper.pdf")
    searched = [n for n in journal if n.stage in journal.plan_stages]
    if all(n.status.value != "good" for n in searched):  # no node to build on: the failure report
        assert code == 4 and f"failure report: {paper}" in out, out
        failure = json.loads((paper.parent / "failure.json").read_text())
        assert failure["buggy"] == len(searched) and sum(g["nodes"] for g in failure["failures"]) > 0
        assert "review: skipped (the paper is a failure report" in ending
    else:  # the phases after the search ran: a report, its review
        review = json.loads((paper.parent / "review.json").read_text())
        assert review
