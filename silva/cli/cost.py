"""`silva cost RUN_DIR`: LLM spend by role, model, stage and idea, with cache savings, and the time
and money that bought no usable answer (refusals, failures, answers that did not validate, retries,
hedged copies)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from silva.cost import LostRow, Spend

LOST_TITLE = "lost: what bought no usable answer, by role and cause"


def cost(
    run_dir: Path = typer.Argument(..., help="run directory"),
    json_out: bool = typer.Option(False, "--json", help="print the breakdown as JSON"),
) -> int:
    """Where the LLM money went: by role, model, stage and idea, and what the cache saved."""
    from silva.cost import GROUPS, open_read_only, spend, throughput, throughput_lines

    cfg, journal, records = open_read_only(run_dir)
    breakdown = spend(records)
    console = Console()
    if json_out:
        t = throughput(cfg, journal, records)
        # Schema in docs/cli.md ("--json outputs"): it only grows by new keys.
        print(
            f'{{"schema_version": 1, "spend": {breakdown.model_dump_json()}, '
            f'"throughput": {t.model_dump_json()}}}'
        )
        return 0
    if not records:  # five empty tables would say less than one line
        console.print(f"{run_dir}: no LLM calls, $0 spent on models", highlight=False, soft_wrap=True)
        return 0
    if not console.is_terminal:
        console = Console(file=console.file, width=max(console.width, 120))  # never cut in a pipe
    total = breakdown.total
    console.print(
        f"{run_dir}\nLLM spend: ${total.dollars:.4f} over {total.calls} calls ({total.cache_hits} cache hits "
        f"saved ${total.saved:.4f}; {total.errors} failed), {total.input_tokens} in / {total.output_tokens} "
        "out tokens",
        highlight=False,
    )
    if breakdown.saved_estimated:
        console.print(
            f"({breakdown.saved_estimated} cache hits priced at their model's mean rate: "
            "their first payment was in another run)",
            highlight=False,
        )
    for group in GROUPS:
        console.print(group_table(breakdown, group))
    console.print(lost_table(breakdown.lost))
    console.print("\n".join(throughput_lines(throughput(cfg, journal, records))), highlight=False)
    return 0


def group_table(breakdown: Spend, group: str) -> Table:
    """Spend by one grouping (role, model, stage or idea), with each row's share of the dollars."""
    total = breakdown.total
    table = Table(title=f"by {group}", title_justify="left")
    for col in (
        group,
        "calls",
        "cache hits",
        "failed",
        "in tokens",
        "out tokens",
        "dollars",
        "share",
        "saved",
    ):
        table.add_column(col, justify="left" if col == group else "right")
    for r in breakdown.groups[group]:
        share = f"{100 * r.dollars / total.dollars:.0f}%" if total.dollars else "-"
        table.add_row(
            r.key,
            str(r.calls),
            str(r.cache_hits),
            str(r.errors),
            str(r.input_tokens),
            str(r.output_tokens),
            f"${r.dollars:.4f}",
            share,
            f"${r.saved:.4f}",
        )
    if not breakdown.groups[group]:
        table.add_row("(no LLM calls)", *[""] * 8)
    return table


def lost_table(rows: list[LostRow]) -> Table:
    """Time and money that bought no usable answer, by role and cause: calls refused before
    sending, calls that failed, answers that did not validate (and the calls that gave up),
    retries, hedged copies, and the wait in the gateway's queue."""
    table = Table(title=LOST_TITLE, title_justify="left")
    for col in (
        "role",
        "refused",
        "failed",
        "failed time",
        "not valid",
        "their out tokens",
        "retries",
        "retry time",
        "hedged copies",
        "queued",
        "dollars",
    ):
        table.add_column(col, justify="left" if col == "role" else "right")
    for r in rows:
        table.add_row(
            r.key,
            str(r.refused),
            str(r.failed),
            f"{r.failed_s:.1f} s",
            f"{r.invalid} ({r.gave_up} gave up)" if r.gave_up else str(r.invalid),
            str(r.invalid_tokens),
            str(r.retries),
            f"{r.retry_s:.1f} s",
            str(r.copies),
            f"{r.queued_s:.1f} s",
            f"${r.dollars:.4f}",
        )
    if not rows:
        table.add_row("(nothing lost)", *[""] * 10)
    return table


def register(app: typer.Typer) -> None:
    app.command("cost")(cost)
