"""Where a run's money and time went, read from its event log and `llm_ledger.jsonl`.

- `spend`: LLM dollars, calls and tokens by role, model, stage and idea, with what the response
  cache saved (a cache hit is free; it saved what the same request cost when first paid).
- `throughput`: nodes per hour, worker utilization, LLM calls and dollars per node, and the
  spend projected to finish the configured node budgets.

Read-only: nothing here writes to the run directory. Shared by `silva status`, `silva cost` and
the HTML view.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel

from engine.errors import ConfigError
from engine.eventlog import EVENTS_FILE, EventLog
from engine.events import AttemptFinished, AttemptStarted, ClusterJoined, Event
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, CallRecord, read_records
from engine.totals import ATTEMPT_ENDS
from silva.config import RunConfig, load_config

GROUPS = ("role", "model", "stage", "idea")
CONFIG_SNAPSHOT = "config.yaml"


def open_read_only(run_dir: Path) -> tuple[RunConfig, Journal, list[CallRecord]]:
    """A run's config, journal and ledger without taking the writer's lock: works while the
    run is going on, and never writes."""
    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir}: not a Silva run directory (no {EVENTS_FILE}); pass the directory `silva run` printed"
        )
    cfg = load_config(run_dir / CONFIG_SNAPSHOT, check_files=False)  # the idea files may have moved since
    journal = Journal(EventLog(run_dir / EVENTS_FILE, read_only=True))
    return cfg, journal, read_records(run_dir / LEDGER_FILE)


class SpendRow(BaseModel):
    key: str
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0
    saved: float = 0.0  # what the cache hits would have cost


class LostRow(BaseModel):
    """Per role: the time and money that bought no usable answer (engine/llm/ledger.py
    `CallRecord`), by cause."""

    key: str
    refused: int = 0  # calls refused before sending: a prompt over the context, the budget, a replay miss
    failed: int = 0  # calls sent that got no answer (timed out, refused by the provider, cancelled)
    failed_s: float = 0.0
    failed_dollars: float = 0.0  # their charge: prompts read by the provider before it gave up
    invalid: int = 0  # answers that did not validate (structured calls), re-asked or not
    invalid_tokens: int = 0  # their output tokens
    invalid_dollars: float = 0.0
    gave_up: int = 0  # structured calls whose every answer failed validation
    retries: int = 0  # extra attempts of answered calls
    retry_s: float = 0.0  # answered calls' time before the answering attempt (queue aside)
    retry_dollars: float = 0.0  # their timed-out attempts' charge
    copies: int = 0  # second copies of hedged calls
    copy_s: float = 0.0
    copy_dollars: float = 0.0
    queued_s: float = 0.0  # waiting in the gateway for the provider's concurrency and rate limits

    @property
    def dollars(self) -> float:
        return self.failed_dollars + self.invalid_dollars + self.retry_dollars + self.copy_dollars


def _unusable(records: Sequence[CallRecord]) -> set[int]:
    """Indexes of the answers that did not validate: in a chain that gave up, every answer; in
    one that ended valid, every answer before its last."""
    chains: dict[str, list[int]] = defaultdict(list)
    gave_up: set[str] = set()
    for i, r in enumerate(records):
        if r.chain is None:
            continue
        if r.cause == "invalid":
            gave_up.add(r.chain)
        elif r.error is None and r.hedge != "lost":
            chains[r.chain].append(i)
    out: set[int] = set()
    for chain, answers in chains.items():
        last = max(answers, key=lambda i: records[i].reask)
        out.update(i for i in answers if chain in gave_up or i != last)
    return out


def lost(records: Sequence[CallRecord]) -> list[LostRow]:
    """Time and money that bought no usable answer, by role (most dollars first): refusals,
    failures, answers that did not validate, retries, hedged copies and the queue."""
    rows: dict[str, LostRow] = {}
    unusable = _unusable(records)
    for i, r in enumerate(records):
        row = rows.setdefault(r.role, LostRow(key=r.role))
        row.queued_s += r.queued_s
        cause = r.cause or (None if r.error is None else "failed" if r.attempts or r.dollars else "refused")
        if r.hedge == "lost":
            row.copies += 1
            row.copy_s += r.latency_s
            row.copy_dollars += r.dollars
        elif cause == "refused":
            row.refused += 1
        elif cause == "invalid":
            row.gave_up += 1
        elif cause == "failed":
            row.failed += 1
            row.failed_s += r.wall_s
            row.failed_dollars += r.dollars
        elif i in unusable:
            row.invalid += 1
            row.invalid_tokens += 0 if r.cache_hit else r.output_tokens
            row.invalid_dollars += r.dollars - r.lost_dollars  # timed-out attempts: under retries
        if r.error is None and r.hedge != "lost" and r.attempts > 1:
            row.retries += r.attempts - 1
            row.retry_s += max(0.0, r.wall_s - r.latency_s - r.queued_s)
            row.retry_dollars += r.lost_dollars
    kept = [
        r
        for r in rows.values()
        if r.refused or r.failed or r.invalid or r.gave_up or r.retries or r.copies or r.queued_s
    ]
    return sorted(kept, key=lambda r: (-r.dollars, -(r.failed_s + r.retry_s + r.queued_s), r.key))


class Spend(BaseModel):
    total: SpendRow
    groups: dict[str, list[SpendRow]]  # group name (GROUPS) -> rows, most expensive first
    lost: list[LostRow] = []  # by role
    saved_estimated: int = (
        0  # cache hits whose first payment is not in this ledger: priced by the model's mean
    )


def _key(rec: CallRecord, group: str) -> str | None:
    if group == "model":
        return f"{rec.provider}/{rec.model}"
    value = getattr(rec, group)
    return None if value is None else str(value)


def _savings(records: Sequence[CallRecord]) -> tuple[list[float], int]:
    """What each record saved: for a cache hit, the dollars its key cost when it was paid.

    A hit whose paid call is not in this ledger (a cache shared with another run) is priced at
    the model's mean dollars per token over this ledger's paid calls."""
    paid: dict[str, float] = {}
    per_token: dict[str, tuple[float, int]] = defaultdict(lambda: (0.0, 0))
    for r in records:
        if not r.cache_hit and r.error is None:
            if r.key is not None:
                paid.setdefault(r.key, r.dollars)
            d, t = per_token[_key(r, "model") or ""]
            per_token[_key(r, "model") or ""] = (d + r.dollars, t + r.input_tokens + r.output_tokens)
    out, estimated = [], 0
    for r in records:
        if not r.cache_hit:
            out.append(0.0)
        elif r.key is not None and r.key in paid:
            out.append(paid[r.key])
        else:
            d, t = per_token[_key(r, "model") or ""]
            out.append(d / t * (r.input_tokens + r.output_tokens) if t else 0.0)
            estimated += 1
    return out, estimated


_FIELDS = ("calls", "cache_hits", "errors", "input_tokens", "output_tokens", "dollars", "saved")


def _add(row: dict[str, float], rec: CallRecord, saved: float) -> None:
    # Plain dicts while counting: a ledger may hold hundreds of thousands of calls.
    row["calls"] += 1
    row["errors"] += rec.error is not None
    row["saved"] += saved
    if rec.cache_hit:
        row["cache_hits"] += 1
        return  # a hit costs nothing; its tokens were counted when they were paid
    row["input_tokens"] += rec.input_tokens
    row["output_tokens"] += rec.output_tokens
    row["dollars"] += rec.dollars


def spend(records: Sequence[CallRecord]) -> Spend:
    saved, estimated = _savings(records)
    total = dict.fromkeys(_FIELDS, 0.0)
    groups: dict[str, dict[str, dict[str, float]]] = {g: {} for g in GROUPS}
    for rec, s in zip(records, saved):
        _add(total, rec, s)
        for g in GROUPS:
            key = _key(rec, g)
            if key is not None:
                _add(groups[g].setdefault(key, dict.fromkeys(_FIELDS, 0.0)), rec, s)

    def row(key: str, t: dict[str, float]) -> SpendRow:
        return SpendRow(key=key, **{f: t[f] if f in ("dollars", "saved") else int(t[f]) for f in _FIELDS})

    ordered = {
        g: sorted((row(k, t) for k, t in rows.items()), key=lambda r: (-r.dollars, -r.calls, r.key))
        for g, rows in groups.items()
    }
    return Spend(total=row("run", total), groups=ordered, saved_estimated=estimated, lost=lost(records))


class Span(BaseModel):
    """One attempt's time on a worker, from the event log."""

    node_id: str
    attempt: int
    start: float
    end: float | None = None  # None while it runs
    ended: str = ""  # finished | lost | cancelled
    worker: str = ""
    status: str = ""  # good | buggy, for a finished attempt
    wall_s: float | None = None  # the experiment's own wall time


