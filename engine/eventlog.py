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

import gc
import hashlib
import json
import logging
import math
import os
import pickle
import re
import signal
import time
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, overload

import orjson
from pydantic import BaseModel, ValidationError

from engine.errors import ConfigError
from engine.events import DECLARED, E, Event, parse, type_of
from engine.writerlock import WriterLock

EVENTS_FILE = "events.jsonl"
SNAPSHOT_FILE = "events.snapshot"
SNAPSHOT_FORMAT = 2  # 2: with each event's type
SNAPSHOT_EVERY = 50_000  # events between snapshots: bounds the replay when a run is opened
CHUNK = 8 << 20  # the log is read in pieces of this size, never whole
SEEK_SHARE = 8  # `read(types)` seeks to each event when at most 1 in this many is wanted

log = logging.getLogger(__name__)

# What a snapshot holds, made when it is written: the replayed state and the classes in it.
SnapshotState = Callable[[], tuple[Mapping[str, Any], Iterable[type]]]


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


def parse_line(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """A line parsed once: (the event, "") or (None, why it is not one), kept short since the
    line itself may be megabytes of garbage. orjson first; the standard parser for what orjson
    refuses but `json.dumps` writes (NaN, Infinity, integers beyond 64 bits)."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            event = json.loads(raw)
        except ValueError as e:
            return None, f"not JSON ({str(e)[:120]})"
    if not isinstance(event, dict):
        return None, f"a JSON {type(event).__name__}, not an object"
    if not isinstance(event.get("type"), str):
        return None, "no string `type` field"
    if not isinstance(event.get("ts"), (int, float)) or isinstance(event.get("ts"), bool):
        return None, "no numeric `ts` field"
    return event, ""


def describe_bad(raw: bytes) -> str:
    """Why a line is not an event ("" if it is one)."""
    return parse_line(raw)[1]


def replay_problem(error: Exception) -> str:
    """One short line for a replay failure (a pydantic error would echo the whole value)."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        return f"wrong content at {where}: {first['msg'][:150]}"
    if isinstance(error, KeyError):
        return f"missing {str(error)[:150]}"
    return f"wrong content ({type(error).__name__}: {str(error)[:150]})"


@cache
def _node_fields(cls: type[Event]) -> tuple[str, ...]:
    """The fields of an event class that name a node."""
    return tuple(k for k in cls.model_fields if k == "node_id" or k.endswith("_node_id"))


def check_references(event: Event, nodes: Mapping[str, Any]) -> None:
    """KeyError when an event names a node the replay has not seen (its creation line was lost):
    every reader would otherwise trip over it later, far from the damaged line."""
    fields = event.__dict__
    named = [fields[k] for k in _node_fields(type(event))]
    if event.model_extra:  # an older run's fields
        named += [v for k, v in event.model_extra.items() if k == "node_id" or k.endswith("_node_id")]
    node = fields.get("node")
    if isinstance(node, BaseModel):
        named.append(getattr(node, "parent_id", None))
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
        raw = data[start : end + 1]
        event, why = parse_line(raw)
        if event is None:
            out.bad.append((number, raw, why))
        else:
            out.events.append(event)
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


class StaleSnapshot(Exception):
    """A snapshot that does not describe this log (or this code): the log is replayed whole."""


class _SnapshotUnpickler(pickle.Unpickler):
    """Loads only our own pydantic models and enums, each with the fields it had when written:
    a run directory from elsewhere cannot run code through its snapshot, and a snapshot written
    by other code is never read into objects of a different shape."""

    def __init__(self, data: BinaryIO, classes: Mapping[str, str]) -> None:
        super().__init__(data)
        self.classes = classes

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "defaultdict"):  # its factory passes this same check
            return defaultdict
        if module.split(".")[0] not in OUR_PACKAGES:
            raise StaleSnapshot(f"refers to {module}.{name}")
        cls = super().find_class(module, name)
        if not isinstance(cls, type) or self.classes.get(f"{module}.{name}") != fingerprint(cls):
            raise StaleSnapshot(f"{module}.{name} changed since the snapshot was written")
        return cls


