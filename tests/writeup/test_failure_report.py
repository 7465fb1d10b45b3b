"""The failure report (docs/writeup.md, "Failure report"): a run whose first stage finds no good
node still ends with exit 4 and a paper that says what was attempted and why it failed, with no
result claimed; `silva writeup` writes it too, and the run's review phase says why it skips it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.journal import Journal
from engine.llm.providers.base import ProviderCall
from engine.node import Node, NodeStatus
from silva.cli.main import main
from tests.helpers import make_config, make_template
from tests.search.agentic_helpers import LLM, agentic_config, responder, start
from writeup.failure_report import cause_of, failure_groups

REVIEW_LLM = {
    "providers": {"offline": {"kind": "scripted"}},
    "models": {"toy": {"provider": "offline", "model": "toy-1"}},
    "roles": {"review": {"model": "toy"}},
}
SCRIPTED_REVIEWER = str(Path(__file__).parents[1] / "review" / "papers.py") + ":scripted_reviewer"
needs_tex = pytest.mark.skipif(shutil.which("latexmk") is None, reason="TeX Live missing: make system-deps")
# What a result claim looks like; a failure report has none to make.
CLAIMS = re.compile(r"outperform|better than|worse than|significant|improve[sd]?\b|beats?\b", re.IGNORECASE)


def _text(pdf: Path) -> str:
    out = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(out.replace("\u2019", "'").split())


def test_failure_reasons_group_by_what_nodes_have_in_common() -> None:
    reasons = [
        "exit code 1: ZeroDivisionError: division by zero",
        "exit code 1: numpy.linalg.LinAlgError: Singular matrix",
        "exit code 1: ZeroDivisionError: float division by zero",
        "timed out after 30 s (per-node timeout)",
        "judged buggy: the accuracy of 1.0 is implausible",
        "judged buggy: the loss never decreases",
        "proposal failed: no code in the answer",
        "",
    ]
    assert [cause_of(r) for r in reasons] == [
        "exit code 1: ZeroDivisionError",
        "exit code 1: LinAlgError",
        "exit code 1: ZeroDivisionError",
        "timed out (per-node timeout)",
        "judged buggy",
        "judged buggy",
        "proposal failed: no code in the answer",
        "no reason recorded",
    ]
    stati = [NodeStatus.BUGGY] * 3 + [NodeStatus.GOOD]
    nodes = [
        Node(id=f"n{i}", stage="s1" if i < 3 else "s2", kind="draft", status=status, reason=reason)
        for i, (status, reason) in enumerate(zip(stati, [*reasons[:3], "ran cleanly"]))
    ]
    first, second = failure_groups(nodes)
    assert (first.cause, first.nodes, first.stages, first.example_node) == (
        "exit code 1: ZeroDivisionError",
        2,
        ["s1"],
        "n0",
    )
    assert first.example == "exit code 1: ZeroDivisionError: division by zero"
    assert (second.cause, second.nodes) == ("exit code 1: LinAlgError", 1)


def test_a_cause_that_names_its_node_is_listed_once_with_its_count() -> None:
    reasons = [
        f"proposal failed: role 'code' (node {n}): the answer did not validate as Proposal after 3 tries: cut"
        for n in ("n0003", "n0007", "n0012")
    ]
    nodes = [
        Node(id=f"n{i}", stage="s1", kind="draft", status=NodeStatus.BUGGY, reason=r)
        for i, r in enumerate(reasons)
    ]
    (group,) = failure_groups(nodes)
    assert group.nodes == 3
    assert group.cause == "proposal failed: the answer did not validate as Proposal after 3 tries"


@needs_tex
@pytest.mark.e2e
def test_a_run_with_no_good_node_exits_4_with_a_failure_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tpl = make_template(tmp_path / "tpl", fixed={"fail": True})
    assert main(["run", str(make_config(tmp_path, tpl, writeup={"offline": True}))]) == 4
    out = capsys.readouterr().out
    run_dir = next((tmp_path / "runs").iterdir())
    pdf = run_dir / "paper" / "default" / "paper.pdf"
    assert f"failure report: {pdf}\n" in out and "result: none: no good node in preliminary" in out
    j = Journal.open(run_dir, read_only=True)
    [paper] = j.in_stage("paper")
    assert paper.status == NodeStatus.GOOD and paper.reason.startswith("failure report written")
    assert "paper: failure report written" in out  # the finish message
    summary = json.loads((pdf.parent / "failure.json").read_text())
    [group] = summary["failures"]
    assert (group["cause"], group["nodes"], group["stages"]) == (
        "exit code 1: deliberate failure",
        2,
        ["preliminary"],
    )
    text = _text(pdf)
    assert (
        "Failure report: quad" in text
        and "exit code 1: deliberate failure: 2 node(s), in preliminary" in text
    )
    assert "It grew 2 nodes in 1 of the plan's 4 stages; 2 of them failed and 0 ran cleanly" in text
    assert "node budget of 2 used" in text and "Stages not reached: hyperparameter, agenda, ablation" in text
    assert not CLAIMS.search(text), CLAIMS.search(text)
    numbers = json.loads((pdf.parent / "numbers.json").read_text())
    assert numbers["untraced"] == [] and numbers["pdf_missing"] == [] and numbers["from_macros"] > 0
    assert json.loads((pdf.parent / "ledger.json").read_text())["claims"] == []
    # `silva writeup` on the same run writes it again.
    pdf.unlink()
    assert main(["writeup", str(run_dir), "--offline"]) == 0
    assert f"failure report: {pdf}" in capsys.readouterr().out and pdf.is_file()
    # `silva review` reviews it like any paper, and says what a decision on it means.
    review_cfg = tmp_path / "review.yaml"
    review_cfg.write_text(yaml.safe_dump({"llm": REVIEW_LLM, "scripted_fn": SCRIPTED_REVIEWER}))
    assert main(["review", str(pdf), "--reviews", "1", "--config", str(review_cfg)]) == 0
    out = capsys.readouterr().out
    assert "note: this is a failure report (the run found no result)" in out
    assert (pdf.parent / "review.json").is_file()


@needs_tex
@pytest.mark.e2e
def test_an_agentic_run_whose_experiments_all_fail_reports_why_and_skips_the_review(tmp_path: Path) -> None:
    llm = json.loads(json.dumps(LLM))
    llm["roles"]["review"] = {"model": "sci", "max_tokens": 4096}
    cfg = agentic_config(
        tmp_path,
        llm=llm,
        replicates=1,
        stages={"preliminary": {"max_nodes": 3}},
        writeup={"offline": True},
        review={"reviews": 2},
    )
    search = responder(plots=False)

    def answer(call: ProviderCall) -> str:
        assert call.role != "review", "a failure report is not reviewed in the run"
        reply = search(call)
        if call.role != "code":
            return reply
        return json.dumps({**json.loads(reply), "code": "print(1 / 0)\n"})  # every experiment fails

    outcome, j = start(cfg, answer)
    assert outcome.status == "finished", outcome.message
    assert "review: skipped (the paper is a failure report: it states no result to review)" in outcome.message
    assert not j.in_stage("review")
    run_dir = j.log.path.parent
    summary = json.loads((run_dir / "paper" / "noise" / "failure.json").read_text())
    assert [(g["cause"], g["nodes"]) for g in summary["failures"]] == [("exit code 1: ZeroDivisionError", 3)]
    assert summary["llm_calls"] > 0 and set(summary["llm_by_role"]) >= {"code"}
    text = _text(run_dir / "paper" / "noise" / "paper.pdf")
    assert "Small-loss filtering under label noise" in text and "ZeroDivisionError" in text
    assert not CLAIMS.search(text), CLAIMS.search(text)
    # It failed within a few seconds: the report gives tenths, not "took 0 seconds".
    assert re.search(r"took \d+\.\d seconds of wall clock", " ".join(text.split())), text
