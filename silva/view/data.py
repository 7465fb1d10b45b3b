"""The page's data, computed from a run directory: a compact forest table for the whole run and
one details record per node (loaded by the page only when that node is clicked).

The forest table is column-oriented (one array per field, nodes by index), so 10,000 nodes are a
few hundred kilobytes and the page lays them out in one pass.
"""

from __future__ import annotations

import difflib
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from engine.events import AttemptStarted, NodeCreated
from engine.journal import Journal
from engine.llm.ledger import CallRecord
from engine.node import Node, NodeStatus
from engine.totals import ATTEMPT_ENDS
from search.stages import SUPPORT_KINDS
from silva.config import RunConfig
from silva.cost import Span, Spend, attempt_spans, remaining_nodes, spend, throughput, throughput_lines
from silva.rolling import idea_states, ideation_line
from silva.status import state_line
from silva.view.adapter import facts, summary
from silva.view.claims import IdeaClaims, idea_claims

STATUSES = [s.value for s in NodeStatus]
# Flags of a node in the forest table (bits).
BEST, SPECULATIVE, HELDOUT_CHOICE, LOST, ROOT = 1, 2, 4, 8, 16
MAX_CODE_CHARS = 200_000  # a runaway file is cut in the page, never in the run
# Node shapes: search operators take round shapes, the stage's own work (replicates,
# aggregation, best-node selection) angular ones, so the two read apart at a glance.
OPERATOR_SHAPES = ("circle", "star", "down", "cross", "hexagon")
SUPPORT_SHAPES = ("square", "diamond", "triangle")


class Decision(BaseModel):
    idea: str
    stage: str
    node: str | None
    metric: str | None = None
    value: float | None = None
    reason: str = ""
    selection: dict[str, Any] = Field(default_factory=dict)
    ended: str | None = None  # why the stage ended, once it did
    aggregate: str | None = None
    root: str | None = None  # the node the stage grew from


class BudgetRow(BaseModel):
    name: str
    used: float
    limit: float | None
    unit: str = ""


class ForestData(BaseModel):
    """Everything the page draws without a click."""

    version: str
    chunk: int  # nodes per details file: node i's details are in nodes/c{i // chunk}.js
    run: dict[str, Any]
    ideas: list[str]
    stages: list[str]
    kinds: list[str]
    shapes: list[str]  # one per kind
    statuses: list[str] = Field(default_factory=lambda: list(STATUSES))
    nodes: dict[str, list[Any]]  # column -> values, one per node
    decisions: list[Decision]
    heldout: list[dict[str, Any]]
    idea_stopped: dict[str, str]
    idea_published: list[str] = []  # a rolling forest's ideas whose search, paper and review ended
    budgets: list[BudgetRow]
    spend: dict[str, Any]
    throughput: dict[str, Any]
    throughput_text: list[str]
    claims: list[IdeaClaims]  # per idea: the claim ledger the writers state (silva/view/claims.py)


def _idea_metrics(journal: Journal) -> dict[str, str]:
    """The metric each tree decides on: its decisions' metric, else the run's primary."""
    out = {idea: e.metric for (idea, _), e in journal.stage_best.items() if e.metric}
    primary = journal.primary_metric
    if primary is not None:
        for n in journal:
            out.setdefault(n.idea, primary.name)
    return out


def node_revisions(journal: Journal, records: list[CallRecord]) -> dict[str, str]:
    """A token per node that changes whenever anything shown in its details changes."""
    events: dict[str, int] = defaultdict(int)
    for e in journal.log.events:
        node_id = e.node.id if isinstance(e, NodeCreated) else getattr(e, "node_id", None)
        if node_id:
            events[node_id] += 1
    calls: dict[str, int] = defaultdict(int)
    for r in records:
        if r.node_id:
            calls[r.node_id] += 1
    return {nid: f"{events[nid]}.{calls[nid]}" for nid in journal.nodes}


def _kinds_and_shapes(journal: Journal) -> tuple[list[str], list[str]]:
    """Node kinds in drawing order (operators, then the stage's own work) and a shape per kind."""
    present = {n.kind for n in journal}
    kinds = sorted(present - set(SUPPORT_KINDS)) + [k for k in SUPPORT_KINDS if k in present]
    shapes = [
        OPERATOR_SHAPES[i % len(OPERATOR_SHAPES)] for i, k in enumerate(kinds) if k not in SUPPORT_KINDS
    ]
    shapes += [
        SUPPORT_SHAPES[i % len(SUPPORT_SHAPES)] for i, k in enumerate(k for k in kinds if k in SUPPORT_KINDS)
    ]
    return kinds, shapes


def _flags(journal: Journal) -> dict[str, int]:
    """Each flagged node's bits: stage best, held-out choice, lost attempt, stage root."""
    best = {e.node_id for e in journal.stage_best.values() if e.node_id}
    chosen = {e.node_id for e in journal.heldout.values() if e.node_id}
    lost = {
        s.node_id
        for s in attempt_spans(journal.log.read(AttemptStarted, *ATTEMPT_ENDS))
        if s.ended in ("lost", "cancelled")
    }
    roots = {e.root for e in journal.stage_started.values() if e.root}
    flags: dict[str, int] = defaultdict(int)
    for bit, ids in ((BEST, best), (HELDOUT_CHOICE, chosen), (LOST, lost), (ROOT, roots)):
        for nid in ids:
            flags[nid] |= bit
    return flags


