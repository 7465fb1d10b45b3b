"""`silva status RUN_DIR`: tree summary, best node per stage, budget use, why the run stopped."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from engine.journal import Journal
from engine.llm.gateway import QUEUE_FILE
from engine.llm.ledger import LEDGER_FILE, read_records, render_summary, summarize
from engine.node import Node, NodeStatus
from engine.summary import DOCUMENT_STAGES, StageRow, document_failures, fmt, stage_rows
from search.stages import SUPPORT_KINDS
from silva.budget_lines import budget_text
from silva.config import RunConfig
from silva.cost import throughput, throughput_lines
from silva.rolling import ideation_line

MAX_STAGE_ROWS = 40


def state_line(journal: Journal) -> str:
    if journal.finished is not None:
        return f"finished: {journal.finished.reason}"
    if journal.stop is not None:
        budget = f" (budget: {journal.stop.budget})" if journal.stop.budget else ""
        return f"stopped: {journal.stop.reason}{budget}; continue with `silva resume`"
    return "running, or killed without a clean stop: `silva resume` continues it"


def node_state(journal: Journal, node: Node) -> str:
    """A node's status, except that nothing runs in a run that has ended: a node whose attempt
    never ended there (a line `silva repair` set aside, a kill) is "unfinished"."""
    ended = journal.finished is not None or journal.stop is not None
    if ended and node.status == NodeStatus.RUNNING:
        return "unfinished"
    return node.status.value


def node_counts(journal: Journal) -> tuple[Counter[str], Counter[str]]:
    """Experiment nodes by state, and papers and reviews by kind and state ("paper done"): they
    are documents, never counted as experiments."""
    states: Counter[str] = Counter()
    documents: Counter[str] = Counter()
    for n in journal:
        if n.kind in DOCUMENT_STAGES:
            documents[f"{n.kind} {node_state(journal, n)}"] += 1
        else:
            states[node_state(journal, n)] += 1
    return states, documents


def head_text(run_dir: Path, journal: Journal) -> Text:
    """The run, its state, its experiment nodes by status and kind (papers and reviews apart:
    they are documents, not experiments), and a failed writeup or review."""
    spec = journal.primary_metric
    statuses, documents = node_counts(journal)
    kinds = Counter(n.kind for n in journal if n.kind not in DOCUMENT_STAGES)
    return Text.assemble(
        (f"{run_dir}\n", "bold"),
        f"state: {state_line(journal)}\n",
        *(f"{line}\n" for line in document_failures(journal)),
        f"experiment nodes: {sum(statuses.values())} "
        f"({', '.join(f'{v} {k}' for k, v in sorted(statuses.items())) or 'none'}); kinds: "
        f"{', '.join(f'{v} {k}' for k, v in sorted(kinds.items())) or 'none'}\n",
        f"documents: {', '.join(f'{v} {k}' for k, v in sorted(documents.items()))}\n" if documents else "",
        f"primary metric: {spec.name} ({spec.direction})\n" if spec else "",
    )


def stages_table(journal: Journal) -> tuple[Table, list[StageRow]]:
    """The experiment stages table and the rows it shows: past MAX_STAGE_ROWS, the open stages
    and then the latest ended ones."""
    spec = journal.primary_metric
    stages = Table(title="stages", title_justify="left")
    run_ended = journal.finished is not None or journal.stop is not None  # nothing runs: see node_state
    for col in (
        "idea",
        "stage",
        "nodes done",
        "good",
        "buggy",
        "unfinished" if run_ended else "running",
        "best node",
        f"its {spec.name if spec else 'score'} (one seed)",
    ):
        stages.add_column(col)
    # Counts say what they count: a stage's nodes are its search nodes, their seed replicates and
    # the aggregation; the budget table below counts search nodes only.
    stages.caption = (
        "nodes done: search nodes, seed replicates and aggregation; the budgets count search nodes"
    )
    rows = [r for r in stage_rows(journal) if not r.document]  # papers and reviews: in the head
    if len(rows) > MAX_STAGE_ROWS:  # a forest of a thousand ideas: its open stages, then the latest ended
        active = [r for r in rows if not r.ended or r.running][:MAX_STAGE_ROWS]
        ended = [r for r in rows if r.ended and not r.running]
        shown = {id(r) for r in active + ended[len(ended) - (MAX_STAGE_ROWS - len(active)) :]}
        stages.caption += (
            f"\n{len(rows) - len(shown)} more stage(s) not shown (`silva export` has every node)"
        )
        rows = [r for r in rows if id(r) in shown]
    for r in rows:
        stages.add_row(
            r.idea,
            r.stage,
            str(r.done),
            str(r.good),
            str(r.buggy),
            str(r.running),
            r.best_node or "-",
            fmt(r.best_value),
        )
    return stages, rows


def budgets_table(cfg: RunConfig, journal: Journal, llm: dict[str, Any] | None) -> Table:
    """Each budget: what the run used of it and its limit."""
    budgets = Table(title="budgets", title_justify="left")
    for col in ("budget", "used", "limit"):
        budgets.add_column(col)
    b = cfg.budgets
    budgets.add_row("wall clock (s)", f"{journal.elapsed_s():.0f}", fmt(b.wall_clock_s))
    budgets.add_row("nodes (every kind)", str(len(journal.nodes)), str(b.max_nodes) if b.max_nodes else "-")
    mode = cfg.search_mode
    own = mode.stage_limits(cfg) if mode.stage_limits else {}
    for stage, sc in cfg.stages.items():
        if stage in own:  # the mode's own setting limits one kind of the stage's nodes
            kind, limit = own[stage]
            used = sum(1 for n in journal.in_stage(stage) if n.kind == kind)
            budgets.add_row(f"{stage}: {kind} nodes", str(used), limit)
            continue
        used = sum(1 for n in journal.in_stage(stage) if n.kind not in SUPPORT_KINDS)
        budgets.add_row(f"{stage} search nodes", str(used), str(sc.max_nodes))
    budgets.add_row("per-node timeout (s)", "-", fmt(b.node_timeout_s))
    dollars = llm["run"]["dollars"] if llm else sum(n.cost_usd for n in journal)
    budgets.add_row("LLM dollars", f"{dollars:.4f}", fmt(b.dollars))
    return budgets


def render(run_dir: Path, cfg: RunConfig, journal: Journal) -> Group:
    head = head_text(run_dir, journal)
    stages, rows = stages_table(journal)
    # Reasons are sentences: listed under the table rather than squeezed into a column.
    reasons = Text("\n".join(f"{r.idea}/{r.stage} ended: {r.ended}" for r in rows if r.ended))
    llm = summarize(run_dir) if (run_dir / LEDGER_FILE).is_file() else None
    budgets = budgets_table(cfg, journal, llm)
    # Nodes per hour, utilization, calls and dollars per node, projected spend (silva/cost.py).
    rates = Text("\n".join(throughput_lines(throughput(cfg, journal, read_records(run_dir / LEDGER_FILE)))))
    # Compute and changed budgets, projected exhaustion, allocation decisions (docs/budgets.md).
    return Group(
        head,
        stages,
        reasons,
        budgets,
        budget_text(run_dir, cfg, journal),
        llm_lines(run_dir, journal, llm, cfg.search_mode.status_lines),
        rates,
    )


def queue_line(run_dir: Path, now: float | None = None) -> str | None:
    """The calls waiting in the LLM gateway's queue for their provider's limits, and for how long
    (engine/llm/queuefile.py `QueueFile`, rewritten at most once a second while the run lives)."""
    try:
        waiting = json.loads((run_dir / QUEUE_FILE).read_text())["waiting"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not waiting:
        return "LLM queue: no call waiting"
    now = now or time.time()
    oldest = min(waiting, key=lambda w: w["since"])
    node = f", node {oldest['node_id']}" if oldest.get("node_id") else ""
    return (
        f"LLM queue: {len(waiting)} call{'s' if len(waiting) != 1 else ''} waiting for the provider's "
        f"concurrency and rate limits, the longest {max(0.0, now - oldest['since']):.0f} s "
        f"({oldest['role']}{node})"
    )


def llm_lines(
    run_dir: Path,
    journal: Journal,
    llm: dict[str, Any] | None,
    mode_lines: Callable[[Path], list[str]] | None = None,
) -> Text:
    """LLM mode: the ledger's totals, ideas stopped by their own budget, held-out choices, and the
    search mode's own lines (search/modes.py `Mode.status_lines`)."""
    lines = [render_summary(llm)] if llm else []
    if journal.finished is None and (queued := queue_line(run_dir)):
        lines.append(queued)
    if (ideation := ideation_line(journal)) is not None:
        lines.append(ideation)
    for idea, e in sorted(journal.idea_stopped.items()):
        lines.append(f"idea {idea} stopped: {e.reason}")
    for idea, h in sorted(journal.heldout.items()):
        lines.append(
            f"held-out choice for {idea}: {h.node_id or '-'} ({h.metric} held-out "
            f"{fmt(h.heldout_value)}, search {fmt(h.search_value)}); the search's best "
            f"{h.search_best_id} scored {fmt(h.search_best_heldout_value)} held-out"
        )
    if (run_dir / "notes").is_dir():
        lines.append(f"experimental journal: {run_dir / 'notes'}")
    if mode_lines is not None:
        lines += mode_lines(run_dir)
    return Text("\n".join(lines))


def print_status(run_dir: Path, cfg: RunConfig, journal: Journal, console: Console | None = None) -> None:
    console = console or Console()
    if not console.is_terminal:
        # Piped output has no terminal width; rich's default 80 columns would truncate
        # idea and stage names, so give it room.
        console = Console(file=console.file, width=max(console.width, 120))
    console.print(render(run_dir, cfg, journal))
