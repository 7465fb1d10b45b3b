"""Run one process tree with a hard deadline and capped output, without ever hanging.

Shared by the `none` and `local` providers. Design points (see LESSONS.md):
- the child starts in its own session, so the whole tree is one process group we own;
- limits are applied by a `prlimit` command prefix, never by preexec_fn (unsafe in threaded
  Ray workers);
- exit is detected with a pidfd, not pipe EOF: a daemon that inherited stdout cannot block us;
- on deadline: SIGTERM (to the group, or whatever `terminate` targets), a grace period, then
  SIGKILL to the group; leftovers are always killed;
- an optional disk watchdog stops the tree when the workspace outgrows `Limits.disk_mb`.
"""

from __future__ import annotations

import os
import re
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from sandbox.base import TRUNCATION_MARKER, ExecResult, Limits, list_files

Popen = subprocess.Popen[bytes]

# Environment every sandboxed process gets; anything else must be allow-listed explicitly.
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MPLBACKEND": "Agg",
    "OMP_NUM_THREADS": "1",
}

# Names that look like credentials are refused even when a caller allow-lists them: keys live
# only in the LLM gateway (docs/architecture.md, "Invariants"), and Ray's token must never reach
# experiment code.
SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)|^(AWS|AZURE|GOOGLE|GCP|RAY|OPENAI|ANTHROPIC)_",
    re.IGNORECASE,
)
# Messages an out-of-memory process leaves when an rlimit (not the kernel) refused the memory.
_OOM_MESSAGES = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "can't allocate memory")
_DISK_POLL_S = 0.5


def sandbox_env(extra: Mapping[str, str] | None, **fixed: str) -> dict[str, str]:
    """BASE_ENV + provider-fixed values + the caller's allow-listed variables, secrets refused."""
    env = {**BASE_ENV, **fixed}
    for name, value in (extra or {}).items():
        if SECRET_NAME.search(name):
            raise ValueError(
                f"environment variable {name!r} looks like a credential and is never passed into a "
                "sandbox; LLM keys stay in the gateway"
            )
        env[name] = value
    return env


_PRLIMIT_FLAGS = {
    "RLIMIT_CPU": "--cpu",
    "RLIMIT_AS": "--as",
    "RLIMIT_NPROC": "--nproc",
    "RLIMIT_FSIZE": "--fsize",
    "RLIMIT_CORE": "--core",
}


def rlimit_values(limits: Limits, *, address_space: bool = True) -> list[tuple[str, int]]:
    """The limits an rlimit can express, as (resource name, soft and hard value), core dumps off."""
    values = []
    if limits.cpu_s is not None:
        values.append(("RLIMIT_CPU", limits.cpu_s))
    if limits.memory_mb is not None and address_space:
        values.append(("RLIMIT_AS", limits.memory_mb * 1024 * 1024))
    if limits.processes is not None:
        values.append(("RLIMIT_NPROC", limits.processes))
    if limits.file_size_mb is not None:
        values.append(("RLIMIT_FSIZE", limits.file_size_mb * 1024 * 1024))
    return [*values, ("RLIMIT_CORE", 0)]


def prlimit_prefix(limits: Limits, *, address_space: bool = True) -> list[str]:
    """`prlimit` arguments for the limits an rlimit can express."""
    values = rlimit_values(limits, address_space=address_space)
    return ["prlimit", *(f"{_PRLIMIT_FLAGS[name]}={value}" for name, value in values), "--"]


class OutputCap:
    """Keeps the first `cap` bytes of a stream and remembers whether more arrived."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        out = self.data.decode("utf-8", errors="replace")
        return out + TRUNCATION_MARKER.format(limit=self.cap) if self.truncated else out


class _PipeReader(threading.Thread):
    """Drains a pipe forever (so the child never blocks on a full pipe) into an OutputCap."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self.output = OutputCap(cap)

    def run(self) -> None:
        fd = self._stream.fileno()
        try:
            while chunk := os.read(fd, 65536):
                self.output.feed(chunk)
        except OSError:
            pass  # closed under us after the deadline: what we have is the output


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def exit_code_of(status: int) -> int:
    """Shell convention for every provider: a death by signal N is exit code 128 + N."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def looks_oom(code: int, stderr: str, *, killed_by_us: bool) -> bool:
    """SIGKILL we did not send is the kernel's OOM killer; an rlimit refusal leaves a message."""
    if code == 128 + signal.SIGKILL and not killed_by_us:
        return True
    return code != 0 and any(m in stderr[-4000:] for m in _OOM_MESSAGES)


