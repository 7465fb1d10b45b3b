"""Talking to one container of the `docker` sandbox: its output, through an attach with a cap
applied as it streams; its CPU time, from its cgroup; its removal.

The `docker` SDK is imported inside functions: `import sandbox` never needs it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

from sandbox.process import OutputCap


class CpuSampler(threading.Thread):
    """Reads the container's cgroup CPU counter from the host every 0.1 s (local engines only).

    The engine deletes the cgroup when the container exits, so the last sample is the
    measurement; a remote engine's cgroups are not visible here and cpu_s stays 0.
    """

    def __init__(self, pid: int, from_now: bool = False) -> None:
        super().__init__(daemon=True)
        self.cpu_s = 0.0
        self._path, self._scale = self._counter(pid)
        # A container started ahead of need has spent CPU on its imports before the attempt.
        self._base = (self._read() or 0.0) if from_now and self._path else 0.0
        self._stop_evt = threading.Event()

    @staticmethod
    def _counter(pid: int) -> tuple[str | None, float]:
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                lines = [line.rstrip("\n").split(":", 2) for line in f]
        except OSError:
            return None, 0.0
        for _, controllers, path in lines:
            if "cpuacct" in controllers.split(","):
                return f"/sys/fs/cgroup/{controllers}{path}/cpuacct.usage", 1e-9
        for _, controllers, path in lines:
            if controllers == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    if os.path.exists(f"{root}{path}/cpu.stat"):
                        return f"{root}{path}/cpu.stat", 1e-6
        return None, 0.0

    def _read(self) -> float | None:
        assert self._path is not None
        try:
            with open(self._path) as f:
                text = f.read()
        except OSError:
            return None
        if self._path.endswith("cpu.stat"):
            usage = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec"))
            return int(usage) * self._scale
        return int(text) * self._scale

    def run(self) -> None:
        if self._path is None:
            return
        while (value := self._read()) is not None:
            self.cpu_s = value - self._base
            if self._stop_evt.wait(0.1):
                return

    def stop(self) -> None:
        self._stop_evt.set()


class Attached:
    """One attach to a started container for its stdin and output: the order goes in, stdin
    closes (the container's too: StdinOnce) and the same connection brings the output, which
    the attempt can only write after the order, so after the attach: none is lost."""

    def __init__(self, api: Any, container_id: str) -> None:
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        self._raw = api.attach_socket(container_id, params=params)
        self._sock: socket.socket = getattr(self._raw, "_sock", self._raw)  # under a SocketIO

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)
        self._sock.shutdown(socket.SHUT_WR)

    def __iter__(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        from docker.utils.socket import STDOUT, frames_iter

        for stream, data in frames_iter(self._raw, tty=False):  # type: ignore[no-untyped-call]
            yield (data, None) if stream == STDOUT else (None, data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # at once, whoever else holds the socket
        self._raw.close()
        self._sock.close()


def pump(stream: Any, out: OutputCap, err: OutputCap) -> None:
    """Drain the attach stream into the two capped buffers until the container's output ends."""
    try:
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.feed(chunk_out)
            if chunk_err:
                err.feed(chunk_err)
    except Exception:  # a stream cut at stop/remove ends the output, nothing more
        pass


def remove(container: Any) -> None:
    import docker

    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
