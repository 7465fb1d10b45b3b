"""Helpers for the cluster tests: a `ray start` head of the tests' own, driver subprocesses."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))


def wait_for(
    predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition", poll: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(poll)


def driver_env(**extra: str) -> dict[str, str]:
    """The environment of a Silva driver subprocess: this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return {**env, "PYTHONPATH": str(ROOT), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", **extra}


def stop_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str], grace_s: float = 10.0) -> None:
    """End a process started with start_new_session=True and everything it started in its group."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children left behind in the group
    except ProcessLookupError:
        pass
    proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RayHead(NamedTuple):
    env: dict[str, str]  # in which Ray's own resolution (`address: auto`) finds this head
    gcs: str  # host:port of its GCS
    dashboard: str  # http://127.0.0.1:PORT, its Jobs API


@contextmanager
def ray_head() -> Iterator[RayHead]:
    """A `ray start --head` cluster like one a user left on the machine, with its dashboard (the
    Jobs API) on 127.0.0.1.

    Its RAY_TMPDIR is private (a short path: Ray's socket paths are length-limited), so drivers of
    other test processes on this machine never see it, and every port it listens on is its own
    (another head on the machine keeps Ray's fixed defaults); it is stopped by process group, never
    with a plain `ray stop`, which would stop every Ray cluster on the machine."""
    tmp = tempfile.mkdtemp(prefix="rs", dir="/tmp")
    env = driver_env(RAY_TMPDIR=tmp, RAY_AUTH_MODE="token", PATH=f"{Path(RAY).parent}:{os.environ['PATH']}")
    dashboard = free_port()
    log = open(Path(tmp) / "ray-start.log", "wb")
    ports = {
        "--dashboard-port": dashboard,
        "--dashboard-agent-listen-port": free_port(),
        "--dashboard-agent-grpc-port": free_port(),
        "--runtime-env-agent-port": free_port(),
        "--metrics-export-port": free_port(),
        "--ray-client-server-port": free_port(),
    }
    proc = subprocess.Popen(
        [
            RAY,
            "start",
            "--head",
            "--port=0",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=2",
            "--include-dashboard=true",
            "--dashboard-host=127.0.0.1",
            *(f"{flag}={port}" for flag, port in ports.items()),
            "--disable-usage-stats",
            "--block",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    address_file = Path(tmp) / "ray" / "ray_current_cluster"

    def started() -> bool:
        if proc.poll() is not None:
            raise AssertionError(
                f"`ray start` exited {proc.returncode}:\n{Path(log.name).read_text()[-3000:]}"
            )
        return address_file.is_file() and address_file.read_text().strip() != ""

    try:
        wait_for(started, timeout=240, what="`ray start` to write its address")
        url = f"http://127.0.0.1:{dashboard}"
        wait_for(lambda: _answers(url), timeout=240, what=f"the dashboard at {url}", poll=0.5)
        yield RayHead(env, address_file.read_text().strip(), url)
    finally:
        stop_group(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=5) as r:
            return bool(r.status == 200)
    except urllib.error.HTTPError:
        return True  # it answers (401 without Ray's token)
    except OSError:
        return False
