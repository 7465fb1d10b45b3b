"""The append-only event log behind the journal: one JSON line per state change, flushed and
fsynced before the change is acted on."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

EVENTS_FILE = "events.jsonl"


class EventLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        good_bytes = 0
        if path.exists():
            with path.open("rb") as f:
                for raw in f:
                    try:
                        if not raw.endswith(b"\n"):
                            raise ValueError("torn line")
                        self.events.append(json.loads(raw))
                    except ValueError:
                        break  # a torn tail: everything before it is intact (fsync per event)
                    good_bytes += len(raw)
            if good_bytes != path.stat().st_size:
                with path.open("r+b") as f:
                    f.truncate(good_bytes)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab")

    def append(self, type_: str, **data: Any) -> dict[str, Any]:
        event = {"seq": len(self.events), "ts": time.time(), "type": type_, **data}
        self._file.write(json.dumps(event, default=str).encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.events.append(event)
        return event

    def close(self) -> None:
        self._file.close()
