"""A run's totals as tracker metrics: LLM dollars and tokens by role, utilization, budgets."""

from __future__ import annotations

from pathlib import Path

from silva.cost import open_read_only, spend, throughput


def run_totals(run_dir: Path) -> dict[str, float]:
    """As `silva cost` and `silva status` compute them, read without touching the run."""
    cfg, journal, records = open_read_only(run_dir)
    try:
        breakdown = spend(records)
        t = throughput(cfg, journal, records)
    finally:
        journal.log.close()
    out: dict[str, float] = {
        "llm.dollars": breakdown.total.dollars,
        "llm.calls": breakdown.total.calls,
        "llm.input_tokens": breakdown.total.input_tokens,
        "llm.output_tokens": breakdown.total.output_tokens,
        "nodes.finished": t.finished_nodes,
        "slots": t.slots,
        "elapsed_s": t.elapsed_s,
        "busy_s": t.busy_s,
    }
    for row in breakdown.groups["role"]:
        out[f"llm.{row.key}.dollars"] = row.dollars
        out[f"llm.{row.key}.input_tokens"] = row.input_tokens
        out[f"llm.{row.key}.output_tokens"] = row.output_tokens
    # Left out above 1: attempts a killed driver left open are counted busy until now.
    if t.utilization is not None and t.utilization <= 1:
        out["utilization"] = t.utilization
    for name, limit in cfg.budgets.model_dump().items():
        if limit is not None:
            out[f"budget.{name}"] = float(limit)
    return out