def _node_columns(
    journal: Journal, ideas: list[str], kinds: list[str], metric: dict[str, str], revisions: dict[str, str]
) -> dict[str, list[Any]]:
    ids = list(journal.nodes)
    index = {nid: i for i, nid in enumerate(ids)}
    idea_index = {idea: i for i, idea in enumerate(ideas)}
    stage_index = {s: i for i, s in enumerate(journal.stage_names)}
    flags = _flags(journal)
    cols: dict[str, list[Any]] = {c: [] for c in ("id", "p", "i", "s", "k", "st", "v", "f", "r", "t")}
    for nid in ids:
        n = journal.nodes[nid]
        cols["id"].append(nid)
        cols["p"].append(index.get(n.parent_id, -1) if n.parent_id else -1)
        cols["i"].append(idea_index.get(n.idea, 0))
        cols["s"].append(stage_index[n.stage])
        cols["k"].append(kinds.index(n.kind))
        cols["st"].append(STATUSES.index(n.status.value))
        cols["v"].append(n.metric(metric[n.idea]) if n.idea in metric else None)
        cols["f"].append(flags.get(nid, 0) | SPECULATIVE * n.origin.speculative)
        cols["r"].append(revisions[nid])
        cols["t"].append(facts(n).variant[:80])
    return cols


def _decisions(journal: Journal) -> list[Decision]:
    decisions = []
    for (idea, stage), e in journal.stage_best.items():
        ended = journal.stage_ended.get((idea, stage))
        started = journal.stage_started.get((idea, stage))
        decisions.append(
            Decision(
                idea=idea,
                stage=stage,
                node=e.node_id,
                metric=e.metric,
                value=e.value,
                reason=e.reason,
                selection=e.selection or {},
                ended=ended.reason if ended else None,
                aggregate=ended.aggregate_node_id if ended else None,
                root=started.root if started else None,
            )
        )
    return decisions


def _run_facts(run_dir: Path, cfg: RunConfig, journal: Journal, metric: dict[str, str]) -> dict[str, Any]:
    live = journal.finished is None and journal.stop is None
    spec = journal.primary_metric
    return {
        "name": run_dir.name,
        "state": state_line(journal),
        "live": live,
        "mode": cfg.mode,
        "elapsed_s": journal.elapsed_s(now=time.time() if live else None),
        "metric": spec.model_dump(mode="json") if spec else None,
        "idea_metrics": metric,
        "generated_at": time.time(),
        "plan": list(cfg.plan.names),
        "ideation": ideation_line(journal),  # a rolling forest's ideas; None otherwise
    }


def forest_data(
    run_dir: Path,
    cfg: RunConfig,
    journal: Journal,
    records: list[CallRecord],
    revisions: dict[str, str],
    chunk: int,
) -> ForestData:
    ideas = sorted({n.idea for n in journal} | {k[0] for k in journal.stage_started})
    kinds, shapes = _kinds_and_shapes(journal)
    metric = _idea_metrics(journal)
    spent = spend(records)
    rate = throughput(cfg, journal, records)
    return ForestData(
        version=f"{len(journal.log.events)}.{len(records)}",
        chunk=chunk,
        run=_run_facts(run_dir, cfg, journal, metric),
        ideas=ideas or ["default"],
        stages=journal.stage_names,
        kinds=kinds,
        shapes=shapes,
        nodes=_node_columns(journal, ideas, kinds, metric, revisions),
        decisions=_decisions(journal),
        heldout=[
            {"idea": idea, **e.model_dump(mode="json", exclude={"seq", "type"})}
            for idea, e in sorted(journal.heldout.items())
        ],
        idea_stopped={idea: e.reason for idea, e in journal.idea_stopped.items()},
        idea_published=states.published if (states := idea_states(journal)) else [],
        budgets=budget_rows(cfg, journal, spent),
        spend=spent.model_dump(mode="json"),
        throughput=rate.model_dump(mode="json"),
        throughput_text=throughput_lines(rate),
        claims=idea_claims(run_dir, cfg, journal, ideas),
    )


