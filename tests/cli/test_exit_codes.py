"""Exit codes a script can use (README "Exit codes", `silva run --help`), and the end-of-run line
that states the result from the journal's numbers. 130/143 are tested with the signals."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.journal import Journal
from silva.cli.main import main
from tests.helpers import make_config, make_template


def test_finished_with_a_result_exits_0_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(make_config(tmp_path, make_template(tmp_path / "tpl")))]) == 0
    out = capsys.readouterr().out
    j = Journal.open(next((tmp_path / "runs").iterdir()), read_only=True)
    decision = j.stage_best[("default", "ablation")]
    # Without a paper, the best figure is said to be one seed's selection score, untested.
    assert (
        f"result: best single-seed search score: score = {decision.value:.4g} (maximize; one seed, the score "
        f"the search selected on), node {decision.node_id} in stage ablation; no paper tested it" in out
    )


def test_no_good_node_exits_4_and_says_there_is_no_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tpl = make_template(tmp_path / "tpl", fixed={"fail": True})
    assert main(["run", str(make_config(tmp_path, tpl))]) == 4
    assert "result: none: no good node in preliminary" in capsys.readouterr().out


def test_budget_stop_exits_3_resumable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tpl = make_template(tmp_path / "tpl")
    assert main(["run", str(make_config(tmp_path, tpl, budgets={"max_nodes": 2}))]) == 3
    out = capsys.readouterr().out
    assert "budget: node budget of 2 node(s) used up" in out and "continue with: silva resume" in out
    # The run log holds what the terminal showed, the warnings before the run directory existed too.
    log = (next((tmp_path / "runs").iterdir()) / "silva.log").read_text()
    assert log.startswith("WARNING sandbox.none: sandbox: none") and "budget: node budget of 2" in log


def test_exit_codes_are_in_run_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    for text in (
        "0 finished with a result (also when its writeup or review failed",
        "2 bad input",
        "3 stopped by a budget",
        "4 ended with no good node",
        "130/143",
        "1 a bug",
    ):
        assert text in out
