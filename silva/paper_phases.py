"""Writing and reviewing the paper as phases after the search (`writeup:` and `review:` in the
run config). Built here, in the composition root, and handed to each idea tree: search/ never
imports writeup/ or review/. Each phase is one node per idea, so a forest's papers are written
and reviewed as parallel jobs through the same executor and LLM gateway, within the run's
dollar budget."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.executor import Job
from engine.journal import Journal
from engine.llm import LLM
from engine.node import AttemptResult, Node, NodeStatus
from engine.summary import DOCUMENT_STAGES
from review.config import ReviewConfig
from search.phases import Phase
from silva.config import RunConfig
from writeup.config import WriteupConfig
from writeup.files import FAILURE_FILE
from writeup.job import WriteupJob

PAPER, REVIEW = DOCUMENT_STAGES  # the phases' stage names (and node kinds): documents, not experiments


class _OneNodePhase:
    """A phase that is one node per idea; done once that node has a result."""

    stage = ""

    def __init__(self, journal: Journal, idea: str) -> None:
        self.journal, self.idea = journal, idea

    def node(self) -> Node | None:
        return next(iter(self.journal.in_stage(self.stage, idea=self.idea)), None)

    def propose(self, slots: int) -> list[Node]:
        if self.node() is not None or slots <= 0:
            return []
        return [
            Node(stage=self.stage, kind=self.stage, idea=self.idea, plan=f"{self.stage} of idea {self.idea}")
        ]

    def done(self) -> bool:
        node = self.node()
        return node is not None and node.is_finished

    def summary(self) -> str:
        node = self.node()
        assert node is not None
        if node.status == NodeStatus.BUGGY:
            return f"{self.stage} failed: {node.reason}"
        # A reason that names its phase ("paper written: ...") is not prefixed again.
        return node.reason if node.reason.startswith(self.stage) else f"{self.stage}: {node.reason}"


class WriteupPhase(_OneNodePhase):
    stage = PAPER
    after_no_result = True  # then the paper is the failure report (docs/writeup.md)

    def __init__(
        self,
        journal: Journal,
        idea: str,
        cfg: WriteupConfig,
        llm: LLM | None,
        sandbox: str,
        sandbox_options: dict[str, Any],
    ) -> None:
        super().__init__(journal, idea)
        self.cfg, self.llm, self.sandbox, self.sandbox_options = cfg, llm, sandbox, sandbox_options

    def job_for(self, node: Node, attempt: int) -> Job:
        return WriteupJob(
            node_id=node.id,
            attempt=attempt,
            run_dir=self.journal.log.path.parent,
            idea=self.idea,
            cfg=self.cfg,
            llm=self.llm if self.cfg.offline is not True else None,
            sandbox=self.sandbox,
            sandbox_options=self.sandbox_options,
        )


@dataclass
class ReviewJob:
    """Review one idea's paper: N reviews and the meta-review, on the worker's threads."""

    node_id: str
    attempt: int
    paper_dir: Path
    run_dir: Path
    llm: LLM
    cfg: ReviewConfig = field(default_factory=ReviewConfig)
    holds_resources: bool = False  # it only waits on the LLM

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        from review import review_paper

        started = time.time()
        if not (self.paper_dir / "paper.pdf").is_file():
            return AttemptResult(status="buggy", reason=f"no paper to review in {self.paper_dir}")
        result = review_paper(self.paper_dir, self.llm, self.cfg)
        rel = self.paper_dir.relative_to(self.run_dir)
        decision = result.decision or "no decision"
        return AttemptResult(
            status="good" if result.decision is not None else "buggy",
            reason=f"{decision}, overall {result.overall if result.overall is not None else '-'} "
            f"({result.reviews_used} of {len(result.reviews)} reviews)",
            artifacts=[str(rel / "review.json"), str(rel / "review.md")],
            workspace=str(rel),
            started_at=started,
            finished_at=time.time(),
        )


class ReviewPhase(_OneNodePhase):
    """Reviews the paper; a failure report is not reviewed: it states no result for reviewers to
    judge, and says so in the run's finish message (`silva review` can still review it)."""

    stage = REVIEW
    after_no_result = True  # to say why there is no review

    def __init__(self, journal: Journal, idea: str, cfg: ReviewConfig, llm: LLM) -> None:
        super().__init__(journal, idea)
        self.cfg, self.llm = cfg, llm

    def paper(self) -> Node | None:
        return next(iter(self.journal.in_stage(PAPER, idea=self.idea)), None)

    def failure_report(self) -> bool:
        paper = self.paper()
        return paper is not None and any(Path(a).name == FAILURE_FILE for a in paper.artifacts)

    def propose(self, slots: int) -> list[Node]:
        paper = self.paper()
        if paper is None or paper.status != NodeStatus.GOOD or self.failure_report():
            return []  # nothing to review: `done` says so
        return super().propose(slots)

    def done(self) -> bool:
        paper = self.paper()
        return (
            super().done()
            or (paper is not None and paper.status == NodeStatus.BUGGY)
            or self.failure_report()
        )

    def summary(self) -> str:
        if self.node() is not None:
            return super().summary()
        if self.failure_report():
            return "review: skipped (the paper is a failure report: it states no result to review)"
        return "review: skipped (no paper)"

    def job_for(self, node: Node, attempt: int) -> Job:
        run_dir = self.journal.log.path.parent
        return ReviewJob(node.id, attempt, run_dir / "paper" / self.idea, run_dir, self.llm, self.cfg)


def paper_phases(cfg: RunConfig, journal: Journal, llm: LLM | None) -> Callable[[str], list[Phase]]:
    """The phases after the search that the config asks for, per idea."""

    def for_idea(idea: str) -> list[Phase]:
        phases: list[Phase] = []
        if cfg.writeup is not None:
            phases.append(
                WriteupPhase(journal, idea, cfg.writeup, llm, cfg.sandbox.provider, cfg.sandbox.options)
            )
        if cfg.review is not None and llm is not None:
            phases.append(ReviewPhase(journal, idea, cfg.review, llm))
        return phases

    return for_idea
