"""Per-stage numbers shared by the live progress display and `silva status`."""

from __future__ import annotations

from dataclasses import dataclass

from engine.journal import Journal
from engine.node import NodeStatus

# The writeup and review phases' stages (and node kinds): they make documents, not experiments,
# so no count of good, buggy or best experiment nodes includes them.
DOCUMENT_STAGES = ("paper", "review")


@dataclass
class StageRow:
    idea: str
    stage: str
    done: int
    running: int
    buggy: int
    good: int
    best_node: str | None
    best_value: float | None
    ended: str | None  # why the stage ended, if it did

    @property
    def document(self) -> bool:
        return self.stage in DOCUMENT_STAGES


def stage_rows(journal: Journal, open_only: bool = False) -> list[StageRow]:
    """`open_only`: just the stages not ended or with nodes in flight (what a live display
    shows), found from the journal's indexes rather than from every stage of the run."""
    spec = journal.primary_metric
    ideas = sorted(journal.ideas) or ["default"]
    wanted: set[tuple[str, str]] | None = None
    if open_only:
        wanted = {k for k in journal.stage_started if k not in journal.stage_ended}
        wanted |= {(n.idea, n.stage) for n in journal.unfinished}
        ideas = sorted({idea for idea, _ in wanted})
    rows = []
    for idea in ideas:
        for stage in journal.stage_names:
            if wanted is not None and (idea, stage) not in wanted:
                continue
            nodes = journal.in_stage(stage, idea=idea)
            if not nodes and (idea, stage) not in journal.stage_started:
                continue
            decision = journal.stage_best.get((idea, stage))
            best = (
                journal.nodes[decision.node_id]
                if decision and decision.node_id
                else journal.best_node(stage, idea=idea)
            )
            ended = journal.stage_ended.get((idea, stage))
            rows.append(
                StageRow(
                    idea=idea,
                    stage=stage,
                    done=sum(n.is_finished for n in nodes),
                    running=sum(n.status == NodeStatus.RUNNING for n in nodes),
                    buggy=sum(n.status == NodeStatus.BUGGY for n in nodes),
                    good=sum(n.status == NodeStatus.GOOD for n in nodes),
                    best_node=best.id if best else None,
                    # A forest's trees may decide on different metrics: show the decision's own value.
                    best_value=decision.value
                    if decision and decision.node_id
                    else (best.metric(spec.name) if best and spec else None),
                    ended=ended.reason if ended else None,
                )
            )
    return rows


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def document_failures(journal: Journal) -> list[str]:
    """Each writeup or review that ran and failed, one line: "review failed: <its reason>"."""
    forest = len(journal.ideas) > 1
    return [
        f"{stage} failed{f' for {idea}' if forest else ''}: {node.reason}"
        for idea in journal.ideas or ["default"]
        for stage in DOCUMENT_STAGES
        for node in journal.in_stage(stage, idea=idea)
        if node.status == NodeStatus.BUGGY
    ]
