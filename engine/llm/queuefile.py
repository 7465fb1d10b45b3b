"""The gateway's queue for `silva status`: the calls waiting for their provider's limits."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

from engine.llm.rows import Tally

log = logging.getLogger(__name__)

QUEUE_FILE = "llm_queue.json"


class QueueFile:
    """The calls waiting in the gateway for their provider's concurrency and rate limits, written
    to `<run_dir>/llm_queue.json` for `silva status` at most once a second (and when it empties)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._waiting: dict[int, tuple[Tally, float]] = {}  # id(tally) -> (tally, since: epoch seconds)
        self._written = 0.0
        self._pending = False

    def enter(self, tally: Tally) -> None:
        self._waiting[id(tally)] = (tally, time.time())
        self._changed()

    def leave(self, tally: Tally) -> None:
        if self._waiting.pop(id(tally), None) is not None:
            self._changed()

    def _changed(self) -> None:
        if self._pending:
            return
        self._pending = True
        delay = 0.0 if not self._waiting else max(0.0, self._written + 1.0 - time.monotonic())
        asyncio.get_running_loop().call_later(delay, self._write)

    def _write(self) -> None:
        self._pending = False
        self._written = time.monotonic()
        waiting = [
            {"role": t.role, "node_id": t.node_id, "since": since} for t, since in self._waiting.values()
        ]
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"ts": time.time(), "waiting": waiting}))
            tmp.replace(self.path)
        except OSError as exc:  # a status aid only: never a reason to fail a call
            log.warning("could not write %s: %s", self.path, exc)
