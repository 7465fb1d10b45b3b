"""Accounting: one record per LLM call in `<run_dir>/llm_ledger.jsonl`, and totals from it.

Append-only JSONL written only by the gateway, flushed and fsynced per record so a crash loses
at most the record being written; a torn last line is skipped on read. The ledger is also where
a resumed gateway learns what the run has already spent.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

LEDGER_FILE = "llm_ledger.jsonl"
Cause = Literal["refused", "failed", "invalid"]


class CallRecord(BaseModel):
    ts: float = Field(default_factory=time.time)
    role: str
    node_id: str | None = None
    stage: str | None = None
    idea: str | None = None
    provider: str
    model: str
    # Tokens sent over every attempt: the provider's count for the answer, an estimate (about 3
    # characters a token) for attempts that got none.
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    dollars: float = 0.0  # the charge, `lost_dollars` included
    cache_hit: bool = False
    latency_s: float = 0.0  # the answering attempt's time; for a call with no answer, its wall time
    retries: int = 0
    attempts: int = 0  # requests sent to the provider (0: answered by the cache, or refused before)
    wall_s: float = 0.0  # the call's whole time in the gateway: queue, attempts, backoff
    queued_s: float = 0.0  # of which waiting for the provider's concurrency and rate limits
    # Attempts that timed out after the provider had the prompt, charged its estimated input
    # (providers bill a prompt they read): the money lost to timeouts.
    lost_dollars: float = 0.0
    attempt: int = 0
    stop_reason: str | None = None
    error: str | None = None
    key: str | None = None
    # A hedged call (engine/llm/hedge.py) was sent twice: "won" on the answer's record; "lost" on
    # the other copy's, whose cost is its real one if it answered too, else an estimate.
    hedge: Literal["won", "lost"] | None = None
    # Of a structured call: the id its asks share, and which ask this is (0: the first); a chain
    # that ended without a valid answer has a last line with cause "invalid" (engine/llm/client.py).
    chain: str | None = None
    reask: int = 0
    # Why a line bought no answer: refused before sending (a prompt over the context, the
    # budget, a replay miss), failed after sending, or the end of a chain whose answers never
    # validated. None for an answer (old ledgers: read from `error` and `attempts`).
    cause: Cause | None = None


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, record: CallRecord) -> None:
        line = record.model_dump_json() + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def records(self) -> list[CallRecord]:
        return read_records(self.path)


def read_records(path: Path) -> list[CallRecord]:
    if not path.exists():
        return []
    out: list[CallRecord] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(CallRecord.model_validate_json(line))
        except ValidationError:
            continue  # a torn line from a crash mid-write: that call was never acknowledged
    return out


def _empty() -> dict[str, Any]:
    return {
        "calls": 0,
        "cache_hits": 0,
        "errors": 0,
        "hedged": 0,
        "hedged_dollars": 0.0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_tokens": 0,
        "dollars": 0.0,
    }


def _add(total: dict[str, Any], rec: CallRecord) -> None:
    total["calls"] += 1
    if rec.error:
        total["errors"] += 1
    total["hedged"] += rec.hedge == "lost"  # the second copies of hedged calls
    total["hedged_dollars"] += rec.dollars if rec.hedge == "lost" else 0.0
    if rec.cache_hit:
        total["cache_hits"] += 1
        return  # a cache hit costs nothing and its tokens were counted when first paid
    total["input_tokens"] += rec.input_tokens
    total["output_tokens"] += rec.output_tokens
    total["cached_tokens"] += rec.cached_tokens
    total["dollars"] += rec.dollars


def totals(records: list[CallRecord]) -> dict[str, Any]:
    """Run totals plus the same totals grouped by role, node, stage, idea and model."""
    run = _empty()
    groups: dict[str, dict[str, dict[str, Any]]] = {
        k: defaultdict(_empty) for k in ("by_role", "by_node", "by_stage", "by_idea", "by_model")
    }
    for rec in records:
        _add(run, rec)
        for group, value in (
            ("by_role", rec.role),
            ("by_node", rec.node_id),
            ("by_stage", rec.stage),
            ("by_idea", rec.idea),
            ("by_model", f"{rec.provider}/{rec.model}"),
        ):
            if value is not None:
                _add(groups[group][value], rec)
    run["budget_stops"] = sum(1 for r in records if r.error and r.error.startswith("budget"))
    return {"run": run, **{k: dict(v) for k, v in groups.items()}}


def summarize(run_dir: Path) -> dict[str, Any]:
    """Totals of a run directory's ledger, for `silva status` (empty totals if no LLM call yet)."""
    return totals(read_records(Path(run_dir) / LEDGER_FILE))


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


def render_summary(summary: dict[str, Any]) -> str:
    """A few lines of text for a terminal: the run line, then one line per role."""
    run = summary["run"]
    lines = [
        f"LLM: {run['calls']} calls ({run['cache_hits']} cached, {run['errors']} failed"
        + (
            f", {run['hedged']} hedged cop{'y' if run['hedged'] == 1 else 'ies'} "
            f"${run['hedged_dollars']:.4f} = {_share(run['hedged_dollars'], run['dollars'])} of the spend"
            if run.get("hedged")
            else ""
        )
        + "), "
        f"{run['input_tokens']} in / {run['output_tokens']} out tokens "
        f"({run['cached_tokens']} cached), ${run['dollars']:.4f}"
    ]
    if run.get("budget_stops"):
        lines.append(f"  stopped by the dollar budget ({run['budget_stops']} calls refused)")
    for role, t in sorted(summary["by_role"].items()):
        lines.append(f"  {role:<10} {t['calls']:>5} calls  ${t['dollars']:.4f}")
    return "\n".join(lines)
