"""`silva repair RUN_DIR`: keep every good event of a damaged journal, move the rest aside.

A line is moved when it is not a JSON event or when replay cannot apply it (e.g. a result for
a node whose creation line was lost). Nothing is deleted: moved lines go to
`events.jsonl.bad-<ts>` byte for byte, a torn last line to `events.jsonl.torn-<ts>`, and the
new log replaces the old one by an atomic rename after both side files are on disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.eventlog import (
    EVENTS_FILE,
    EventLog,
    JournalDamaged,
    read_events_file,
    scan,
    side_file,
    write_durably,
)
from engine.journal import Journal


@dataclass
class RepairPlan:
    path: Path
    lines: list[bytes]  # every line of the file, newline included (a torn tail last, without one)
    keep: list[int] = field(default_factory=list)  # 1-based numbers of the lines kept
    moved: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)
    torn: bytes = b""

    @property
    def needed(self) -> bool:
        return bool(self.moved or self.torn)

    def summary(self) -> str:
        out = [f"{self.path}: {len(self.lines)} line(s); {len(self.keep)} good event(s) kept"]
        for line, why in self.moved[:20]:
            out.append(f"  line {line}: {why}")
        if len(self.moved) > 20:
            out.append(f"  ... and {len(self.moved) - 20} more bad line(s)")
        if self.torn:
            out.append(f"  last line: partial write of {len(self.torn)} bytes (no newline)")
        return "\n".join(out)


def plan_repair(run_dir: Path) -> RepairPlan:
    path = run_dir / EVENTS_FILE
    data = read_events_file(path)
    found = scan(data)
    plan = RepairPlan(path, data.splitlines(keepends=True), torn=found.torn)
    plan.moved = [(line, why) for line, _, why in found.bad]
    events, lines = list(found.events), list(found.lines)
    while True:  # drop what replay cannot apply, one line at a time: later lines may depend on it
        try:
            Journal(EventLog.in_memory(path, events, lines))
            break
        except JournalDamaged as e:
            i = lines.index(e.line)
            plan.moved.append((e.line, e.why))
            del events[i], lines[i]
    plan.moved.sort()
    plan.keep = lines
    return plan


def apply_repair(plan: RepairPlan) -> list[Path]:
    """Write the side files, then swap in the repaired log. Returns the side files written."""
    written: list[Path] = []
    if plan.moved:
        bad = side_file(plan.path, "bad")
        write_durably(bad, b"".join(_terminated(plan.lines[n - 1]) for n, _ in plan.moved))
        written.append(bad)
    if plan.torn:
        torn = side_file(plan.path, "torn")
        write_durably(torn, plan.torn)
        written.append(torn)
    tmp = plan.path.with_name(plan.path.name + ".repair-tmp")
    tmp.unlink(missing_ok=True)
    write_durably(tmp, b"".join(plan.lines[n - 1] for n in plan.keep))
    os.replace(tmp, plan.path)
    dir_fd = os.open(plan.path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return written


def _terminated(line: bytes) -> bytes:
    return line if line.endswith(b"\n") else line + b"\n"
