"""Sending a run: after the fact (`silva track`) or live, from the follower process a run starts."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from engine.config import load_yaml
from engine.errors import EnvironmentFailure
from silva.tracking.base import BackendSettings, open_backend
from silva.tracking.config import TrackingConfig
from silva.tracking.cursor import Cursor, lock
from silva.tracking.follower import Follower

POLL_S = 0.5  # how often a live follower looks for new events


class TrackerDown(EnvironmentFailure):
    """The tracker did not take a record; nothing was lost: the next try starts there."""


def config_of(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.yaml"
    data = load_yaml(path) if path.is_file() else {}
    return data if isinstance(data, dict) else {}


def _error(e: Exception, limit: int) -> str:
    """The tracker's error in one line: its type and the first `limit` characters of its message."""
    first = str(e).splitlines()[0][:limit] if str(e) else ""
    return f"{type(e).__name__}: {first}"


@contextmanager
def opened(run_dir: Path, cfg: TrackingConfig, *, wait: bool) -> Any:
    """A follower at the cursor of this run and tracker, holding the one-sender lock."""
    name = str(config_of(run_dir).get("name") or run_dir.resolve().name)
    settings = BackendSettings(run_dir=run_dir, uri=cfg.uri, experiment=cfg.experiment or name)
    where = Cursor.path(run_dir, cfg.backend, cfg.uri or "default")
    held: IO[str] = lock(where, wait=wait)
    try:
        backend = open_backend(cfg.backend, settings)
        try:
            yield Follower(run_dir, backend, Cursor.load(where, cfg.backend, backend.uri), where)
        finally:
            backend.close()
    finally:
        held.close()


def send_run(run_dir: Path, cfg: TrackingConfig) -> tuple[str, int]:
    """Everything the tracker has not received yet (`silva track`): (where it went, events passed)."""
    with opened(run_dir, cfg, wait=False) as follower:
        try:
            return follower.backend.uri, follower.step()
        except Exception as e:
            raise TrackerDown(
                f"{follower.backend.uri}: the tracker did not take a record ({_error(e, 300)}); "
                f"what was sent is kept in {follower.cursor_path}: "
                f"run `silva track {run_dir}` again once it answers"
            ) from e


def follow(
    run_dir: Path, cfg: TrackingConfig, stopped: Callable[[], bool], say: Callable[[str], None]
) -> int:
    """Send events as they land until `stopped()`, then what is left, for at most `cfg.drain_s`.
    A tracker that fails is retried with a growing pause; the run never waits for it.
    Returns the bytes of journal left unsent."""
    with opened(run_dir, cfg, wait=True) as follower:
        wait, down_since, deadline = POLL_S, 0.0, None
        while True:
            if deadline is None and stopped():
                deadline = time.monotonic() + cfg.drain_s
            try:
                follower.step(sends=1 if down_since else None)  # one record first: is it back?
            except Exception as e:  # the tracker's own errors: any of them means "try again later"
                if not down_since:
                    down_since = time.monotonic()
                    say(
                        f"warning: tracker {follower.backend.uri} did not take a record ({_error(e, 200)}); "
                        "the run goes on and the records wait until it answers"
                    )
                wait = min(cfg.retry_max_s, wait * 2)
            else:
                if down_since:
                    behind = follower.behind()
                    say(f"tracker {follower.backend.uri} answers again: sending {behind} bytes that waited")
                    down_since, wait = 0.0, POLL_S
                    continue
                if deadline is not None:
                    return 0
            if deadline is not None and time.monotonic() >= deadline:
                return follower.behind()
            time.sleep(wait if deadline is None else min(wait, max(0.0, deadline - time.monotonic())))


def main(argv: list[str]) -> int:
    """The follower process a run starts: `python -m silva.tracking RUN_DIR TRACKING_JSON`. It
    stops when the driver closes its stdin (or dies), after sending what is left."""
    run_dir = Path(argv[0])
    cfg = TrackingConfig.model_validate_json(argv[1])
    done = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    left = follow(run_dir, cfg, done.is_set, say)
    if left:
        say(
            f"warning: {left} bytes of the journal were not sent to the tracker; "
            f"`silva track {run_dir}` sends them"
        )
    return 0
