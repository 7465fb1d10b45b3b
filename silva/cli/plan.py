"""`silva plan CONFIG`: simulate the whole run in virtual time before paying for it (docs/plan.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from engine.config import load_yaml
from engine.errors import ConfigError

if TYPE_CHECKING:
    from silva.config import RunConfig
    from silva.plan import PlanReport, PlanSettings


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
    experiment_s: float | None = typer.Option(
        None,
        "--experiment-s",
        min=0.001,
        help="median seconds of an experiment (default: from the config's node_timeout_s, docs/plan.md)",
    ),
    replay: bool = typer.Option(
        False,
        "--replay",
        help="with --from: give each planned node its twin's figures in that run (times, failures, "
        "metrics, LLM calls) instead of draws, so what differs from the run is the plan's model",
    ),
    json_out: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> int:
    """Project wall time, GPU-hours, nodes, papers, slot use and the stopping budget of a run."""
    from silva.config import load_config
    from silva.plan import plan as simulate

    assumed, named = read_settings(settings)
    cfg = load_config(config)
    assumed, whence = experiments(cfg, assumed, named, experiment_s)
    report = simulate(
        config, slots=slots, gpus=gpus, from_dir=from_dir, seed=seed, settings=assumed, replay=replay
    )
    if json_out:
        print(report.model_dump_json(indent=2))
        return 0
    lines = report_lines(report)
    if from_dir is None:  # no run to draw from: say what was assumed, and what of it matters
        from silva.plan import assumptions, instant_scripted, what_decides

        lines += ['assumed (docs/plan.md, "Defaults"; --settings or --from change them):']
        lines += [f"  {line}" for line in assumptions(instant_scripted(cfg, assumed))]
        lines += [f"  (the experiments' `default` duration: {whence})"]
        lines += ["what decides it (the same plan with one assumption changed):"]
        decides = what_decides(config, report, assumed, slots=slots, gpus=gpus, seed=seed)
        lines += [f"  {line}" for line in decides]
    print("\n".join(lines))
    return 0


def read_settings(path: Path | None) -> tuple[PlanSettings, bool]:
    """The --settings file's assumptions (the built-in ones without it), and whether it names the
    experiments' `default` duration itself."""
    from pydantic import ValidationError

    from engine.config import format_validation_error
    from silva.plan import PlanSettings

    if path is None:
        return PlanSettings(), False
    raw = load_yaml(path) or {}
    try:
        assumed = PlanSettings.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(str(path), e, PlanSettings)) from None
    return assumed, "default" in (raw.get("durations") or {})


def experiments(
    cfg: RunConfig, settings: PlanSettings, named: bool, median_s: float | None
) -> tuple[PlanSettings, str]:
    """The experiments' duration the plan assumes, and where it came from: --experiment-s, else
    the --settings file's `default`, else the config's node_timeout_s taken as 3 sigma above the
    median (median = timeout x e^(-3 sigma): a tenth of it at sigma 0.75) when that is below the
    built-in 20-minute median: a config that times experiments out at 60 s does not expect them
    to take 20 minutes (the README's examples: seconds, timed out at 60 and 120 s)."""
    d = settings.durations["default"]
    if median_s is not None:
        d, whence = d.model_copy(update={"median_s": median_s}), "--experiment-s"
    elif named:
        return settings, f"--settings, median {d.median_s:g} s"
    else:
        timeout = cfg.budgets.node_timeout_s
        bound = timeout * math.exp(-3 * d.sigma)
        if bound >= d.median_s:
            return settings, f"the built-in median of {d.median_s:g} s (--experiment-s to change)"
        d = d.model_copy(update={"median_s": round(bound, 3)})
        whence = (
            f"median {d.median_s:g} s, the config's node_timeout_s of {timeout:g} s taken as 3 sigma "
            "above it (--experiment-s to change)"
        )
    return settings.model_copy(update={"durations": {**settings.durations, "default": d}}), whence


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
        f"  failures       {r.outcomes}; {r.ideas_lost} of {r.ideas} idea(s) lost every search node",
        f"  stops          {r.outcome}" + (f" by {r.stopped_by}" if r.stopped_by else "") + f": {r.message}",
        f"  driver         {r.driver_cpu_ms_per_completion:.2f} ms CPU per completion "
        f"({r.completions} completions), peak {r.driver_peak_rss_mb:.0f} MB",
    ]


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
