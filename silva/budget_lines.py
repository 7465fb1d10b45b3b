"""Budget lines of `silva status` (docs/budgets.md): each budget's use against its limit as
`silva budget` last set it, the recent rate and projected time to exhaustion, and the forest's
allocation decisions. Read-only."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from engine.budgets import BudgetLine, budget_lines
from engine.events import AllocationDecided
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records
from silva.config import RunConfig

NAMES = {
    "gpu_hours": ("GPU-hours", "{:.3f}"),
    "cpu_hours": ("CPU-hours", "{:.3f}"),
    "dollars": ("LLM dollars", "${:.4f}"),
    "wall_clock_s": ("wall clock (s)", "{:.0f}"),
}


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def line(b: BudgetLine, project: bool = True) -> str:
    """`project`: whether to say when the budget runs out (not for a finished run)."""
    label, form = NAMES[b.name]
    text = f"{label}: {form.format(b.used)}"
    if b.limit is not None:
        text += f" of {form.format(b.limit)} ({100 * b.used / b.limit:.0f}%)"
    if b.name != "wall_clock_s" and b.rate_per_h:
        text += f", {form.format(b.rate_per_h)} per hour lately"
    if b.limit is not None and b.used >= b.limit:
        text += ", used up"
    elif b.eta_s is not None and project:
        text += f", used up in about {duration(b.eta_s)} at that rate"
    return text


def allocation_lines(journal: Journal) -> list[str]:
    events = list(journal.log.read(AllocationDecided))
    if not events:
        return []
    first = next((e for e in events if e.decision == "policy"), None)
    policy, progress = (first.policy or "fair", first.progress) if first else ("fair", None)
    out = [f"allocation: {policy}" + (f" (ideas compared on {progress})" if progress else "")]
    waiting: dict[str, AllocationDecided] = {}
    for e in events:
        if e.decision == "waiting" and e.idea is not None:
            waiting[e.idea] = e
        elif e.decision in ("promoted", "stopped") and e.idea is not None:
            waiting.pop(e.idea, None)
        if e.decision == "stopped":
            back = e.returned_gpu_hours
            out.append(f"  {e.reason}" + (f"; {back:.2f} GPU-hours back to the pool" if back else ""))
    for idea, e in sorted(waiting.items()):
        where = f"after {e.nodes} search node(s) of stage" if e.nodes else "at the end of stage"
        out.append(f"  idea {idea} waits {where} {e.stage} (score {e.score}, {e.why})")
    last = next((e for e in reversed(events) if e.decision == "bandit"), None)
    if last is not None:
        starving = ", ".join(last.starving or []) or "none"
        out.append(f"  bandit: next slots to {last.first or '-'}; starving: {starving}")
    return out


def budget_text(run_dir: Path, cfg: RunConfig, journal: Journal) -> Text:
    points = [(r.ts, r.dollars) for r in read_records(run_dir / LEDGER_FILE)]
    project = journal.finished is None
    budgets = budget_lines(journal, cfg.budgets, points)
    lines = [line(b, project) for b in budgets if b.limit is not None or b.used > 0]
    return Text("\n".join(lines + allocation_lines(journal)))
