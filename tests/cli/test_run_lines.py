"""Every line Silva prints about a run is true of it, read from one finished run with a paper:
the result states the paper's headline, best-node figures say they are one seed's selection
score, a finished run gets no projection, counts say what they count, paper and review nodes are
no experiment nodes, a failed review is said as such, and `cost` without LLM calls is one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from engine.dispatch import RunOutcome
from engine.events import ClusterJoined
from engine.journal import Journal
from engine.node import AttemptResult, Node
from silva.cli.main import main
from silva.cli.run import report
from silva.progress import Progress
from tests.helpers import make_config, make_template

pytestmark = pytest.mark.e2e  # every test reads one whole run (module fixture)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished template run whose offline writeup made a paper, and what `silva run` printed."""
    if shutil.which("latexmk") is None:
        pytest.skip("needs latexmk (make system-deps)")
    tmp = tmp_path_factory.mktemp("lines")
    config = make_config(tmp, make_template(tmp / "tpl"), writeup={"offline": True})
    done = subprocess.run(
        [str(Path(shutil.which("silva") or ".venv/bin/silva")), "run", str(config)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return next((tmp / "runs").iterdir()), done.stdout


@pytest.fixture
def run_copy(finished: tuple[Path, str], tmp_path: Path) -> Path:
    copy = tmp_path / finished[0].name
    shutil.copytree(finished[0], copy)
    return copy


def status(run_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    assert main(["status", *extra, str(run_dir)]) == 0
    return capsys.readouterr().out


def test_the_result_line_is_the_papers_headline(finished: tuple[Path, str]) -> None:
    run_dir, out = finished
    ledger = json.loads((run_dir / "paper" / "default" / "ledger.json").read_text())
    claim = next(c for c in ledger["claims"] if c["headline"])
    (line,) = [x for x in out.splitlines() if x.startswith("result:")]
    verdict = {"better": "is better than", "worse": "is worse than"}.get(claim["verdict"], "")
    # The groups by their readable names ("tuned baseline"), not the labels of their nodes.
    assert f"result: {claim['subject']['name']} " in line and f" {claim['reference']['name']} on " in line, (
        line
    )
    assert "(best of" not in line, line
    assert verdict in line and claim["metric"] in line and "mean ± sd" in line, line
    assert f"(n = {claim['subject']['n']})" in line and "±" in line.split("mean")[0], line
    assert "paper: paper written" not in out  # the finish line names its phases once


def test_status_of_a_finished_run_is_true_of_it(
    finished: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = finished
    out = status(run_dir, capsys)
    journal = Journal.open(run_dir, read_only=True)
    experiments = sum(n.kind != "paper" for n in journal)
    assert f"experiment nodes: {experiments} ({experiments} good)" in out
    assert "documents: 1 paper good" in out
    assert "used up in about" not in out and "projected" not in out  # nothing left to project
    assert "(one seed)" in out and "the budgets count search nodes" in out
    table = out.split("stages")[1].split("budgets")[0]
    assert not re.search(r"│ paper ", table)  # the paper is no stage of experiments
    report = json.loads(status(run_dir, capsys, "--json"))
    assert report["nodes"]["total"] == experiments and report["documents"] == {"paper good": 1}
    assert report["result"]["headlines"]["default"]["headline"] is True
    assert all(s["stage"] != "paper" for s in report["stages"])


def test_the_abstract_counts_experiment_nodes_and_the_footer_no_page_count(
    finished: tuple[Path, str],
) -> None:
    run_dir, _ = finished
    journal = Journal.open(run_dir, read_only=True)
    results = (run_dir / "paper" / "default" / "results.tex").read_text()
    assert f"\\newcommand{{\\RunNodes}}{{{sum(n.kind != 'paper' for n in journal)}}}" in results
    text = subprocess.run(
        ["pdftotext", str(run_dir / "paper" / "default" / "paper.pdf"), "-"], capture_output=True, text=True
    ).stdout
    assert "body limit 4 pages" in text and "format, 4 pages" not in text


def test_cost_without_llm_calls_is_one_line(
    finished: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["cost", str(finished[0])]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [
        f"{finished[0]}: no LLM calls, $0 spent on models"
    ]


def test_a_failed_review_is_said_and_the_result_stands(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal.open(run_copy)
    node = journal.add_node(
        Node(stage="review", kind="review", idea="default", plan="review of idea default")
    )
    journal.attempt_started(node.id, 0)
    journal.attempt_finished(node.id, 0, AttemptResult(status="buggy", reason="meta-review did not validate"))
    line = Progress(Console(file=None)).line(journal)
    assert "review failed" in line and "0 buggy" in line  # the review is no buggy experiment
    journal.log.close()
    console = Console(record=True, width=200)
    assert report(console, run_copy, RunOutcome("finished", "all four stages complete")) == 0
    printed = console.export_text()
    assert "review failed: meta-review did not validate" in printed and "no good node" not in printed
    out = status(run_copy, capsys)
    assert (
        "review failed: meta-review did not validate" in out
        and "documents: 1 paper good, 1 review buggy" in out
    )
    assert json.loads(status(run_copy, capsys, "--json"))["result"]["phases"] == [
        "review failed: meta-review did not validate"
    ]


def test_utilization_is_of_the_slots_the_cluster_holds(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal.open(run_copy)  # configured for 3 in flight; this cluster holds 1 experiment
    journal.record(
        ClusterJoined(kind="local", address="127.0.0.1:1", nodes=1, cpus=1, gpus=0, ray_version="2")
    )
    journal.log.close()
    assert "of 1 slots" in status(run_copy, capsys)


def test_the_live_table_says_its_best_is_one_seed(finished: tuple[Path, str]) -> None:
    journal = Journal.open(finished[0], read_only=True)
    table = Progress(Console(file=None)).table(journal)
    assert any(str(c.header).endswith("(one seed)") for c in table.columns)
