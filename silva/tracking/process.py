"""The follower process beside a live run: started with the session, told to finish with it.

A process of its own, so that sending never takes the driver's CPU time or GIL, and started with
an environment without the LLM keys."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import ConfigError
from silva.tracking.config import TrackingConfig

if TYPE_CHECKING:
    from silva.config import RunConfig

SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
TRACKER_PREFIXES = ("MLFLOW_", "WANDB_")  # the tracker's own credentials stay


def tracker_env(key_names: Iterable[str]) -> dict[str, str]:
    """The environment without the named keys and anything named like a secret but the tracker's."""
    drop = set(key_names)
    return {
        k: v
        for k, v in os.environ.items()
        if k not in drop and (k.startswith(TRACKER_PREFIXES) or not k.upper().endswith(SECRET_SUFFIXES))
    }


class TrackerProcess:
    def __init__(self, run_dir: Path, cfg: TrackingConfig, key_names: Iterable[str]) -> None:
        self.cfg = cfg
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "silva.tracking", str(run_dir), cfg.model_dump_json()],
            stdin=subprocess.PIPE,
            env=tracker_env(key_names),
        )

    def stop(self) -> None:
        """Ask it to send what is left; it has `drain_s` (plus its own start-up) before it is ended."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=self.cfg.drain_s + 30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # its cursor holds what was sent: `silva track` sends the rest
            self.proc.wait()


def start_tracker(cfg: RunConfig, run_dir: Path) -> TrackerProcess | None:
    """The follower of this session, when the config has a `tracking:` section."""
    if cfg.tracking is None:
        return None
    backend = cfg.tracking.backend
    if importlib.util.find_spec(backend) is None:  # a backend module is named after its package
        raise ConfigError(
            f"tracking: the {backend} backend needs the {backend} package, not installed here: "
            "pip install 'silva[tracking]' (or remove `tracking:` from the run config), then "
            "`silva resume` the run"
        )
    keys = [p.api_key_env for p in cfg.llm.providers.values() if p.api_key_env] if cfg.llm else []
    return TrackerProcess(run_dir, cfg.tracking, keys)
