"""`silva track RUN_DIR`: send a run, finished, stopped or old, to an experiment tracker."""

from __future__ import annotations

from pathlib import Path

import typer

from engine.errors import ConfigError


def track(
    run_dir: Path = typer.Argument(..., help="run directory"),
    uri: str | None = typer.Option(
        None, "--uri", help="tracking URI (default: the run config's, else a store in the run directory)"
    ),
    backend: str | None = typer.Option(None, "--backend", help="mlflow (default) or wandb"),
    experiment: str | None = typer.Option(
        None, "--experiment", help="experiment name (default: the run's name)"
    ),
) -> int:
    """Send what the tracker has not received yet; run it again to continue where it stopped."""
    from pydantic import ValidationError

    from engine.eventlog import EVENTS_FILE
    from silva.tracking.config import TrackingConfig
    from silva.tracking.send import config_of, send_run

    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir}: not a Silva run directory (no {EVENTS_FILE}); pass the directory `silva run` printed"
        )
    given = {"uri": uri, "backend": backend, "experiment": experiment}
    saved = config_of(run_dir).get("tracking") or {}
    try:
        cfg = TrackingConfig.model_validate(
            {**(saved if isinstance(saved, dict) else {}), **{k: v for k, v in given.items() if v}}
        )
    except ValidationError as e:
        raise ConfigError(f"silva track: {e.errors()[0]['msg']}") from None
    where, passed = send_run(run_dir, cfg)
    print(f"{run_dir}: sent the records of {passed} new journal events to {where} ({cfg.backend})")
    return 0


def register(app: typer.Typer) -> None:
    app.command("track")(track)
