"""Phases after the search: `writeup:` makes `silva run` end with a paper, `review:` with its
reviews; in a forest each idea's paper and review are their own jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.llm.providers.base import ProviderCall
from engine.node import Node, NodeStatus
from search.phases import phase_nodes
from silva.cli.main import main
from tests.helpers import make_config, make_template
from tests.review.papers import scripted_reviewer
from tests.search.agentic_helpers import LLM, agentic_config, idea_file, responder, start


@pytest.mark.e2e
def test_a_template_run_ends_with_its_paper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = make_config(tmp_path, make_template(tmp_path / "tpl"), writeup={"offline": True})
    assert main(["run", str(cfg)]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    assert f"paper: {run_dir / 'paper' / 'default' / 'paper.pdf'}\n" in capsys.readouterr().out
    j = Journal.open(run_dir, read_only=True)
    [paper] = j.in_stage("paper")
    assert paper.status == NodeStatus.GOOD and (run_dir / "paper" / "default" / "paper.pdf").is_file()
    assert j.finished is not None and "; paper written: paper/default/paper.pdf" in j.finished.reason
    # The phase runs after the search: no search node starts once the paper job did.
    started = {e.node_id: e.ts for e in j.log.read(ev.AttemptStarted)}
    assert all(ts < started[paper.id] for nid, ts in started.items() if nid != paper.id)


@pytest.mark.e2e
def test_a_forest_writes_and_reviews_each_paper(tmp_path: Path) -> None:
    llm: dict[str, Any] = json.loads(json.dumps(LLM))
    llm["roles"]["review"] = {"model": "sci", "max_tokens": 4096}
    ideas = [idea_file(tmp_path / "a", name="first"), idea_file(tmp_path / "b", name="second")]
    small = {s: {"max_nodes": 1} for s in ("hyperparameter", "agenda", "ablation")}
    cfg = agentic_config(
        tmp_path,
        ideas=ideas,
        llm=llm,
        replicates=1,
        stages=small,
        writeup={"offline": True},
        review={"reviews": 2},
    )
    search = responder(plots=False)

    def answer(call: ProviderCall) -> str:
        return scripted_reviewer(call) if call.role == "review" else search(call)

    outcome, j = start(cfg, answer)
    assert outcome.status == "finished", outcome.message
    run_dir = j.log.path.parent
    for idea in ("first", "second"):
        [review] = j.in_stage("review", idea=idea)
        assert review.status == NodeStatus.GOOD, review.reason
        result = json.loads((run_dir / "paper" / idea / "review.json").read_text())
        assert result["meta_review"]["reviews_used"] == 2 and result["decision"] in ("accept", "reject")
    spans = [(n.started_at, n.finished_at) for n in j.in_stage("review")]
    assert all(s is not None and f is not None for s, f in spans)


class _Phase:
    """A phase whose one call to `propose` ends it with no nodes (as the held-out choice does)."""

    after_no_result = False

    def __init__(self, stage: str, nodes: list[Node]) -> None:
        self.stage, self.nodes, self.ended = stage, nodes, False

    def propose(self, slots: int) -> list[Node]:
        self.ended = not self.nodes
        return self.nodes

    def job_for(self, node: Node, attempt: int) -> Any:
        raise NotImplementedError

    def done(self) -> bool:
        return self.ended

    def summary(self) -> str:
        return self.stage


def test_a_phase_that_ends_while_proposing_hands_on_to_the_next() -> None:
    paper = Node(stage="paper", kind="paper", idea="default", plan="paper")
    assert phase_nodes([_Phase("heldout", []), _Phase("paper", [paper])], 4) == [paper]
