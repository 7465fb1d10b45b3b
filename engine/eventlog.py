"""The append-only event log behind the journal: one JSON line per state change, flushed and
fsynced before the change is acted on.

Integrity rules (docs/engine.md, "Journal integrity"):
- A last line without its newline is a write the driver did not finish (it fsyncs every event,
  so everything before it is intact). Only a writer drops it, and its bytes are kept in
  `events.jsonl.torn-<ts>`; a reader ignores it and changes nothing.
- Any other line that is not a JSON event is damage, never a torn tail: every command stops
  with `JournalDamaged` (exit 2) naming the file, the line and `silva repair RUN_DIR`.
- A reader (`read_only=True`) never creates, truncates or locks anything.
- One writer per run directory: `events.lock` holds an flock and the writer's pid and host.
  A lock whose holder died (flock released by the kernel) is stale and taken over.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.errors import ConfigError

EVENTS_FILE = "events.jsonl"
LOCK_FILE = "events.lock"

log = logging.getLogger(__name__)


class JournalDamaged(ConfigError):
    """A line of the event log is not a valid event; `silva repair` moves such lines aside."""

    def __init__(self, path: Path, line: int, why: str, more: int = 0) -> None:
        self.path, self.line, self.why = path, line, why
        others = f" (and {more} more bad line{'s' * (more > 1)})" if more else ""
        super().__init__(
            f"{path}: line {line} is not a valid event: {why}{others}.\n"
            f"Nothing was changed. `silva repair {path.parent}` keeps every good event and moves "
            "the bad lines to a side file (it asks before writing)."
        )


class RunLocked(ConfigError):
    """Another process is writing this run directory."""


def describe_bad(raw: bytes) -> str:
    """Why a line is not an event, short: the line itself may be megabytes of garbage."""
    try:
        event = json.loads(raw)
    except ValueError as e:
        return f"not JSON ({str(e)[:120]})"
    if not isinstance(event, dict):
        return f"a JSON {type(event).__name__}, not an object"
    if not isinstance(event.get("type"), str):
        return "no string `type` field"
    if not isinstance(event.get("ts"), (int, float)) or isinstance(event.get("ts"), bool):
        return "no numeric `ts` field"
    return ""


def replay_problem(error: Exception) -> str:
    """One short line for a replay failure (a pydantic error would echo the whole value)."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        return f"wrong content at {where}: {first['msg'][:150]}"
    if isinstance(error, KeyError):
        return f"missing {str(error)[:150]}"
    return f"wrong content ({type(error).__name__}: {str(error)[:150]})"


def check_references(event: dict[str, Any], nodes: Mapping[str, Any]) -> None:
    """KeyError when an event names a node the replay has not seen (its creation line was lost):
    every reader would otherwise trip over it later, far from the damaged line."""
    named = [v for k, v in event.items() if k == "node_id" or k.endswith("_node_id")]
    if event["type"] == "node_created" and isinstance(event.get("node"), dict):
        named.append(event["node"].get("parent_id"))
    for node_id in named:
        if node_id is not None and node_id not in nodes:
            raise KeyError(f"node {node_id!r} (its node_created event is missing)")


@dataclass
class Scan:
    """An event file split into what can be replayed and what cannot."""

    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # 1-based line number of each event
    bad: list[tuple[int, bytes, str]] = field(default_factory=list)  # (line, raw bytes, why)
    torn: bytes = b""  # a last line without its newline
    good_bytes: int = 0  # length of the prefix that ends with the last complete line


def scan(data: bytes) -> Scan:
    out = Scan()
    start = 0
    number = 0
    while start < len(data):
        end = data.find(b"\n", start)
        number += 1
        if end < 0:
            out.torn = data[start:]
            break
        raw = data[start:end + 1]
        why = describe_bad(raw)
        if why:
            out.bad.append((number, raw, why))
        else:
            out.events.append(json.loads(raw))
            out.lines.append(number)
        start = end + 1
    out.good_bytes = start
    return out


def read_events_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None


