"""Where a tracker stands in a run's journal, kept in the run directory so that a resumed run,
or `silva track`, continues the same tracker runs and sends nothing twice."""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import IO

from pydantic import BaseModel, Field, ValidationError

from engine.errors import ConfigError

TRACKING_DIR = "tracking"


class NodeSeen(BaseModel):
    order: int  # the node's place in creation order: the step of its metrics
    idea: str
    phase: str = ""  # "paper" or "review": its files go on the idea's run


class Cursor(BaseModel):
    """Saved after every event that sent something; an event is sent whole before it is passed."""

    backend: str
    uri: str
    offset: int = 0  # bytes of events.jsonl handled
    seq: int = -1  # the last event handled
    runs: dict[str, str] = Field(default_factory=dict)  # entity key -> tracker run id
    nodes: dict[str, NodeSeen] = Field(default_factory=dict)
    stopped: int = -1  # seq of the last stop or finish event
    finished: bool = False  # that event was the finish
    summarized: int = -1  # seq of the last stop or finish whose run totals were sent

    @staticmethod
    def path(run_dir: Path, backend: str, uri: str) -> Path:
        tag = hashlib.sha256(uri.encode()).hexdigest()[:10]
        return run_dir / TRACKING_DIR / f"{backend}-{tag}.json"

    @classmethod
    def load(cls, path: Path, backend: str, uri: str) -> Cursor:
        if not path.is_file():
            return cls(backend=backend, uri=uri)
        try:
            return cls.model_validate_json(path.read_bytes())
        except (ValidationError, ValueError) as e:
            raise ConfigError(
                f"{path}: not a tracking cursor ({str(e).splitlines()[0]}); move it aside to send the "
                "run again as new tracker runs"
            ) from None

    def save(self, path: Path) -> None:
        """Atomically: a kill leaves the previous cursor or this one."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.model_dump_json())
        os.replace(tmp, path)


class CursorBusy(ConfigError):
    """Another process is sending this run to this tracker."""


def lock(path: Path, *, wait: bool) -> IO[str]:
    """One sender per run and tracker: an flock the kernel drops when its holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    f = (path.with_name(path.name + ".lock")).open("a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        f.close()
        raise CursorBusy(
            f"{path.parent}: another Silva process is sending this run to the same tracker (the live "
            "run, or another `silva track`); wait for it to end, then run this again"
        ) from None
    return f