OUR_PACKAGES = ("engine", "search", "silva", "writeup", "review", "actors", "cluster", "sandbox")


def fingerprint(cls: type) -> str:
    """The shape of a model, dataclass or enum class: its field names and annotations, or its values."""
    if is_dataclass(cls):
        shape = repr([(f.name, str(f.type)) for f in fields(cls)])
    elif isinstance(cls, type) and issubclass(cls, BaseModel):
        # Without memory addresses, which an annotation's validators show and differ per process.
        shape = re.sub(
            r" at 0x[0-9a-f]+", "", repr([(k, repr(f.annotation)) for k, f in cls.model_fields.items()])
        )
    elif isinstance(cls, type) and issubclass(cls, Enum):
        shape = repr([m.value for m in cls])
    else:
        return ""
    return hashlib.sha256(shape.encode()).hexdigest()[:16]


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def strict_json(value: Any) -> str:
    """JSON that strict readers (jq, browsers) accept: a NaN or an infinity, which `json.dumps`
    would write as a bare token, is written as null (whoever records one says why)."""
    try:
        return json.dumps(value, default=str, allow_nan=False)
    except ValueError:  # rare: walk the value only when it holds a non-finite float
        return json.dumps(_finite(value), default=str, allow_nan=False)


class EventLog:
    """The events of one run. A writer holds the run's lock; a reader touches nothing.

    The log keeps no events in memory: only each event's byte offset. `events` and `read()`
    read them back from the file. `Journal` replays a snapshot of its state (when one matches
    the log, byte for byte, up to the offset it was taken at) plus the events after it, and a
    writer writes a new snapshot every SNAPSHOT_EVERY events, in a forked child so the driver does
    not wait for it (docs/engine.md, "Driver scaling").
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.offsets = array("q")  # byte offset of each event's line
        self.types = array("H")  # each event's type, as its position in `type_names`
        self.type_names: list[str] = []
        self._type_codes: dict[str, int] = {}
        self.end = 0  # bytes of complete lines replayed or appended
        self.snapshot_count = 0  # events the newest snapshot covers
        self._hash = hashlib.sha256()  # of the first `end` bytes, which a snapshot is checked against
        self._lines: list[int] | None = None  # line numbers, for a log over given events
        self._given: list[dict[str, Any]] | None = None
        self._lock: WriterLock | None = None
        self._file: Any = None
        self._group = 0  # nesting depth of group commits
        self._unsynced = False
        self._writer: int | None = None  # pid of the background snapshot writer, until reaped
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = WriterLock(path.parent)

    @classmethod
    def in_memory(cls, path: Path, events: list[dict[str, Any]], lines: list[int]) -> EventLog:
        """A read-only log over given events (repair replays candidates without a file)."""
        obj = cls(path, read_only=True)
        obj._given, obj._lines = events, lines
        return obj

    @property
    def snapshot_path(self) -> Path:
        return self.path.with_name(SNAPSHOT_FILE)

    @property
    def count(self) -> int:
        return len(self._given) if self._given is not None else len(self.offsets)

    @property
    def events(self) -> Sequence[Event]:
        """Every event, read back from the file on demand (use `read(kinds)` to pick some)."""
        return EventStream(self)

    # -- opening ---------------------------------------------------------------------------
    def load_snapshot(self, attrs: Sequence[str]) -> dict[str, Any] | None:
        """The replayed state a snapshot holds, when it matches this log and a state with
        `attrs`; the replay then starts after it. None (replay everything) otherwise."""
        if self._given is not None or not self.snapshot_path.is_file():
            return None
        try:
            state = self._read_snapshot(attrs)
        except (
            StaleSnapshot,
            OSError,
            ValueError,
            EOFError,
            pickle.UnpicklingError,
            KeyError,
            TypeError,
            AttributeError,
        ) as e:
            log.info("%s: snapshot not used (%s); replaying the whole log", self.snapshot_path, e)
            self.offsets, self.end, self._hash, self.snapshot_count = array("q"), 0, hashlib.sha256(), 0
            self.types, self.type_names, self._type_codes = array("H"), [], {}
            return None
        return state

    def _read_snapshot(self, attrs: Sequence[str]) -> dict[str, Any]:
        with self.snapshot_path.open("rb") as f:
            head = json.loads(f.readline())
            if head.get("format") != SNAPSHOT_FORMAT or sorted(head["attrs"]) != sorted(attrs):
                raise StaleSnapshot("written by another version")
            start = f.tell()
            if _digest(f, None).hexdigest() != head["payload_sha256"]:
                raise StaleSnapshot("its content does not match its digest")
            self._check_log(head)
            f.seek(start)  # unpickled from the file: the payload's bytes are never all in memory
            body = _SnapshotUnpickler(f, head["classes"]).load()
        offsets, types = array("q"), array("H")
        offsets.frombytes(body["offsets"])
        types.frombytes(body["types"])
        if not len(offsets) == len(types) == head["events"]:
            raise StaleSnapshot("wrong number of offsets")
        self.offsets, self.types, self.snapshot_count = offsets, types, len(offsets)
        self.type_names = list(body["type_names"])
        self._type_codes = {t: i for i, t in enumerate(self.type_names)}
        return dict(body["state"])

    def _check_log(self, head: Mapping[str, Any]) -> None:
        """StaleSnapshot unless the log's first bytes are those the snapshot was taken on."""
        offset = int(head["offset"])
        with self.path.open("rb") as f:
            digest = _digest(f, offset)
        if digest.hexdigest() != head["log_sha256"]:
            raise StaleSnapshot("the log's first bytes differ from those it was taken on")
        self.end, self._hash = offset, digest

    def replay(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, event) of each event after the snapshot, each line parsed once. After a line
        that is not an event, nothing more is yielded and JournalDamaged is raised at the end
        (naming the first such line); a last line without its newline is a torn write: a writer
        sets it aside, a reader ignores it."""
        if self._given is not None:
            yield from enumerate(self._given)
            return
        bad: list[tuple[int, str]] = []
        torn = b""
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            f = None
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot read ({e.strerror})") from None
        if f is not None:
            with f:
                f.seek(self.end)
                pos, number = self.end, len(self.offsets)
                while True:
                    chunk = f.read(CHUNK)
                    if not chunk:
                        break
                    data = torn + chunk
                    start = 0
                    while True:
                        end = data.find(b"\n", start)
                        if end < 0:
                            break
                        raw = data[start : end + 1]
                        start = end + 1
                        number += 1
                        event, why = parse_line(raw)
                        if event is None:
                            bad.append((number, why))
                            continue
                        if bad:  # counted, not replayed: the first bad line is what is reported
                            continue
                        self.offsets.append(pos)
                        self.types.append(self._type_code(event["type"]))
                        self._hash.update(raw)
                        pos += len(raw)
                        yield len(self.offsets) - 1, event
                    torn = data[start:]
                self.end = pos
        if bad:
            raise JournalDamaged(self.path, bad[0][0], bad[0][1], more=len(bad) - 1)
        if not self.read_only:
            if torn:
                self._set_aside_torn(torn)
            self._file = self._open_append()

    def _set_aside_torn(self, torn: bytes) -> None:
        kept = side_file(self.path, "torn")
        write_durably(kept, torn)
        with self.path.open("r+b") as f:
            f.truncate(self.end)
            os.fsync(f.fileno())
        log.warning(
            "%s: dropped a partial last line (%d bytes, a write cut off by a crash); kept in %s",
            self.path,
            len(torn),
            kept.name,
        )

    def _open_append(self) -> Any:
        try:
            return self.path.open("ab")
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot open for writing ({e.strerror})") from None

    def _type_code(self, type_: str) -> int:
        code = self._type_codes.get(type_)
        if code is None:
            code = self._type_codes[type_] = len(self.type_names)
            self.type_names.append(type_)
        return code

    def damaged(self, index: int, error: Exception) -> JournalDamaged:
        """The error for event `index`, which parsed but could not be replayed."""
        line = self._lines[index] if self._lines is not None and index < len(self._lines) else index + 1
        return JournalDamaged(self.path, line, replay_problem(error))

    # -- reading back ------------------------------------------------------------------------
    @overload
    def read(self, kind: type[E], /, *, start: int = 0, stop: int | None = None) -> Iterator[E]: ...

    @overload
    def read(self, *kinds: type[Event], start: int = 0, stop: int | None = None) -> Iterator[Event]: ...

    def read(self, *kinds: type[Event], start: int = 0, stop: int | None = None) -> Iterator[Event]:
        """Events `start` to `stop` (of the given classes, if any), streamed from the file."""
        types = [type_of(k) for k in kinds]
        if self._given is not None:
            yield from (parse(e) for e in self._given[start:stop] if not types or e["type"] in types)
            return
        count = self.count
        stop = count if stop is None else min(stop, count)
        if start >= stop:
            return
        if types:
            codes = {self._type_codes[t] for t in types if t in self._type_codes}
            if not codes:
                return
            wanted = [i for i, c in enumerate(self.types[start:stop], start) if c in codes]
            if len(wanted) * SEEK_SHARE <= stop - start:  # a few events of a big log: read just those
                yield from self._read_at(wanted)
                return
            start, stop = wanted[0], wanted[-1] + 1
        begin, end = self.offsets[start], self.offsets[stop] if stop < count else self.end
        # json.dumps writes `"type": "<type>"`: most lines are skipped without parsing them.
        marks = [f'"type": "{t}"'.encode() for t in types]
        with self.path.open("rb") as f:
            f.seek(begin)
            left, rest = end - begin, b""
            while left > 0:
                chunk = f.read(min(CHUNK, left))
                if not chunk:
                    break
                left -= len(chunk)
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for raw in lines:
                    if marks and not any(m in raw for m in marks):
                        continue
                    event = parse_line(raw)[0]
                    if event is not None and (not types or event["type"] in types):
                        yield parse(event)

    def _read_at(self, indexes: Sequence[int]) -> Iterator[Event]:
        """The events at these indexes (ascending), each line read on its own."""
        count = self.count
        with self.path.open("rb") as f:
            for i in indexes:
                begin = self.offsets[i]
                f.seek(begin)
                raw = f.read((self.offsets[i + 1] if i + 1 < count else self.end) - begin)
                event = parse_line(raw)[0]
                if event is not None:
                    yield parse(event)

    # -- writing -------------------------------------------------------------------------------
    def append(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Write an event (a dumped model, engine/events.py) with its `seq` and `ts` set; returns it."""
        if self._file is None:
            raise RuntimeError(f"{self.path} was opened read-only (or closed); it cannot be appended to")
        type_ = data["type"]
        if type_ not in DECLARED:
            raise ValueError(f"event type {type_!r} is not declared in engine/events.py")
        event = {**data, "seq": self.count, "ts": time.time()}
        line = strict_json(event).encode() + b"\n"
        self._file.write(line)
        self._file.flush()  # in the kernel: a killed driver loses nothing
        if self._group:
            self._unsynced = True
        else:
            os.fsync(self._file.fileno())
        self.offsets.append(self.end)
        self.types.append(self._type_code(type_))
        self.end += len(line)
        self._hash.update(line)
        return event

    @contextmanager
    def group(self) -> Iterator[None]:
        """Group commit: events appended inside are written at once and fsynced together at the
        end (or at `sync()`). The caller must act on none of them before that."""
        self._group += 1
        try:
            yield
        finally:
            self._group -= 1
            if not self._group:
                self.sync()

    def sync(self) -> None:
        """Make every appended event durable (a no-op when nothing is waiting)."""
        if self._unsynced and self._file is not None:
            os.fsync(self._file.fileno())
        self._unsynced = False

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot_due(self) -> bool:
        if self._writer is not None:
            self._reap(block=False)
        return self._file is not None and self.count - self.snapshot_count >= SNAPSHOT_EVERY

    def write_snapshot(self, state_of: SnapshotState, *, background: bool = False) -> None:
        """Replace the snapshot by the state `state_of()` gives (and its classes) as of now,
        atomically: a crash leaves the old one. `background`: in a forked child, so the driver
        goes on at once (its cost, O(nodes), stays off the dispatch loop): the child holds a
        copy-on-write image of this moment and writes it while the driver appends further
        events. One snapshot is written at a time; `close()` waits for it."""
        self._reap(block=True)
        if background and hasattr(os, "fork"):
            self._writer = self._fork_writer(state_of)
        else:
            self._write_snapshot_file(*state_of())
        self.snapshot_count = self.count

    def _fork_writer(self, state_of: SnapshotState) -> int:
        pid = os.fork()
        if pid:
            return pid
        code = 1
        try:  # the child: write and leave, running nothing of the driver's (no atexit, no flush)
            gc.disable()  # it exits in a moment: a collection would only copy pages
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C stops the driver; the child finishes
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the forking thread is the child's main)
            WriterLock.close_inherited()
            self._write_snapshot_file(*state_of())
            code = 0
        except BaseException as e:  # a snapshot is a cache: its failure is told, never fatal
            os.write(2, f"silva: snapshot not written ({type(e).__name__}: {e})\n".encode())
        finally:
            os._exit(code)

    def _reap(self, *, block: bool) -> None:
        """Collect a finished background writer (wait for it when `block`)."""
        if self._writer is None:
            return
        try:
            pid, status = os.waitpid(self._writer, 0 if block else os.WNOHANG)
        except ChildProcessError:  # already collected (someone waited for every child)
            pid, status = self._writer, 0
        if pid == 0:
            return  # still writing
        self._writer = None
        if os.waitstatus_to_exitcode(status) != 0:
            log.warning(
                "%s: the background snapshot failed (exit %s); the previous one stays",
                self.snapshot_path,
                os.waitstatus_to_exitcode(status),
            )

    def _write_snapshot_file(self, state: Mapping[str, Any], classes: Iterable[type]) -> None:
        self.sync()  # the log up to the snapshot's offset is durable before the snapshot names it
        payload = pickle.dumps(
            {
                "state": dict(state),
                "offsets": self.offsets.tobytes(),
                "types": self.types.tobytes(),
                "type_names": list(self.type_names),
            },
            protocol=5,
        )
        head = {
            "format": SNAPSHOT_FORMAT,
            "events": self.count,
            "offset": self.end,
            "attrs": sorted(state),
            "log_sha256": self._hash.hexdigest(),
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "classes": {f"{c.__module__}.{c.__qualname__}": fingerprint(c) for c in classes},
        }
        # Named by the writing process: a background writer that outlived its driver never
        # shares a file with the next driver's.
        tmp = self.snapshot_path.with_name(f"{SNAPSHOT_FILE}.{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            f.write(json.dumps(head).encode() + b"\n")
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.snapshot_path)

    def _release(self) -> None:
        self._reap(block=True)  # a snapshot being written: the run's files are complete once closed
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        self._release()


def _digest(f: Any, size: int | None) -> Any:
    """SHA-256 of the next `size` bytes of a file (to its end if None), read in pieces."""
    digest = hashlib.sha256()
    left = size
    while left is None or left > 0:
        chunk = f.read(CHUNK if left is None else min(CHUNK, left))
        if not chunk:
            if left is not None:
                raise StaleSnapshot(f"the log is shorter than the {size} bytes it covers")
            break
        digest.update(chunk)
        if left is not None:
            left -= len(chunk)
    return digest


class EventStream(Sequence[Event]):
    """A log's events, read back on demand: the log keeps only their offsets."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def __len__(self) -> int:
        return self._log.count

    def __iter__(self) -> Iterator[Event]:
        return self._log.read()

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            events = list(self._log.read(start=start, stop=stop)) if start < stop else []
            return events if step == 1 else list(self)[i]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return next(self._log.read(start=i, stop=i + 1))