def attempt_spans(events: Iterable[Event]) -> list[Span]:
    spans: dict[tuple[str, int], Span] = {}
    for e in events:
        if isinstance(e, AttemptStarted):
            spans[(e.node_id, e.attempt)] = Span(node_id=e.node_id, attempt=e.attempt, start=e.ts)
        elif isinstance(e, ATTEMPT_ENDS):
            span = spans.get((e.node_id, e.attempt))
            if span is None:
                continue
            span.end, span.ended = e.ts, e.type.removeprefix("attempt_")
            if isinstance(e, AttemptFinished):
                span.worker = e.result.worker
                span.status = e.result.status
                span.wall_s = e.result.execution.wall_s
    return list(spans.values())


class Throughput(BaseModel):
    elapsed_s: float
    finished_nodes: int
    nodes_per_hour: float | None
    slots: int
    busy_s: float
    utilization: float | None  # attempt time over slot time
    llm_calls: int
    calls_per_node: float | None
    dollars: float
    dollars_per_node: float | None
    remaining_nodes: int  # at most, within the stages' node budgets (and the run's)
    projected_dollars: float | None  # spent + dollars per node x remaining nodes, capped by the budget
    dollar_budget: float | None
    projected_remaining_s: float | None


def remaining_nodes(cfg: RunConfig, journal: Journal) -> int:
    """Nodes still to make before every stage of every tree reaches its node budget.

    An upper bound: a stage counts its search budget, its seed replicates and one aggregation,
    and a stage that already ended counts nothing more."""
    if journal.finished is not None:
        return 0
    ideas = sorted({n.idea for n in journal} | {k[0] for k in journal.stage_started})
    trees = max(len(ideas), len(cfg.idea_sources()) or 1)  # a run without idea files grows one tree
    ideas += [f"(not started {i})" for i in range(trees - len(ideas))]
    created: dict[tuple[str, str], int] = defaultdict(int)
    for n in journal:
        created[(n.idea, n.stage)] += 1
    left = 0
    for idea in ideas:
        for stage, sc in cfg.stages.items():
            if (idea, stage) not in journal.stage_ended:
                left += max(0, sc.max_nodes + cfg.replicates + 1 - created[(idea, stage)])
    if cfg.budgets.max_nodes is not None:
        left = min(left, max(0, cfg.budgets.max_nodes - len(journal.nodes)))
    return left


