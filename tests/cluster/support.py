"""Helpers for the cluster tests: a `ray start` cluster of the test's own, driver subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def ray_start_cluster() -> Iterator[tuple[dict[str, str], str]]:
    """A `ray start --head` cluster like one a user left on the machine, yielding the environment
    in which Ray's own resolution finds it and its GCS address.

    Its RAY_TMPDIR is private (a short path: Ray's socket paths are length-limited), so drivers of
    other test processes on this machine never see it; it is stopped by process group, never with
    `ray stop`, which would stop every Ray cluster on the machine."""
    tmp = tempfile.mkdtemp(prefix="rs", dir="/tmp")
    env = driver_env(RAY_TMPDIR=tmp, RAY_AUTH_MODE="token")
    proc = subprocess.Popen(
        [
            RAY,
            "start",
            "--head",
            "--port=0",
            "--num-cpus=1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--block",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address_file = Path(tmp) / "ray" / "ray_current_cluster"
    try:
        wait_for(
            lambda: address_file.is_file() and address_file.read_text().strip() != "",
            timeout=120,
            what="`ray start` to write its address",
        )
        yield env, address_file.read_text().strip()
    finally:
        stop_group(proc)
