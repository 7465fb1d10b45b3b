"""MLflow: one parent run per Silva run, a nested run per idea and per node.

Default store: a SQLite database and an artifact folder in the run directory (MLflow 3 refuses
its plain file store unless told otherwise: it is in maintenance mode). Any tracking URI works:
`http://host:port` for a tracking server, `sqlite:///...`, or `file:///...` with
MLFLOW_ALLOW_FILE_STORE=true.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from silva.tracking.base import BackendSettings, Level, RunEnd

KEY_TAG = "silva.key"  # names the Silva entity a tracker run stands for, for recovery
BATCH = 100  # MLflow takes at most 100 params or tags per batch
LOCAL_DB = "mlflow.db"
LOCAL_ARTIFACTS = "mlartifacts"


class MlflowBackend:
    def __init__(self, settings: BackendSettings) -> None:
        # No retries of MLflow's own: they would wait minutes, and they repeat POSTs too, so a
        # create the server did but whose answer was lost would make a second run. The follower
        # retries instead, looking first for what the failed try may have sent.
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "15")
        # The run's terminal is not MLflow's: no "View run" line per node, no start-up notes.
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        for name in ("mlflow", "alembic"):
            logging.getLogger(name).setLevel(logging.WARNING)
        local = settings.uri is None
        run_dir = settings.run_dir.resolve()
        self.uri = settings.uri or f"sqlite:///{run_dir / LOCAL_DB}"
        self.prefix = settings.run_name
        self.client = MlflowClient(tracking_uri=self.uri)
        self.experiment_name = settings.experiment
        self.artifacts = (run_dir / LOCAL_ARTIFACTS).as_uri() if local else None
        self._experiment: str | None = None

    @property
    def experiment(self) -> str:
        if self._experiment is None:
            found = self.client.get_experiment_by_name(self.experiment_name)
            self._experiment = (
                found.experiment_id
                if found is not None
                else self.client.create_experiment(self.experiment_name, artifact_location=self.artifacts)
            )
        return self._experiment

    def create_run(
        self, key: str, level: Level, name: str, parent: str | None, tags: Mapping[str, str], *, recover: bool
    ) -> str:
        full_key = f"{self.prefix}/{key}"
        if recover:
            found = self.client.search_runs(
                [self.experiment], filter_string=f"tags.`{KEY_TAG}` = '{full_key}'", max_results=1
            )
            if found:
                return str(found[0].info.run_id)
        all_tags = {**tags, KEY_TAG: full_key, "silva.level": level}
        if parent is not None:
            all_tags["mlflow.parentRunId"] = parent
        run = self.client.create_run(self.experiment, run_name=name, tags=all_tags)
        return str(run.info.run_id)

    def log_params(self, run: str, params: Mapping[str, str]) -> None:
        items = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run, params=items[i : i + BATCH])

    def set_tags(self, run: str, tags: Mapping[str, str]) -> None:
        items = [RunTag(k, v) for k, v in tags.items()]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run, tags=items[i : i + BATCH])

    def log_metrics(self, run: str, metrics: Mapping[str, float], step: int, *, recover: bool) -> None:
        if recover:  # what a killed follower already sent for this step stays as it is
            metrics = {
                k: v
                for k, v in metrics.items()
                if not any(m.step == step for m in self.client.get_metric_history(run, k))
            }
        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in metrics.items()]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run, metrics=items[i : i + BATCH])

    def log_file(self, run: str, path: Path, folder: str) -> None:
        self.client.log_artifact(run, str(path), artifact_path=folder or None)

    def end_run(self, run: str, status: RunEnd) -> None:
        self.client.set_terminated(run, status)

    def close(self) -> None:
        """Nothing held open: every call above is complete when it returns."""


def open_backend(settings: BackendSettings) -> MlflowBackend:
    return MlflowBackend(settings)
