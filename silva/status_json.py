"""A run's state and result as data: the end-of-run line of `silva run` and `silva status --json`
(docs/cli.md, "--json outputs"). The schema only grows by new keys; `schema_version` says which."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from engine.claims import Claim, GroupSummary, load_ledger
from engine.journal import Journal
from engine.summary import StageRow, document_failures, fmt, stage_rows
from silva.rolling import IdeaStates, idea_states
from silva.status import node_counts
from writeup.files import PAPER_DIR  # RUN_DIR/paper/<idea>/ holds each idea's paper and its ledger.json

SCHEMA_VERSION = 1
RELATION = {
    "better": "is better than",
    "worse": "is worse than",
    "no detectable difference": "shows no detectable difference from",
    "untested": "was not tested against",
}
ROLE = {"test": "held-out", "selection": "the selection metric (no held-out metric)", "other": "metric"}


class RunResult(BaseModel):
    """The run's headline from its experiments: each paper's headline claim (the method against
    the baseline, mean ± sd over seeds) where one was written, else the best single-seed selection
    score of each idea's last stage; none when a stage that ran has no good node. A failed writeup
    or review is said in `phases`, never taken for a missing result."""

    text: str
    has_result: bool
    metric: str | None = None
    direction: str | None = None
    value: float | None = None
    node: str | None = None
    stage: str | None = None
    idea: str | None = None
    headlines: dict[str, Claim] = {}  # each idea's paper headline claim, where a paper was written
    phases: list[str] = []  # one line per failed writeup or review: "review failed: ..."


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
    nodes: dict[str, int]  # experiment nodes: "total", then a count per status ("unfinished": no end)
    documents: dict[str, int] = {}  # paper and review nodes, per status: never counted as experiments
    primary_metric: dict[str, str] | None
    result: RunResult
    stages: list[StageState]
    ideas: IdeaStates | None = None  # a rolling forest's ideas admitted, running, retired, published


def _group(g: GroupSummary) -> str:
    spread = f" ± {g.sd:.2g}" if g.sd is not None else ""
    return f"{fmt(g.mean)}{spread} (n = {g.n})"


def headline_text(claim: Claim) -> str:
    """A paper's headline: the verdict, the two groups by name, the metric and its role, each
    group's mean ± sd and n, and the test."""
    test = f", {claim.test} p = {claim.p:.2g}" if claim.p is not None and claim.test else ""
    return (
        f"{claim.subject.name or claim.subject.label} {RELATION[claim.verdict]} "
        f"{claim.reference.name or claim.reference.label} on {ROLE[claim.role]} "
        f"{claim.metric}: {_group(claim.subject)} against {_group(claim.reference)}, mean ± sd{test}"
    )


def _headlines(run_dir: Path, ideas: list[str]) -> dict[str, Claim]:
    found = {}
    for idea in ideas:
        try:
            ledger = load_ledger(run_dir / PAPER_DIR / idea)
        except (OSError, ValueError):  # a ledger being written, or damaged: no headline from it
            ledger = None
        if ledger is not None and ledger.headline is not None:
            found[idea] = ledger.headline
    return found


def run_result(journal: Journal) -> RunResult:
    rows = [r for r in stage_rows(journal) if not r.document]
    phases = document_failures(journal)
    empty = [r for r in rows if r.done and not r.good]
    if empty:
        where = ", ".join(r.stage + (f" of {r.idea}" if r.idea != "default" else "") for r in empty[:3])
        more = f" and {len(empty) - 3} more" if len(empty) > 3 else ""
        return RunResult(text=f"result: none: no good node in {where}{more}", has_result=False, phases=phases)
    if journal.config.get("discovery"):
        return _claims(journal, rows).model_copy(update={"phases": phases})
    finals = {r.idea: r for r in rows if r.best_value is not None}  # each idea's last stage with a best
    headlines = _headlines(journal.log.path.parent, sorted(finals))
    return _best(journal, rows, finals, headlines).model_copy(update={"phases": phases})


def _claims(journal: Journal, rows: list[StageRow]) -> RunResult:
    """A discovery run's result: its claims by verdict. Its primary metric (a test's log p) only
    ranks the hypotheses tried; the best of them is no result, and no paper tests it."""
    from search.discovery.claims import ClaimStore, counts  # pandas: only for discovery runs

    store = ClaimStore(journal.log.path.parent)
    found = counts(store.load()) if store.exists else {}
    listed = ", ".join(f"{n} {status}" for status, n in found.items() if n) or "none yet"
    good, total = sum(r.good for r in rows), sum(r.done for r in rows)
    if total == 0:  # nothing has finished: "claims: none yet, from 0 of 0" said nothing
        return RunResult(text="result: none yet: no hypothesis node has finished", has_result=False)
    return RunResult(
        text=f"result: claims: {listed}, from {good} of {total} hypothesis nodes that ran cleanly "
        "(discovery keeps claims, not a best node)",
        has_result=good > 0,
    )


def _best(
    journal: Journal, rows: list[StageRow], finals: dict[str, StageRow], headlines: dict[str, Claim]
) -> RunResult:
    spec = journal.primary_metric
    if not finals or spec is None:
        return RunResult(text="result: none: no node has a value of the primary metric", has_result=False)
    best = max(finals.values(), key=lambda r: spec.oriented(r.best_value) or float("-inf"))
    ideas = f" (best of {len(finals)} ideas: {best.idea})" if len(finals) > 1 else ""
    single = (
        f"{spec.name} = {fmt(best.best_value)} ({spec.direction}; one seed, the score the search selected "
        f"on), node {best.best_node} in stage {best.stage}{ideas}"
    )
    if headlines:
        forest = len(finals) > 1
        text = "\n".join(
            f"result: {f'{i}: ' if forest else ''}{headline_text(c)}" for i, c in sorted(headlines.items())
        )
    else:
        text = f"result: best single-seed search score: {single}; no paper tested it against a baseline"
    return RunResult(
        text=text,
        has_result=True,
        metric=spec.name,
        direction=spec.direction,
        value=best.best_value,
        node=best.best_node,
        stage=best.stage,
        idea=best.idea,
        headlines=headlines,
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
    counts, documents = node_counts(journal)
    return StatusReport(
        run_dir=str(run_dir),
        state=state,
        reason=reason,
        budget=budget,
        nodes={"total": sum(counts.values()), **dict(sorted(counts.items()))},
        documents=dict(sorted(documents.items())),
        primary_metric={"name": spec.name, "direction": spec.direction} if spec else None,
        result=run_result(journal),
        stages=[StageState(**vars(r)) for r in stage_rows(journal) if not r.document],
        ideas=idea_states(journal),
    )
