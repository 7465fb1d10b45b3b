"""The single-writer claim on a run directory (`events.lock`): one `silva run`/`resume` writes a
run at a time; a lock left by a killed driver is stale and taken over."""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path

from engine.errors import ConfigError

LOCK_FILE = "events.lock"

log = logging.getLogger(__name__)


class RunLocked(ConfigError):
    """Another process is writing this run directory."""


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
            me = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "start": _process_start(os.getpid()),
                "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
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
    def close_inherited(cls) -> None:
        """In a forked child (a background snapshot): close its copies of the locks' descriptors,
        so that the claim ends with the writer, never with a child that outlives it. No guard:
        a thread that held it at the fork does not exist in the child."""
        for fd, _ in cls._held.values():
            os.close(fd)
        cls._held.clear()

    @classmethod
    def release_all(cls) -> None:
        """At interpreter exit: a clean exit leaves no lock file behind (a killed one does)."""
        with cls._guard:
            for path in list(cls._held):
                cls._drop(path)


atexit.register(WriterLock.release_all)