def cluster_slots(cfg: RunConfig, journal: Journal) -> int | None:
    """Experiments the cluster the run last joined holds at once: its CPUs (and GPUs) over what one
    experiment asks for; None without a recorded cluster (an in-process run)."""
    joins = list(journal.log.read(ClusterJoined))
    if not joins:
        return None
    joined = joins[-1]
    need = cfg.resources_for("default")
    fits = [joined.cpus / need.num_cpus] if need.num_cpus else []
    fits += [joined.gpus / need.num_gpus] if need.num_gpus else []
    return max(1, int(min(fits))) if fits else None


def throughput(
    cfg: RunConfig, journal: Journal, records: Sequence[CallRecord], now: float | None = None
) -> Throughput:
    live = journal.finished is None and journal.stop is None
    elapsed = journal.elapsed_s(now=(now or time.time()) if live else None)
    finished = sum(n.is_finished for n in journal)
    end = now or time.time()
    busy = journal.totals.busy.seconds(end)  # kept per event by the journal: no log read
    slots = cfg.executor.max_in_flight or journal.slots or 1
    held = cluster_slots(cfg, journal)
    if held is not None and held < slots:
        # More in flight than the cluster holds: the others waited in Ray's queue, which the attempt
        # spans count. The experiments' own wall time over the slots that exist is the utilization.
        slots = held
        busy = sum(s.wall_s or 0.0 for s in attempt_spans(journal.log.read(AttemptStarted, *ATTEMPT_ENDS)))
    paid = [r for r in records if not r.cache_hit]
    dollars = sum(r.dollars for r in paid)
    per_node = dollars / finished if finished else None
    hours = elapsed / 3600
    rate = finished / hours if hours > 0 else None
    left = remaining_nodes(cfg, journal)
    projected = None
    if per_node is not None:
        projected = dollars + per_node * left
        if cfg.budgets.dollars is not None:
            projected = min(projected, cfg.budgets.dollars)
    return Throughput(
        elapsed_s=elapsed,
        finished_nodes=finished,
        nodes_per_hour=rate,
        slots=slots,
        busy_s=busy,
        utilization=busy / (elapsed * slots) if elapsed > 0 and slots else None,
        llm_calls=len(records),
        calls_per_node=len(records) / finished if finished else None,
        dollars=dollars,
        dollars_per_node=per_node,
        remaining_nodes=left,
        projected_dollars=projected,
        dollar_budget=cfg.budgets.dollars,
        projected_remaining_s=left / rate * 3600 if rate else None,
    )


def throughput_lines(t: Throughput) -> list[str]:
    """Two lines for `silva status` and the progress log."""

    def num(v: float | None, f: str) -> str:
        return "-" if v is None else format(v, f)

    first = (
        f"throughput: {t.finished_nodes} nodes in {t.elapsed_s / 60:.1f} min = "
        f"{num(t.nodes_per_hour, '.0f')} nodes/h; utilization "
        f"{num(None if t.utilization is None else 100 * t.utilization, '.0f')}% of {t.slots} slots"
    )
    if t.projected_remaining_s is not None and t.remaining_nodes:
        first += f"; at most {t.remaining_nodes} nodes left (~{t.projected_remaining_s / 60:.0f} min)"
    budget = f" of the ${t.dollar_budget:.2f} budget" if t.dollar_budget is not None else ""
    second = (
        f"cost: {num(t.calls_per_node, '.1f')} LLM calls and ${num(t.dollars_per_node, '.4f')} per node; "
        f"spent ${t.dollars:.4f}"
    )
    if t.remaining_nodes:  # a finished run has nothing left to project
        second += f"; projected ${num(t.projected_dollars, '.4f')}{budget} to finish the node budgets"
    return [first, second]
