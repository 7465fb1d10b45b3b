"""Silva: grow trees of experiments on a cluster, write them up, review them.

The public Python API (the CLI is `silva`):

    import silva
    outcome = silva.run("run.yaml")        # start a run; returns its RunOutcome and directory
    outcome = silva.resume(run_dir)        # continue a stopped or killed run
    view = silva.open_run(run_dir)         # read-only: view.nodes() DataFrame, view.best(), view.code(id)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.dispatch import RunOutcome
    from silva.config import RunConfig
    from silva.notebook import RunView

__all__ = ["open_run", "resume", "run"]


def run(config: RunConfig | Path | str) -> tuple[Path, RunOutcome]:
    """Create a run from a config (a RunConfig or a YAML path) and execute it to the end."""
    from silva import lifecycle
    from silva.config import RunConfig, load_config

    cfg = config if isinstance(config, RunConfig) else load_config(Path(config))
    run_dir, journal = lifecycle.create_run(cfg)
    return run_dir, lifecycle.execute(cfg, journal)


def resume(run_dir: Path | str) -> RunOutcome:
    from silva import lifecycle

    return lifecycle.resume(Path(run_dir))


def open_run(run_dir: Path | str) -> RunView:
    from silva.notebook import RunView

    return RunView.open(run_dir)
