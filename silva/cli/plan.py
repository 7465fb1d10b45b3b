"""`silva plan CONFIG`: simulate the whole run in virtual time before paying for it (docs/plan.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from engine.config import load_yaml
from engine.errors import ConfigError

if TYPE_CHECKING:
    from silva.plan import PlanReport


def plan(
    config: Path = typer.Argument(..., help="run config (YAML), as `silva run` takes it"),
    slots: int | None = typer.Option(None, "--slots", help="experiment slots (default: the config's)"),
    gpus: float | None = typer.Option(
        None, "--gpus", help="GPUs: slots = GPUs / the default node kind's num_gpus"
    ),
    from_dir: Path | None = typer.Option(
        None, "--from", help="a previous run directory: durations and outcomes drawn from its journal"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the simulated durations and outcomes"),
    settings: Path | None = typer.Option(
        None, "--settings", help="YAML of per-node-kind durations and failure rates (docs/plan.md)"
    ),
    json_out: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> int:
    """Project wall time, GPU-hours, nodes, papers, slot use and the stopping budget of a run."""
    from pydantic import ValidationError

    from engine.config import format_validation_error
    from silva.plan import PlanSettings
    from silva.plan import plan as simulate

    assumed = PlanSettings()
    if settings is not None:
        try:
            assumed = PlanSettings.model_validate(load_yaml(settings) or {})
        except ValidationError as e:
            raise ConfigError(format_validation_error(str(settings), e, PlanSettings)) from None
    report = simulate(config, slots=slots, gpus=gpus, from_dir=from_dir, seed=seed, settings=assumed)
    if json_out:
        print(report.model_dump_json(indent=2))
        return 0
    lines = report_lines(report)
    if from_dir is None:  # no run to draw from: say what was assumed, and what of it matters
        from silva.plan import assumptions, what_decides

        lines += ['assumed (docs/plan.md, "Defaults"; --settings or --from change them):']
        lines += [f"  {line}" for line in assumptions(assumed)]
        lines += ["what decides it (the same plan with one assumption changed):"]
        decides = what_decides(config, report, assumed, slots=slots, gpus=gpus, seed=seed)
        lines += [f"  {line}" for line in decides]
    print("\n".join(lines))
    return 0


def report_lines(r: PlanReport) -> list[str]:
    """The plan's figures, one line each."""
    hours = r.wall_s / 3600
    return [
        f"plan of {r.config} on {r.slots} slot(s), seed {r.seed}, figures from {r.source}:",
        f"  wall time      {r.wall_s:,.0f} s ({hours:.2f} h)",
        f"  GPU-hours      {r.gpu_hours:,.2f}   CPU-hours {r.cpu_hours:,.2f}   LLM ${r.llm_dollars:,.2f}",
        f"  nodes          {r.nodes} ({', '.join(f'{k} {v}' for k, v in r.nodes_by_kind.items())})",
        f"  papers         {r.papers_written} written, {r.papers_reviewed} reviewed",
        *(
            [
                f"  ideas          {r.ideas_admitted} admitted, {r.ideas_per_hour or 0:.2f} per hour "
                "(ideation assumed to keep ahead of the slots)"
            ]
            if r.ideas_admitted
            else []
        ),
        f"  utilization    {r.utilization:.1%} of the slots held by experiments",
        "  share by idea  " + ", ".join(f"{k} {v:.1%}" for k, v in r.share_by_idea.items()),
        f"  stops          {r.outcome}" + (f" by {r.stopped_by}" if r.stopped_by else "") + f": {r.message}",
        f"  driver         {r.driver_cpu_ms_per_completion:.2f} ms CPU per completion "
        f"({r.completions} completions), peak {r.driver_peak_rss_mb:.0f} MB",
    ]


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