def disk_usage_mb(root: Path) -> float:
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue  # removed while we walked it
    return total / 2**20


def _wait_exit(pidfd: int, deadline: float, disk: tuple[Path, int] | None) -> str | None:
    """Block until exit (None), the deadline ("deadline") or a disk overrun ("disk")."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "deadline"
        step = min(left, _DISK_POLL_S) if disk else left
        if select.select([pidfd], [], [], step)[0]:
            return None
        if disk and disk_usage_mb(disk[0]) > disk[1]:
            return "disk"


def _supervise(
    proc: Popen,
    deadline: float,
    disk: tuple[Path, int] | None,
    limits: Limits,
    terminate: Callable[[int], None] | None,
) -> tuple[str | None, int, resource.struct_rusage]:
    """Wait for the child, stopping it on deadline or disk overrun; return (reason, status, rusage)."""
    pgid = proc.pid
    pidfd = os.pidfd_open(proc.pid)
    try:
        reason = _wait_exit(pidfd, deadline, disk)
        if reason == "deadline":
            (terminate or (lambda _pid: signal_group(pgid, signal.SIGTERM)))(proc.pid)
            if not select.select([pidfd], [], [], limits.kill_grace_s)[0]:
                signal_group(pgid, signal.SIGKILL)
        elif reason == "disk":
            signal_group(pgid, signal.SIGKILL)  # a disk overrun gets no grace: it is still writing
        _, status, rusage = os.wait4(proc.pid, 0)
    finally:
        os.close(pidfd)
    return reason, status, rusage


def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int] = ()) -> Popen:
    """Start argv in a session of its own (its whole tree is one process group we own), its
    output on pipes that `supervise` drains."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
    )


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    workspace: Path | None = None,
    pass_fds: Sequence[int] = (),
    terminate: Callable[[int], None] | None = None,
) -> ExecResult:
    """Run argv to completion or deadline. Never raises for anything the child does.

    `terminate(pid)` delivers the polite SIGTERM on deadline (default: the process group);
    SIGKILL always goes to the whole group afterwards.
    """
    start = time.monotonic()
    proc = spawn(argv, cwd=cwd, env=env, pass_fds=pass_fds)
    return supervise(proc, limits=limits, workspace=workspace, terminate=terminate, start=start)


def supervise(
    proc: Popen,
    *,
    limits: Limits,
    workspace: Path | None = None,
    terminate: Callable[[int], None] | None = None,
    start: float | None = None,
) -> ExecResult:
    """Drain, time and stop a spawned process: its deadline is `limits.wall_s` from `start`
    (default now: a process started ahead of need counts from when it was given its work)."""
    start = time.monotonic() if start is None else start
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_PipeReader(proc.stdout, limits.output_bytes), _PipeReader(proc.stderr, limits.output_bytes)]
    for r in readers:
        r.start()

    disk = (workspace, limits.disk_mb) if workspace is not None and limits.disk_mb else None
    reason, status, rusage = _supervise(proc, start + limits.wall_s, disk, limits, terminate)
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Children that outlived the leader (daemons, forks) are ours too: kill them all.
    signal_group(proc.pid, signal.SIGKILL)
    for r in readers:
        r.join(timeout=0.5)
    proc.stdout.close()
    proc.stderr.close()
    return _result(reason, status, rusage, readers, limits, workspace, start)


def _result(
    reason: str | None,
    status: int,
    rusage: resource.struct_rusage,
    readers: list[_PipeReader],
    limits: Limits,
    workspace: Path | None,
    start: float,
) -> ExecResult:
    """The ExecResult of a finished child, from its wait status and captured output."""
    code = exit_code_of(status)
    out, err = readers[0].output, readers[1].output
    stderr_text = err.text()
    if reason == "disk":
        stderr_text += f"\n[silva: workspace exceeded the disk limit of {limits.disk_mb} MB; killed]\n"
    return ExecResult(
        exit_code=None if reason == "deadline" else code,
        stdout=out.text(),
        stderr=stderr_text,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=reason == "deadline",
        oom_killed=looks_oom(code, stderr_text, killed_by_us=reason is not None),
        disk_exceeded=reason == "disk",
        wall_s=time.monotonic() - start,
        cpu_s=rusage.ru_utime + rusage.ru_stime,
        files=list_files(workspace) if workspace is not None else [],
    )