def budget_rows(cfg: RunConfig, journal: Journal, spent: Spend) -> list[BudgetRow]:
    b, dollars = cfg.budgets, spent.total.dollars
    rows = [
        BudgetRow(name="wall clock", used=journal.elapsed_s(), limit=b.wall_clock_s, unit="s"),
        BudgetRow(name="nodes", used=len(journal.nodes), limit=b.max_nodes),
        BudgetRow(name="LLM dollars", used=dollars, limit=b.dollars, unit="$"),
    ]
    ideas = sorted({n.idea for n in journal})
    support = {n.kind for n in journal if n.kind in ("replication", "aggregation", "selection")}
    for idea in ideas:
        for stage, sc in cfg.stages.items():
            used = sum(1 for n in journal.in_stage(stage, idea=idea) if n.kind not in support)
            name = f"{idea} · {stage} search nodes" if len(ideas) > 1 else f"{stage} search nodes"
            rows.append(BudgetRow(name=name, used=used, limit=sc.max_nodes))
    sources = cfg.idea_sources()
    if sources and all(s.path.is_file() for s in sources):  # idea files moved since the run: no per-idea rows
        from search.idea import load_ideas

        for loaded, source in zip(load_ideas(sources), sources):  # the forest pairs them in this order
            if source.max_nodes is not None:
                rows.append(
                    BudgetRow(
                        name=f"{loaded.name} nodes",
                        used=sum(n.idea == loaded.name for n in journal),
                        limit=source.max_nodes,
                    )
                )
            if source.dollars is not None:
                idea_dollars = next((r.dollars for r in spent.groups["idea"] if r.key == loaded.name), 0.0)
                rows.append(
                    BudgetRow(
                        name=f"{loaded.name} LLM dollars", used=idea_dollars, limit=source.dollars, unit="$"
                    )
                )
    rows.append(
        BudgetRow(
            name="nodes left within the stage budgets (at most)",
            used=remaining_nodes(cfg, journal),
            limit=None,
        )
    )
    return rows


# -- details of one node -----------------------------------------------------------------------
def code_diff(parent: str, code: str, parent_id: str, node_id: str) -> tuple[str, int, int]:
    """Unified diff (the page colours it) and its added/removed line counts."""
    lines = list(
        difflib.unified_diff(
            parent[:MAX_CODE_CHARS].splitlines(keepends=True),
            code[:MAX_CODE_CHARS].splitlines(keepends=True),
            fromfile=f"{parent_id}/experiment.py",
            tofile=f"{node_id}/experiment.py",
            n=3,
        )
    )
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines), added, removed


def _node_cost(node: Node, calls: list[CallRecord]) -> dict[str, Any]:
    by_role: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "dollars": 0.0})
    for r in calls:
        by_role[r.role]["calls"] += 1
        by_role[r.role]["dollars"] += 0.0 if r.cache_hit else r.dollars
    return {
        "usd": node.cost_usd,
        "calls": len(calls),
        "cache_hits": sum(r.cache_hit for r in calls),
        "input_tokens": sum(r.input_tokens for r in calls if not r.cache_hit),
        "output_tokens": sum(r.output_tokens for r in calls if not r.cache_hit),
        "by_role": dict(by_role),
    }


def _node_timings(node: Node, spans: list[Span]) -> dict[str, Any]:
    first_start = min((s.start for s in spans), default=node.started_at)
    return {
        "created": node.created_at,
        "started": first_start,
        "finished": node.finished_at,
        "queued_s": (first_start - node.created_at) if first_start else None,
        "total_s": (node.finished_at - node.created_at) if node.finished_at else None,
        "experiment_s": node.execution.wall_s if node.execution else None,
    }


def node_details(
    journal: Journal,
    node: Node,
    children: list[str],
    spans: list[Span],
    calls: list[CallRecord],
    decisions: list[dict[str, Any]],
) -> dict[str, Any]:
    f = facts(node)
    parent = journal.nodes.get(node.parent_id) if node.parent_id else None
    diff = None
    if parent is not None and (parent.code or node.code):
        text, added, removed = code_diff(parent.code, node.code, parent.id, node.id)
        diff = {"text": text, "added": added, "removed": removed, "parent": parent.id}
    ex = node.execution.model_dump(mode="json") if node.execution else None
    return {
        "id": node.id,
        "idea": node.idea,
        "stage": node.stage,
        "kind": node.kind,
        "operator": f.operator,
        "variant": f.variant,
        "origin": f.origin,
        "status": node.status.value,
        "reason": node.reason,
        "summary": summary(node),
        "parent": node.parent_id,
        "refs": node.refs,
        "seed": node.seed,
        "params": node.params,
        "children": children,
        # Highlighted by the page when shown: 10,000 nodes' code is never highlighted up front.
        "plan": f.plan,
        "code": f.code[:MAX_CODE_CHARS],
        "plot_code": f.plot_code[:MAX_CODE_CHARS],
        "diff": diff,
        "metrics": [m.model_dump(mode="json") for m in node.metrics],
        "plots": [f"../{p}" for p in f.plots],
        "judgement": f.judgement,
        "critique": f.critique,
        "outcome_family": f.outcome_family,
        "outcome": f.outcome,
        "cost": _node_cost(node, calls),
        "timings": _node_timings(node, spans),
        "workers": sorted({s.worker for s in spans if s.worker}),
        "attempts": [s.model_dump(mode="json") for s in spans],
        "lost_attempts": node.lost_attempts,
        "execution": ex,
        "artifacts": [{"path": a, "href": f"../{a}"} for a in node.artifacts],
        "decisions": decisions,
    }
