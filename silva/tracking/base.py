"""What a tracker backend offers the follower: nested runs with params, tags, metrics and files.

Each call either completes or raises; the follower then retries the same journal event later,
so a backend never buffers on its own. Calls made with `recover=True` first look for what an
earlier follower, killed in the middle of the same event, may already have sent.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel

from silva.tracking.config import BACKENDS_PACKAGE

RunEnd = Literal["FINISHED", "FAILED", "KILLED"]
Level = Literal["run", "idea", "node"]


class BackendSettings(BaseModel):
    """What a backend is opened with."""

    run_dir: Path
    uri: str | None = None
    experiment: str

    @property
    def run_name(self) -> str:
        """The run directory's name, resolved: `silva track .` names the same tracker runs."""
        return self.run_dir.resolve().name


class Backend(Protocol):
    """A tracker. `key` names a Silva entity ("run", "idea:NAME", "node:ID") for life."""

    uri: str  # where records go, as shown to the user

    def create_run(
        self, key: str, level: Level, name: str, parent: str | None, tags: Mapping[str, str], *, recover: bool
    ) -> str:
        """A new tracker run (nested under `parent`, a run id); returns its id."""
        ...

    def log_params(self, run: str, params: Mapping[str, str]) -> None: ...

    def set_tags(self, run: str, tags: Mapping[str, str]) -> None: ...

    def log_metrics(self, run: str, metrics: Mapping[str, float], step: int, *, recover: bool) -> None: ...

    def log_file(self, run: str, path: Path, folder: str) -> None:
        """Upload `path` under `folder` of the run's artifacts (a second upload replaces it)."""
        ...

    def end_run(self, run: str, status: RunEnd) -> None: ...

    def close(self) -> None: ...


def open_backend(name: str, settings: BackendSettings) -> Backend:
    """The backend module `name` (silva/tracking/backends/NAME.py), opened."""
    module = importlib.import_module(f"{BACKENDS_PACKAGE}.{name}")
    backend: Backend = module.open_backend(settings)
    return backend
