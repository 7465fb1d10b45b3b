"""A run's state and result as data: the end-of-run line of `silva run` and `silva status --json`
(docs/cli.md, "--json outputs"). The schema only grows by new keys; `schema_version` says which."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from engine.journal import Journal
from engine.summary import fmt, stage_rows
from silva.status import node_state

SCHEMA_VERSION = 1


class RunResult(BaseModel):
    """The run's headline from its own numbers: each idea's last stage with a best node, the best
    of them on the primary metric; none when a stage that ran has no good node."""

    text: str
    has_result: bool
    metric: str | None = None
    direction: str | None = None
    value: float | None = None
    node: str | None = None
    stage: str | None = None
    idea: str | None = None


class StageState(BaseModel):
    idea: str
    stage: str
    done: int
    good: int
    buggy: int
    running: int
    best_node: str | None
    best_value: float | None
    ended: str | None


class StatusReport(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_dir: str
    state: Literal["running", "stopped", "finished"]
    reason: str | None  # why it stopped or finished
    budget: str | None  # the budget that stopped it
    nodes: dict[str, int]  # "total", then a count per status ("unfinished": no end journaled)
    primary_metric: dict[str, str] | None
    result: RunResult
    stages: list[StageState]


def run_result(journal: Journal) -> RunResult:
    spec = journal.primary_metric
    rows = stage_rows(journal)
    empty = [r for r in rows if r.done and not r.good]
    if empty:
        where = ", ".join(r.stage + (f" of {r.idea}" if r.idea != "default" else "") for r in empty[:3])
        more = f" and {len(empty) - 3} more" if len(empty) > 3 else ""
        return RunResult(text=f"result: none: no good node in {where}{more}", has_result=False)
    finals = {r.idea: r for r in rows if r.best_value is not None}  # each idea's last stage with a best
    if (not finals or spec is None) and any(r.good for r in rows):  # discovery: claims, not a best node
        good, total = sum(r.good for r in rows), sum(r.done for r in rows)
        return RunResult(
            text=f"result: {good} of {total} nodes ran cleanly; this mode keeps claims, not a best node "
            "(its findings are above)",
            has_result=True,
        )
    if not finals or spec is None:
        return RunResult(text="result: none: no node has a value of the primary metric", has_result=False)
    best = max(finals.values(), key=lambda r: spec.oriented(r.best_value) or float("-inf"))
    ideas = f" (best of {len(finals)} ideas: {best.idea})" if len(finals) > 1 else ""
    return RunResult(
        text=f"result: {spec.name} = {fmt(best.best_value)} ({spec.direction}), node {best.best_node} "
        f"in stage {best.stage}{ideas}",
        has_result=True,
        metric=spec.name,
        direction=spec.direction,
        value=best.best_value,
        node=best.best_node,
        stage=best.stage,
        idea=best.idea,
    )


def status_report(run_dir: Path, journal: Journal) -> StatusReport:
    if journal.finished is not None:
        state: Literal["running", "stopped", "finished"] = "finished"
        reason, budget = journal.finished.reason, None
    elif journal.stop is not None:
        state, reason, budget = "stopped", journal.stop.reason, journal.stop.budget
    else:
        state, reason, budget = "running", None, None
    spec = journal.primary_metric
    counts = Counter(node_state(journal, n) for n in journal)
    return StatusReport(
        run_dir=str(run_dir),
        state=state,
        reason=reason,
        budget=budget,
        nodes={"total": len(journal.nodes), **dict(sorted(counts.items()))},
        primary_metric={"name": spec.name, "direction": spec.direction} if spec else None,
        result=run_result(journal),
        stages=[StageState(**vars(r)) for r in stage_rows(journal)],
    )
