"""Weights & Biases: one W&B run per Silva run (resumed under the same id), offline by default.

W&B has no nested runs: an idea's or a node's tags and parameters go into the summary under
its key (`node:n0003/silva.stage`), a node's metrics into the history as `node/<metric>` against
`node/order`, and its files under `<key>/<folder>/` of the run's files. Without a URI the run is
written to RUN_DIR/wandb in offline mode (`wandb sync` uploads it); with one, to that server.
Offline, W&B cannot be read back, so `recover` cannot look for what a killed follower sent.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import wandb

from silva.tracking.base import BackendSettings, Level, RunEnd

SEP = "|"  # a child's id: the W&B run id, SEP, its key


class WandbBackend:
    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.uri = settings.uri or f"offline:{settings.run_dir.resolve() / 'wandb'}"
        self.run_id = hashlib.sha256(settings.run_name.encode()).hexdigest()[:16]
        self._run: Any = None

    @property
    def run(self) -> Any:
        if self._run is None:
            s = self.settings
            extra = {"base_url": s.uri} if s.uri else {}
            self._run = wandb.init(
                project=s.experiment,
                id=self.run_id,
                name=s.run_name,
                dir=str(s.run_dir.resolve()),
                mode="online" if s.uri else "offline",
                resume="allow",
                settings=wandb.Settings(silent=True, **extra),
            )
            self._run.define_metric("node/order")
            self._run.define_metric("node/*", step_metric="node/order")
        return self._run

    def _key(self, run: str) -> str:
        return run.partition(SEP)[2]

    def create_run(
        self, key: str, level: Level, name: str, parent: str | None, tags: Mapping[str, str], *, recover: bool
    ) -> str:
        run = self.run_id if level == "run" else f"{self.run_id}{SEP}{key}"
        self.set_tags(run, {**tags, "silva.level": level, "silva.name": name})
        return run

    def _put(self, run: str, values: Mapping[str, Any]) -> None:
        key = self._key(run)
        self.run.summary.update({f"{key}/{k}" if key else k: v for k, v in values.items()})

    def log_params(self, run: str, params: Mapping[str, str]) -> None:
        if self._key(run):
            self._put(run, {f"params/{k}": v for k, v in params.items()})
        else:
            self.run.config.update(dict(params), allow_val_change=True)

    def set_tags(self, run: str, tags: Mapping[str, str]) -> None:
        self._put(run, tags)

    def log_metrics(self, run: str, metrics: Mapping[str, float], step: int, *, recover: bool) -> None:
        if self._key(run).startswith("node:"):
            self.run.log({**{f"node/{k}": v for k, v in metrics.items()}, "node/order": step})
        self._put(run, metrics)

    def log_file(self, run: str, path: Path, folder: str) -> None:
        dest = Path(self.run.dir) / (self._key(run).replace(":", "_") or "run") / folder / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        self.run.save(str(dest), base_path=self.run.dir, policy="end")

    def end_run(self, run: str, status: RunEnd) -> None:
        if self._key(run):
            self._put(run, {"silva.end": status})
        else:
            self.close()

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None


def open_backend(settings: BackendSettings) -> WandbBackend:
    return WandbBackend(settings)
