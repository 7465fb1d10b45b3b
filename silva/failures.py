"""Failures of the machine, not of the input (docs/cli.md, "When something fails"): a full or
read-only disk, a denied path, a Ray cluster that did not start. Each becomes one
`EnvironmentFailure` line naming the path or cause and what to do; a live run journals its stop
first, so `silva status` says stopped (not running) and `silva resume` continues it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from engine.errors import EnvironmentFailure
from engine.events import AttemptCancelled, RunStopped
from engine.journal import Journal
from engine.node import NodeStatus

RESERVE_FILE = ".space-reserve"
# Freed when the disk fills, so that the stop and its reason can still be journaled.
RESERVE_BYTES = 256 * 1024

_ADVICE = {
    errno.ENOSPC: "the disk is full: free space there",
    errno.EDQUOT: "the disk quota is used up: free space or raise the quota",
    errno.EFBIG: "a file size limit was reached (ulimit -f): raise it",
    errno.EACCES: "permission denied: make it writable for this user or choose another directory",
    errno.EPERM: "operation not permitted: make it writable for this user or choose another directory",
    errno.EROFS: "the file system is read-only: choose a writable directory",
}


# The machine's or the user's paths, not Silva's code: the user can fix each of these.
MACHINE_ERRNOS = frozenset(
    {
        *_ADVICE,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENAMETOOLONG,
        errno.EIO,
        errno.EMFILE,
        errno.ENFILE,
        errno.ENOMEM,
    }
)


def os_failure(e: OSError, where: Path | None = None) -> EnvironmentFailure:
    """One line: what failed (the path when the OS named one, else `where`) and what to do."""
    path = e.filename or where
    cause = e.strerror or str(e)
    advice = _ADVICE.get(e.errno or 0, "fix the cause and try again")
    return EnvironmentFailure(f"{cause}{f': {path}' if path else ''} ({advice})")


def environment_failure(exc: BaseException, where: Path | None = None) -> EnvironmentFailure | None:
    """The failure `exc` stands for, or None for anything else (bad input, a bug)."""
    if isinstance(exc, EnvironmentFailure):
        return exc
    if isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS:
        return os_failure(exc, where)
    return None  # another OSError (a file Silva itself should have made, say) is a bug


class SpaceReserve:
    """A small file in the run directory, deleted when the disk fills so that the stop fits."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RESERVE_FILE
        if not self.path.exists() or self.path.stat().st_size < RESERVE_BYTES:
            with self.path.open("wb") as f:
                f.write(b"\0" * RESERVE_BYTES)
                f.flush()
                os.fsync(f.fileno())

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def journal_stop(journal: Journal, failure: EnvironmentFailure) -> bool:
    """Cancel the attempts the dead session left open and journal `run_stopped`; False when even
    that could not be written (the journal then ends at its last good event: resume still works)."""
    try:
        for node in journal.unfinished:
            if node.status == NodeStatus.RUNNING and node.open_attempt is not None:
                journal.record(AttemptCancelled(node_id=node.id, attempt=node.open_attempt))
        journal.record(RunStopped(reason=str(failure), budget=None, cause="environment"))
    except OSError:
        return False
    return True