def side_file(path: Path, kind: str) -> Path:
    """`events.jsonl.<kind>-<ts>`, never overwriting an earlier one."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate, n = path.with_name(f"{path.name}.{kind}-{stamp}"), 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{kind}-{stamp}-{n}")
    return candidate


def write_durably(path: Path, data: bytes) -> None:
    with path.open("xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _process_start(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


class WriterLock:
    """The single-writer claim on a run directory: an flock on `events.lock` whose content names
    the holder. The kernel drops an flock when its process dies, so a lock file left by a killed
    driver is stale by construction; its content only serves the message to the next writer.

    Within one process the claim is shared (reference counted): the process is one writer."""

    _held: dict[Path, tuple[int, int]] = {}  # lock path -> (fd, reference count)
    _guard = threading.Lock()

    def __init__(self, run_dir: Path) -> None:
        self.path = (run_dir / LOCK_FILE).absolute()
        with self._guard:
            held = self._held.get(self.path)
            if held is not None:
                self._held[self.path] = (held[0], held[1] + 1)
                return
            self._held[self.path] = (self._acquire(), 1)

    def _acquire(self) -> int:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except PermissionError:
                raise ConfigError(
                    f"{self.path.parent}: no permission to write this run directory; `silva resume` "
                    "needs write access (read-only commands such as `silva status` work without it)"
                ) from None
            except OSError as e:
                raise ConfigError(f"{self.path}: cannot create the writer lock ({e.strerror})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 512, 0).decode(errors="replace").strip()
                os.close(fd)
                raise RunLocked(
                    f"{self.path.parent} is being written by another Silva process ({holder or 'unknown'}). "
                    "Only one `silva run`/`silva resume` may write a run directory: wait for it to end "
                    "or stop it; read-only commands (`silva status`) work meanwhile."
                ) from None
            # A releasing holder unlinks the file before unlocking: a lock on that inode is void.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            self._check_previous(fd)
            me = {"pid": os.getpid(), "host": socket.gethostname(), "start": _process_start(os.getpid()),
                  "since": time.strftime("%Y-%m-%d %H:%M:%S")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode() + b"\n", 0)
            os.fsync(fd)
            return fd

    def _check_previous(self, fd: int) -> None:
        """A lock file left behind (its holder died). On another host an flock may not be
        visible over a network filesystem, so that holder cannot be proven gone: refuse."""
        raw = os.pread(fd, 512, 0)
        if not raw.strip():
            return
        try:
            prev = json.loads(raw)
            host, pid = str(prev["host"]), int(prev["pid"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s: replacing an unreadable lock file", self.path)
            return
        if host != socket.gethostname():
            os.close(fd)
            raise RunLocked(
                f"{self.path.parent} was last written by pid {pid} on host {host}, which this host "
                f"cannot check. If no Silva process runs there any more, delete {self.path} and retry."
            )
        log.warning("%s: stale lock of pid %d (that process is gone); taking over", self.path, pid)

    def release(self) -> None:
        with self._guard:
            held = self._held.get(self.path)
            if held is None:
                return
            if held[1] > 1:
                self._held[self.path] = (held[0], held[1] - 1)
                return
            self._drop(self.path)

    @classmethod
    def _drop(cls, path: Path) -> None:
        fd, _ = cls._held.pop(path)
        try:
            os.unlink(path)  # before unlocking, so no one can lock a file about to vanish
        except FileNotFoundError:
            pass
        os.close(fd)

    @classmethod
    def release_all(cls) -> None:
        """At interpreter exit: a clean exit leaves no lock file behind (a killed one does)."""
        with cls._guard:
            for path in list(cls._held):
                cls._drop(path)


atexit.register(WriterLock.release_all)


class EventLog:
    """The events of one run. A writer holds the run's lock; a reader touches nothing."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._lock: WriterLock | None = None
        self._file: Any = None
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = WriterLock(path.parent)
        try:
            found = scan(read_events_file(path))
            if found.bad:
                line, _, why = found.bad[0]
                raise JournalDamaged(path, line, why, more=len(found.bad) - 1)
            self.events = found.events
            self.lines = found.lines
            if not read_only:
                if found.torn:
                    self._set_aside_torn(found)
                self._file = self._open_append()
        except BaseException:
            self._release()
            raise

    @classmethod
    def in_memory(cls, path: Path, events: list[dict[str, Any]], lines: list[int]) -> EventLog:
        """A read-only log over given events (repair replays candidates without a file)."""
        obj = cls.__new__(cls)
        obj.path, obj.read_only, obj._lock, obj._file = path, True, None, None
        obj.events, obj.lines = events, lines
        return obj

    def _set_aside_torn(self, found: Scan) -> None:
        kept = side_file(self.path, "torn")
        write_durably(kept, found.torn)
        with self.path.open("r+b") as f:
            f.truncate(found.good_bytes)
            os.fsync(f.fileno())
        log.warning("%s: dropped a partial last line (%d bytes, a write cut off by a crash); kept in %s",
                    self.path, len(found.torn), kept.name)

    def _open_append(self) -> Any:
        try:
            return self.path.open("ab")
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot open for writing ({e.strerror})") from None

    def damaged(self, index: int, error: Exception) -> JournalDamaged:
        """The error for event `index`, which parsed but could not be replayed."""
        line = self.lines[index] if index < len(self.lines) else index + 1
        return JournalDamaged(self.path, line, replay_problem(error))

    def append(self, type_: str, **data: Any) -> dict[str, Any]:
        if self._file is None:
            raise RuntimeError(f"{self.path} was opened read-only (or closed); it cannot be appended to")
        event = {"seq": len(self.events), "ts": time.time(), "type": type_, **data}
        self._file.write(json.dumps(event, default=str).encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.events.append(event)
        self.lines.append((self.lines[-1] if self.lines else 0) + 1)
        return event

    def _release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        self._release()
